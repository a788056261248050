"""Secret redaction for every text that leaves a transcript reader.

`redact_text` replaces secrets with typed placeholders such as ``[REDACTED:aws-access-key]``;
`redact_value` does the same through dicts, lists and tuples. Both return the very object they
were given when nothing was redacted, and redacting twice gives the same result as once.

Speed. Readers call this on every prompt, assistant text, tool input and output head, so the
common case (no secret) must be nearly free. CPython's `re` is slow at scanning for a *set* of
things (a character class or an alternation costs ~8-15 ns per character, a loop of `in` tests
~0.7 ns per needle per character), but fast at finding one literal character (~0.5 ns/char) and
checking a few look-arounds there (~20 ns each). So every rule is reached through one of seven
anchor characters that any match of it must contain:

    '-'  PEM blocks, sk-ant-/sk- keys, Slack xox?- tokens, --password style flags, curl -u
    '_'  Stripe, Hugging Face, npm, GitHub tokens, `aws_secret_access_key <value>`
    'A'  AWS access key ids (AKIA/ASIA), Google API keys (AIza)
    'B'  bare `Bearer <token>`
    ':'  `key: value` assignments (YAML, JSON, headers), URL credentials, Slack webhooks
    '='  `key=value` assignments (shell, .env, URL query, Python, ini)
    'J'  bare JWTs (eyJ...eyJ...)

A password after a client's short flag (`mysql -pS3cret`, `sshpass -p S3cret`) is found through the
'-' gate, then looked for only when the text names such a client. One rule has no anchor at all: a bare AWS secret
access key (40 base64 characters with no key name beside it) is looked for only in a text holding
a run of 40 such characters, found by one bytes.translate pass instead of a regex.

For each anchor a memchr-speed `in` test skips the group when the character is absent; otherwise a
gate regex whose only literal prefix is the anchor checks cheap look-arounds at each occurrence
(e.g. that the word before a '=' ends like a secret-bearing name). Only when a gate fires do the
group's full rules run, and the assignment rules only look at the separators the gate found.
Each gate is a superset of its rules: tests/test_redact.py checks redact_text against the full
rules run everywhere, on its cases and on random text.

What is kept: the key name and separator of an assignment, the user part of URL credentials, the
word `Bearer`/`Basic` of an authorization header. What is treated as "not a secret": empty values,
variable references and templates (`$X`, `${X}`, `{{ x }}`, `%(x)s`, `<your-key>`), environment
look-ups (`os.environ[...]`, `process.env.X`), masks (`***`, `xxxx`), booleans/null, type names
(`password: str`), code (`password=get_password()`, `password=self.password`, `token=token`), and
file paths. A private key block with no END line (the text was cut) is redacted to the end.
"""

from __future__ import annotations

import re

from core.transcripts.redact import encoded, ruleset
from core.transcripts.redact.assignments import _AUTH_SCHEMES, _AUTHZ, _redact_assignments
from core.transcripts.redact.judgement import KINDS as _OWN_KINDS
from core.transcripts.redact.judgement import _MIN_LEN, _PH, _is_placeholder, _key_info, _value_ok, keylike, random_token, wrapped_credentials
from core.transcripts.redact.tokens import _B64_RUN
from core.transcripts.redact.tokens import (
    _A_RULES, _AWS_BARE_RULES, _B_RULES, _DASH_RULES, _FLAG_TAIL, _J_RULES, _UNDERSCORE_RULES, _URL_RULES, _apply,
    _client_passwords,
)

def __getattr__(name: str):
    # KINDS reads the ruleset file's rule ids: only for whoever asks (the proposer), not at every start-up
    if name == "KINDS":
        global KINDS
        KINDS = (*_OWN_KINDS, "base64-secret", *(k for k in ruleset.rule_ids() if k not in _OWN_KINDS))
        return KINDS
    raise AttributeError(name)


KINDS: tuple[str, ...]
"""Every placeholder kind: the package's own, then one per rule of the pinned ruleset (its rule id)."""

__all__ = ["KINDS", "redact_text", "redact_value"]

