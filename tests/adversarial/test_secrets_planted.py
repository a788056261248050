"""Planted secrets: each kind in every field of every transcript format, searched for in every output.

Pass rule: no planted secret (nor any 12-character piece of it) appears in any answer of `sessions`
(JSON and table), `mine`, `propose`, `proposals`, `evolve analyze`, `runs projects|coverage|confirm|
prepare`, the language server (status, cards, proposal details, lenses, hovers), or in any file those
wrote (recipes, the watermark store and its episodes, staged drafts, the trace, learnings, run packets
and snippets).

Content fields get a fresh secret each, appended in its context (`password=…`, `mysql -p…`,
`Authorization: Bearer …`), so one case covers every field for one kind. Fields that link or type
records (ids, parents, types, roles, timestamps) are replaced, one key per case, by secret tokens:
the same value by the same token, so the links still hold.
"""

from __future__ import annotations

import pytest

import transcript_world as W
from conftest import adversarial_cases

pytestmark = pytest.mark.adversarial("secrets")

CONTENT = [(fmt, "content", kind) for fmt in W.FORMATS for kind in W.KINDS]
STRUCTURAL = [(fmt, "field", key) for fmt in W.FORMATS for key in W.structural_keys(W.world(fmt))]


def _check(tmp_path, files, planted, *, proposes: bool | str = True):
    transcripts = W.write_world(files, tmp_path / "transcripts")
    answers = W.run_everything(tmp_path, transcripts)
    # the episode store: its log, and its fingerprints file, which holds recent live passes' episodes
    stored = [text for name, text in answers.items() if ".episodes." in name or "/mining/state/" in name]
    if proposes:  # the planted text went all the way to the episode store (and, below, to a proposal)
        assert stored and any("[REDACTED:" in text for text in stored), "no redacted text reached the store"
    if proposes == "draft":  # ... and to a staged draft and the server's cards
        assert any(k.startswith("server proposal ") for k in answers), "the history raised no proposal"
    leaks = []
    for secret, (rel, path) in planted.items():
        where = [name for name, text in answers.items() if W.leaked(secret, text)]
        if where:
            leaks.append(f"{rel} {'.'.join(map(str, path))}: {secret[:16]}… in {', '.join(where[:4])}")
    assert not leaks, "planted secrets left a reader:\n" + "\n".join(leaks)


@pytest.mark.parametrize("fmt,how,kind", adversarial_cases(CONTENT, fast=4), ids=lambda v: str(v))
def test_a_secret_in_every_content_field_never_leaves(tmp_path, fmt, how, kind):
    files = W.world(fmt)
    planted = W.plant_content(files, kind, seed=len(kind))
    assert len(planted) >= 50  # every field of the format, not a sample
    # A Codex rollout planted everywhere (tool names, argv, arguments) can leave no action two sessions
    # share, so no recipe: there the store is what is searched beyond the answers.
    _check(tmp_path, files, planted, proposes="draft" if fmt != "codex" else True)


@pytest.mark.parametrize("fmt,how,key", adversarial_cases(STRUCTURAL, fast=3), ids=lambda v: str(v))
def test_a_secret_as_an_id_or_type_never_leaves(tmp_path, fmt, how, key):
    files = W.world(fmt)
    planted = W.plant_structural(files, key, seed=len(key))
    assert planted
    _check(tmp_path, files, planted, proposes=False)  # a record whose type is a token is not a prompt
