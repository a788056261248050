"""Synthesis help: ordered groups of analyses that fit a context budget, round after round.

Round 1 groups the tasks' analyses in task order; round n+1 groups round n's outputs. Each round's
plan is `synthesis/round-NN/groups.json`, its outputs `synthesis/round-NN/Gnnn.md`, all kept in the
run directory. The original analyses are only read, never changed.
"""

from __future__ import annotations

from pathlib import Path

import orjson

from core.runs import store
from core.runs.bounds import bounded
from core.runs.errors import Refused
from core.runs.files import contained, write_bytes
from core.runs.lifecycle import check_output, task_states
from core.runs.model import SynthesisGroup, SynthesisRound

MIN_BUDGET = 1024


def _round_dir(rel: str, n: int) -> str:
    return f"{rel}/synthesis/round-{n:02d}"


def plan_groups(inputs: list[tuple[str, int]], budget: int, prefix: str) -> list[SynthesisGroup]:
    groups: list[SynthesisGroup] = []
    for path, size in inputs:
        last = groups[-1] if groups else None
        if last is not None and not last.oversize and last.bytes + size <= budget:
            last.inputs.append(path)
            last.bytes += size
            continue
        gid = f"G{len(groups) + 1:03d}"
        groups.append(SynthesisGroup(id=gid, inputs=[path], bytes=size, output=f"{prefix}/{gid}.md",
                                     oversize=size > budget))
    return groups


@bounded
def groups(workdir: str, run_id: str, budget_bytes: int, round: int = 1) -> SynthesisRound:
    wd = Path(workdir)
    if budget_bytes < MIN_BUDGET:
        raise Refused(f"budget_bytes must be at least {MIN_BUDGET}")
    if round < 1 or round > 99:
        raise Refused("round must be between 1 and 99")
    run_dir, record = store.load(wd, run_id)
    if record.plan is None or record.status not in ("plan-ready", "analyzing", "complete"):
        raise Refused(f"run {run_id} is {record.status}; there are no analyses to group")
    if round == 1:
        states = task_states(wd, record)
        waiting = [s.id for s in states if s.state != "done"]
        if waiting:
            raise Refused(f"tasks without a valid analysis: {', '.join(waiting)}", missing=waiting)
        paths = [t.output for t in record.plan.tasks]
    else:
        previous = contained(wd, f"{_round_dir(record.dir, round - 1)}/groups.json")
        if not previous.is_file():
            raise Refused(f"round {round - 1} has not been planned")
        prev = SynthesisRound.model_validate_json(previous.read_bytes())
        if prev.final:
            raise Refused(f"round {round - 1} was final: write summary.md from its output")
        paths = [g.output for g in prev.groups]
    inputs = []
    for p in paths:
        state, detail, _, size = check_output(wd, p)
        if state != "done":
            raise Refused(f"{p} is not ready ({state}{': ' + detail if detail else ''})")
        inputs.append((p, size))
    rdir = _round_dir(record.dir, round)
    result = SynthesisRound(run_id=run_id, round=round, budget_bytes=budget_bytes,
                            groups=plan_groups(inputs, budget_bytes, rdir), final=False)
    result.final = len(result.groups) == 1
    target = contained(wd, f"{rdir}/groups.json")
    if target.exists():
        old = SynthesisRound.model_validate_json(target.read_bytes())
        if old == result:
            return old
        made = [g.output for g in old.groups if contained(wd, g.output).exists()]
        if made:
            raise Refused(f"round {round} already has outputs ({', '.join(made)}); its groups are kept")
    write_bytes(wd, f"{rdir}/groups.json",
                orjson.dumps(result.model_dump(mode="json"), option=orjson.OPT_INDENT_2) + b"\n")
    return result
