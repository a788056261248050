"""Decision gates: where kitsoki's synthetic emit chain stops for a human (staged mode, `decider:`).

kitsoki's dispatchEmittedIntents checks, before firing a state's emits, whether that state is a
decision gate a human owes (isStagedGate): a state is a decision gate when one of its currently
available intents advances to another, non-exit state and is not itself one of the state's
`on_enter` emit targets (isDecisionGate: only an operator could pick it). The chain stops there in
`mode: staged` (a fixture key; only the post-bind settle runs staged) or when the state pins
`decider: human`; `decider: llm` never stops. At the origin of a chain (depth 0) emits that all
resolve to `hidden:` intents are routing, not a decision, and fire anyway (allEmitsHiddenRoutes).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from core.flows.expressions import ExprError, ExprUnsupported, render
from core.kitsoki.checks import resolve_target

if TYPE_CHECKING:
    from core.flows.machine import Machine


def stops_here(machine: Machine, state: str, world: dict[str, Any], emits: list[tuple[str, dict[str, Any]]],
               depth: int, staged: bool) -> bool:
    """Whether the emit chain rests at `state` instead of firing `emits` (kitsoki's gate check)."""
    if depth == 0 and _all_hidden_routes(machine, state, emits):
        return False
    found = machine.app.states.get(state)
    decider = str((found.raw.get("decider") if found is not None else "") or "").strip()
    if decider == "llm":
        return False
    if decider != "human" and not staged:
        return False
    return is_decision_gate(machine, state, world)


def is_decision_gate(machine: Machine, state: str, world: dict[str, Any]) -> bool:
    from core.flows.machine import Abort, Unsupported, _env

    found = machine.app.states.get(state)
    if found is None:
        return False
    emit_targets = {machine.resolve_alias(state, str(effect.get("emit_intent")).strip())
                    for effect in found.on_enter
                    if isinstance(effect, dict) and str(effect.get("emit_intent") or "").strip()}
    env = _env(world, {})
    for name in machine.allowed(state):
        if name in emit_targets:
            continue  # an auto-advance outcome, not an operator's choice
        try:
            arm, path, _ = machine.find_transition(state, name, env)
        except Abort:
            continue  # a guard that errors: not available this turn
        if arm is None:
            continue
        raw = arm.target.strip()
        if raw.startswith("@exit") or raw.startswith("__exit__"):
            continue
        if "{{" in raw:
            try:
                raw = render(raw, env).strip()
            except ExprError:
                pass  # kitsoki treats an unrendered target as a forward branch
            except ExprUnsupported as exc:
                raise Unsupported(f"target {raw!r} ({exc})") from None
        if resolve_target(path, raw) == state:
            continue  # a self loop (look), not a branch
        return True
    return False


def _all_hidden_routes(machine: Machine, state: str, emits: list[tuple[str, dict[str, Any]]]) -> bool:
    if not emits:
        return False
    for name, _slots in emits:
        declared = machine.app.lookup_intent(state, machine.resolve_alias(state, name))
        if declared is None or not declared.hidden:
            return False
    return True
