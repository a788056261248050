"""Prepared analysis runs: deterministic cuts of Claude Code and Pi history into bounded task packets
for LLM review, with truthful run state. Plain functions over a workdir; no reasoning here."""

from core.runs.coverage import confirm, coverage
from core.runs.errors import RunError
from core.runs.inventory import Sources, inventory, list_projects
from core.runs.lifecycle import cancel, finish, list_runs, status
from core.runs.prepare import prepare
from core.runs.reuse import delete, resume, reuse
from core.runs.synthesis import groups
from core.runs.workdir import suggest_workdir

__all__ = ["RunError", "Sources", "cancel", "confirm", "coverage", "delete", "finish", "groups", "inventory",
           "list_projects", "list_runs", "prepare", "resume", "reuse", "status", "suggest_workdir"]
