"""What a prompt asks, and what the loop proposes from it (issue 23 items 3-7), on real-shaped histories.

A month of one project's sessions as Claude Code, Codex and Pi write them (tests/bench/quality_history.py,
the proposal-quality benchmark's generator, here with fewer sessions), plus small histories built record by
record for one behaviour each.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from builders import prompt, tool_result, tool_use, uid
from conftest import jsonl
from core.mining.asks import own_words, understand
from core.mining.passes import run_pass
from core.proposals.examples import MAX_CHARS, MAX_EXAMPLES
from core.proposals.proposer import run_proposer


def _bench(name: str):
    """The benchmark's module by its path (tests/bench holds a `server.py`: it is never put on sys.path)."""
    import importlib.util

    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, Path(__file__).parent / "bench" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


quality = _bench("quality")
make_history = _bench("quality_history").make_history

DEMO = Path(__file__).resolve().parent.parent / "core" / "demo" / "workspace"


# -- reading an ask ------------------------------------------------------------------------------------

@pytest.mark.parametrize("a, b", [
    ("regenerate the API client", "APIクライアントを再生成してください"),
    ("regenerate the API client", "帮我重新生成一下API客户端"),
    ("could you regen the api client when you get a chance", "Regenerate the API client."),
    ("update the changelog", "CHANGELOGを更新して"),
    ("bump the version", "バージョンを上げてもらえますか？"),
    ("upgrade the dependencies", "升级依赖"),
    ("sync the translations", "翻訳ファイルを同期して"),
    ("fix the lint errors", "please fix the lint erors"),
])
def test_one_ask_in_any_wording_reads_the_same(a, b):
    ta, tb = understand(a).terms, understand(b).terms
    objects = lambda terms: {t for t in terms if t.startswith("o:")}  # noqa: E731
    kind = lambda terms: {t for t in terms if t.startswith("k:")}  # noqa: E731
    assert objects(ta) & objects(tb) and kind(ta) == kind(tb), (ta, tb)


@pytest.mark.parametrize("a, b", [
    ("update the changelog", "what does the changelog say about 1.3?"),  # another kind of request
    ("regenerate the API client", "APIクライアントのタイムアウトの扱いを説明して"),
    ("regenerate the API client", "regenerate the favicon"),  # another object
    ("update the changelog", "update the README install section"),
])
def test_different_asks_sharing_a_word_read_differently(a, b):
    ta, tb = understand(a).terms, understand(b).terms
    objects = lambda terms: {t for t in terms if t.startswith("o:")}  # noqa: E731
    kind = lambda terms: {t for t in terms if t.startswith("k:")}  # noqa: E731
    assert not (objects(ta) & objects(tb)) or kind(ta) != kind(tb), (ta, tb)


def test_what_a_client_injects_is_not_the_persons_words():
    text = ("<ide_opened_file>The user opened the file /w/src/app.py in the IDE. This may or may not be related "
            "to the current task.</ide_opened_file><ide_selection>The user selected the lines 1 to 2 from /w/a.py:\n"
            "x = 1\n</ide_selection>\n<skill name=\"house-style\">\nRun the tests. Update the changelog.\n</skill>\n"
            "bump the version\n```\nTraceback (most recent call last):\n  File \"a.py\", line 3\nKeyError: 'x'\n```\n"
            "2026-05-11T10:02:11Z ERROR worker-3 order sync failed")
    assert own_words(text) == "bump the version"
    assert understand(text).phrasing == "bump the version"
    summary = ("This session is being continued from a previous conversation that ran out of context. The user "
               "asked: \"regenerate the API client\"")
    assert own_words(summary) is None and understand(summary).terms == ()


def test_examples_are_short_normalized_phrasings():
    said = understand("hey, could you please regenerate the API client from the openapi spec when you get a "
                      "chance? The spec changed yesterday, here is the diff: ...").phrasing
    assert said == "regenerate the api client from the openapi spec"


# -- small histories, one behaviour each ----------------------------------------------------------------

