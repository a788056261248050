"""Token-shaped rules: provider keys and friends, CLI password flags, clients' glued passwords and
the bare AWS secret key, each reached through its anchor character (see the package's docstring)."""

from __future__ import annotations

import re

from core.transcripts.redact.judgement import _CUT, _HAS_ALNUM, _MARK, _PH, _is_placeholder, _looks_random, _secretish, _value_ok

# Every rule starts with a literal: sre then finds candidates at memchr-like speed (~870 MB/s),
# where a leading look-behind would make it try every position (~30 MB/s). Left-boundary checks
# therefore come right after the literal: `sk-ant-(?<![A-Za-z0-9_-]sk-ant-)`.
_NOT_TOKEN = r"[A-Za-z0-9_\-]"


def _tok(prefix: str, body: str, full: int, cut: int = 4) -> str:
    """A token: `prefix` (fixed width, starting with a literal) not glued to a word before it, then
    `body` chars: at least `full` of them, or `cut` when the text was cut right there."""
    return rf"{prefix}(?<!{_NOT_TOKEN}{prefix})(?:{body}{{{full},}}+|{body}{{{cut},}}+{_CUT})"


def _whole(kind: str):
    ph = _PH[kind]
    return lambda m: ph


def _openai(m: re.Match) -> str:
    body = m.group(1)
    run = max((len(r) for r in re.findall(r"[A-Za-z0-9]+", body)), default=0)
    if run >= 12 and any(ch.isdigit() for ch in body) and any(ch.isalpha() for ch in body):
        return _PH["openai-key"]
    return m.group(0)


_PEM = re.compile(
    r"-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----"
    r"(?=(?:\s|\\[nr])*(?:[A-Za-z0-9+/=]{16}|[A-Za-z0-9+/=]*(?:…|\Z)|Proc-Type:|Comment:|Version:))"
    r"(?:.*?-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----|.*\Z)",
    re.S,
)

_VAL_WORD = r"""(?:"(?:[^"\\\n]|\\.)*+"?|'(?:[^'\\\n]|\\.)*+'?|[^\s"'`;&|<>()]++)"""

_DASH_LEFT = r"-(?<![^\s\"'=(]-)"  # a '-' that starts a word (after whitespace, a quote, '=', '(')
_FLAG_NAME = r"(?:pass|passwd|password|token|secret|api-?key|access-?key|secret-?key|private-?key)"
_FLAG_TAIL = r"(?:pass|sswd|word|oken|cret|[a-z\-]key)"  # 4-char tails of _FLAG_NAME (for the gate)
_CLI_FLAG = re.compile(rf"({_DASH_LEFT}-?(?:[A-Za-z0-9]+-)*{_FLAG_NAME}[ \t]+)({_VAL_WORD})")


def _cli_flag(m: re.Match) -> str:
    raw = m.group(2)
    quoted = raw[:1] in "\"'"
    body = raw[1:].rstrip(raw[0]) if quoted else raw
    if raw.startswith("-") or not _value_ok("pw", body, quoted, "") or not (quoted or _secretish(body)):
        return m.group(0)
    from core.transcripts.redact import redact_text  # the whole rule set; the package imports this module

    provider = redact_text(raw)  # `--token ghp_...`: the provider's kind, not a generic one
    if provider is not raw:
        return m.group(1) + provider
    ph = _PH["password" if "pass" in m.group(1) else "secret"]
    return f"{m.group(1)}{raw[0]}{ph}{raw[0]}" if quoted else m.group(1) + ph


_CURL_USER = re.compile(rf"""({_DASH_LEFT}(?:u|-user)(?:[ \t]+|=)["']?([^\s:"'@]*):)([^\s"']+)""")


def _curl_user(m: re.Match) -> str:
    user, pw = m.group(2), m.group(3)
    if _is_placeholder(pw, False) or (user.isdigit() and pw.isdigit()) or user.startswith("[REDACTED"):
        return m.group(0)  # docker -u 1000:1000 is a uid:gid
    return m.group(1) + _PH["basic-auth"]


