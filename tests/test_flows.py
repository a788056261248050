"""The built-in runner for kitsoki flow fixtures (core.flows): a documented subset, fail closed.

The shop workspace under tests/fixtures/flows/shop is a small but realistic story: intents with
examples, synonyms and a `{item}` template, guarded arms, set/increment effects, an `exits:`
block, rooms pulled in by `include:`, and a till whose on_enter emits an intent. Failing and
unsupported cases are written next to a copy of it in tmp_path.
"""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest

from core.flows import (
    NO_FIXTURES,
    UNSUPPORTED,
    FlowReport,
    FlowResult,
    TurnResult,
    format_text,
    run_fixture_file,
    run_flows,
)
from core.flows.fixtures import load_fixture_file
from core.flows.report import tabwrite
from core.flows.expressions import ExprError, ExprUnsupported, eval_bool
from core.flows.values import deep_equal, go_value

SHOP = Path(__file__).parent / "fixtures" / "flows" / "shop"
FLOWS = Path("stories/shop/flows")


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    """A copy of the shop workspace with its flows/ folder emptied."""
    workspace = tmp_path / "shop"
    shutil.copytree(SHOP, workspace)
    for fixture in (workspace / FLOWS).glob("*.yaml"):
        fixture.unlink()
    return workspace


def write(path: Path, text: str) -> Path:
    """Write a YAML file; an indented body after the fixture HEADER is dedented on its own."""
    head = HEADER if text.startswith(HEADER) else ""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(head + textwrap.dedent(text[len(head):]).lstrip(), encoding="utf-8")
    return path


def flow(workspace: Path, name: str, text: str) -> Path:
    return write(workspace / FLOWS / name, text)


def only(report: FlowReport) -> FlowResult:
    assert len(report.Results) == 1, report.model_dump()
    return report.Results[0]


def failures(result: FlowResult) -> list[str]:
    return [failure for turn in result.Turns for failure in turn.Failures]


HEADER = "test_kind: flow\napp: ../app.yaml\n"


# --- the happy workspace ------------------------------------------------------------------------


def test_shop_workspace_flows_all_pass():
    report = run_flows(SHOP)
    assert [(r.File, r.Passed) for r in report.Results] == [
        ("stories/shop/flows/happy_path.yaml", True),
        ("stories/shop/flows/typed.yaml", True),
        ("stories/shop/flows/typed.yaml", True),  # two documents, two results
    ]
    assert (report.Passed, report.Failed, report.green) == (3, 0, True)
    happy = report.Results[0]
    assert [(t.TurnIndex, t.NewState, t.Passed) for t in happy.Turns] == [
        (0, "aisle", True), (1, "aisle", True), (2, "paying", True), (3, "__exit__done", True)]


def test_report_dump_has_kitsokis_json_shape():
    report = run_flows(SHOP)
    dumped = report.model_dump()
    assert set(dumped) == {"Results", "Passed", "Failed"}
    assert set(dumped["Results"][0]) == {"File", "Passed", "Turns", "Skipped"}
    assert dumped["Results"][0]["Turns"][0] == {
        "TurnIndex": 0, "Passed": True, "Failures": [], "NewState": "aisle", "View": "", "Events": None}
    assert FlowReport.model_validate(dumped) == report


def test_emit_intent_chain_lands_past_the_till(shop):
    flow(shop, "chain.yaml", HEADER + """
        initial_state: aisle
        initial_world: { cart_count: 2 }
        turns:
          - intent: { name: checkout }
            expect_state: paying          # till's on_enter emitted ring_up
            expect_world: { rung_up: true, status: "rung up" }
        """)
    result = only(run_flows(shop))
    assert result.Passed, failures(result)


def test_emit_intent_guard_false_stays_in_the_till(shop):
    # cart_count 0 but paid false: checkout's guard fails, the default arm keeps us in the aisle.
    flow(shop, "empty.yaml", HEADER + """
        initial_state: aisle
        turns:
          - intent: { name: checkout }
            expect_state: aisle
            expect_world: { rung_up: false }
        """)
    assert only(run_flows(shop)).Passed


def test_guarded_arm_and_world_defaults(shop):
    flow(shop, "full.yaml", HEADER + """
        initial_state: aisle
        initial_world: { cart_count: 3 }
        turns:
          - intent: { name: add_item, slots: { item: jam } }
            expect_world: { cart_count: 3, last_item: "" }   # the cart-full arm: only a say
        expect_world_final: { cart_limit: 3, visits: 0 }
        """)
    assert only(run_flows(shop)).Passed