def _session(folder: Path, sid: str, day: int, cwd: str, steps: list[tuple[str, list[tuple]]]) -> None:
    """steps: (prompt, [(tool, input, result, rejected)])"""
    records, parent = [], None
    for n, (text, calls) in enumerate(steps):
        a = uid()
        records.append(prompt(a, parent, text, session=sid, cwd=cwd, ts=f"2026-05-{day:02d}T10:{n:02d}:00.000Z"))
        parent = a
        for tool, inp, result, rejected in calls:
            b, c, call = uid(), uid(), f"t{uid()[-6:]}"
            records.append(tool_use(b, parent, f"m{b[-6:]}", call, tool, inp, session=sid, cwd=cwd))
            text_out = ("The user doesn't want to proceed with this tool use. The tool use was rejected." if rejected
                        else result)
            records.append(tool_result(c, b, call, text_out, is_error=rejected, session=sid, cwd=cwd,
                                       extra="User rejected tool use" if rejected else {"stdout": result}))
            parent = c
    jsonl(folder / f"{sid}.jsonl", records)


def _app(tmp_path: Path) -> str:
    """Where the small histories' sessions ran: the workspace mined (a session elsewhere is another project's)."""
    return str(tmp_path / "w" / "app")


def _web(tmp_path: Path) -> str:
    return str(tmp_path / "w" / "web")


def _mine(tmp_path: Path) -> list:
    ws = tmp_path / "w" / "app"
    ws.mkdir(parents=True, exist_ok=True)
    _, recipes = run_pass(ws, dirs=[tmp_path / "t"], home=tmp_path / "no-home", env={}, workers=1)
    return recipes


def test_the_agents_own_ui_is_never_a_gate_and_a_refused_push_is(tmp_path):
    plan = ("ExitPlanMode", {"plan": "1. do it"}, "", True)
    ask = ("AskUserQuestion", {"questions": [{"question": "Which?", "options": []}]}, "answered", False)
    todo = ("TodoWrite", {"todos": []}, "ok", False)
    push = ("Bash", {"command": "git push origin main"}, "", True)
    for n in range(4):
        _session(tmp_path / "t", f"s{n}", n + 1, _app(tmp_path), [
            (f"look into the flaky checkout test number {n}", [plan, ask, todo, ("Bash", {"command": "pytest"}, "ok", False)]),
            (f"ship it {n}", [push] if n < 3 else [("Bash", {"command": "git push origin main"}, "ok", False)]),
        ])
    gates = [r for r in _mine(tmp_path) if r.kind == "gate"]
    assert [(g.action_signature, g.value, g.sessions) for g in gates] == [(["Bash: git push"], "rejected", 3)]


def test_a_recurring_regenerate_is_an_intent_not_the_build_command(tmp_path):
    for n, text in enumerate(["regenerate the api client", "APIクライアントを再生成して", "pls regen the API client",
                              "重新生成API客户端"]):
        _session(tmp_path / "t", f"s{n}", n + 1, _app(tmp_path), [(text, [
            ("Bash", {"command": "make generate"}, "ok", False),
            ("Edit", {"file_path": f"{_app(tmp_path)}/src/client.py", "old_string": "a", "new_string": "b"}, "ok", False)])])
    recipes = _mine(tmp_path)
    assert [(r.kind, r.sessions) for r in recipes if r.kind == "intent"] == [("intent", 4)]
    assert not [r for r in recipes if r.kind == "world"]


def test_a_projects_habits_are_not_outvoted_by_another_projects(tmp_path):
    for n in range(3):
        _session(tmp_path / "t", f"a{n}", n + 1, _app(tmp_path), [(f"fix bug {n}", [("Bash", {"command": "pytest -q"}, "ok", False)])])
    for n in range(6):
        _session(tmp_path / "t", f"b{n}", n + 1, _web(tmp_path), [(f"style tweak {n}", [("Bash", {"command": "npm test"}, "ok", False)] * 2)])
    worlds = {(r.value, r.sessions) for r in _mine(tmp_path) if r.kind == "world" and r.iface == "test_cmd"}
    assert ("pytest", 3) in worlds


# -- the loop on a month of a project ------------------------------------------------------------------

@pytest.fixture(scope="module")
def month(tmp_path_factory):
    """Discovery with a fake HOME (so only this project's Claude, Codex and Pi sessions are read), the
    bundled demo workspace as the project."""
    tmp = tmp_path_factory.mktemp("month")
    ws = tmp / "code" / "shop_api"
    quality.make_workspace("own", ws, None)
    history = make_history(tmp / "home", str(ws), seed=11, sessions=24)
    run_pass(ws, home=tmp / "home", env={"HOME": str(tmp / "home")}, workers=1, first_pass_sample=1000)
    report = run_proposer(ws)
    return history, ws, report, quality.score(history, ws, report.model_dump(mode="json"))