_BEARER = re.compile(r"(B(?<!\wB)(?:earer|EARER))([ \t]+)([A-Za-z0-9\-._~+/]++=*+)(?![\w\-.~+/=])")


def _bearer(m: re.Match) -> str:
    tok = m.group(3)
    if tok.lower().startswith(("your", "token", "example")) or not _looks_random(tok):
        return m.group(0)
    return m.group(1) + m.group(2) + _PH["bearer-token"]


# `Basic <base64 of user:password>` anywhere (a header pasted into prose, a log line): the scheme word,
# then base64 that decodes to text holding a colon.
_BASIC = re.compile(r"(B(?<!\wB)(?:asic|ASIC))([ \t]+)([A-Za-z0-9+/]{8,}+={0,2})(?![\w\-.~+=])")


def _basic(m: re.Match) -> str:
    import base64
    import binascii

    body = m.group(3)
    rest = ""
    while True:  # the credentials may be followed by a path (`Basic dXM6cHc=/x`): cut at '/' from the right
        try:
            plain = base64.b64decode(body + "=" * (-len(body) % 4), validate=True).decode("utf-8")
            break
        except (binascii.Error, ValueError):
            if "/" not in body:
                return m.group(0)
            body, tail = body.rsplit("/", 1)
            rest = "/" + tail + rest
    user, sep, pw = plain.partition(":")
    if not sep or not pw or not plain.isprintable() or _is_placeholder(pw, True):
        return m.group(0)
    return m.group(1) + m.group(2) + _PH["basic-auth"] + rest


# A URL whose user part alone is a token: a Sentry DSN (`https://<key>@o1.ingest.sentry.io/2`), a
# token-as-user clone URL (`https://ghp_…@github.com/…`). Only a long random-looking user counts.
_URL_TOKEN_USER = re.compile(r"(://(?<=[A-Za-z0-9+.\-]://))([A-Za-z0-9_\-.~+]{16,}+)@(?=[^\s/@\"'<>]*[A-Za-z0-9])")


def _url_token_user(m: re.Match) -> str:
    user = m.group(2)
    if not _looks_random(user) or not (_HAS_DIGIT_RX.search(user) and _HAS_ALPHA_RX.search(user)):
        return m.group(0)
    return f"{m.group(1)}{_PH['url-credential']}@"


_HAS_DIGIT_RX = re.compile(r"[0-9]")
_HAS_ALPHA_RX = re.compile(r"[A-Za-z]")

_URL_CRED = re.compile(
    r"(://(?<=[A-Za-z0-9+.\-]://)[^\s:/?#@\"'<>]*:)([^\s/\"'<>]+)@(?=[^\s/@\"'<>]*[A-Za-z0-9])"
)
_URL_PLACEHOLDERS = frozenset({"password", "pass", "passwd", "pwd", "secret", "token", "pw", "p"})


def _url_cred(m: re.Match) -> str:
    pw = m.group(2)
    if _is_placeholder(pw, True) or pw.lower() in _URL_PLACEHOLDERS or m.group(1).endswith(_MARK):
        # ... or `://[REDACTED:url-credential]@`, a user part already redacted
        return m.group(0)
    return f"{m.group(1)}{_PH['url-credential']}@"


_SLACK_HOOK = re.compile(
    r"(https?://hooks\.slack\.com/(?:services|workflows|triggers)/)[A-Za-z0-9/_\-]{8,}+"
)

_AWS_SECRET_SPACED = [
    re.compile(rf"({name}[ \t]+)([A-Za-z0-9/+]{{40}})(?![A-Za-z0-9/+=])")
    for name in ("aws_secret_access_key", "AWS_SECRET_ACCESS_KEY")
]

