"""The apply gate: an accepted proposal becomes a change to the user's files only here, and is
kept only while the flow gate stays green (applier), with a journal so a crash never leaves a
half-applied tree (journal, finished by recovery), judged by a flow gate that fails closed (gates)
over exactly the apps the change reaches (gate_scope, run by scoped_gate; gate_checks for a change
no flow exercises)."""

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