# --------------------------------------------------------------------------------------------
# Gates: one literal anchor each, then cheap look-arounds
# --------------------------------------------------------------------------------------------

# Four-character tails of secret-bearing key names: password, passwd, pwd, pass, secret, token,
# auth, credential(s), passphrase, <qualifier>key, cookie; spelled out case by case (cheaper than
# (?i)). Every ':' or '=' of ordinary JSON and code is a candidate, so the gates first dispatch on
# the character before it and then check the last three letters against per-position classes
# (_C3 _C2 _LAST, a superset of the tails) before the exact tails.
_LAST = r"[dDsStTnNhHlLeEyY]"
_C2 = r"[rwseatlioRWSEATLIO]"
_C3 = r"[osparkuitOSPARKUIT]"
_TAIL4 = (
    r"(?:[wW][oO][rR][dD]|[sS][sS][wW][dD]|.[pP][wW][dD]|[pP][aA][sS][sS]|[cC][rR][eE][tT]"
    r"|[oO][kK][eE][nN]|[aA][uU][tT][hH]|[tT][iI][aA][lL]|[iI][aA][lL][sS]|[rR][aA][sS][eE]"
    r"|[\w\-][kK][eE][yY]|[oO][kK][iI][eE])"
)
_ZATION = r"[zZ][aA][tT][iI][oO][nN]"  # authorization


def _tail(x: str, sep: str) -> str:
    """Look-behinds ending at `sep`: a secret-name tail, then `x` (what may sit between the name
    and the separator: a quote, a space, a backslash). Cheapest, most selective checks first."""
    return (
        rf"(?<={_C2}{_LAST}{x}{sep})(?<={_C3}{_C2}{_LAST}{x}{sep})"
        rf"(?:(?<={_TAIL4}{x}{sep})|(?<={_ZATION}{x}{sep}))"
    )


_Q1 = r"[ \"'\\:]"  # one char between a name and '=': space, quote, backslash (\"), ':' (:=)
_QC = r"[\"' ]"  # ... and before ':'
_QE = r"\\[\"']"  # an escaped quote: \"password\": \"x\"
_EQ_GATE = re.compile(
    r"=(?:"
    rf"(?<=[A-Za-z0-9]=)(?:(?<=[A-Z0-9]=)|{_tail('', '=')})"  # NAME=value (.env, shell); key=value
    rf"|(?<={_Q1}=)(?:{_tail(_Q1, '=')}|(?<={_Q1}{_Q1}=){_tail(_Q1 + _Q1, '=')})"
    r")"
)
_COLON_GATE = re.compile(
    r":(?:"
    r"//(?:[^\s/@\"'<>]*@|hooks\.slack\.com/)"  # URL credentials, Slack webhooks
    rf"|(?<=[A-Za-z]:){_tail('', ':')}"
    rf"|(?<={_QC}:)(?:{_tail(_QC, ':')}|(?<={_QE}:){_tail(_QE, ':')})"
    r")"
)
# Alternatives that begin with a literal are skipped by sre at almost no cost when the next
# character differs, so the gates consume literals where they can instead of looking ahead.
_DASH_GATE = re.compile(
    r"-(?:"
    r"----BEGIN"  # PEM
    r"|u[ \t](?<![^\s\"'=(]-u[ \t])"  # curl -u user:pass
    rf"|-(?<![^\s\"'=(]--)(?:user[ \t=]|[a-z][a-z0-9\-]*+[ \t](?<={_FLAG_TAIL}[ \t]))"  # --password x
    r"|(?<=[kbaoprs]-)(?:(?<=sk-)|(?<=xox[abposr]-)|(?<=xapp-))"  # sk-..., xoxb-..., xapp-...
    r"|[pa](?<![^\s\"'=(]-[pa])"  # mysql -pX, sshpass -p X, redis-cli -a X
    r")"
)
_UNDERSCORE_GATE = re.compile(
    r"_(?:"
    r"(?:key|KEY|Key)[ \t](?<=[sS][sS]_...[ \t])"  # aws_secret_access_key <value>
    r"|(?<=(?:hf|pm|h[pousr]|ve|st|ec|at)_)(?=[A-Za-z0-9]{4})"
    r"(?:(?<=hf_)|(?<=npm_)|(?<=gh[pousr]_)|(?<=[sr]k_live_)|(?<=[sr]k_test_)|(?<=whsec_)|(?<=github_pat_))"
    r")"
)
_A_GATE = re.compile(r"A(?=KIA|SIA|Iza)")
_B_GATE = re.compile(r"B(?=earer[ \t]|EARER[ \t]|asic[ \t]|ASIC[ \t])")
_J_GATE = re.compile(r"J(?<=eyJ)(?=[A-Za-z0-9_\-]{8,}+\.eyJ)")


