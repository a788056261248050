"""The built-in runner's orchestrator path, key by key, on the desk story (tests/fixtures/flows/desk).

Each key has a passing and a failing case; every failure text below is the one kitsoki's own
runner printed for the same fixture against the same story (checked beside the real binary when
these tests were written; kitsoki prints a turn's expect_world failures in map order, so turns
are compared as sets where they hold several).
"""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest

from core.flows import UNSUPPORTED, FlowResult, run_app_flows
from core.flows.clock import parse_duration_ns
from core.flows.expressions import eval_any, render, render_value
from core.flows.hosts import Envelope, HostStub, InfraError, Registry, bind_path

DESK = Path(__file__).parent / "fixtures" / "flows" / "desk"
APP = "stories/desk/app.yaml"
HEAD = "test_kind: flow\napp: ../app.yaml\n"


@pytest.fixture
def desk(tmp_path: Path) -> Path:
    """A copy of the desk workspace with no flow fixtures (its cassettes stay)."""
    workspace = tmp_path / "desk"
    shutil.copytree(DESK, workspace)
    for fixture in (workspace / "stories/desk/flows").glob("*.yaml"):
        fixture.unlink()
    return workspace


def run(workspace: Path, *parts: str) -> list[FlowResult]:
    body = "".join(textwrap.dedent(part).lstrip("\n") for part in parts)
    (workspace / "stories/desk/flows/case.yaml").write_text(HEAD + body, encoding="utf-8")
    return run_app_flows(workspace / APP, workspace).Results


def one(workspace: Path, *parts: str) -> FlowResult:
    (result,) = run(workspace, *parts)
    return result


def failures(result: FlowResult) -> set[str]:
    return {failure for turn in result.Turns for failure in turn.Failures}


def test_the_desk_flows_pass():
    report = run_app_flows(DESK / APP, DESK)
    assert [(Path(r.File).name, r.Passed, [t.NewState for t in r.Turns]) for r in report.Results] == [
        ("happy.yaml", True, ["filed", "escalated", "closed"]), ("views.yaml", True, ["inbox"] * 3)]


# --- host_handlers: binds, prefix lookup, by_op / by_call, errors ------------------------------


TRACKER_OK = """
    initial_state: inbox
    host_handlers:
      host.tracker:
        by_op:
          create: { data: { id: "T-1", links: { html: "http://t/1" }, labels: [bug, ui] } }
      host.run: { data: { ok: true } }
    turns:
      - intent: { name: file, slots: { title: "printer is on fire" } }
        expect_state: filed
        expect_world: { ticket: "T-1", ticket_url: "http://t/1", first_label: bug }
"""


def test_bind_paths_and_by_op_on_a_prefix_handler(desk):
    assert one(desk, TRACKER_OK).Passed


def test_the_op_is_not_in_the_dispatched_args(desk):
    # `op` is injected after harness.dispatched records the args, so expecting it never matches.
    result = one(desk, TRACKER_OK + """
        expect_host_calls:
          - { handler: host.tracker.create, args: { title: "printer is on fire", priority: high, call: create,
                                                    op: create }, times: 1 }
    """)
    assert failures(result) == {"expect_host_calls: host.tracker.create expected 1 invocations, got 0"}


def test_unregistered_handler_and_failed_expectations(desk):
    result = one(desk, """
        initial_state: inbox
        host_handlers:
          host.tracker: { data: { id: "T-2" } }
        turns:
          - intent: { name: file, slots: { title: "x" } }
            expect_world: { ticket: "T-9", last_error: "" }
            expect_host_calls:
              - { handler: host.tracker.create, times: 2 }
              - { handler: host.run, args: { cmd: "echo T-2" } }
              - { handler: host.nothing }
    """)
    assert failures(result) == {
        'expect_world["ticket"]: got T-2 (string), want T-9 (string)',
        'expect_world["last_error"]: got host: no handler registered for "host.run" (string), want  (string)',
        "expect_host_calls: host.tracker.create expected 2 invocations, got 1",
        "expect_host_calls: host.nothing never invoked (args=map[])",
    }


