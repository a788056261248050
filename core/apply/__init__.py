"""The apply gate: an accepted proposal becomes a change to the user's files only here, and is
kept only while the flow gate stays green (applier), with a journal so a crash never leaves a
half-applied tree (journal, finished by recovery), judged by a flow gate that fails closed (gates)
over exactly the apps the change reaches (gate_scope, run by scoped_gate; gate_checks for a change
no flow exercises)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from core.apply.applier import HOOK_POINTS, ApplyOutcome, ApplyRefused, apply_delta
    from core.apply.gates import (
        Gate,
        GateResult,
        GateSettings,
        builtin_gate,
        choose_gate,
        command_gate,
        kitsoki_gate,
    )
    from core.apply.journal import RevertFailed, journal_dir
    from core.apply.recovery import recover

# Each name is imported from its module on first use (PEP 562): every CLI command first runs
# `recover`, and must not pay for the applier, the flow gate and the flow runner behind them.
_WHERE = {
    "HOOK_POINTS": "applier", "ApplyOutcome": "applier", "ApplyRefused": "applier", "apply_delta": "applier",
    "Gate": "gates", "GateResult": "gates", "GateSettings": "gates", "builtin_gate": "gates",
    "choose_gate": "gates", "command_gate": "gates", "kitsoki_gate": "gates",
    "RevertFailed": "journal", "journal_dir": "journal",
    "recover": "recovery",
}


def __getattr__(name: str):
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'core.apply' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"core.apply.{module}"), name)
    globals()[name] = value
    return value


__all__ = [
    "HOOK_POINTS",
    "ApplyOutcome",
    "ApplyRefused",
    "Gate",
    "GateResult",
    "GateSettings",
    "RevertFailed",
    "apply_delta",
    "builtin_gate",
    "choose_gate",
    "command_gate",
    "journal_dir",
    "kitsoki_gate",
    "recover",
]
