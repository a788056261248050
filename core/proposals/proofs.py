"""Every proposal carries its own proof: a NEW flow fixture beside the flows of the app it changes.

A proof asserts what the proposal claims, so the flow gate runs it with the rest and a green says
the new behaviour works (and the project keeps a regression test). What a kitsoki flow can assert
is kitsoki's to say (internal/testrunner/flows.go at 1f4abf0e), and it decides what each kind gets:

- a new intent with a room: from where the story starts, the intent lands in the room, whose
  on_enter hands the work to `host.agent.task` with the room's agent (stubbed by `host_handlers`);
- a new review state: the review intent lands in it and rests there (no decider moves on without a
  person), then `approve` leaves it;
- `decider: human` on an existing state: arriving there rests there, when a flow can see that (the
  state auto-advances without it); otherwise kitsoki gives a flow no way to see it, and the card
  says so;
- a world override (rung 1): a root flow (`flows/` beside `.kitsoki.yaml`, run against the
  synthesized root, as `kitsoki materialize` emits it) asserts the root instance's world holds it;
- a binding override (rung 1): a root flow drives the root instance into a room whose on_enter
  invokes the rebound interface and asserts the new handler is called;
- phrasings (synonyms, examples) are never a flow's to prove: a turn names its intent and an
  `input:` turn resolves only through a recording (flows.go:1149-1167, 1544-1550). They are
  checked with the built-in router instead, and the card says so.

A proof is kept only if it proves something: it must pass on the tree with the change and fail on
the tree without it (core.proposals.validate runs both with the built-in runner when it can run
the flow). A fixture that passes either way is dropped and the card says no flow can show it.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from core.apply.gates import ROOT_APP, UNSUPPORTED_PREFIX
from core.kitsoki.model import Story, Workspace
from core.kitsoki.story import initial_leaf, relative, resolve_target
from core.proposals.targets import proof_fixture_path

PHRASING_UNPROVABLE = ("no kitsoki flow can assert where a phrasing routes (a flow turn names its intent; an input: "
                       "turn resolves only through a recording)")
TASK_RESULT = {"submitted": {"summary_markdown": "Done (a stub of the agent's answer).", "files_changed": []}}


@dataclass
class Proof:
    """A proposal's proof: the new fixture, what it asserts, and what no flow can assert."""

    path: str | None = None
    """The new fixture, workspace-relative (None: no flow can prove the claim)."""
    text: str = ""
    app: str | None = None
    """The app it runs against: a workspace-relative app.yaml, or ROOT_APP for a root flow."""
    claims: list[str] = field(default_factory=list)
    """What the fixture asserts, in words."""
    unprovable: list[str] = field(default_factory=list)
    """What the proposal claims that no kitsoki flow can assert, how it was checked instead."""
    verified: str = ""
    """How the proof was checked before it was shown (core.proposals.validate)."""
    required: bool = True
    """The fixture asserts the draft's own structure: failing on the staged tree refuses the draft.
    False for a fixture that only tries to watch the change from outside (arriving at a gate, a
    binding reached through dev-story's rooms): failing there drops the fixture, not the draft."""


def _document(recipe_id: str, title: str, claims: list[str], body: dict[str, Any]) -> str:
    head = [f"# Proof of kitsoki-miner proposal {recipe_id}: {title}",
            "# Added with the proposal (a new file: existing fixtures are never changed). It asserts:"]
    head += [f"#   - {claim}" for claim in claims]
    head.append("# It runs with the app's other flows (`kitsoki test flows`); delete it if you drop the change.")
    return "\n".join(head) + "\n" + yaml.safe_dump(body, sort_keys=False, allow_unicode=True, width=100)


def _app_dir(workspace: Path, story: Story) -> str:
    return relative(workspace, story.dir)


def new_room_proof(recipe_id: str, title: str, app: str, intent: str, room: str, agent: str, start: str) -> Proof:
    """`intent` from `start` lands in `room`, whose on_enter hands the work to host.agent.task."""
    claims = [f"the intent {intent} takes the story from {start} to {room}",
              f"{room} hands the work to host.agent.task with the agent {agent} (stubbed here)"]
    body = {"test_kind": "flow", "name": f"mined: {intent} reaches {room}", "initial_state": start,
            "host_handlers": {"host.agent.task": {"data": TASK_RESULT}},
            "turns": [{"intent": {"name": intent}, "expect_state": room,
                       "expect_host_calls": [{"handler": "host.agent.task", "args": {"agent": agent}, "times": 1}]}]}
    path = proof_fixture_path(str(Path(app).parent.as_posix()), recipe_id)
    return Proof(path=path, text=_document(recipe_id, title, claims, body), app=app, claims=claims)