def test_domain_error_sets_host_error_and_follows_on_error(desk):
    result = one(desk, """
        initial_state: inbox
        host_handlers:
          host.tracker:
            error: "tracker down"
            data: { stderr: "503", exit_code: 3 }
          host.run: { data: { ok: true } }
        turns:
          - intent: { name: file, slots: { title: "x" } }
            expect_state: failed
            expect_world:
              last_error: "tracker down"
              host_error: { namespace: host.tracker.create, message: "tracker down", stderr: "503", exit_code: 3,
                            data: { stderr: "503", exit_code: 3 } }
            expect_no_host_calls: [host.run]
    """)
    assert result.Passed, failures(result)


def test_unregistered_handler_is_an_infrastructure_error_with_on_error(desk):
    result = one(desk, """
        initial_state: inbox
        host_handlers:
          host.run: { data: { ok: true } }
        turns:
          - intent: { name: file, slots: { title: "x" } }
            expect_state: failed
            expect_world:
              last_error: 'host: no handler registered for "host.tracker.create"'
    """)
    assert result.Passed, failures(result)


def test_by_call_infra_error_wins_over_data_and_redirects(desk):
    result = one(desk, """
        initial_state: inbox
        host_handlers:
          host.tracker:
            by_call: { create: { infra_error: "socket closed" } }
            data: { id: "T-3" }
          host.run: { data: { ok: true } }
        expect_no_host_calls: [host.run]
        turns:
          - intent: { name: file, slots: { title: "x" } }
            expect_state: filed
            expect_world: { last_error: "socket closed" }
    """)
    assert failures(result) == {'expect_state: got "failed", want "filed"'}


def test_stub_resolution_order():
    stub = HostStub(name="host.x", envelope=Envelope(data={"top": 1}),
                    by_op={"a": Envelope(data={"op": 1})}, by_call={"c": Envelope(error="call failed")})
    assert stub.answer({"call": "c", "op": "a"}) == (None, "call failed")  # by_call before by_op
    assert stub.answer({"op": "a"}) == ({"op": 1}, "")
    assert stub.answer({"op": "zzz"}) == ({"top": 1}, "")
    stub.envelope.infra_error = "down"
    with pytest.raises(InfraError, match="down"):
        stub.answer({})
    assert stub.answer({"op": "a"}) == ({"op": 1}, "")  # a matching envelope still answers
    clarify = HostStub(name="host.y", request_clarification="Which one?", envelope=Envelope(data={"a": 1}))
    assert clarify.answer({}) == (None, "host.RequestClarification: not running as a background job "
                                        "(no JobContext in ctx)")


def test_longest_dotted_prefix_and_op_injection():
    registry = Registry({"host.git": HostStub("host.git"), "host.git.worktree": HostStub("host.git.worktree")})
    assert registry.lookup("host.git.worktree.add")[1] == "host.git.worktree"
    assert registry.lookup("host.git.push")[1] == "host.git"
    assert registry.lookup("host.gh.ticket") == (None, "")
    args: dict = {}
    registry.invoke("host.git.worktree.add", args)
    assert args == {"op": "add"}
    given = {"op": "mine"}
    registry.invoke("host.git.push", given)
    assert given == {"op": "mine"}  # a caller's op wins
    with pytest.raises(InfraError, match='host: no handler registered for "host.gh.ticket"'):
        registry.invoke("host.gh.ticket", {})


def test_bind_path_lookup():
    data = {"a": {"b": [{"c": 1}, {"c": 2}]}, "x": None}
    assert bind_path(data, "a.b[1].c") == (2, True)
    assert bind_path(data, "x") == (None, True)
    assert bind_path(data, "a.b[5].c") == (None, False)
    assert bind_path(data, "a.missing") == (None, False)
    assert bind_path(None, "a") == (None, False)


def test_a_delay_on_a_foreground_call_is_a_real_sleep_and_the_call_answers(desk):
    # Only a background job's context carries kitsoki's fake clock; a foreground stub sleeps in
    # real time (a 3 s delay: the binary passes after 3 s; stories/relay/flows/foreground_delay.yaml).
    assert one(desk, TRACKER_OK.replace("host.run: { data: { ok: true } }",
                                        'host.run: { data: { ok: true }, delay: "30s" }')).Passed


# --- post-bind emits, rejections, world_override, expect_world_final ---------------------------


JUDGE = """
    initial_state: filed
    host_handlers:
      host.agent.decide:
        by_call:
          judge: { data: { submitted: { intent: escalate } } }
"""