# --- failures a person can read -----------------------------------------------------------------


def test_failing_expect_state_names_expected_and_actual(shop):
    flow(shop, "wrong.yaml", HEADER + """
        turns:
          - intent: { name: browse, slots: {} }
            expect_state: till
            expect_not_state: aisle
            expect_state_in: [till, paying]
        """)
    result = only(run_flows(shop))
    assert not result.Passed
    assert result.Turns[0].NewState == "aisle"
    assert result.Turns[0].Failures == [
        'expect_state: got "aisle", want "till"',
        'expect_not_state: state must not be "aisle"',
        'expect_state_in: "aisle" not in [till paying]',
    ]


def test_expect_world_failure_shows_values_and_types(shop):
    flow(shop, "world.yaml", HEADER + """
        turns:
          - intent: { name: browse }
            expect_world: { visits: 2, status: "open" }
        """)
    result = only(run_flows(shop))
    # kitsoki's types: `increment` gives int64, a YAML integer uint64 (int64 when negative)
    assert failures(result) == ['expect_world["visits"]: got 1 (int64), want 2 (uint64)']


def test_expect_world_final_is_a_partial_match(shop):
    flow(shop, "final.yaml", HEADER + """
        turns:
          - intent: { name: leave }
        expect_world_final: { status: left, visits: 0 }
        ---
        test_kind: flow
        app: ../app.yaml
        turns:
          - intent: { name: leave }
        expect_world_final: { status: paid, visits: 0.0 }
        """)
    first, second = run_flows(shop).Results
    assert first.Passed
    assert not second.Passed
    assert second.Turns[-1].TurnIndex == -1
    assert second.Turns[-1].Failures == ['expect_world_final["status"]: got left, want paid']


def test_exit_is_terminal_and_expect_terminal_fails_elsewhere(shop):
    flow(shop, "exits.yaml", HEADER + """
        turns:
          - intent: { name: leave }
            expect_state: __exit__abandoned
        expect_terminal: true
        ---
        test_kind: flow
        app: ../app.yaml
        turns:
          - intent: { name: browse }
        expect_terminal: true
        """)
    left, stayed = run_flows(shop).Results
    assert left.Passed
    assert not stayed.Passed
    assert stayed.Turns[-1].Failures == ['expect_terminal: state "aisle" is not terminal']


def test_several_documents_are_several_results(shop):
    flow(shop, "three.yaml", "\n---\n".join([HEADER + "turns: [{intent: {name: browse}, expect_state: aisle}]"] * 3)
         + "\n---\n")
    report = run_flows(shop)
    assert [r.File for r in report.Results] == ["stories/shop/flows/three.yaml"] * 3
    assert report.Passed == 3


# --- input routing ------------------------------------------------------------------------------


def test_an_input_turn_without_a_recording_stops_the_run_as_kitsoki_does(shop):
    # kitsoki resolves an input: turn only through a recording (flows.go runOneFlowLegacy); the story's own
    # examples and synonyms are never consulted, so a flow that types text without one aborts the app run.
    flow(shop, "typed_free.yaml", HEADER + """
        initial_state: entrance
        turns:
          - input: "browse the shelves"          # an exact example: still no route without a recording
            expect_state: aisle
        """)
    report = run_flows(shop, "stories/shop/flows/typed_free.yaml")
    failure = only(report).Turns[0].Failures[0]
    assert failure == ('turn 1: input "browse the shelves" requires a recording but none was loaded '
                       "(kitsoki stops the run here)")
    assert report.fatal() == f"stories/shop/flows/typed_free.yaml: {failure}"


def test_a_recording_routes_the_input_turns_from_the_initial_state_as_written(shop):
    # The committed typed.yaml walks the shop by text, each turn resolved by its recording.
    shutil.copy(SHOP / FLOWS / "typed.yaml", shop / FLOWS / "typed.yaml")
    result = run_flows(shop).Results
    assert [r.File for r in result] == ["stories/shop/flows/typed.yaml"] * 2
    assert all(r.Passed for r in result), [failures(r) for r in result]
    assert [t.NewState for t in result[0].Turns] == ["aisle", "aisle", "paying", "__exit__done"]