def _colon_group(first: re.Match, text: str) -> str:
    if "//" in text:
        text = _apply(_URL_RULES, text)
        first = _COLON_GATE.search(text)
        if first is None:
            return text
    return _redact_assignments(_COLON_GATE, first, text)


def redact_text(text: str) -> str:
    """Replace secrets in `text` with `[REDACTED:<kind>]`; the same object when there are none.

    The groups run in this order: a PEM block is redacted whole before anything looks inside it,
    and a provider key in `API_KEY=sk-...` gets its provider's kind before the generic
    assignment rules (which leave placeholders alone) see it.
    """
    if len(text) < _MIN_LEN:
        return text
    if "-" in text and _dash_gate(text):
        text = _apply(_DASH_RULES, text)
        if "mysql" in text or "mariadb" in text or "sshpass" in text or "redis-cli" in text:
            text = _client_passwords(text)
    if "_" in text and _underscore_gate(text):
        text = _apply(_UNDERSCORE_RULES, text)
    if "A" in text and _a_gate(text):
        text = _apply(_A_RULES, text)
    if "B" in text and _b_gate(text):
        text = _apply(_B_RULES, text)
    if ":" in text:
        m = _colon_gate(text)
        if m is not None:
            text = _colon_group(m, text)
    if "=" in text:
        m = _eq_gate(text)
        if m is not None:
            text = _redact_assignments(_EQ_GATE, m, text)
    if "J" in text and _j_gate(text):
        text = _apply(_J_RULES, text)  # a JWT with no `Bearer` or key in front of it
    if len(text) >= _RULESET_MIN_LEN:
        spans = _ruleset_spans(text)
        if spans:
            text = _ruleset_stage(text, spans)
    if len(text) >= encoded.MIN_RUN:
        # one bytes.translate pass serves both base64 stages (its runs are a superset of the bare key's)
        runs = text.encode("utf-8", "surrogatepass").translate(encoded.TABLE)
        if encoded.NEEDLE in runs:
            before = text
            text = encoded.redact_encoded(text, redact_text, translated=runs)
            if text is not before:
                runs = text.encode("utf-8", "surrogatepass").translate(encoded.TABLE)
        if len(text) >= 40 and _B64_RUN in runs:
            text = _apply(_AWS_BARE_RULES, text)  # last: a key with its name beside it has its kind by now
    if text.endswith(" more chars]"):
        text = _cut_token(text)
    return text


_CUT_TAIL = re.compile(r"[A-Za-z0-9+/=_\-.~]{8,}+(?=…\[\d+ more chars\]\Z)")


def _cut_token(text: str) -> str:
    """A token cut short by a reader (normalize.cut: `…[N more chars]`) is too short for its rule's
    regex; it is redacted when it starts like one of the ruleset's tokens (a keyword of 4+ characters:
    `glpat-`, `hvs.`, `dop_v1_`, and a digit after it: `api-gateway…` is a name) or reads as random."""
    m = _CUT_TAIL.search(text)
    if m is None or m.group().startswith(_MARK_PREFIX):
        return text
    token = m.group()
    low = token.lower()
    prefixed = any(low.startswith(k) for k in ruleset.prefix_keywords()) and any(ch.isdigit() for ch in token)
    if not (prefixed or random_token(token)):
        return text
    return text[: m.start()] + _PH["secret"] + text[m.end() :]


_MARK_PREFIX = "[REDACTED"

_RULESET_MIN_LEN = 10
"""No rule of the ruleset matches fewer characters (tests/test_redact_ruleset.py checks)."""


