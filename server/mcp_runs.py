"""`kitsoki-miner mcp`: the prepared-analysis-runs operations (core.runs) as MCP tools over stdio.

A coordinating coding agent drives a run with these tools, in this order: `runs_workdir` (a
suggestion only; the agent or the user chooses), `runs_projects`, `runs_coverage` (aggregates only),
show the coverage to the user, `runs_confirm`, `runs_prepare` (no selection arguments), then hand
each `plan/Txxxx/README.md` to one subworker, `runs_status` as analyses arrive, `runs_groups` for
synthesis, `runs_finish`. `runs_reuse`, `runs_resume`, `runs_cancel` and `runs_delete` manage runs.

Every call's whole arguments object is checked against core.runs.bounds before anything runs (at
most 24 KiB of JSON, strings at most 4,096 JSON bytes except goal and assignment, no NUL, workdir
absolute and normalized); the operations check their own arguments again before any mutation.
Results are JSON (text and structured content). A refusal or failure is a tool error
(`isError: true`) whose content is the RunError's `to_json()`: {"error": kind, "message": ..., ...}.
"""

from __future__ import annotations

import inspect
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import anyio
import anyio.from_thread
import anyio.to_thread
import orjson
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field, ValidationError

from core import runs
from core.runs.bounds import check_args
from core.runs.errors import BoundsError, RunError
from core.runs.inventory import Sources
from core.runs.prepare import DEFAULT_WORKERS, PHASES

INSTRUCTIONS = __doc__.split("\n\n", 1)[1]
log = logging.getLogger(__name__)

Workdir = Annotated[str, Field(description="the run workdir: an absolute, normalized path the user chose "
                                           "(runs_workdir only suggests one)")]
RunId = Annotated[str, Field(description="the exact Run ID, as a previous tool result gave it")]
OptRunId = Annotated[str | None, Field(description="the exact Run ID; omit to mean this session's one run "
                                                   "in preparation")]
Session = Annotated[str | None, Field(description="the current (coordinating) session's id: excluded from "
                                                  "coverage, and at most one active run per session")]
Dirs = Annotated[list[str] | None, Field(description="absolute directories to read transcripts from instead "
                                                     "of the default Claude Code and Pi locations")]


class UnknownArguments(RunError):
    kind = "unknown-arguments"


class InvalidArguments(RunError):
    kind = "invalid-arguments"


def _sources(dirs: list[str] | None) -> Sources | None:
    if not dirs:
        return None
    for d in dirs:
        if not os.path.isabs(d) or os.path.normpath(d) != d:
            raise BoundsError(f"dirs: {d!r} is not an absolute, normalized path", field="dirs")
    return Sources(dirs=[Path(d) for d in dirs])


def _dump(value) -> dict:
    return value.model_dump(mode="json") if hasattr(value, "model_dump") else value


def _error(exc: RunError) -> CallToolResult:
    payload = exc.to_json()
    return CallToolResult(content=[TextContent(type="text", text=orjson.dumps(payload).decode())],
                          structured_content=payload, is_error=True)


async def _run(fn: Callable, *args, **kwargs) -> dict:
    """A core operation (blocking, file-system bound) off the event loop; its result as JSON."""
    return _dump(await anyio.to_thread.run_sync(lambda: fn(*args, **kwargs)))


# --- the tools ----------------------------------------------------------------------------------

async def runs_workdir() -> dict[str, Any]:
    """Suggest a workdir: the last plan-ready run's, or the default ~/llm_session_analyze.

    Only a suggestion: ask the user, then pass the chosen absolute path as `workdir` to the other
    tools. Returns {"suggestion", "source": "preference"|"default", "warning"}; a missing or
    malformed preference is a warning, never a failure.
    """
    return await _run(runs.suggest_workdir)


async def runs_projects(offset: Annotated[int, Field(ge=0, description="first entry of the page")] = 0,
                        limit: Annotated[int, Field(ge=1, le=500, description="entries per page")] = 50,
                        dirs: Dirs = None) -> dict[str, Any]:
    """List the projects (full roots) named by Claude Code and Pi session headers, most recent first.

    Paged: when `next_offset` is not null, call again with that offset. Pass a listed `project`
    root to runs_coverage.
    """
    return await _run(runs.list_projects, _sources(dirs), offset=offset, limit=limit)