# --- validation errors --------------------------------------------------------------------------


def test_intent_not_allowed_in_state_fails_turn_and_expect_no_errors(shop):
    flow(shop, "rejected.yaml", HEADER + """
        turns:
          - intent: { name: checkout }
            expect_state: entrance
        expect_no_errors: true
        """)
    result = only(run_flows(shop))
    assert not result.Passed
    assert result.Turns[0].Failures == [
        ('unexpected validation error: INTENT_NOT_ALLOWED_IN_STATE: intent "checkout" is not allowed in state '
         '"entrance"')]
    assert result.Turns[0].NewState == "entrance"
    assert result.Turns[1].Failures == ["expect_no_errors: there were validation errors"]


def test_missing_and_invalid_slots_are_validation_errors(shop):
    flow(shop, "slots.yaml", HEADER + """
        initial_state: aisle
        turns:
          - intent: { name: add_item, slots: {} }
          - intent: { name: add_item, slots: { item: null } }
        ---
        test_kind: flow
        app: ../app.yaml
        initial_state: paying
        initial_world: { rung_up: true }
        turns:
          - intent: { name: pay, slots: { method: bitcoin } }
            expect_state: paying
        """)
    missing, invalid = run_flows(shop).Results
    assert failures(missing) == ["unexpected validation error: MISSING_SLOTS: intent requires slots: [item]"] * 2
    assert failures(invalid) == [
        'unexpected validation error: INVALID_SLOT_VALUE: slot "method" value "bitcoin" is not one of [card cash]']


def test_guard_failed_when_no_arm_holds(shop):
    flow(shop, "guard.yaml", HEADER + """
        initial_state: paying
        turns:
          - intent: { name: pay, slots: { method: cash } }   # rung_up is false
            expect_state: paying
        """)
    assert failures(only(run_flows(shop))) == [
        'unexpected validation error: GUARD_FAILED: no transition matched for intent "pay" in state "paying"']


# --- fail closed --------------------------------------------------------------------------------


@pytest.mark.parametrize("key, block", [
    ("expect_events_count_atleast", "expect_events_count_atleast: 1"),
    ("expect_files", "expect_files: [{ path: out.txt }]"),
])
def test_unsupported_fixture_key_fails_closed(shop, key, block):
    flow(shop, "unsupported.yaml", HEADER + block + "\nturns: [{intent: {name: browse}}]\n")
    result = only(run_flows(shop))
    assert (result.Passed, result.Skipped) == (False, False)
    assert [(t.TurnIndex, t.Failures) for t in result.Turns] == [(-1, [f"{UNSUPPORTED}: {key}"])]


@pytest.mark.parametrize("key, value", [
    ("expect_events", "[{ kind: machine.state_entered }]"),
    ("expect_events_exact", "[{ kind: machine.transition }]"),
    ("expect_no_view", "true"),
])
def test_unsupported_turn_key_fails_closed(shop, key, value):
    flow(shop, "unsupported.yaml", HEADER + f"turns:\n  - intent: {{ name: browse }}\n    {key}: {value}\n")
    result = only(run_flows(shop))
    assert not result.Passed
    reason = "expect_events kind machine.state_entered" if key == "expect_events" else key
    assert failures(result) == [f"{UNSUPPORTED}: {reason}"]
    assert report_is_red(run_flows(shop))


def test_keys_kitsoki_drops_are_ignored(shop):
    # kitsoki decodes fixtures non-strictly: keys outside its FlowFixture / FlowTurn vanish.
    flow(shop, "ignored.yaml", HEADER + """
        fancy_new_key: 1
        turns:
          - intent: { name: browse }
            then: { whatever: true }
            expect_world_final: { visits: 99 }   # turn-level: not a kitsoki turn key
            expect_terminal: true
            expect_no_errors: true
        """)
    assert only(run_flows(shop)).Passed


def report_is_red(report: FlowReport) -> bool:
    return report.Failed == 1 and not report.green and format_text(report).endswith("FAIL\n")