def test_post_bind_emit_and_rejection_text(desk):
    result = one(desk, JUDGE, """
        turns:
          - intent: { name: triage }
            expect_state: escalated
            expect_host_calls: [{ handler: host.agent.decide, args: { call: judge }, times: 1 }]
          - intent: { name: triage }
            expect_state: escalated
          - intent: { name: close }
        expect_terminal: true
        expect_no_errors: true
    """)
    assert [t.Failures for t in result.Turns] == [
        [], ["unexpected rejection: code=INTENT_NOT_ALLOWED_IN_STATE hint="], [],
        ["expect_no_errors: there were validation errors"]]


def test_missing_slots_asks_for_clarification_and_fails_nothing(desk):
    result = one(desk, """
        initial_state: inbox
        host_handlers: { host.run: { data: {} } }
        turns:
          - intent: { name: file }
            expect_state: inbox
        expect_no_errors: true
    """)
    assert result.Passed, failures(result)


def test_world_override_persists_and_expect_world_final(desk):
    result = one(desk, """
        initial_state: filed
        host_handlers:
          host.agent.decide: { data: { submitted: { intent: close } } }
        turns:
          - intent: { name: triage }
            expect_state: judging
          - intent: { name: close }
            world_override: { note: "overridden" }
            expect_world: { note: "overridden" }
        expect_world_final: { note: "different" }
    """)
    assert result.Turns[-1].Failures == ['expect_world_final["note"]: got overridden, want different']
    assert all(turn.Passed for turn in result.Turns[:-1])


# --- the clock, interfaces, host_bindings -------------------------------------------------------


def test_advance_clock_fires_the_state_timeout(desk):
    result = one(desk, """
        initial_state: inbox
        host_handlers: { host.notify: { data: {} } }
        turns:
          - intent: { name: wait }
            expect_state: waiting
          - advance_clock: "1d"
            expect_state: waiting
          - advance_clock: "24h"
            expect_state: nudged
            expect_world: { attempts: 1 }
    """)
    assert result.Passed, failures(result)


def test_interface_invoke_bind_template_and_clock_on_an_intent_turn(desk):
    result = one(desk, """
        initial_state: inbox
        host_handlers:
          host.notify: { data: { reply: "pong" } }
        turns:
          - intent: { name: ping }
            expect_world: { note: pong }
            expect_host_calls: [{ handler: host.notify.ping, args: { message: "hello ", op: ping } }]
          - intent: { name: wait }
            advance_clock: "3d"
            expect_state: waiting
    """)
    assert [t.Failures for t in result.Turns] == [
        ["expect_host_calls: host.notify.ping never invoked (args=map[message:hello  op:ping])"],
        ['expect_state: got "nudged", want "waiting"']]


def test_host_bindings_rebind_an_interface(desk):
    result = one(desk, """
        initial_state: inbox
        host_bindings: { notifier: host.run }
        host_handlers:
          host.run: { data: { reply: "ran" } }
        turns:
          - intent: { name: ping }
            expect_world: { note: ran }
            expect_host_calls: [{ handler: host.run.ping, times: 1 }]
    """)
    assert result.Passed, failures(result)


def test_host_bindings_with_an_unstubbed_builtin_is_not_supported(desk):
    result = one(desk, """
        initial_state: inbox
        host_bindings: { notifier: host.run }
        host_handlers: { host.notify: { data: {} } }
        turns:
          - intent: { name: ping }
    """)
    assert failures(result) == {f"{UNSUPPORTED}: host_bindings: kitsoki would run its real builtin handler for "
                                "host.run (op ping)"}


def test_expect_events_subsequence(desk):
    result = one(desk, JUDGE, """
        turns:
          - intent: { name: triage }
            expect_events:
              - { kind: harness.called, effect: { namespace: host.agent.decide } }
              - { kind: machine.transition, from: judging, to: escalated }
              - { kind: harness.dispatched, effect: { namespace: host.run } }
    """)
    assert failures(result) == {
        "expect_events: event {Kind:harness.dispatched From: To: Effect:map[namespace:host.run]} not found in "
        "subsequence"}


def test_input_turn_on_the_orchestrator_path_stops_the_run(desk):
    result = one(desk, """
        initial_state: inbox
        host_handlers: { host.run: { data: {} } }
        turns:
          - input: "file a ticket"
    """)
    (failure,) = failures(result)
    assert failure.startswith('turn 1: input: "file a ticket" in orchestrator-path fixture; use intent: instead')