_ruleset_spans = ruleset.ruleset_spans


def _ruleset_stage(text: str, spans: list) -> str:
    """The pinned ruleset's provider rules (ruleset.py): each secret becomes `[REDACTED:<rule id>]`."""
    parts, last = [], 0
    for s, e, kind in sorted(spans, key=lambda x: (x[0], -x[1])):
        if s < last:
            continue
        parts += [text[last:s], f"[REDACTED:{kind}]"]
        last = e
    parts.append(text[last:])
    return "".join(parts)


_dash_gate = _DASH_GATE.search
_underscore_gate = _UNDERSCORE_GATE.search
_a_gate = _A_GATE.search
_b_gate = _B_GATE.search
_colon_gate = _COLON_GATE.search
_eq_gate = _EQ_GATE.search
_j_gate = _J_GATE.search


def _redact_by_key(key, value: str) -> str | None:
    """A string value under a secret-naming dict key ({"api_key": "abc..."}): its placeholder."""
    if type(key) is not str:
        return None
    info = _key_info(key)
    if info is None:
        # a key-like name _key_info does not count ({"cache_key": "9xQ…"}): a random-looking value only
        return _PH["secret"] if keylike(key) and (random_token(value) or wrapped_credentials(value)) else None
    kind, cls = info
    if cls == "authz":
        a = _AUTHZ.fullmatch(value.strip())
        if a is None or _is_placeholder(a.group(2), True):
            return None
        scheme = a.group(1)
        if scheme is None:
            return _PH["secret"]
        if scheme.lower() not in _AUTH_SCHEMES:
            return None
        return f"{scheme} {_PH[_AUTH_SCHEMES[scheme.lower()]]}"
    if cls == "cookie":
        return None if _is_placeholder(value.strip(), True) else _PH[kind]
    if _value_ok(cls, value, True, key) and "\n" not in value.strip():
        return _PH[kind]
    return None


_CLEAN_KEYS: set[str] = set()
"""Dict keys known to hold nothing to redact: tool inputs repeat the same few keys on every call."""


def _key_redacted(key: str) -> str:
    out = redact_text(key)
    if out is key and len(_CLEAN_KEYS) < 4096:
        _CLEAN_KEYS.add(key)
    return out


MAX_DEPTH = 64
"""redact_value goes this deep into containers; anything deeper is replaced by DEEPER (a value from
an untrusted file may nest a thousand levels, and must not make redaction recurse that far)."""
DEEPER = f"[nested deeper than {MAX_DEPTH} levels: not kept]"


def redact_value(value, _depth: int = 0):
    """Redact every string inside dicts (values and keys), lists and tuples.

    A new container is built only where something changed; otherwise the argument itself is
    returned. A string directly under a key that names a secret (`{"password": "hunter2"}`) is
    replaced whole, since the key is context the string itself does not carry.
    """
    t = type(value)
    if t is str:
        return redact_text(value)
    if (t is dict or t is list or t is tuple) and _depth >= MAX_DEPTH:
        return DEEPER
    if t is dict:
        changed = None
        renamed = None
        for k, v in value.items():
            if type(v) is str:
                nv = redact_text(v)
                if nv is v:
                    nv = _redact_by_key(k, v) or v
            else:
                nv = redact_value(v, _depth + 1)
            if nv is not v:
                if changed is None:
                    changed = dict(value)
                changed[k] = nv
            if type(k) is str and k not in _CLEAN_KEYS and _key_redacted(k) is not k:
                renamed = True
        if renamed:
            # a secret written as a key ({"ghp_...": 1}): rebuild with redacted keys, order kept
            out = {}
            for k, v in (changed or value).items():
                out[_key_redacted(k) if type(k) is str else k] = v
            return out
        return value if changed is None else changed
    if t is list or t is tuple:
        items = None
        for i, v in enumerate(value):
            nv = redact_value(v, _depth + 1)
            if nv is not v:
                if items is None:
                    items = list(value)
                items[i] = nv
        if items is None:
            return value
        return items if t is list else tuple(items)
    return value
