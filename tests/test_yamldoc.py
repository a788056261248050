"""Locating and loading a YAML text for the editor (core/kitsoki/yamldoc.py): libyaml's events and
tokens give exactly what ruamel's pure-Python scanner gives.

The editor reads each text through libyaml when it can (ruamel's scanner is the cost of drafting);
these tests hold that to the old reading: the same positional tree (every node's kind, span, style,
tag, anchor, text), the same `:` and `-` ends, the same data, the same refusals, and the same edited
bytes, on every YAML file of the shared kitsoki workspace, the test fixtures and awkward snippets.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.kitsoki import yamldoc, yamledit
from core.kitsoki.yamldoc import EditError

REPO = Path(__file__).resolve().parent.parent
WORKSPACE = REPO.parent / "shared" / "kitsoki-workspace"


def _forget() -> None:
    yamldoc._MEMO.__dict__.clear()


def _reading(text: str, *, pure: bool, monkeypatch) -> object:
    """Everything the editor reads of `text`, or the refusal's type."""
    _forget()
    if pure:
        monkeypatch.setattr(yamldoc, "_c_events", lambda text: None)
    try:
        doc = yamldoc._Doc(text)
        nodes = []
        stack = [doc.root] if doc.root is not None else []
        while stack:
            n = stack.pop()
            text = n.text.replace("\a", "") if n.style == ">" else n.text  # ruamel's round-trip fold marks
            # An absent value (`key:`) has no span: the edits find it by its `:` or `-`, never by where the
            # parser put its zero-width mark (ruamel: sometimes the next token's end; libyaml: the indicator's).
            span = ("empty",) if n.empty else (n.start, n.end)
            nodes.append((n.kind, *span, n.flow, n.style, n.tag, n.anchor, text, n.implicit,
                          n.key.start if n.key is not None else None))
            stack.extend(n.items)
            for k, v in n.pairs:
                stack += [k, v]
        return (nodes, list(doc.colon_ends), list(doc.dash_ends), sorted(doc.used_anchors), doc.doc_end,
                doc.version, doc.lb, doc.bom, _Data(doc.data))
    except EditError:
        return "refused"
    finally:
        monkeypatch.undo()
        _forget()


class _Data:
    def __init__(self, value: object) -> None:
        self.value = value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Data) and yamldoc._same(self.value, other.value)

    def __repr__(self) -> str:
        return repr(self.value)[:2000]


def _same_reading(text: str, monkeypatch) -> None:
    fast = _reading(text, pure=False, monkeypatch=monkeypatch)
    pure = _reading(text, pure=True, monkeypatch=monkeypatch)
    assert fast == pure


def _yaml_files() -> list[Path]:
    """The fixtures, every story file of the workspace, and every fourth of its other YAML files (rooms,
    flows, cassettes: written alike; all 695 of them and the 1,089 of kitsoki's own repository read the
    same when this was built)."""
    roots = [REPO / "tests" / "fixtures"]
    if WORKSPACE.is_dir():
        roots.append(WORKSPACE)
    files = sorted(p for root in roots for p in root.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file())
    rest = [p for p in files if p.is_relative_to(WORKSPACE) and p.name != "app.yaml"]
    return [p for p in files if p not in rest] + rest[::4]


def test_the_corpus_is_there():
    if not WORKSPACE.is_dir():
        pytest.skip("../shared/kitsoki-workspace is not here")
    assert len([p for p in _yaml_files() if p.is_relative_to(WORKSPACE) and p.name == "app.yaml"]) > 40


@pytest.mark.parametrize("path", _yaml_files(), ids=lambda p: p.name)
def test_every_kitsoki_file_reads_the_same_through_libyaml(path, monkeypatch):
    text = path.read_bytes().decode("utf-8", errors="replace")
    _same_reading(text, monkeypatch)


SNIPPETS = [
    "", "# only a comment\n", "---\n", "--- \n...\n", "a: 1\n", "a: 1", "a: 1\r\nb: 2\r\n", "\ufeffa: 1\n",
    "a:\n  - x\n  -\n  - {b: 1, c: [1, 2,]}\n", "a: |+\n  keep\n\n\nb: 2\n", "a: >-\n  folded\n  text\n# end\n",
    "base: &b {x: 1}\nuse: *b\nmerge:\n  <<: *b\n  y: 2\n", "? complex\n: value\n", "'quoted key': \"v\"\n",
    "on: yes\noff: no\nn: ~\nbig: 123456789012345678901234567890\noct: 0o17\nhex: 0x1F\nf: 1e3\n",
    "a: b: c\n", "a: [unclosed\n", "a: 1\na: 2\n", "- a\n- b\n---\n- c\n", "a:\n\tb: 1\n", "%YAML 1.1\n---\na: yes\n",
    "a: 'it''s'\nb: \"\\u00e9\\n\"\nc: plain with: colon\n", "key: [a:b, {c: d}]\n", "é: ü 😀\nlist: [ä, ö]\n",
    "a: !!str 12\nb: !custom x\n", "a:\n  b:\n    c:\n      d: [1, {e: f}]\n  # trailing\n", "a: \x85b\n",
    "a: 1 # c\n\n\n# c2\nb:\n", "-  x\n-   - y\n    - z\n", "{a: 1, b: [2, 3]}\n", "[1, 2, 3]\n", "plain\n",
]


@pytest.mark.parametrize("text", SNIPPETS)
def test_awkward_texts_read_the_same(text, monkeypatch):
    _same_reading(text, monkeypatch)


_scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**30, 10**30),
                     st.floats(allow_nan=False).filter(lambda f: not math.isinf(f)),
                     st.text(st.characters(blacklist_categories=("Cs",)), max_size=12))
_keys = st.text(st.characters(min_codepoint=32, max_codepoint=0x2FF), min_size=1, max_size=8)
_data = st.recursive(_scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                       st.dictionaries(_keys, inner, max_size=4)), max_leaves=12)


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=_data, flow=st.sampled_from([None, True, False]), width=st.sampled_from([12, 80]))
def test_generated_documents_read_the_same(data, flow, width):
    text = yaml.safe_dump(data, default_flow_style=flow, allow_unicode=True, width=width, sort_keys=False)
    with pytest.MonkeyPatch.context() as monkeypatch:
        _same_reading(text, monkeypatch)


def _edits(text: str) -> list:
    out = []
    for edit in (lambda t: yamledit.add_entry(t, ["states"], "mined_room", {"description": "d", "on": {"x": [{"target": "y"}]}}),
                 lambda t: yamledit.add_entry(t, ["intents"], "mined_intent", {"examples": ["do it", "yes"]}),
                 lambda t: yamledit.set_value(t, ["agents", "mined_agent"], {"tools": ["Read"]}),
                 lambda t: yamledit.append_items(t, ["hosts"], ["host.agent.task"])):
        try:
            out.append(edit(text))
        except EditError:
            out.append("refused")
    return out


@pytest.mark.parametrize("path", [p for p in _yaml_files() if p.name == "app.yaml"], ids=lambda p: p.parent.name)
def test_edits_give_the_same_bytes_either_way(path, monkeypatch):
    text = path.read_text(encoding="utf-8")
    _forget()
    fast = _edits(text)
    _forget()
    monkeypatch.setattr(yamldoc, "_c_events", lambda text: None)
    pure = _edits(text)
    _forget()
    assert fast == pure
