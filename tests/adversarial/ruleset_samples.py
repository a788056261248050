"""A sample secret for every rule of the pinned ruleset (core/transcripts/redact/ruleset.py), and the
twelve kinds issue 28 found leaking, for planting in transcripts.

A rule's sample is a random string its own regex generates (rstr, seeded), kept only when the rule
itself takes it as a secret (entropy floor, allowlists) standing alone between spaces: what a rule is
for, whatever its provider's token looks like this year.
"""

from __future__ import annotations

import base64
import importlib
import random
import string

from pathlib import Path

import orjson
import rstr

from core.transcripts.redact import ruleset as R

_xeger = importlib.import_module("rstr.xeger")
_xeger.STAR_PLUS_LIMIT = 300  # rules whose token is longer than rstr's default of 100 repeats

ALNUM = string.ascii_letters + string.digits


SAMPLES_FILE = Path(__file__).resolve().parent.parent / "fixtures" / "redact" / "ruleset-samples.json"


def rule_samples() -> dict[str, tuple[str, str]]:
    """rule id -> (sample, its secret part), as recorded by `python tests/adversarial/ruleset_samples.py`
    (generating them takes half a minute; tests/test_redact_ruleset.py checks each still is its rule's)."""
    return {k: tuple(v) for k, v in orjson.loads(SAMPLES_FILE.read_bytes()).items()}


# Rules whose regex rstr cannot turn into a fitting sample (several lines in a fixed shape, an exact
# run of any non-space): written by hand, checked the same way.
HAND = {
    "freemius-secret-key": '"secret_key" => "sk_Xq3v9ZbT7wLm2Rk8PfYd4Hs6Jc1Ng"',
    "kubernetes-secret-yaml": "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\ndata:\n  password: c3VwZXJTM2NyZXRQYXNzd29yZDEyMw==\n",
    "nuget-config-password": '<add key="ClearTextPassword" value="Nu9et-S3cret-Pa55" />',
    "curl-auth-user": "curl -s -u deploy:Zq8vR2mLx9Ab https://ci.internal/api",
}


def generate_samples(seed: int = 28) -> dict[str, tuple[str, str]]:
    """rule id -> (sample, its secret part): the text to plant, and what must never come out."""
    rs = R.ruleset()
    gen = rstr.Rstr(random.Random(seed))
    out = {}
    for rule in rs.rules:
        for attempt in range(400):
            # from gitleaks' own regex (not the one widened to end a token at '/', ',' or '.')
            sample = HAND[rule.id] if rule.id in HAND else gen.xeger(R.go_to_python(rule._spec["regex"]))
            # printable text and line breaks: what a transcript field holds once JSON-decoded
            if not sample.replace("\n", "").replace("\t", "").isprintable() or len(sample) > 300:
                continue  # (under every reader's cut: a secret cut short is tests/test_redact.py's)
            if rule.keywords and not any(k in sample.lower() for k in rule.keywords):
                # gitleaks runs a rule only on a text holding one of its keywords (`airtable` beside
                # an Airtable token): the sample says it
                sample = f"{rule.keywords[0]} {sample}"
            text = f"x {sample} y"
            spans = R.rule_spans(rule, text, rs.allow)
            if spans:
                s, e = spans[0]
                if rule.id not in HAND and any(ch in text[s:e] for ch in "\"\\"):
                    continue  # JSON output escapes these: a leak of it would not be seen as one
                out[rule.id] = (sample, text[s:e])
                break
            if rule.id in HAND:
                raise AssertionError(f"{rule.id}: its hand-written sample is not its secret")
    return out


def _r(rnd: random.Random, alphabet: str, n: int) -> str:
    return "".join(rnd.choice(alphabet) for _ in range(n))


HEX = "0123456789abcdef"

# The twelve kinds of issue 28 item 7a: (make a secret, the text it is planted as; `{s}` is the secret).
ISSUE_KINDS = {
    "gitlab-pat": (lambda r: "glpat-" + _r(r, ALNUM + "_-", 20), "{s}"),
    "google-oauth": (lambda r: "ya29.a0" + _r(r, ALNUM + "_-", 120), "{s}"),
    "sendgrid": (lambda r: "SG." + _r(r, ALNUM + "_-", 22) + "." + _r(r, ALNUM + "_-", 43), "{s}"),
    "pypi": (lambda r: "pypi-AgEIcHlwaS5vcmc" + _r(r, ALNUM + "_-", 70), "{s}"),
    "digitalocean": (lambda r: "dop_v1_" + _r(r, HEX, 64), "{s}"),
    "vault": (lambda r: "hvs." + _r(r, ALNUM + "_-", 92), "{s}"),
    "twilio": (lambda r: "SK" + _r(r, HEX, 32), "{s}"),
    "basic-header": (lambda r: base64.b64encode(f"deploy:{_r(r, ALNUM, 16)}".encode()).decode(),
                     "Authorization: Basic {s}"),
    "sentry-dsn": (lambda r: _r(r, HEX, 32), "https://{s}@o4504.ingest.sentry.io/4505"),
    "aws-session-token": (lambda r: "IQoJb3JpZ2luX2VjE" + _r(r, ALNUM + "/+", 280), "export AWS_SESSION_TOKEN={s}"),
    "base64-wrapped": (lambda r: base64.b64encode(("ghp_" + _r(r, ALNUM, 36)).encode()).decode(),
                       "echo {s} | base64 -d"),
    "docker-auth": (lambda r: base64.b64encode(f"ci-bot:{_r(r, ALNUM, 24)}".encode()).decode(),
                    '{{"auths":{{"registry.example.com":{{"auth":"{s}"}}}}}}'),
}
SELF_EVIDENT = frozenset(k for k, (_, ctx) in ISSUE_KINDS.items() if ctx == "{s}") | {
    "basic-header", "base64-wrapped", "docker-auth"}
"""Kinds whose secret is one with no context at all (a folder name): not a Sentry key (32 hex digits are
also an MD5) nor a session token's body (random base64 is also a blob)."""


if __name__ == "__main__":
    SAMPLES_FILE.parent.mkdir(parents=True, exist_ok=True)
    samples = generate_samples()
    SAMPLES_FILE.write_bytes(orjson.dumps(samples, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n")
    print(f"{len(samples)} samples -> {SAMPLES_FILE}")