async def runs_coverage(
    workdir: Workdir,
    project: Annotated[str, Field(description="the project's full root, as runs_projects lists it")],
    since: Annotated[str | None, Field(description="YYYY-MM-DD or an ISO-8601 instant")] = None,
    until: Annotated[str | None, Field(description="YYYY-MM-DD (the whole day) or an ISO-8601 instant")] = None,
    run_id: Annotated[str | None, Field(description="recompute this run's coverage (clears its confirmation); "
                                                    "omit to create a new run")] = None,
    name: Annotated[str | None, Field(description="run name (default: the project's folder name)")] = None,
    goal: Annotated[str, Field(description="what the analysis is for (at most 10,000 JSON bytes)")] = "",
    assignment: Annotated[str | None, Field(description="the English assignment every worker gets "
                                                        "(at most 8,192 bytes)")] = None,
    exclude: Annotated[list[str] | None, Field(description="session ids the user wants left out")] = None,
    current_session: Session = None,
    redact: Annotated[bool, Field(description="redact secrets in the evidence")] = True,
    dirs: Dirs = None,
) -> dict[str, Any]:
    """Compute the coverage of one project and timeframe; creates a run (status preparing) or updates one.

    Aggregates only: session count, earliest/latest instant, approximate bytes, supported and
    unsupported counts, and the exclusions (current session, named ids). Show it to the user; after
    they agree, call runs_confirm with the returned coverage digest. Changing the timeframe (same
    run_id) recomputes and clears an earlier confirmation.
    """
    return await _run(runs.coverage, workdir, project, since, until, run_id=run_id, name=name, goal=goal,
                      assignment=assignment, exclude=list(exclude or ()), current_session=current_session,
                      redact=redact, sources=_sources(dirs))


async def runs_confirm(workdir: Workdir, run_id: OptRunId = None,
                       digest: Annotated[str | None, Field(description="the coverage digest shown to the user; "
                                                                       "refused when the coverage changed")] = None,
                       current_session: Session = None) -> dict[str, Any]:
    """Confirm the coverage last shown (pass its `coverage.digest`), so that runs_prepare may run."""
    return await _run(runs.confirm, workdir, run_id, digest=digest, current_session=current_session)


async def runs_prepare(workdir: Workdir, run_id: OptRunId = None, current_session: Session = None,
                       workers: Annotated[int, Field(ge=1, le=32, description="worker processes")] = DEFAULT_WORKERS,
                       dirs: Dirs = None, ctx: Context | None = None) -> dict[str, Any]:
    """Prepare the confirmed run: no selection arguments, only the confirmation counts.

    Phases: checking sessions (a session changed since confirmation fails visibly, keeps the Run
    ID and requires a new coverage and confirmation), preparing excerpts, creating snippets
    (`plan/Txxxx/snippet.md`, at most 64 KiB each), writing and validating the plan. On success the
    run is plan-ready: read the returned `readme`, then give each `plan/Txxxx/README.md` to one
    subworker, in order. Reports progress when the client asks for it.
    """
    report = _progress(ctx)
    return await _run(runs.prepare, workdir, run_id, current_session=current_session, sources=_sources(dirs),
                      workers=workers, progress=report)


def _progress(ctx: Context | None):
    """Phase progress as one increasing value over the four phases (0..4); a no-op for a client that
    did not ask for progress."""
    if ctx is None:
        return None
    last = [0.0]

    def report(phase: str, done: int, total: int) -> None:
        index = PHASES.index(phase) if phase in PHASES else 0
        value = max(last[0], index + (min(done, total) / total if total else 0.0))
        last[0] = value
        try:
            anyio.from_thread.run(ctx.report_progress, value, float(len(PHASES)), phase)
        except Exception:  # progress is best effort; the operation goes on
            log.debug("progress report failed", exc_info=True)

    return report


async def runs_list(workdir: Workdir) -> dict[str, Any]:
    """List the runs in a workdir with their status and progress; unreadable run directories are
    listed under `broken` (named, never skipped)."""
    return await _run(runs.list_runs, workdir)


async def runs_status(workdir: Workdir, run_id: RunId) -> dict[str, Any]:
    """A run's status as the files on disk support it: preparing | plan-ready | analyzing | complete |
    canceled | failed, with each task's state (pending, done, conflict, partial) and notes."""
    return await _run(runs.status, workdir, run_id)


async def runs_reuse(workdir: Workdir, run_id: RunId,
                     goal: Annotated[str, Field(description="the new run's goal (at most 10,000 JSON bytes)")],
                     name: Annotated[str | None, Field(description="the new run's name")] = None,
                     assignment: Annotated[str | None, Field(description="the new run's worker assignment")] = None,
                     current_session: Session = None) -> dict[str, Any]:
    """Start a new sibling run over an existing run's cut, with its own Run ID, goal and outputs.

    Its task READMEs point at the original, read-only snippets; reusing a reuse resolves to the
    original cut.
    """
    return await _run(runs.reuse, workdir, run_id, goal=goal, name=name, assignment=assignment,
                      current_session=current_session)