def test_fixture_shape_problems_fail(shop):
    flow(shop, "shapes.yaml", """
        app: ../app.yaml
        turns: []
        ---
        test_kind: flow
        app: ../app.yaml
        turns:
          - { intent: { name: browse }, input: browse }
          - { expect_state: aisle }
          - intent: browse
        ---
        - just a list
        """)
    turns, listed = run_flows(shop).Results  # the first document is not a flow: kitsoki skips it
    assert failures(turns) == [
        'turns[0] (turn 1) must set exactly one of intent: {name, slots} or input: "<text>"',
        "turns[1] (turn 2) requires one of intent:, input:, or advance_clock",
        "turns[2].intent must be a mapping {name, slots}, got a string",
    ]
    assert "must be a mapping" in failures(listed)[0]


def test_documents_that_are_not_flows_are_skipped_like_kitsoki(shop):
    flow(shop, "cassette.yaml", "kind: host_cassette\nepisodes: []\n---\ntest_kind: flow_disabled\nturns: []\n")
    flow(shop, "real.yaml", HEADER + "turns: [{intent: {name: browse}}]\n")
    assert [r.File for r in run_flows(shop).Results] == ["stories/shop/flows/real.yaml"]


@pytest.fixture
def lab(tmp_path: Path) -> Path:
    """A workspace whose story uses features outside the subset."""
    workspace = tmp_path / "lab"
    write(workspace / ".kitsoki.yaml", "story_dirs: [./stories]\n")
    write(workspace / "stories/lab/app.yaml", """
        app: { id: lab, title: "Lab" }
        world:
          n:    { type: int, default: 0 }
          flag: { type: bool, default: false }
          note: { type: string, default: "" }
        intents:
          go:     { examples: ["go to the agent"] }
          spin:   { hidden: true }
          poke:   {}
          weird:  {}
          odd:    {}
          flip:   {}
          quiet:  {}
          tag:    { slots: { label: { type: string } } }
          nest:   {}
          inner:  {}
        agents:
          helper: { system_prompt: "You help.", tools: [Read] }
        root: start
        states:
          start:
            on:
              go:    [{ target: agent }]
              spin:  [{ target: loop_a }]
              poke:  [{ effects: [{ emit: tick }] }]
              weird: [{ when: "(world.n ?? 0) > 1", target: start }]
              odd:   [{ effects: [{ set: { n: "{{ world.n + 1 }}" } }] }]
              flip:  [{ effects: [{ set: { flag: "true", n: "7", note: "{{ world.flag }}" } }] }]
              quiet: [{ target: guarded }]
              tag:   [{ effects: [{ set: { note: "{{ slots.label }}" } }, { increment: { n: 2 } }] }]
              nest:  [{ target: room.corner }]
          agent:
            on_enter:
              - invoke: host.agent.task
                with: { agent: helper, acceptance: { schema: schemas/helped.json } }
          guarded:
            on_enter:
              - when: "world.flag"
                invoke: host.agent.task
              - when: "not world.flag"
                set: { note: "skipped the agent" }
          loop_a:
            on_enter: [{ emit_intent: spin }]
            on:
              spin: [{ target: loop_b }]
          loop_b:
            on_enter: [{ emit_intent: spin }]
            on:
              spin: [{ target: loop_a }]
          room:
            on:
              inner: [{ target: start }]
            states:
              corner:
                on_enter:
                  - emit_intent: inner
        """)
    return workspace


def lab_flow(workspace: Path, text: str) -> FlowResult:
    write(workspace / "stories/lab/flows/lab.yaml", HEADER + text)
    return only(run_flows(workspace))


@pytest.mark.parametrize("intent, message", [
    ("poke", "effect emit"),
])
def test_unsupported_story_features_fail_closed(lab, intent, message):
    result = lab_flow(lab, f"turns:\n  - intent: {{ name: {intent} }}\n  - intent: {{ name: poke }}\n")
    assert not result.Passed
    # Said on the turn kitsoki would have run (index 0), every failure carrying the marker; no
    # synthetic turn stands in for the turns not run.
    assert [(t.TurnIndex, t.Failures) for t in result.Turns] == [
        (0, [f"{UNSUPPORTED}: {message} (turn 2 not run after it)"])]
    assert all(f.startswith(UNSUPPORTED) for f in result.failures())


def test_machine_only_path_records_invokes_without_dispatching(lab):
    # No host_handlers: kitsoki's machine-only path records harness.called and never dispatches,
    # so an expect_host_calls with a count cannot pass there.
    result = lab_flow(lab, """
        turns:
          - intent: { name: go }
            expect_state: agent
            expect_host_calls: [{ handler: host.agent.task, times: 0 }]
          - intent: { name: go }
        """)
    assert result.Turns[0].Passed, failures(result)
    assert result.Turns[1].Failures == [
        'unexpected validation error: INTENT_NOT_ALLOWED_IN_STATE: intent "go" is not allowed in state "agent"']