# (regex, replacement) per group, applied in order.
_DASH_RULES = (
    (_PEM, _whole("private-key")),
    (re.compile(_tok(r"sk-ant-", r"[A-Za-z0-9_\-]", 8)), _whole("anthropic-key")),
    (
        re.compile(
            rf"sk-(?<!{_NOT_TOKEN}sk-)(?:proj|svcacct|admin)-(?:[A-Za-z0-9_\-]{{20,}}+|[A-Za-z0-9_\-]{{4,}}+{_CUT})"
        ),
        _whole("openai-key"),
    ),
    (re.compile(rf"sk-(?<!{_NOT_TOKEN}sk-)(?!ant-|proj-|svcacct-|admin-)([A-Za-z0-9_\-]{{20,}}+)"), _openai),
    (re.compile(_tok(r"xox[abposr]-", r"[A-Za-z0-9\-]", 10)), _whole("slack-token")),
    (re.compile(_tok(r"xapp-\d-", r"[A-Za-z0-9\-]", 10)), _whole("slack-token")),
    (_CLI_FLAG, _cli_flag),
    (_CURL_USER, _curl_user),
)

_UNDERSCORE_RULES = (
    (re.compile(_tok(r"sk_(?:live|test)_", r"[A-Za-z0-9]", 10)), _whole("stripe-key")),
    (re.compile(_tok(r"rk_(?:live|test)_", r"[A-Za-z0-9]", 10)), _whole("stripe-key")),
    (re.compile(_tok(r"whsec_", r"[A-Za-z0-9+/=]", 20)), _whole("stripe-key")),
    (re.compile(_tok(r"hf_", r"[A-Za-z0-9]", 30, 8)), _whole("huggingface-token")),
    (re.compile(_tok(r"npm_", r"[A-Za-z0-9]", 30)), _whole("npm-token")),
    (re.compile(_tok(r"gh[pousr]_", r"[A-Za-z0-9]", 30)), _whole("github-token")),
    (re.compile(_tok(r"github_pat_", r"[A-Za-z0-9_]", 30)), _whole("github-token")),
    *((rx, lambda m: m.group(1) + _PH["aws-secret-key"]) for rx in _AWS_SECRET_SPACED),
)
_A_RULES = (
    (
        re.compile(r"A(?<![A-Za-z0-9]A)(?:KIA|SIA)(?:[A-Z0-9]{16}(?![A-Za-z0-9])|[A-Z0-9]{4,15}" + _CUT + ")"),
        _whole("aws-access-key"),
    ),
    (re.compile(_tok(r"AIza", r"[A-Za-z0-9_\-]", 30)), _whole("google-api-key")),
)
_B_RULES = ((_BEARER, _bearer), (_BASIC, _basic))
_J_RULES = (
    (
        re.compile(rf"eyJ(?<!{_NOT_TOKEN}eyJ)[A-Za-z0-9_\-]{{8,}}+\.eyJ[A-Za-z0-9_\-]{{8,}}+(?:\.[A-Za-z0-9_\-]*+)*+"),
        _whole("jwt"),
    ),
)
# Database and remote-shell clients that take a password glued to (or right after) a short flag:
# `mysql -uroot -pS3cret db`, `sshpass -p S3cret ssh host`, `redis-cli -a S3cret`. A bare `-p` means
# "ask me" to mysql, and `-p` is a port or a parents flag to most other programs, so the flag counts
# only inside one of these commands (up to the end of the command: a newline, `;`, `|`, `&`).
_PW_CLIENT = re.compile(
    r"(?<![\w\-./])(?:(?P<my>mysql(?:dump|admin|import|check|show|pump|sh|binlog|slap)?|mariadb(?:-?[a-z]+)?)"
    r"|(?P<ssh>sshpass)|(?P<redis>redis-cli))(?![\w\-])"
)
_CMD_REST = re.compile(r"""(?:"[^"\n]*"?|'[^'\n]*'?|[^\n;|&"'])*""")
_PW_VALUE = r"""(?P<v>"[^"\n]*"?|'[^'\n]*'?|[^\s"';|&<>()`…]+)"""
_PW_FLAGS = {
    "my": re.compile(r"(?<=[ \t])-p" + _PW_VALUE),
    "ssh": re.compile(r"(?<=[ \t])-p[ \t]*" + _PW_VALUE),
    "redis": re.compile(r"(?<=[ \t])(?:-a|--pass)[ \t]+" + _PW_VALUE),
}


