"""Conformance of the built-in runner against kitsoki's own CI flows.

kitsoki's CI (`make test` -> scripts/run-tests.sh) runs `kitsoki test flows stories/<x>/app.yaml`
for every story except the quarantined repo-bakeoff and bench-bugfix, and every flow passes at
the commit the workspace was taken from. Run the same flows here and sort each into one of:

* passed;
* not supported: every failure is `not supported by the built-in runner: <what>` (the runner
  declined to judge; `<what>` is counted);
* without its script: failed in an app whose Starlark scripts the copy leaves out (a `*.star.yaml`
  sidecar without its `.star`: see its SOURCE.txt); kitsoki fails these here too, its
  host.starlark.run finding no script;
* refused: the app does not load in this copy, as kitsoki refuses it here too (a Starlark script
  left out of the copy: see its SOURCE.txt); `kitsoki test flows` exits 2 on such an app;
* failed: anything else. kitsoki passes these flows, so each is a bug of ours.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from core.flows import run_app_flows
from core.flows.fixtures import UNSUPPORTED
from core.flows.report import FlowResult

QUARANTINED = ("repo-bakeoff", "bench-bugfix")
"""Stories kitsoki's CI leaves out (scripts/run-tests.sh)."""


def ci_apps(workspace: Path) -> list[Path]:
    """stories/*/app.yaml of the workspace, less the quarantined stories, sorted."""
    return [app for app in sorted(Path(workspace).glob("stories/*/app.yaml")) if app.parent.name not in QUARANTINED]


def unsupported_reason(result: FlowResult) -> str | None:
    """`<what>` when the flow only failed for not being supported, else None."""
    failures = result.failures()
    if result.Passed or not failures or not all(failure.startswith(UNSUPPORTED) for failure in failures):
        return None
    return re.sub(r" \((turns? [0-9.]+ not run after it|the flow did not start: \d+ turns? not run)\)$", "",
                  failures[0][len(UNSUPPORTED) + 2:])


@dataclass
class Conformance:
    total: int = 0
    passed: int = 0
    unsupported: Counter = field(default_factory=Counter)
    failed: list[FlowResult] = field(default_factory=list)
    without_script: dict[str, list[str]] = field(default_factory=dict)
    """Flow file -> the scripts its app's copy leaves out (it failed, as kitsoki's run does here)."""
    refused: Counter = field(default_factory=Counter)
    """app -> flows not run because the app does not load here."""
    seconds: float = 0.0
    apps: int = 0

    @property
    def rate(self) -> float:
        return self.passed / self.total if self.total else 0.0

    def needs_loader(self) -> int:
        return sum(count for reason, count in self.unsupported.items() if "(needs the loader)" in reason)

    def as_dict(self) -> dict:
        return {"flows": self.total, "passed": self.passed, "pass_rate": round(self.rate, 4),
                "not_supported": dict(self.unsupported.most_common()), "needs_loader": self.needs_loader(),
                "failed": [{"file": r.File, "failures": r.failures()} for r in self.failed],
                "failed_without_script": self.without_script,
                "refused_apps": dict(self.refused),
                "apps": self.apps, "seconds": round(self.seconds, 3)}


def conformance(workspace: Path) -> Conformance:
    """Run every CI flow of the workspace with the built-in runner, one app at a time."""
    workspace = Path(workspace)
    out = Conformance()
    started = time.perf_counter()
    for app in ci_apps(workspace):
        out.apps += 1
        for result in run_app_flows(app, workspace).Results:
            out.total += 1
            failures = result.failures()
            if not result.Passed and failures and failures[0].startswith("app: ") and "does not load" in failures[0]:
                out.refused[app.parent.name] += 1
                continue
            if result.Passed:
                out.passed += 1
                continue
            reason = unsupported_reason(result)
            if reason is None and missing_scripts(app):
                out.without_script[result.File] = missing_scripts(app)
            elif reason is None:
                out.failed.append(result)
            else:
                out.unsupported[reason] += 1
    out.seconds = time.perf_counter() - started
    return out


def missing_scripts(app: Path) -> list[str]:
    """The app's Starlark scripts the copy leaves out: sidecars `<x>.star.yaml` without `<x>.star`."""
    folder = Path(app).parent
    return sorted(str(sidecar.relative_to(folder))[: -len(".yaml")] for sidecar in folder.rglob("*.star.yaml")
                  if not sidecar.with_suffix("").exists())