def test_expressions_in_guards_and_templates(lab):
    result = lab_flow(lab, """
        initial_world: { n: 1 }
        turns:
          - intent: { name: odd }
            expect_world: { n: 2 }
          - intent: { name: weird }
            expect_state: start
        """)
    assert result.Passed, failures(result)


def test_guarded_invoke_that_does_not_fire_is_fine(lab):
    result = lab_flow(lab, "turns:\n  - intent: { name: quiet }\n    expect_world: { note: skipped the agent }\n")
    assert result.Passed, failures(result)


def test_set_coerces_to_declared_types_and_templates_keep_types(lab):
    result = lab_flow(lab, """
        turns:
          - intent: { name: flip }
            expect_world: { flag: true, n: 7, note: false }
          - intent: { name: tag, slots: { label: blue } }
            expect_world: { note: blue, n: 9 }
        """)
    assert result.Passed, failures(result)


def test_cyclic_emit_chain_hits_kitsokis_depth_cap_and_aborts_the_app_run(lab):
    result = lab_flow(lab, "turns:\n  - intent: { name: spin }\n")
    assert not result.Passed
    (failure,) = result.Turns[0].Failures
    assert failure.startswith("turn 1: emit_intent: dispatch exceeded max depth (24) at state ")
    assert failure.endswith("(kitsoki stops the run here)") and result.fatal() == failure
    report = run_flows(lab)
    assert report.fatal() == f"stories/lab/flows/lab.yaml: {failure}"


def test_an_emit_chain_of_eleven_steps_is_not_cut_short(tmp_path):
    """kitsoki's cap is 24 (EmitIntentMaxDepth); a chain of 11 emits lands where it ends."""
    chain = "".join(f"  s{i}:\n    on_enter: [{{ emit_intent: step }}]\n    on:\n      step: [{{ target: s{i + 1} }}]\n"
                    for i in range(11))
    write(tmp_path / ".kitsoki.yaml", "story_dirs: [./stories]\n")
    write(tmp_path / "stories/chain/app.yaml", "app: { id: chain }\nintents:\n  go: {}\n  step: {}\nroot: start\n"
          "states:\n  start:\n    on:\n      go: [{ target: s0 }]\n" + chain + "  s11: {}\n")
    write(tmp_path / "stories/chain/flows/chain.yaml", HEADER + "turns:\n  - intent: { name: go }\n"
          "    expect_state: s11\n")
    result = only(run_flows(tmp_path))
    assert result.Passed, failures(result)


def test_nested_state_inherits_parent_arms(lab):
    # room.corner emits `inner`, which only its parent `room` handles.
    result = lab_flow(lab, "turns:\n  - intent: { name: nest }\n    expect_state: start\n")
    assert result.Passed, failures(result)


# --- discovery, zero fixtures, broken apps ------------------------------------------------------


def test_discovery_story_and_workspace_flows_and_glob(shop):
    flow(shop, "b.yaml", HEADER + "turns: [{intent: {name: browse}}]\n")
    write(shop / "flows" / "a.yaml", "test_kind: flow\napp: ../stories/shop/app.yaml\nturns: [{intent: {name: leave}}]\n")
    write(shop / "flows" / "notes.txt", "not a fixture")
    report = run_flows(shop)
    assert [r.File for r in report.Results] == ["stories/shop/flows/b.yaml", "flows/a.yaml"]
    assert report.Passed == 2
    assert [r.File for r in run_flows(shop, glob="flows/*.yaml").Results] == ["flows/a.yaml"]
    assert [r.File for r in run_flows(shop, glob="**/b.yaml").Results] == ["stories/shop/flows/b.yaml"]


def test_fixture_without_app_uses_its_story(shop):
    flow(shop, "no_app.yaml", "test_kind: flow\nturns: [{intent: {name: browse}, expect_state: aisle}]\n")
    assert only(run_flows(shop)).Passed