# --- the clock's durations and the expression language ------------------------------------------


def test_durations():
    assert parse_duration_ns("11d") == 11 * 24 * 3600 * 10**9
    assert parse_duration_ns("1h30m") == 5400 * 10**9
    assert parse_duration_ns("") == 0
    with pytest.raises(ValueError):
        parse_duration_ns("1d2h")


@pytest.mark.parametrize("source, world, expected", [
    ("world.a ?? 'd'", {}, "d"),
    ("len(world.missing)", {}, 0),
    ("int('12') + 1", {}, 13),
    ("split('a,b', ',')", {}, ["a", "b"]),
    ("world.n > 1 ? 'y' : 'n'", {"n": 2}, "y"),
    ("'a' in ['a', 'b']", {}, True),
    ("'k' in world.m", {"m": {"k": 1}}, True),
    ("world.l[-1]", {"l": [1, 2]}, 2),
    ("world.n / 2", {"n": 4}, 2.0),
    ("world.s contains 'ell'", {"s": "hello"}, True),
    ("!(world.a == nil) || world.b == 2.0", {"b": 2}, True),
    ("world.x?.y", {}, None),
    ("join(world.l, '-')", {"l": ["a", "b"]}, "a-b"),
])
def test_expression_values(source, world, expected):
    assert eval_any(source, {"world": world, "slots": {}}) == expected


def test_templates():
    env = {"world": {"n": 2, "items": [{"id": "a"}, {"id": "b"}], "m": {"k": [1]}, "none": None}}
    assert render("n={{ world.n * 50 }}{{ if world.n > 1 }} big{{ else }} small{{ end }}", env) == "n=100 big"
    assert render("{{ range world.items }}[{{ .id }}]{{ end }}", env) == "[a][b]"
    assert render("{{ world.m }}|{{ world.none }}|{{ 2.0 }}", env) == '{"k":[1]}||2'
    assert render_value("{{ world.n > 1 }}", env) is True
    assert render_value("  {{ world.items }} ", env) == [{"id": "a"}, {"id": "b"}]
    assert render_value("{{ world.n }} and {{ world.n }}", env) == "2 and 2"


# --- expect_error and expect_world_full on both paths --------------------------------------------


def test_expect_error_on_the_machine_only_path(desk):
    result = one(desk, """
        initial_state: inbox
        turns:
          - intent: { name: file }
            expect_state: inbox
          - intent: { name: wait }
            expect_error: { code: GUARD_FAILED }
          - intent: { name: close }
            expect_error: { code: INTENT_NOT_ALLOWED_IN_STATE }
          - intent: { name: close }
            expect_error: { code: GUARD_FAILED }
        expect_no_errors: true
    """)
    assert [t.Failures for t in result.Turns] == [
        ["unexpected validation error: MISSING_SLOTS: intent requires slots: [title]"],
        ['expected error "GUARD_FAILED" but got none'],
        [],
        ['expected error code "GUARD_FAILED" but got "INTENT_NOT_ALLOWED_IN_STATE"'],
        ["expect_no_errors: there were validation errors"]]


def test_expect_error_and_expect_world_full_on_the_orchestrator_path(desk):
    result = one(desk, """
        initial_state: inbox
        host_handlers: { host.run: { data: {} } }
        turns:
          - intent: { name: wait }
            expect_error: { code: GUARD_FAILED }
          - intent: { name: close }
            expect_error: { code: INTENT_NOT_ALLOWED_IN_STATE }
          - intent: { name: ping }
            expect_error: { code: INTENT_NOT_ALLOWED_IN_STATE }
          - intent: { name: ping }
            expect_world_full: { note: x }
    """)
    assert result.Turns[0].Failures == ['expected error "GUARD_FAILED" but got none (mode=transitioned)']
    assert result.Turns[1].Failures == ['expected error "INTENT_NOT_ALLOWED_IN_STATE" but got none (mode=completed)']
    assert result.Turns[2].Failures == []
    # kitsoki's world always holds its reserved keys and the per-turn seeds
    assert set(result.Turns[3].Failures) == {
        "unexpected rejection: code=INTENT_NOT_ALLOWED_IN_STATE hint=", 'expect_world_full["note"]: got , want x',
        *(f'expect_world_full: unexpected key "{key}" in world' for key in (
            "session_id", "verdict", "attempts", "last_error", "ticket", "session_cost_usd", "turn_cost_usd",
            "write_mode_scope", "first_label", "summary", "ticket_url", "ide", "export_job"))}