def test_a_month_raises_only_the_recurring_asks(month):
    history, _, report, score = month
    assert score["false"] == 0, score["false_cards"]
    assert score["leaks"] == 0 and score["modeled_dropped"] == score["modeled"]
    assert score["purity_min"] >= 0.9
    # Every recurring ask asked in at least three sessions a person typed in the terminal, Codex or Pi.
    assert score["recall"] >= 4, score["missed"]


def test_no_card_is_the_agents_ui_and_no_two_cards_draft_the_same_thing(month):
    _, ws, report, _ = month
    cards = [quality.json.loads((ws / ".artifacts" / "mining" / rid / "proposal.json").read_text())
             for rid in report.raised]
    text = " ".join(c["title"] + " " + " ".join(c["evidence"]["action_signature"]) for c in cards)
    for machinery in ("ExitPlanMode", "AskUserQuestion", "TodoWrite", "update_plan", "request_user_input",
                      "Skill", "ListMcpResourcesTool"):
        assert machinery not in text
    # the story keys each intent card adds (its intent, room, agent): never the same in two cards; the
    # proof fixtures and acceptance schemas each card adds as new files of its own are left out
    names = []
    for card in (c for c in cards if c["kind"] == "intent"):
        in_story = False
        for line in card["diff"].splitlines():
            if line.startswith("+++ "):
                in_story = line.endswith(".yaml") and "/flows/" not in line
            elif in_story and line.startswith("+  ") and line.endswith(":") and not line.startswith("+   "):
                names.append(line.split(":")[0].strip("+ "))
    assert names and len(names) == len(set(names))


def test_drafts_write_a_few_short_examples_not_prompts(month):
    _, ws, report, _ = month
    for rid in report.raised:
        card = quality.json.loads((ws / ".artifacts" / "mining" / rid / "proposal.json").read_text())
        if card["kind"] != "intent":
            continue
        added = [line[1:].strip() for line in card["diff"].splitlines() if line.startswith("+")]
        examples = []
        for n, line in enumerate(added):
            if line in ("examples:", "synonyms:"):
                examples = [x[2:] for x in added[n + 1:] if x.startswith("- ")]
                examples = examples[: next((i for i, x in enumerate(added[n + 1:]) if not x.startswith("- ")),
                                           len(examples))]
                break
        assert 1 <= len(examples) <= MAX_EXAMPLES, card["diff"]
        for example in examples:
            assert len(example) <= MAX_CHARS and "\n" not in example and "Traceback" not in example
            assert "/" not in example and "<ide_" not in example and "<skill" not in example


def test_an_ask_is_a_projects_own(tmp_path):
    for n in range(3):
        for project in (_app(tmp_path), _web(tmp_path)):
            _session(tmp_path / "t", f"{project[-3:]}{n}", n + 1, project, [("update the changelog", [
                ("Edit", {"file_path": f"{project}/CHANGELOG.md", "old_string": "a", "new_string": "b"}, "ok", False)])])
    intents = [r for r in _mine(tmp_path) if r.kind == "intent"]
    # (Whether the other project's sessions are read at all is the pass's scope; read or not, never mixed.)
    assert [r.sessions for r in intents if r.instances[0].session.startswith("app")] == [3]
    assert all(len({i.session[:3] for i in r.instances}) == 1 for r in intents)  # each one project's


def test_a_phrase_that_shares_an_object_but_not_the_request_is_not_enrich(tmp_path):
    from core.kitsoki.inventory import build_inventory
    from core.kitsoki.story import load_workspace
    from core.mining.recipes import Phrasing, Recipe
    from core.proposals.mapper import Routers, map_recipe

    ws = tmp_path / "code" / "shop_api"
    quality.make_workspace("own", ws, None)
    routers = Routers.build(build_inventory(load_workspace(ws)))

    def mapped(*phrasings):
        recipe = Recipe(id="0" * 16, kind="intent", title=phrasings[0], priority=1.0, sessions=3, instances=[],
                        determinism="deterministic", phrasings=[Phrasing(text=p, count=2) for p in phrasings])
        return map_recipe(recipe, routers)

    # dev-story's go_gitops has "version control"; drive has the one-word example "push"; go_docs "update docs".
    assert mapped("bump the version", "increase the version number").classification == "GAP"
    assert mapped("push the release tag", "push the release").classification == "GAP"
    assert mapped("update the docs screenshots", "refresh the docs screenshots").classification == "GAP"
    # A phrase that asks the same, in another language, is ENRICH; the phrasing kitsoki routes is modeled.
    assert mapped("clean up merged branches").classification == "ALREADY-MODELED"