def test_zero_fixtures_is_an_empty_red_report(shop):
    report = run_flows(shop)
    assert (report.Results, report.Passed, report.Failed, report.green) == ([], 0, 0, False)
    assert format_text(report) == f"{NO_FIXTURES}\n\nSummary: 0/0 flows pass\nFAIL\n"
    assert run_flows(shop, glob="nothing/*.yaml").Results == []


def test_a_story_that_does_not_load_fails_its_flows_with_kitsokis_reasons(shop):
    write(shop / "stories/shop/rooms/bad.yaml", """
        states:
          bad:
            on:
              teleport: [{ target: nowhere }]
        """)
    flow(shop, "ok.yaml", HEADER + "turns: [{intent: {name: browse}}]\n")
    result = only(run_flows(shop))  # the story is refused alone; its flow says why
    assert result.File == "stories/shop/flows/ok.yaml"
    assert not result.Passed
    text = "\n".join(failures(result))
    assert "stories/shop/rooms/bad.yaml:4:" in text
    assert "intent not declared in intents library or state.intents" in text  # kitsoki's reasons
    assert 'transition target "nowhere" (resolved: "nowhere") does not exist' in text


def test_fixture_whose_app_does_not_load(shop):
    write(shop / "broken" / "app.yaml", """
        app: { id: broken }
        root: start
        states:
          start:
            on:
              jump: [{ target: start }]
        """)
    write(shop / "flows" / "broken.yaml", "test_kind: flow\napp: ../broken/app.yaml\nturns: []\n---\n"
                                          "test_kind: flow\napp: ../missing/app.yaml\nturns: []\n---\n"
                                          "test_kind: flow\napp: ../../../elsewhere/app.yaml\nturns: []\n")
    broken, missing, outside = run_flows(shop).Results
    assert failures(broken)[0] == 'app: "../broken/app.yaml" does not load:'
    assert 'broken/app.yaml:6:' in failures(broken)[1] and "intent not declared" in failures(broken)[1]
    assert failures(missing) == ['app: "../missing/app.yaml" does not exist (missing/app.yaml)']
    assert failures(outside)[0].startswith('app: "../../../elsewhere/app.yaml" resolves outside the workspace')


def test_unreadable_fixture_files_fail_without_raising(shop):
    bomb = ["a: &a [x, x, x, x, x, x, x, x, x, x]"]
    for level, name in enumerate("bcdefg"):
        prev = "abcdefg"[level]
        bomb.append(f"{name}: &{name} [" + ", ".join([f"*{prev}"] * 10) + "]")
    flow(shop, "bomb.yaml", "\n".join(bomb) + "\n")
    (shop / FLOWS / "huge.yaml").write_bytes(b"#" * ((1 << 20) + 1))
    flow(shop, "syntax.yaml", "test_kind: flow\nturns: [\n")
    (shop / FLOWS / "latin1.yaml").write_bytes(b"test_kind: flow # caf\xe9\n")
    results = {Path(r.File).name: failures(r) for r in run_flows(shop).Results}
    assert "aliases (*name) that repeat large anchors are refused" in results["bomb.yaml"][0]
    assert "flow fixtures over 1048576 bytes (1 MiB) are refused" in results["huge.yaml"][0]
    assert "YAML syntax error" in results["syntax.yaml"][0]
    assert "is not UTF-8 text (byte 0xe9)" in results["latin1.yaml"][0]


ANCHORED = """\
# a guard like `world.mode != 'human'` in a comment
test_kind: flow
app: ../app.yaml
initial_world: &world
  count: 0x1F
  ratio: 1e3
  when: 2026-11-01
  flags: [yes, no, on, true, ~, '', 017]
  1: one
turns:
  - intent: { name: add, slots: &slots { sku: A1 } }
    expect_world: { <<: *world, count: 31 }
  - intent: { name: add, slots: *slots }
    expect_state: cart
---
test_kind: flow
app: ../app.yaml
initial_world: &again { count: 1 }
expect_world_final: *again
"""


def _located(value):
    """A located value with every line and column it carries."""
    if value.kind == "map":
        data = {key: _located(child) for key, child in value.data.items()}
    elif value.kind == "seq":
        data = [_located(child) for child in value.data]
    else:
        data = repr(value.data)
    return (value.kind, value.tag, value.text, (value.at.line, value.at.column),
            (value.key_at.line, value.key_at.column) if value.key_at else None, data)


