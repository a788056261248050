"""JSON Schemas of the formats we own, generated from the pydantic models.

`python -m core.schemas` rewrites schemas/; a test fails when the committed files drift.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from pydantic import TypeAdapter

from core.flows import FlowReport
from core.learnings.evolve import Analysis, ConfirmResult
from core.learnings.schema import LearningRecord
from core.learnings.store import WriteResult
from core.mining.passes import MineResult
from core.mining.recipes import RecipesFile
from core.mining.watermark import MiningState
from core.proposals.decide import Decision
from core.proposals.model import Proposal
from core.proposals.proposer import ProposerReport
from core.runs.model import (
    CoverageResult,
    FinishResult,
    PrepareResult,
    ProjectsPage,
    RunList,
    RunRecord,
    RunStatus,
    SynthesisRound,
)
from core.trace import TRACE_MODELS
from core.transcripts.ingest import ScanReport
from core.transcripts.model import Session

SCHEMA_DIR = Path(__file__).resolve().parent.parent / "schemas"

MODELS: dict[str, type] = {
    "transcript-session.schema.json": Session,
    "sessions-report.schema.json": ScanReport,
    "recipes.schema.json": RecipesFile,
    "mine-result.schema.json": MineResult,
    "mining-state.schema.json": MiningState,
    "proposal.schema.json": Proposal,
    "proposer-report.schema.json": ProposerReport,
    "decision.schema.json": Decision,
    "flow-report.schema.json": FlowReport,
    "learning-record.schema.json": LearningRecord,
    "learnings-write-result.schema.json": WriteResult,
    "evolve-analysis.schema.json": Analysis,
    "evolve-confirm.schema.json": ConfirmResult,
    "run.schema.json": RunRecord,
    "runs-projects.schema.json": ProjectsPage,
    "runs-coverage.schema.json": CoverageResult,
    "runs-prepare.schema.json": PrepareResult,
    "runs-status.schema.json": RunStatus,
    "runs-list.schema.json": RunList,
    "runs-finish.schema.json": FinishResult,
    "runs-groups.schema.json": SynthesisRound,
    **TRACE_MODELS,
}


def render(model: type) -> str:
    schema = TypeAdapter(model).json_schema(mode="serialization", by_alias=True)
    schema = {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema}
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


def write(target: Path = SCHEMA_DIR, models: dict[str, type] | None = None) -> list[Path]:
    target.mkdir(parents=True, exist_ok=True)
    written = []
    for name, model in (MODELS if models is None else models).items():
        path = target / name
        path.write_text(render(model))
        written.append(path)
    return written


if __name__ == "__main__":
    for path in write(Path(sys.argv[1]) if len(sys.argv) > 1 else SCHEMA_DIR):
        print(path)