# --- views ----------------------------------------------------------------------------------------

INBOX_VIEW = (
    "════════════════════════════════════════\n"
    "  HELP DESK  ·  nothing filed\n"
    "════════════════════════════════════════\n\n"
    "Inbox\n\n"
    "Tickets come in here. File one with a title, wait for the customer, or ping the\n"
    "notifier; every path is a host call the flow stubs.\n\n"
    "Attempts:  0\n"
    "Note:      (none)\n\n"
    "• file  open a ticket with a title\n"
    "• wait  give the customer two days\n"
    "• ping\n\n"
    "Actions:\n\n"
    "  file  open a ticket\n"
    "  wait\n\n"
    "[↑/↓ move • Enter pick • Tab chat • Esc cancel]")


def test_expect_view_matches_failure_shows_the_whole_view(desk):
    result = one(desk, """
        initial_state: inbox
        turns:
          - intent: { name: ping }
            expect_view_matches: "Attempts:  1"
    """)
    assert result.Turns[0].Failures == [
        'expect_view_matches: view does not match "Attempts:  1"\nview: ' + json_quote(INBOX_VIEW)]
    assert result.Turns[0].View == INBOX_VIEW


def json_quote(text: str) -> str:
    import json

    return json.dumps(text, ensure_ascii=False)


def test_extends_view_after_binds_and_an_empty_terminal_view(desk):
    result = one(desk, """
        initial_state: inbox
        host_handlers:
          host.tracker:
            by_op:
              create: { data: { id: "T-1", links: { html: "http://t/1" }, labels: [bug, ui] } }
          host.run: { data: { ok: true } }
        turns:
          - intent: { name: file, slots: { title: "printer is on fire" } }
            expect_view_matches: "Desk · filed · T-1\\nURL:    http://t/1\\nLabel:  BUG\\n\\nA long one."
          - intent: { name: close }
            expect_view_matches: "nothing here"
    """)
    assert result.Turns[0].Passed, result.Turns[0].Failures
    assert result.Turns[0].View == "Desk · filed · T-1\nURL:    http://t/1\nLabel:  BUG\n\nA long one.\n\n"
    assert result.Turns[1].Failures == ['expect_view_matches: view does not match "nothing here"\nview: ""']


def test_redirect_view_is_the_error_state_rendered(desk):
    result = one(desk, """
        initial_state: inbox
        host_handlers:
          host.run: { data: { ok: true } }
        turns:
          - intent: { name: file, slots: { title: "x" } }
            expect_view_matches: "^Filing failed: host: no handler"
    """)
    assert result.Passed, failures(result)


def test_wordwrap_like_reflow():
    from core.flows.wrap import wordwrap

    assert wordwrap("the quick brown fox", 10) == "the quick\nbrown fox"
    # reflow does not count a hyphen it breaks after (checked against github.com/muesli/reflow v0.3.0)
    assert wordwrap("a-very-long-hyphenated-word here", 10) == "a-very-long-\nhyphenated-\nword here"
    assert wordwrap("trailing spaces   \nnext", 8) == "trailing\nspaces\nnext"
    assert wordwrap("日本語のテキストを折り返す テスト", 10) == "日本語のテキストを折り返す\nテスト"
    assert wordwrap("supercalifragilistic x", 5) == "supercalifragilistic\nx"
    assert wordwrap("keep\nnewlines  ok", 40) == "keep\nnewlines  ok"


def test_pongo_subset():
    from core.flows.pongo import TemplateSet

    render = TemplateSet(None).render
    ctx = {"world": {"n": 2, "f": 0.5, "xs": ["a", "b"], "m": {"k": 1}, "ok": True, "none": None}}
    assert render("{{ world.n * 50 }} {{ world.f }} {{ world.ok }} {{ world.none }}|", ctx) == "100 0.500000 True |"
    assert render("{{ world.missing ?? 'dflt' }} {{ world.xs|join:', ' }} {{ world.xs|length }}", ctx) == "dflt a, b 2"
    assert render("{% for x in world.xs %}{{ forloop.Counter }}={{ x }};{% empty %}none{% endfor %}", ctx) == "1=a;2=b;"
    assert render("{% if world.n > 1 and not world.none %}big{% elif world.n %}some{% else %}none{% endif %}", ctx) == "big"
    assert render("{{ world.f|floatformat:2 }} {{ world.n|floatformat }} {% comment %}x{% endcomment %}{# y #}", ctx) == \
        "0.50 2 "
    assert render("{{ world.xs }} {{ world.m }}", ctx) == "<[]interface {} Value> <map[string]interface {} Value>"