def test_anchored_fixtures_read_through_libyaml_exactly_as_the_bounded_reader(tmp_path, monkeypatch):
    """A fixture with anchors, aliases, merge keys (or a `!` anywhere) is read by libyaml with the bounded
    reader's meaning (ruamel's YAML 1.2 scalars, keys as written, the same alias budget): the same values
    at the same lines and columns; and a file with a problem still gets the bounded reader's own words."""
    import core.flows.fixtures as fixtures

    good = tmp_path / "anchored.yaml"
    good.write_text(ANCHORED)
    problems = {
        "duplicate.yaml": "test_kind: flow\nbase: &b {a: 1}\nturns: []\nturns: []\n",
        "tagged.yaml": "test_kind: flow\nbase: &b !custom {a: 1}\nturns: []\n",
        "bomb.yaml": "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
            f"{n}: &{n} [" + ", ".join([f"*{p}"] * 10) + "]\n" for p, n in zip("abcdef", "bcdefg")),
        "merge.yaml": "test_kind: flow\nbase: &b [1, 2]\nturns: { <<: *b }\n",
        "syntax.yaml": "test_kind: flow\nbase: &b [1, 2\n",
        "across.yaml": "test_kind: flow\nbase: &b [1, 2]\n---\ntest_kind: flow\nturns: *b\n",
    }
    for name, text in problems.items():
        (tmp_path / name).write_text(text)
    text = ANCHORED
    fast = fixtures._libyaml_located(good, text, fixtures.FLOW_LIMITS)
    assert fast is not None, "an ordinary anchored fixture takes the libyaml path"
    fast_files = {name: load_fixture_file(tmp_path / name).model_dump() for name in ["anchored.yaml", *problems]}
    monkeypatch.setattr(fixtures, "_libyaml_located", lambda *args: None)  # the bounded ruamel reader alone
    monkeypatch.setattr(fixtures, "_READ", {})  # nothing remembered from the reads above
    slow = fixtures._compose_all(good, fixtures.FLOW_LIMITS)
    assert [_located(v) for v in fast] == [_located(v) for v in slow]
    assert fast[0].data["initial_world"].data["flags"].data[0].data == "yes"  # YAML 1.2: a string
    for name in ["anchored.yaml", *problems]:
        assert load_fixture_file(tmp_path / name).model_dump() == fast_files[name], name
    assert "aliases (*name) that repeat large anchors are refused" in fast_files["bomb.yaml"]["problem"]
    assert "duplicate key" in fast_files["duplicate.yaml"]["problem"]


def test_a_fixture_read_again_is_a_fresh_copy_of_the_same_documents(tmp_path):
    """Fixtures are parsed once per text in a process (a gate reruns them on every accept); each read
    hands out its own copy, and a changed file is read anew."""
    path = tmp_path / "again.yaml"
    path.write_text(HEADER + "initial_world: { items: [a] }\nturns: []\n")
    first = load_fixture_file(path).fixtures[0]
    first.initial_world["items"].append("changed by a run")
    second = load_fixture_file(path).fixtures[0]
    assert second.initial_world == {"items": ["a"]}
    path.write_text(HEADER + "initial_world: { items: [b] }\nturns: []\n")
    assert load_fixture_file(path).fixtures[0].initial_world == {"items": ["b"]}


def test_initial_state_must_exist(shop):
    flow(shop, "nowhere.yaml", HEADER + "initial_state: attic\nturns: []\n")
    assert failures(only(run_flows(shop))) == ['initial_state: "attic" is not a state of this story']


def test_run_fixture_file_without_a_workspace():
    results = run_fixture_file(SHOP / FLOWS / "typed.yaml")
    assert [r.Passed for r in results] == [True, True]
    assert results[0].File == str(SHOP / FLOWS / "typed.yaml")
    assert run_fixture_file(SHOP / FLOWS / "typed.yaml", SHOP)[0].File == "stories/shop/flows/typed.yaml"
    assert len(load_fixture_file(SHOP / FLOWS / "typed.yaml").fixtures) == 2


# --- the text report ----------------------------------------------------------------------------


