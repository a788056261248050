"""The flow report, in kitsoki's shapes: `kitsoki test flows --json` and its text output.

kitsoki's report structs carry no json tags, so its `--json` keys are the Go field names;
these models use the same names, and `report.model_dump()` is that document (`Events` is
always null here: the built-in runner records no machine events). `format_text` reproduces
`PrintFlowReport` (internal/testrunner/flows.go) byte for byte, including its tabwriter
padding (minwidth 2, tabwidth 4, padding 2, spaces) and the base-name-only file column.
"""

from __future__ import annotations

import os
from typing import Any

from pydantic import BaseModel, Field

SESSION_TURN = -1
"""TurnIndex of the synthetic turn holding a flow's session-level failures."""


class TurnResult(BaseModel):
    TurnIndex: int
    Passed: bool
    Failures: list[str] = Field(default_factory=list)
    NewState: str = ""
    View: str = ""
    Events: list[dict[str, Any]] | None = None
    """kitsoki records the machine's events here; the built-in runner records none (null)."""


FATAL = "(kitsoki stops the run here)"
"""Ends a failure where kitsoki's run returns an error: `kitsoki test flows` then aborts the whole app
run (no report, exit 2; internal/testrunner/flows.go:1184-1186, cmd/kitsoki/test_flows.go:69-72)."""


class FlowResult(BaseModel):
    File: str
    Passed: bool
    Turns: list[TurnResult] = Field(default_factory=list)
    Skipped: bool = False

    def failures(self) -> list[str]:
        """Every failure of the flow, turn failures first, in report order."""
        return [failure for turn in self.Turns for failure in turn.Failures]

    def fatal(self) -> str | None:
        """The failure that would abort kitsoki's whole app run, or None."""
        return next((failure for failure in self.failures() if failure.endswith(FATAL)), None)


class FlowReport(BaseModel):
    Results: list[FlowResult] = Field(default_factory=list)
    Passed: int = 0
    Failed: int = 0

    @classmethod
    def of(cls, results: list[FlowResult]) -> FlowReport:
        """A report over results, counted like kitsoki's RunFlows (skipped flows count neither way)."""
        passed = sum(1 for r in results if not r.Skipped and r.Passed)
        failed = sum(1 for r in results if not r.Skipped and not r.Passed)
        return cls(Results=list(results), Passed=passed, Failed=failed)

    @property
    def green(self) -> bool:
        """True only when at least one flow ran and none failed (zero fixtures is red)."""
        return self.Failed == 0 and self.Passed > 0

    def fatal(self) -> str | None:
        """`<file>: <failure>` of the first flow whose run kitsoki would abort (exit 2, no report for
        the app), or None."""
        for result in self.Results:
            failure = result.fatal()
            if failure is not None:
                return f"{result.File}: {failure}"
        return None


NO_FIXTURES = "no flow fixtures matched"


def format_text(report: FlowReport) -> str:
    """kitsoki's text report (`PrintFlowReport`), ending in a `PASS` or `FAIL` line.

    Zero results differs on purpose: kitsoki stops with `no flow fixtures matched` (exit 2)
    before printing; here that line heads an otherwise normal report ending in FAIL.
    """
    table: list[str] = []
    for result in report.Results:
        status = "SKIP" if result.Skipped else "PASS" if result.Passed else "FAIL"
        table.append(f"{status:<6}\t{os.path.basename(result.File)}\n")
        for turn in result.Turns:
            mark = "  ok  " if turn.Passed else "  FAIL"
            if turn.TurnIndex < 0:
                table.append(f"  {mark}\t[session]\n")
            else:
                table.append(f"  {mark}\tturn {turn.TurnIndex + 1} → {turn.NewState}\n")
            for failure in turn.Failures:
                table.append(f"\t  ✗ {failure}\n")
    head = f"{NO_FIXTURES}\n" if not report.Results else ""
    verdict = "FAIL" if report.Failed > 0 or not report.Results else "PASS"
    return (f"{head}{tabwrite(''.join(table))}\nSummary: {report.Passed}/{report.Passed + report.Failed} "
            f"flows pass\n{verdict}\n")


# --- Go's text/tabwriter, as PrintFlowReport configures it ------------------------------------


def tabwrite(text: str, minwidth: int = 2, padding: int = 2) -> str:
    """Align tab-terminated cells like `tabwriter.NewWriter(w, minwidth, 4, padding, ' ', 0)`.

    A cell is text followed by a tab; the last cell of a line is never aligned. A column
    block is a run of consecutive lines having a cell in that column; its width is the
    widest cell (in runes) plus padding, at least minwidth.
    """
    if not text:
        return ""
    trailing = text.endswith("\n")
    lines = [line.split("\t") for line in (text[:-1] if trailing else text).split("\n")]
    out: list[str] = []
    widths: list[int] = []

    def write_lines(start: int, end: int) -> None:
        for cells in lines[start:end]:
            parts = []
            for j, cell in enumerate(cells):
                parts.append(cell)
                if j < len(widths) and j < len(cells) - 1:
                    parts.append(" " * (widths[j] - len(cell)))
            out.append("".join(parts))

    def format_block(line0: int, line1: int) -> None:
        column = len(widths)
        this = line0
        while this < line1:
            if column >= len(lines[this]) - 1:
                this += 1
                continue
            write_lines(line0, this)
            line0 = this
            width = minwidth
            while this < line1 and column < len(lines[this]) - 1:
                width = max(width, len(lines[this][column]) + padding)
                this += 1
            widths.append(width)
            format_block(line0, this)
            widths.pop()
            line0 = this
        write_lines(line0, line1)

    format_block(0, len(lines))
    return "\n".join(out) + ("\n" if trailing else "")