# --- host_cassette ---------------------------------------------------------------------------------


def test_cassette_episode_matched_by_handler_phase_and_args(desk):
    result = one(desk, """
        initial_state: inbox
        host_cassette: cassettes/desk.cassette.yaml
        turns:
          - intent: { name: file, slots: { title: "printer is on fire" } }
            expect_state: filed
            expect_world: { ticket: "T-7", first_label: hw }
    """)
    assert result.Passed, failures(result)


def test_cassette_miss_is_an_infrastructure_error_and_strict_coverage(desk):
    result = one(desk, """
        initial_state: inbox
        host_cassette: cassettes/desk.cassette.yaml
        strict_cassette_coverage: true
        turns:
          - intent: { name: file, slots: { title: "something else" } }
            expect_state: filed
            expect_world: { last_error: "x" }
    """)
    assert failures(result) == {
        'expect_state: got "failed", want "filed"',
        'expect_world["last_error"]: got cassette miss: no episode matched handler="host.tracker.create" '
        "args=map[call:create priority:high title:something else]; available episodes: [create_in_inbox run_any "
        "never_used] (string), want x (string)",
        "unexpected remaining episodes: [create_in_inbox run_any never_used]"}


def test_a_cassette_that_does_not_load_stops_the_run(desk):
    (failure,) = failures(one(desk, """
        initial_state: inbox
        host_cassette: cassettes/missing.cassette.yaml
        turns:
          - intent: { name: ping }
    """))
    assert failure.startswith("buildOrchestratorRig: load cassette: cassette: read ")
    assert failure.endswith("(kitsoki stops the run here)")


# --- background jobs, on_complete, the inbox -------------------------------------------------------


def test_background_job_finishes_on_the_clock_and_runs_on_complete(desk):
    result = one(desk, """
        initial_state: inbox
        host_handlers:
          host.run: { data: { rows: 3 }, delay: "2s" }
        turns:
          - intent: { name: export }
            expect_state: exporting
            expect_inbox: { unread: 1, severities: [info] }
            expect_host_calls: [{ handler: host.run, times: 0 }]
          - advance_clock: "2s"
            expect_state: exported
            expect_world: { note: "exported 3 rows", last_job_status: done }
            expect_inbox: { unread: 2, severities: [success, info] }
    """)
    # last_job_status is only visible to on_complete: kitsoki never writes it to the journey
    assert [t.Failures for t in result.Turns] == [
        [], ['expect_world["last_job_status"]: got <nil> (<nil>), want done (string)']]


def test_a_failing_on_complete_effect_drops_the_completion(desk):
    result = one(desk, """
        initial_state: inbox
        host_handlers:
          host.run: { error: "disk full", delay: "1s" }
        turns:
          - intent: { name: export }
          - advance_clock: "5s"
            expect_state: exported
            expect_inbox: { unread: 2, severities: [info, warn], needs_attention: 1 }
    """)
    assert set(result.Turns[1].Failures) == {
        'expect_state: got "exporting", want "exported"', "expect_inbox.unread: got 1, want 2",
        "expect_inbox.needs_attention: got 0, want 1", "expect_inbox.severities: got [info], want [info warn]"}


def test_a_job_without_delay_is_drained_before_the_clock_moves(desk):
    result = one(desk, """
        initial_state: inbox
        host_handlers:
          host.run: { data: { rows: 1 } }
        turns:
          - intent: { name: export }
            advance_clock: "1ms"
            expect_state: exported
            expect_world: { note: "exported 1 rows" }
    """)
    assert result.Passed, failures(result)