def test_format_text_exact_shape(shop):
    flow(shop, "a_pass.yaml", HEADER + "turns: [{intent: {name: browse}, expect_state: aisle}]\n")
    flow(shop, "b_fail.yaml", HEADER + """
        turns:
          - intent: { name: browse }
          - intent: { name: add_item, slots: { item: milk } }
            expect_state: till
        expect_world_final: { status: paid }
        """)
    flow(shop, "c_pass.yaml", HEADER + "turns: [{intent: {name: leave}}]\nexpect_terminal: true\n")
    report = run_flows(shop)
    assert format_text(report) == (
        "PASS      a_pass.yaml\n"
        "    ok    turn 1 → aisle\n"
        "FAIL      b_fail.yaml\n"
        "    ok    turn 1 → aisle\n"
        "    FAIL  turn 2 → aisle\n"
        '            ✗ expect_state: got "aisle", want "till"\n'
        "    FAIL  [session]\n"
        '            ✗ expect_world_final["status"]: got open, want paid\n'
        "PASS      c_pass.yaml\n"
        "    ok    turn 1 → __exit__abandoned\n"
        "\n"
        "Summary: 2/3 flows pass\n"
        "FAIL\n"
    )


def test_format_text_all_pass_and_skip():
    report = FlowReport.of([
        FlowResult(File="/abs/path/one.yaml", Passed=True, Turns=[TurnResult(TurnIndex=0, Passed=True, NewState="s")]),
        FlowResult(File="two.yaml", Passed=False, Skipped=True),
    ])
    assert (report.Passed, report.Failed) == (1, 0)
    assert format_text(report) == ("PASS      one.yaml\n    ok    turn 1 → s\nSKIP      two.yaml\n"
                                   "\nSummary: 1/1 flows pass\nPASS\n")


def test_tabwrite_matches_go_column_blocks():
    # A line without a tab ends a column block; widths are per block, in runes, plus padding 2.
    assert tabwrite("ab\tx\nabcd\ty\nplain\nz\tw\n") == "ab    x\nabcd  y\nplain\nz  w\n"
    assert tabwrite("é\tx\n") == "é  x\n"
    assert tabwrite("") == ""


# --- the guard language and value helpers -------------------------------------------------------


@pytest.mark.parametrize("source, world, slots, expected", [
    ("world.n >= 3", {"n": 3}, {}, True),
    ("world.n > 2.5 && world.name == 'ann'", {"n": 3, "name": "ann"}, {}, True),
    ('world.name != "bob" and not world.done', {"name": "ann", "done": False}, {}, True),
    ("world.a == 1 || world.missing.deep > 2", {"a": 1}, {}, True),
    ("!(world.a == 1)", {"a": 1}, {}, False),
    ("world.x == nil", {}, {}, True),
    ("world.x == null && slots.y == 1.0", {}, {"y": 1}, True),
    ("world.flag == 1", {"flag": True}, {}, False),
    ("world.cfg.level < 2", {"cfg": {"level": 1}}, {}, True),
    ("slots.s == 'it\\'s'", {}, {"s": "it's"}, True),
])
def test_guard_language(source, world, slots, expected):
    assert eval_bool(source, {"world": world, "slots": slots}) is expected


@pytest.mark.parametrize("source", [
    "foo.bar == 1", "world.n matches 'x'", "", "world.n ==", "now() > 1", "filter(world.l, # > 1)",
])
def test_guard_language_refuses_the_rest(source):
    with pytest.raises(ExprUnsupported):
        eval_bool(source, {"world": {"n": 1}, "slots": {}})


@pytest.mark.parametrize("source, world", [
    ("world.n", {"n": 1}),                 # not a bool
    ("world.n < 'a'", {"n": 1}),           # mixed ordering
    ("not world.n == 1", {"n": 1}),        # `not` binds to world.n, as in kitsoki's language
    ("world.n.x == 1", {"n": 1}),
    ("world.missing.deep ?? 1", {}),       # `??` does not make a member of nil safe
])
def test_guard_errors_are_evaluation_errors(source, world):
    with pytest.raises(ExprError):
        eval_bool(source, {"world": world, "slots": {}})


def test_go_rendering_and_json_equality():
    assert go_value({"b": [1, 2.5], "a": None, "c": True}) == "map[a:<nil> b:[1 2.5] c:true]"
    assert go_value(3.0) == "3" and go_value(1e6) == "1e+06" and go_value(0.00001) == "1e-05"
    assert deep_equal(1, 1.0) and deep_equal({"a": [1]}, {"a": [1.0]})
    assert not deep_equal(True, 1) and not deep_equal("1", 1)