def review_proof(workspace: Path, recipe_id: str, title: str, story: Story, enter: str, state: str,
                 start: str) -> Proof:
    """The review intent lands in the new human-decided state and rests there until a person acts.
    (Leaving it re-enters the room it came from, whose on_enter may need a world the flow cannot
    know; the proof stops at the gate.)"""
    claims = [f"the intent {enter} takes the story from {start} to the review state {state}",
              f"{state} rests there for a person (nothing moves on by itself)"]
    body = {"test_kind": "flow", "name": f"mined: {state} holds for a human", "initial_state": start,
            "turns": [{"intent": {"name": enter}, "expect_state": state}]}
    path = proof_fixture_path(_app_dir(workspace, story), recipe_id)
    return Proof(path=path, text=_document(recipe_id, title, claims, body), app=relative(workspace, story.path),
                 claims=claims)


def arrival_proof(workspace: Path, recipe_id: str, title: str, story: Story, state: str) -> Proof:
    """`decider: human` at `state`: an unguarded arm into it from another state, arriving rests there.
    Whether a flow can see it at all is settled by running it without the change."""
    for source_path, source in sorted(story.states.items()):
        if source_path == state or source.type in ("compound", "parallel") or source.from_library:
            continue
        for intent, arms in sorted(source.on.items()):
            for arm in arms:
                if arm.when or not arm.target or "{{" in arm.target or intent == "*":
                    continue
                if resolve_target(story, source_path, arm.target) == state:
                    claims = [f"arriving at {state} (by {intent} from {source_path}) rests there for a person"]
                    body = {"test_kind": "flow", "name": f"mined: {state} waits for a human",
                            "initial_state": source_path,
                            "turns": [{"intent": {"name": intent}, "expect_state": state}]}
                    path = proof_fixture_path(_app_dir(workspace, story), recipe_id)
                    return Proof(path=path, text=_document(recipe_id, title, claims, body),
                                 app=relative(workspace, story.path), claims=claims, required=False)
    return Proof(unprovable=[f"decider: human at {state}: no unguarded arm leads there, so no flow can arrive to "
                             "show it"])


def world_proof(workspace: Path, recipe_id: str, title: str, root: Story | None, key: str, value: Any) -> Proof:
    """A root flow: the root instance's world holds the override (what dev-story gets through world_in)."""
    start = initial_leaf(root, "root") if root is not None else "root.landing"
    claims = [f"the root instance's world holds {key} = {value!r} (dev-story receives it through world_in on entry; "
              "a flow starts inside the root, so it cannot watch that projection itself)"]
    body = {"test_kind": "flow", "name": f"mined: the root instance's {key} is {value!r}", "initial_state": start,
            "turns": [{"advance_clock": "1s", "expect_state": start, "expect_world": {key: value}}]}
    return Proof(path=proof_fixture_path(".", recipe_id), text=_document(recipe_id, title, claims, body),
                 app=ROOT_APP, claims=claims)


def _stub_of(output: Any) -> Any:
    """A value of each declared output field's type, so the room's binds have something to bind."""
    kinds = {"list": [], "array": [], "string": "", "int": 0, "number": 0, "float": 0, "bool": False,
             "object": {}, "map": {}}
    if not isinstance(output, dict):
        return {}
    return {str(name): kinds.get(str(kind).strip().lower(), "") for name, kind in output.items()}