def test_timing_that_kitsoki_does_not_fix_is_declined_or_stops(desk):
    racy = one(desk, """
        initial_state: inbox
        host_handlers:
          host.run: { data: { rows: 1 } }
        turns:
          - intent: { name: export }
    """)
    assert failures(racy) == {f"{UNSUPPORTED}: background job host.run without a delay and no advance_clock in "
                              "the turn (kitsoki finishes it at a time the flow does not fix)"}
    short = one(desk, """
        initial_state: inbox
        host_handlers:
          host.run: { data: { rows: 3 }, delay: "2s" }
        turns:
          - intent: { name: export }
            advance_clock: "1s"
    """)
    (failure,) = failures(short)
    assert failure.startswith("turn 1: advance_clock: scheduler WaitIdle: context deadline exceeded")


def test_expect_jobs_reads_the_jobs_that_ended_in_the_turn(desk):
    result = one(desk, """
        initial_state: inbox
        host_handlers:
          host.run: { error: "disk full", delay: "1s" }
        turns:
          - intent: { name: export }
            expect_jobs: [{ namespace: host.run, status: done }]
          - advance_clock: "1s"
            expect_jobs: [{ namespace: host.run, status: done }, { namespace: host.git, status: done }]
          - advance_clock: "1s"
            expect_jobs: [{ namespace: host.run, status: finished }]
    """)
    assert [t.Failures for t in result.Turns] == [
        ["expect_jobs: expected 1 jobs to terminate this turn, got 0"],
        ["expect_jobs: expected 2 jobs to terminate this turn, got 1"],
        ['expect_jobs[0]: status "finished" is not one of done|failed|cancelled|awaiting_input']]
    remaining = one(desk, """
        initial_state: inbox
        host_handlers:
          host.run: { error: "disk full", delay: "1s" }
        turns:
          - intent: { name: export }
          - advance_clock: "1s"
            expect_jobs: [{ namespace: host.git, status: done }]
    """)
    assert remaining.Turns[1].Failures == [
        'expect_jobs[0]: no newly-terminal job found with namespace="host.git" (remaining: [host.run/failed])']
    wrong = one(desk, """
        initial_state: inbox
        host_handlers:
          host.run: { data: { rows: 2 }, delay: "1s" }
        turns:
          - intent: { name: export }
          - advance_clock: "1s"
            expect_jobs: [{ namespace: host.run, status: failed }]
    """)
    assert wrong.Turns[1].Failures == [
        'expect_jobs[0]: namespace="host.run" got status="done", want "failed" (job_id=01000000000000000000000001, error="")']


# --- recording: input turns on the machine-only path -----------------------------------------------


def test_recording_routes_input_turns_and_a_miss_stops_the_run(desk):
    routed = one(desk, """
        recording: cassettes/desk.recording.yaml
        initial_state: inbox
        turns:
          - input: "  please file the printer ticket "
            expect_state: filed
            expect_world: { summary: printer }
    """)
    assert routed.Passed, failures(routed)
    (miss,) = failures(one(desk, """
        recording: cassettes/desk.recording.yaml
        initial_state: inbox
        turns:
          - input: "something unrecorded"
    """))
    assert miss == ('turn 1: recording miss for input "something unrecorded" in state "inbox" '
                    "(kitsoki stops the run here)")


# --- the adapter reads the loader's composed definition when a Story carries one -------------------


def test_app_model_prefers_the_composed_definition():
    from core.flows.app import app_model, load_yaml12
    from core.kitsoki.story import Story, load_story

    story = load_story(DESK / APP, DESK)
    if isinstance(getattr(story, "definition", None), dict):
        pytest.skip("the loader composes definitions itself (the conformance test covers that path)")

    class Composed(Story):  # stands in for the loader's Story with kitsoki's composed AppDef
        definition: dict = {}

    definition = load_yaml12((DESK / APP).read_text(encoding="utf-8"))
    definition["states"]["child"] = {"type": "compound", "initial": "entry", "__import__": {"alias": "child"},
                                     "states": {"entry": {"on": {"child__go": [{"target": "closed"}]}}}}
    composed = Composed(**{**story.model_dump(), "imports": {"child": {"source": "x"}}}, definition=definition)
    model = app_model(composed)
    assert model.needs_loader == []  # imports are folded in the definition
    assert model.states["child"].type == "compound" and "child.entry" in model.states
    assert sorted(model.states["inbox"].on) == ["export", "file", "ping", "wait"]
    assert "__import__" not in model.states["child"].raw
    assert app_model(story.model_copy(update={"imports": {"child": {}}})).needs_loader == ["imports (needs the loader)"]