async def runs_resume(workdir: Workdir, run_id: RunId, current_session: Session = None) -> dict[str, Any]:
    """Take up a prepared run again (same Run ID): valid outputs are revalidated by digest; conflicting
    or partial files are kept and reported, never overwritten."""
    return await _run(runs.resume, workdir, run_id, current_session=current_session)


async def runs_finish(workdir: Workdir, run_id: RunId,
                      partial: Annotated[bool, Field(description="complete over missing tasks; summary.md must "
                                                                 "say PARTIAL and name them")] = False
                      ) -> dict[str, Any]:
    """Verify every `analyze/Txxxx/analysis.md` and `summary.md`, record their digests, and complete the run.

    `complete` is false (with `missing` and `problems`) when anything is missing: a missing task blocks
    completion unless `partial` is set and the summary is labelled partial.
    """
    return await _run(runs.finish, workdir, run_id, partial=partial)


async def runs_cancel(workdir: Workdir, run_id: RunId) -> dict[str, Any]:
    """Cancel an active run; every file is kept."""
    return await _run(runs.cancel, workdir, run_id)


async def runs_delete(workdir: Workdir, run_id: RunId) -> dict[str, Any]:
    """Delete a finished, canceled or failed run's directory. Needs the exact Run ID; refused while the
    run is active or while other runs reuse its cut."""
    return await _run(runs.delete, workdir, run_id)


async def runs_groups(workdir: Workdir, run_id: RunId,
                      budget_bytes: Annotated[int, Field(ge=1, description="context budget per group, in bytes")],
                      round: Annotated[int, Field(ge=1, description="synthesis round: 1 groups the analyses, "
                                                                    "round n groups round n-1's outputs")] = 1
                      ) -> dict[str, Any]:
    """Ordered groups of analyses that fit a context budget, for synthesis round after round.

    Each group names its inputs and the output path to write (kept in the run directory); when
    `final` is true the one group's output is the input for summary.md. Original analyses are never
    changed.
    """
    return await _run(runs.groups, workdir, run_id, budget_bytes, round)


READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
WRITES = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)
DESTRUCTIVE = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False,
                              open_world_hint=False)

TOOLS: dict[str, tuple[Callable, ToolAnnotations]] = {
    "runs_workdir": (runs_workdir, READ_ONLY),
    "runs_projects": (runs_projects, READ_ONLY),
    "runs_coverage": (runs_coverage, WRITES),
    "runs_confirm": (runs_confirm, WRITES),
    "runs_prepare": (runs_prepare, WRITES),
    "runs_list": (runs_list, READ_ONLY),
    "runs_status": (runs_status, READ_ONLY),
    "runs_reuse": (runs_reuse, WRITES),
    "runs_resume": (runs_resume, WRITES),
    "runs_finish": (runs_finish, WRITES),
    "runs_cancel": (runs_cancel, DESTRUCTIVE),
    "runs_delete": (runs_delete, DESTRUCTIVE),
    "runs_groups": (runs_groups, WRITES),
}

_PARAMS = {name: {p for p in inspect.signature(fn).parameters if p != "ctx"} for name, (fn, _) in TOOLS.items()}


def _cause(exc: BaseException) -> BaseException | None:
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, (RunError, ValidationError)):
            return exc
        exc = exc.__cause__
    return None


class RunsServer(MCPServer):
    """MCPServer whose tool calls are bounded as a whole and whose RunErrors are JSON tool errors."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context=None):
        if name in TOOLS:
            try:
                check_args(arguments)  # the whole object, before validation and before any mutation
                unknown = sorted(set(arguments) - _PARAMS[name])
                if unknown:
                    raise UnknownArguments(f"{name}: unknown arguments {', '.join(unknown)}; "
                                           f"it takes {', '.join(sorted(_PARAMS[name])) or 'none'}",
                                           unknown=unknown, accepted=sorted(_PARAMS[name]))
            except RunError as exc:
                return _error(exc)
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = _cause(exc)
            if isinstance(cause, RunError):
                return _error(cause)
            if isinstance(cause, ValidationError):
                fields = sorted({".".join(str(p) for p in e["loc"]) for e in cause.errors()})
                msgs = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in cause.errors())
                return _error(InvalidArguments(f"{name}: {msgs}", fields=fields))
            raise


def build_server() -> RunsServer:
    server = RunsServer(name="kitsoki-runs", instructions=INSTRUCTIONS, log_level="WARNING")
    for name, (fn, hints) in TOOLS.items():
        server.add_tool(fn, name=name, annotations=hints)
    return server


async def serve() -> None:
    """Serve the tools over stdio until the client closes the connection."""
    await build_server().run_stdio_async()


def main() -> int:
    anyio.run(serve)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
