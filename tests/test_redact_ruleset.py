"""The pinned ruleset (gitleaks' default config, vendored): it is the pinned file, every rule is used
(or left out by name, with why), and every rule's sample is redacted wherever it stands in a text.
What readers make of the samples in every field of every format is tests/adversarial/
test_secrets_ruleset.py's."""

from __future__ import annotations

import hashlib
import re
import sys
import warnings
from pathlib import Path

import pytest

from core.transcripts import redact as R
from core.transcripts.redact import KINDS, redact_text, redact_value, ruleset

sys.path.insert(0, str(Path(__file__).resolve().parent / "adversarial"))
from ruleset_samples import ISSUE_KINDS, SELF_EVIDENT, rule_samples  # noqa: E402

SAMPLES = rule_samples()
PLACEHOLDER = re.compile(r"\[REDACTED:[a-z0-9\-]+\]")
RULES = {r.id: r for r in ruleset.ruleset().rules}


def test_the_vendored_file_is_the_pinned_release():
    """gitleaks.toml is gitleaks' config/gitleaks.toml at GITLEAKS_VERSION byte for byte (its digest
    was taken from the release's tree), and its licence travels with it."""
    assert hashlib.sha256(ruleset.RULES_FILE.read_bytes()).hexdigest() == ruleset.GITLEAKS_SHA256
    assert ruleset.GITLEAKS_VERSION.startswith("v8.")
    assert "MIT License" in ruleset.RULES_FILE.with_name("gitleaks.LICENSE").read_text()
    assert re.search(r'(?m)^minVersion = "v8\.\d+\.\d+"$', ruleset.RULES_FILE.read_text())


def test_every_rule_is_used_or_left_out_by_name():
    rs = ruleset.ruleset()
    ids = ruleset.rule_ids()
    assert len(ids) > 200 and len(set(ids)) == len(ids)
    assert {r.id for r in rs.rules} | {rid for rid, _ in rs.skipped} == set(ids)
    assert {rid for rid, _ in rs.skipped} == ruleset.LEFT_OUT
    assert [(r.id, r.error) for r in rs.rules if r.error] == []  # no rule lost to a regex Python cannot read
    assert set(ids) <= set(KINDS)  # each rule's placeholder is a kind mapper.holds_redaction knows


def test_every_rule_has_a_sample_that_is_its_secret():
    assert set(SAMPLES) == set(RULES)
    rs = ruleset.ruleset()
    for rid, (sample, secret) in SAMPLES.items():
        spans = ruleset.rule_spans(RULES[rid], f"x {sample} y", rs.allow)
        assert spans, rid
        s, e = spans[0]
        assert f"x {sample} y"[s:e] == secret, rid


CONTEXTS = ["{s}", "x {s} y", "said: {s}.", '{{"k": "{s}"}}', "/home/u/{s}/src", "cd {s} && ls", "- {s}\n- next",
            "`{s}`", "({s})"]


@pytest.mark.parametrize("rid", sorted(SAMPLES))
def test_every_rule_sample_is_redacted_in_every_context(rid):
    sample, secret = SAMPLES[rid]
    for context in CONTEXTS:
        text = context.format(s=sample)
        out = redact_text(text)
        assert secret not in out, (context, out)
        assert redact_text(out) == out
    assert secret not in str(redact_value({"note": sample, "args": [sample], sample: 1}))


def test_issue_28_kinds_are_redacted():
    import random

    rnd = random.Random(28)
    for kind, (make, context) in ISSUE_KINDS.items():
        for _ in range(20):
            secret = make(rnd)
            wraps = ["{t}", "run: {t} now", '{{"text": "{t}"}}'] + (["/home/u/{s}/app"] if kind in SELF_EVIDENT else [])
            for wrap in wraps:
                text = wrap.format(t=context.format(s=secret), s=secret)
                out = redact_text(text)
                assert secret not in out and secret[:16] not in out, (kind, out)


def test_no_rule_matches_fewer_characters_than_the_stage_gate():
    """redact_text skips the ruleset for texts shorter than _RULESET_MIN_LEN: no rule can match one."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import sre_parse

        for rule in RULES.values():
            assert sre_parse.parse(rule.rx.pattern, rule.rx.flags).getwidth()[0] >= R._RULESET_MIN_LEN, rule.id


def test_go_to_python_keeps_re2_meaning():
    py = ruleset.go_to_python
    assert re.fullmatch(py(r"SG\.(?i)[a-z]{3}"), "SG.AbC") and not re.fullmatch(py(r"SG\.(?i)[a-z]{3}"), "sg.abc")
    # a flag set in one alternative lasts to the end of its group, across `|`, and no further
    rx = re.compile(py(r'(?:"(?i)(?:ab)"|\'(?i)(?:cd)\')X'))
    assert rx.fullmatch('"AB"X') and rx.fullmatch("'CD'X") and not rx.fullmatch("'CD'x")
    assert re.fullmatch(py(r"a[[:alnum:]]{2}\z"), "a1Z")


def test_a_vault_token_is_not_let_go_by_its_legacy_forms_allowlist():
    """gitleaks lets `s.` + 24 letters go (a word); searched, its allowlist also let `hvs.` tokens go
    whose first 24 characters after `s.` are letters. Anchored here (ruleset.ALLOWLIST_FIXES)."""
    token = "hvs.KKqZbzQgcmOtCoBNanzWavoOT7H7XaNVo7wN3I7p-uyLYGbpD45M-krm4Iqh0T50_mWbe9WY5nC-Oa61-4hqIbs-qhFV"
    assert token not in redact_text(f"deploy {token}\n")
    for rid, rx in ruleset.ALLOWLIST_FIXES:  # each fix still names a regex of the pinned file
        assert any(rx in a.get("regexes", ()) for a in RULES[rid]._spec.get("allowlists", ())), rid


@pytest.mark.parametrize("fmt", ["claude", "pi", "codex"])
def test_every_rule_sample_in_every_field_never_leaves_the_readers(tmp_path, fmt):
    """Every rule's sample appended to every content field of a format's full history (each record shape
    the reader takes apart), read by the real reader: nothing of it in the model. What the commands,
    stores and the language server make of it is tests/adversarial/test_secrets_ruleset.py's."""
    import orjson

    import transcript_world as W
    from core.transcripts.discover import discover
    from core.transcripts.ingest import read_sessions
    from core.transcripts.model import session_to_json

    leaks = []
    for i, (rid, (sample, secret)) in enumerate(sorted(SAMPLES.items())):
        files = W.world(fmt)
        for rel, path in W.content_fields(files):
            old = files[rel]
            for key in path:
                old = old[key]
            W.set_at(files[rel], path, f"{old} {sample}")
        root = W.write_world(files, tmp_path / str(i))
        sessions = read_sessions(discover(None, [root]), workers=1)
        assert sessions, rid
        # (a placeholder names its rule: `[REDACTED:aws-amazon-bedrock-api-key-short-lived]` is no leak of
        # that rule's fixed `bedrock-api-key-` prefix)
        dumped = PLACEHOLDER.sub("\0", orjson.dumps([session_to_json(s) for s in sessions]).decode())
        if W.leaked(secret, dumped) or W.leaked(orjson.dumps(secret).decode()[1:-1], dumped):
            leaks.append(rid)
    assert not leaks, f"{fmt}: {leaks}"