def test_a_slot_template_takes_a_value_not_a_sentence(tmp_path):
    from core.kitsoki.inventory import build_inventory
    from core.kitsoki.story import load_workspace
    from core.mining.recipes import Phrasing, Recipe
    from core.proposals.mapper import Routers, map_recipe

    ws = tmp_path / "code" / "shop_api"
    quality.make_workspace("own", ws, None)
    app = ws / "stories" / "release-desk" / "app.yaml"
    app.write_text(app.read_text().replace("intents:\n", 'intents:\n  load_manifest:\n    description: "Load a manifest."\n'
                                           "    slots:\n      manifest_path: { type: string }\n"
                                           '    synonyms: ["run {manifest_path}", "load {manifest_path}"]\n', 1))
    routers = Routers.build(build_inventory(load_workspace(ws)))

    def mapped(text):
        recipe = Recipe(id="0" * 16, kind="intent", title=text, priority=1.0, sessions=3, instances=[],
                        determinism="deterministic", phrasings=[Phrasing(text=text, count=3)])
        return map_recipe(recipe, routers)

    assert mapped("run manifest.yaml").classification == "ALREADY-MODELED"
    weak = mapped("run のシェルスクリプトを全部チェックしてエラーを直して")
    assert weak.classification == "GAP" and "only shares words" in weak.reason


# -- what real histories showed (issue 23's card reading) -------------------------------------------------

def test_codex_ide_and_desktop_wrappers_keep_only_what_the_person_typed():
    ide = ("# Context from my IDE setup:\n\n## Open tabs:\n- orders.py: src/shop/orders.py\n\n"
           "## My request for Codex:\nbump the version\n")
    assert own_words(ide).strip() == "bump the version"
    handed_over = ('\n## Prior conversation with Codex:\n{"conversation":[{"role":"assistant","content":[{"text":'
                   '"Added a new intake brief at `!/BRIEF-LAF-19.md`, including structured frontmatter"}]}]}\n'
                   "## My request for Codex:\nupdate the changelog\n")
    assert understand(handed_over).phrasing == "update the changelog"


def _edit(path: str) -> tuple:
    return ("Edit", {"file_path": path, "old_string": "a", "new_string": "b"}, "ok", False)


def _intents(tmp_path: Path) -> list:
    return [r for r in _mine(tmp_path) if r.kind == "intent"]


def test_requests_glued_only_by_a_file_name_are_not_one_ask(tmp_path):
    app = _app(tmp_path)
    target = f"{app}/.devenv/config.template.toml"
    for n, text in enumerate([".devenv/config.template.toml のコメントを修正したい",
                              ".devenv/direnv/template/config.toml は .devenv/config.template.toml に移動して",
                              "move .devenv/template/config.toml to .devenv/config.template.toml"]):
        _session(tmp_path / "t", f"s{n}", n + 1, app, [(text, [_edit(target), _edit(target)])])
    assert _intents(tmp_path) == []


def test_answers_to_the_agent_and_reports_of_what_was_done_are_not_asks(tmp_path):
    app = _app(tmp_path)
    for text in ("これを採用", "1 だけを採用", "ビルドした拡張機能をchromeにインストールした"):
        assert understand(text).terms == (), text
    for n, text in enumerate(["chrome拡張機能を作りたい", "ビルドした拡張機能をchromeにインストールした",
                              "PLAN.md に沿ってchrome拡張機能を作成して"]):
        _session(tmp_path / "t", f"s{n}", n + 1, app, [(text, [_edit(f"{app}/manifest.json"),
                                                              _edit(f"{app}/manifest.json")])])
    assert _intents(tmp_path) == []  # two requests and a report: not three occasions