def binding_proof(workspace: Path, recipe_id: str, title: str, live: Story | None, staged: Story | None,
                  iface: str, handler: str) -> Proof:
    """A root flow from where the root starts, by one intent, into a room whose on_enter now invokes
    `handler` (it invoked something else before the change), asserting the handler is called."""
    if staged is None or staged.open_world or live is None:
        return Proof(unprovable=[f"the {iface} binding: a root flow could show {handler} is called, but dev-story's "
                                 "rooms are not here (only the summary of it we carry): set KITSOKI_REPO to a kitsoki "
                                 "checkout and propose again"])
    start = initial_leaf(staged, "root")
    changed: dict[str, tuple[str, Any]] = {}
    for path, state in staged.states.items():
        before = live.states.get(path)
        invokes = [step for step in state.on_enter if step.invoke]
        if not invokes or before is None:
            continue
        first = invokes[0]
        was = next((step.invoke for step in before.on_enter if step.invoke), None)
        if first.invoke and first.invoke.startswith(f"{handler}.") and first.invoke != was and \
                not first.raw.get("when"):
            changed[path] = (first.invoke, first.raw)
    scopes = [start]
    while "." in scopes[-1]:
        scopes.append(scopes[-1].rsplit(".", 1)[0])
    for scope in scopes:
        state = staged.states.get(scope)
        for intent, arms in sorted((state.on if state else {}).items()):
            for arm in arms:
                if arm.when or not arm.target or "{{" in arm.target:
                    continue
                target = resolve_target(staged, scope, arm.target)
                landed = initial_leaf(staged, target) if target else None
                if landed not in changed:
                    continue
                invoke, _ = changed[landed]
                op = invoke[len(handler) + 1:]
                claims = [f"the {iface} interface is bound to {handler}: entering {landed} (by {intent}) calls "
                          f"{invoke}"]
                body = {"test_kind": "flow", "name": f"mined: {iface} reaches {handler}", "initial_state": start,
                        "host_handlers": {handler: {"data": _stub_of(_output_of(staged, iface, op))}},
                        "turns": [{"intent": {"name": intent}, "expect_state": landed,
                                   "expect_host_calls": [{"handler": invoke, "times": 1}]}]}
                return Proof(path=proof_fixture_path(".", recipe_id), text=_document(recipe_id, title, claims, body),
                             app=ROOT_APP, claims=claims, required=False)
    return Proof(unprovable=[f"the {iface} binding: no room one intent away from {start} invokes it, so no root flow "
                             f"here shows {handler} being called"])


def _output_of(story: Story, iface: str, op: str) -> Any:
    interfaces = (story.definition or {}).get("host_interfaces") or {}
    for name in (iface, f"root__{iface}"):
        spec = interfaces.get(name) if isinstance(interfaces, dict) else None
        operations = spec.get("operations") if isinstance(spec, dict) else None
        if isinstance(operations, dict) and isinstance(operations.get(op), dict):
            return operations[op].get("output")
    return None


def phrasing_note(phrases: list[str], target: str, neighbours: list[tuple[str, str]]) -> str:
    """What the card says of phrasings: checked with the router, since no kitsoki flow can."""
    shown = ", ".join(f'"{p}"' for p in phrases[:3]) + (f" (+{len(phrases) - 3} more)" if len(phrases) > 3 else "")
    kept = "; ".join(f'"{phrase}" still routes to {intent}' for phrase, intent in neighbours[:2])
    return (f"phrasings: {shown} route to {target}" + (f", and {kept}" if kept else "")
            + f" (checked with the built-in router, a port of kitsoki's semroute: {PHRASING_UNPROVABLE})")


def proof_markdown(proof: Proof) -> str:
    """The card's word on the proof, appended to the summary both editors show."""
    parts = []
    if proof.path:
        where = "a root flow, run against the synthesized root" if proof.app == ROOT_APP else f"runs with {proof.app}'s flows"
        parts.append(f"**Proof**: `{proof.path}`, a new flow fixture ({where}). It asserts that "
                     + "; that ".join(proof.claims) + "." + (f" Checked: {proof.verified}." if proof.verified else ""))
    for line in proof.unprovable:
        parts.append(f"**Not proven by a flow**: {line}.")
    return ("\n\n" + "\n\n".join(parts)) if parts else ""


# --- running a proof ------------------------------------------------------------------------------------


def run_proof(proof: Proof, model: Workspace) -> tuple[str, list[str]]:
    """Run the proof's fixture with the built-in runner against its app in `model`:
    ("passed" | "failed" | "not run", the failures or why)."""
    from core.flows.fixtures import load_fixture_file
    from core.flows.runner import run_fixture
    from core.flows.workdir import running_in

    if proof.path is None:
        return "not run", ["no fixture"]
    if proof.app == ROOT_APP:
        story = model.root_instance
        if story is None or story.open_world:
            return "not run", ["a root flow needs dev-story's rooms, and only the summary we carry is here"]
    else:
        story = next((s for s in model.stories if relative(model.path, s.path) == proof.app), None)
        if story is None:
            return "failed", [f"{proof.app} does not load"]
    with tempfile.TemporaryDirectory(prefix="kitsoki-miner-proof-") as tmp:
        path = Path(tmp) / os.path.basename(proof.path)
        path.write_text(proof.text, encoding="utf-8")
        loaded = load_fixture_file(path)
        if loaded.problem or not loaded.fixtures:
            return "failed", [loaded.problem or "the proof holds no flow"]
        failures: list[str] = []
        for fixture in loaded.fixtures:
            if fixture.problems:
                return "failed", list(fixture.problems)
            with running_in(model.path):
                result = run_fixture(fixture, story, proof.path)
            failures.extend(result.failures())
    if failures and all(f.startswith(UNSUPPORTED_PREFIX) for f in failures):
        return "not run", failures
    return ("failed" if failures else "passed"), failures