def _templated(s: str) -> bool:
    """A value that is not a literal: empty, a variable or template, a mask, a placeholder."""
    return (not s or s[0] in "$<{%" or s.startswith(_MARK) or "{{" in s
            or _HAS_ALNUM.search(s) is None or not s.lower().strip("x*"))


def _client_passwords(text: str) -> str:
    spans = []
    for m in _PW_CLIENT.finditer(text):
        end = _CMD_REST.match(text, m.end()).end()
        for f in _PW_FLAGS[m.lastgroup].finditer(text, m.end(), end):
            v = f.group("v")
            body = v[1:].rstrip(v[0]) if v[0] in "\"'" else v
            if not _templated(body):
                s, e = f.span("v")
                if v[0] in "\"'":
                    s, e = s + 1, s + 1 + len(body)
                spans.append((s, e))
    if not spans:
        return text
    parts, last = [], 0
    for s, e in spans:
        parts += [text[last:s], _PH["password"]]
        last = e
    parts.append(text[last:])
    return "".join(parts)


# A bare AWS secret access key: 40 base64 characters with no key name beside it. Forty such
# characters also spell git object ids, base64 fragments, paths and long identifiers, so a run counts
# only when it reads as random: upper and lower case and digits, frequent changes between character
# classes, many distinct characters and few word-like runs. Tuned on a million random keys (0.3% are
# too regular to tell from an identifier and kept) and on CPython's library, kitsoki's source and the
# corpus (what it still takes is base64 that is key-shaped: certificate lines, AWS's example keys).
_AWS_BARE = re.compile(r"(?<![A-Za-z0-9/+_\-.])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=_\-])")
_B64_TABLE = bytes(0x61 if chr(i).isascii() and (chr(i).isalnum() or chr(i) in "/+") else 0x20 for i in range(256))
_B64_RUN = b"a" * 40
_WORDISH = re.compile(r"[a-z]{4,}|[A-Z]{5,}")


def _char_class(c: str) -> int:
    return 0 if c.islower() else 1 if c.isupper() else 2 if c.isdigit() else 3


def _aws_bare(m: re.Match) -> str:
    s = m.group()
    classes = [_char_class(c) for c in s]
    if not (0 in classes and 1 in classes and 2 in classes):
        return s
    changes = sum(1 for a, b in zip(classes, classes[1:]) if a != b)
    if changes < 12 or len(set(s)) < 20 or sum(len(w) for w in _WORDISH.findall(s)) > 20:
        return s
    return _PH["aws-secret-key"]


def _has_b64_run(text: str) -> bool:
    """Whether `text` holds 40 base64 characters in a row: one C pass over its bytes, several times
    cheaper than any regex scanning a character class."""
    return _B64_RUN in text.encode("utf-8", "surrogatepass").translate(_B64_TABLE)


_AWS_BARE_RULES = ((_AWS_BARE, _aws_bare),)

_URL_RULES = (
    (_SLACK_HOOK, lambda m: m.group(1) + _PH["slack-webhook"]),
    (_URL_CRED, _url_cred),
    (_URL_TOKEN_USER, _url_token_user),
)


def _apply(rules, text: str) -> str:
    out = text
    for rx, repl in rules:
        out = rx.sub(repl, out)
    # a rule may match and still keep the text (a placeholder, prose); keep the object then
    return text if out == text else out


# --------------------------------------------------------------------------------------------