def test_a_follow_up_that_only_names_the_next_thing_asks_nothing_of_its_own():
    """"那mona呢" ("what about Mona?") continues the request before it; read as an ask it glued three different
    requests about one customer into a card (a real history, claude-config)."""
    for text in ("那mona呢", "那个客户呢？", "what about mona?", "and what about the staging db?"):
        assert understand(text).terms == (), text
    assert understand("what about mona? also export the report to word").terms == ("a:export", "o:report")
    assert "a:add" in understand("what about adding retries to the client?").terms  # a suggestion asks something
    assert "a:deploy" in understand("怎么部署到生产呢").terms  # a question of its own


def test_scrutinise_is_a_review():
    """"go scrutinise the pr", asked in 5 sessions of a real history, read as opening something (a:create)."""
    assert understand("go scrutinise the pr").terms == understand("review the pr").terms


def test_seed_is_a_verb_not_a_past_participle():
    assert "a:seed" in understand("could you reset and seed the database with fixtures").terms


@pytest.mark.parametrize("fan_out, expect", [(True, 0), (False, 1)])
def test_one_request_sent_to_several_sessions_at_once_is_one_occasion(tmp_path, fan_out, expect):
    """The same words pasted into three sessions within a minute (what a person does to fan a request out) are
    one occasion, not a request they kept coming back to; on three days they are."""
    app = _app(tmp_path)
    for n in range(3):
        day = 1 if fan_out else n + 1
        _session(tmp_path / "t", f"s{n}", day, app, [("regenerate the api client", [
            ("Bash", {"command": "make client"}, "ok", False), _edit(f"{app}/client/api.py")])])
    assert len(_intents(tmp_path)) == expect


def test_other_words_soon_after_are_another_occasion(tmp_path):
    """"CONCERN 1 を修正して", then in a new session minutes later "CONCERN 3 を解決したい": a person working
    through a list comes back to the same request; each is an occasion."""
    app = _app(tmp_path)
    for n, text in enumerate(["CONCERN 1 を修正して", "CONCERN 3 を解決したい", "CONCERN.md の 2 を解決したい"]):
        _session(tmp_path / "t", f"s{n}", 1, app, [(text, [_edit(f"{app}/CONCERN.md"), _edit(f"{app}/src/a.ts")])])
    assert len(_intents(tmp_path)) == 1


def test_the_c_stemmer_stems_every_lexicon_word_as_the_python_one_does():
    """PyStemmer (Snowball's C build, what snowballstemmer uses when it is installed: no thirty Python
    stemmers imported at start-up, stems ten times faster) must give the stems the asks were made with."""
    import re

    import Stemmer
    from snowballstemmer.english_stemmer import EnglishStemmer

    from core.mining import asks
    from core.mining import lexicon as lx

    assert isinstance(asks._STEMMER, Stemmer.Stemmer)
    words: set[str] = set()
    for value in vars(lx).values():
        if isinstance(value, dict):
            value = [f"{k} {v}" for k, v in value.items()]
        if isinstance(value, (str, list, tuple, set, frozenset)):
            words.update(re.findall(r"[a-z]+", " ".join(map(str, value)) if not isinstance(value, str) else value))
    words.update("regenerating regenerated releases releasing migrations flakiness tested testing bugs fixes "
                 "deployments generalization organizational happily running ran seeded seeding".split())
    python = EnglishStemmer()
    assert len(words) > 500
    assert {w: asks._STEMMER.stemWord(w) for w in words} == {w: python.stemWord(w) for w in words}


def test_the_same_prompt_asks_the_same_in_every_process():
    """Every run of the miner is a new process with its own string hashing: the lexicon (and so what a typo
    reads as) must not depend on it. "pars" is one edit from the general word "parts" and from the verb
    "parse": it read as "parts" in some processes and as nothing known in others."""
    import os
    import subprocess

    code = ("import sys; from core.mining import asks; lex = asks._lexicon(); "
            "print(asks.understand('revert the pars in the config loader').terms, lex.surfaces, lex.word('pars'))")
    seen = set()
    for seed in ("0", "1", "4", "5", "6", "7"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        out = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).parent.parent, env=env,
                             capture_output=True, text=True, check=True).stdout
        seen.add(out)
    assert len(seen) == 1, seen
