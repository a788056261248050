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

import functools
import re

__all__ = ["KINDS", "redact_text", "redact_value"]

KINDS: tuple[str, ...] = (
    "private-key",
    "anthropic-key",
    "openai-key",
    "google-api-key",
    "slack-token",
    "slack-webhook",
    "stripe-key",
    "huggingface-token",
    "npm-token",
    "aws-access-key",
    "aws-secret-key",
    "github-token",
    "bearer-token",
    "jwt",
    "basic-auth",
    "url-credential",
    "password",
    "secret",
)

_MARK = "[REDACTED:"
_PH = {kind: f"[REDACTED:{kind}]" for kind in KINDS}

# Texts shorter than this cannot hold anything we redact (`pwd=abc` is 7 characters).
_MIN_LEN = 7

# Where a cut text ends: normalize.cut() appends "…[N more chars]". A token cut short right
# before it (or before the end of the text) is still redacted.
_CUT = r"(?=…|\Z)"


# --------------------------------------------------------------------------------------------
# Value judgement shared by the assignment rules and redact_value
# --------------------------------------------------------------------------------------------

_PLACEHOLDER_WORDS = frozenset(
    """
    null none nil undefined true false yes no on off required optional todo tbd n/a na
    redacted hidden masked removed omitted elided sensitive
    password passwd pwd pass passphrase secret secrets token tokens key apikey api_key api-key
    credential credentials auth authorization bearer basic cookie
    str string int integer bool boolean bytes any number object text varchar char secretstr
    replace_me replace-me replaceme change_me change-me changeme
    value values val foo bar baz qux
    """.split()
)
_ENV_LOOKUP = (
    "os.environ",
    "os.getenv",
    "getenv(",
    "environ[",
    "environ.get",
    "process.env",
    "import.meta.env",
    "env.",
    "env[",
    "env(",
    "secrets.",
    "vars.",
    "deno.env",
    "system.getenv",
    "read_secret",
)
_CODE_OBJECTS = (
    r"self|this|cls|args|opts|options|config|cfg|conf|settings|os|env|environ|process|params|"
    r"kwargs|request|req|ctx|context|data|creds|credentials|secrets|st|app|form|body|payload|"
    r"props|state|user|auth|values|vars|input|session|response|res|result|obj|instance|info"
)
_CODE_REF = re.compile(rf"(?:{_CODE_OBJECTS})[.\[]")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_IDENT_PATH = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*\Z")
_KEYWORD_IN = re.compile(r"pass|pwd|secret|token|key|cred|auth", re.I)
_CAMEL = re.compile(r"[a-z0-9][A-Z]")
_NAME_LIKE = re.compile(r"[A-Za-z][A-Za-z_.\-]*\Z")  # words and separators, no digits
_SNAKE_OR_CAMEL = re.compile(r"[a-z]+(?:_[a-z]+)+\Z|[a-z]+(?:[A-Z][a-z]+)+\Z")
_COLOR = re.compile(r"#[0-9a-fA-F]{3,8}\Z")
_PATH = re.compile(r"(?:~|\.{1,2})?/[\w.\-/@+]*\Z|[A-Za-z]:\\[\w.\-\\ ]*\Z")
_HAS_ALNUM = re.compile(r"[A-Za-z0-9]")
_HAS_DIGIT = re.compile(r"[0-9]")
_HAS_ALPHA = re.compile(r"[A-Za-z]")


def _is_placeholder(s: str, quoted: bool, key: str | None = None) -> bool:
    """True when an assignment's value is obviously not a literal secret."""
    if not s:
        return True
    c = s[0]
    if c in "$<{%" or s.startswith(_MARK):
        return True
    if not _HAS_ALNUM.search(s):
        return True  # ***, ..., ----, ••••
    low = s.lower()
    if low.rstrip("!?;,") in _PLACEHOLDER_WORDS:
        return True
    if not low.strip("x*.-_ •…"):
        return True  # xxxx, x-x-x
    if low.startswith(("your", "<your", "example", "dummy")) or low.endswith(("_here", "-here", "here>")):
        return True
    if low.startswith(_ENV_LOOKUP) or "{{" in s or "${" in s or ("{" in s and "}" in s):
        return True  # a template: {{ vault_password }}, f"{prefix}-{id}"
    if key is not None and low == key.lower():
        return True
    if s.isdigit() and len(s) <= 3:
        return True  # "HAVE_STRUCT_PASSWD": 1, retries: 3
    if _PATH.match(s):
        return True  # a file path (PWD=/home/x, private_key: ~/.ssh/id_rsa)
    if low.startswith(("http://", "https://")):
        return True  # a URL (credentials in URLs are the URL rule's business)
    if _NAME_LIKE.match(s) and ("_" in s or "." in s or "-" in s or _CAMEL.search(s)) and _KEYWORD_IN.search(s):
        return True  # the name of a secret, not one: "next_token", 'AWSSecretKey', "my-db-secret"
    if _COLOR.match(s):
        return True  # Token: "#f8f8f2"
    if not quoted:
        if "(" in s or _CODE_REF.match(s):
            return True  # get_password(), self.password, config["x"]
        if _SNAKE_OR_CAMEL.match(s):
            return True  # last_token = maybe_comma; token = nextToken
        if _IDENT_PATH.match(s):
            if "." in s and not any(ch.isdigit() for ch in s):
                return True  # node.value, settings.db.password (attribute access)
            if ("_" in s or "." in s or _CAMEL.search(s)) and _KEYWORD_IN.search(s):
                return True  # db_password, csrfToken, OPENAI_API_KEY (a variable)
    return False


def _secretish(word: str) -> bool:
    """A lone word that reads like a secret rather than prose: letters and digits, or long."""
    if len(word) >= 16:
        return True
    return len(word) >= 6 and _HAS_DIGIT.search(word) is not None and _HAS_ALPHA.search(word) is not None


def _looks_random(s: str) -> bool:
    """For tokens with weak context (a bare `Bearer x`): a digit or symbol, or long mixed case."""
    if len(s) < 8:
        return False
    has_digit = any(ch.isdigit() for ch in s)
    if has_digit or any(ch in "-._~+/=" for ch in s):
        return has_digit or any(ch.isupper() for ch in s) or len(s) >= 16
    return len(s) >= 20 and any(ch.isupper() for ch in s) and any(ch.islower() for ch in s)


# --------------------------------------------------------------------------------------------
# Which assignment keys name a secret
# --------------------------------------------------------------------------------------------

_SPLIT = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_PW_ENDS = ("password", "passwd", "pwd", "passphrase", "passcode", "pswd")
_SECRET_ENDS = ("secret", "credential", "credentials")
_TOKEN_ENDS = ("token", "apikey", "secretkey", "accesskey", "privatekey")
_KEY_QUALIFIERS = frozenset(
    """
    api access secret private client signing sign encryption encrypt decryption master auth
    service account app application license consumer subscription admin deploy shared session
    storage webhook hmac jwt crypto cipher aes ssh gpg pgp openai anthropic stripe github google
    gcp aws azure slack sendgrid twilio mailgun mapbox algolia pusher sentry datadog dd x
    """.split()
)
_PASS_QUALIFIERS = frozenset(
    """
    db database user smtp mail email ftp sftp redis mysql pg postgres postgresql admin root proxy
    ldap sql login basic http app api rabbitmq amqp mongo mongodb wifi vnc rdp ssh sudo keystore
    store master bind auth
    """.split()
)
_ENV_SUBSTRINGS = ("PASSWORD", "PASSWD", "SECRET", "CREDENTIAL")
_ENV_COMPONENTS = frozenset({"key", "token", "pwd", "pass", "private", "apikey", "auth", "pat"})
_NON_SECRET_SUFFIX = frozenset(
    """
    path file files filename dir directory folder name names id ids type types len length size
    count min max limit ttl timeout expiry expires expiration exp url uri endpoint host hostname
    port user username enabled enable disabled disable required mode policy header field format
    prefix suffix env var hash algorithm alg version ref location arn region provider method
    scope scopes kind label description desc help hint prompt env_var source store backend
    rotation rotate age created updated at
    """.split()
)

_KeyInfo = tuple  # (kind, value class); class in {"pw", "tok", "auth", "env", "authz", "cookie"}


@functools.lru_cache(maxsize=4096)
def _key_info(name: str, env: bool = True) -> _KeyInfo | None:
    """(kind, value class) when `name` names a secret. `env`: also accept NAME=value style names
    that merely contain a secret word (DB_PASSWORD_PROD, SECRET_KEY_BASE)."""
    comps = [c.lower() for c in _SPLIT.findall(name)]
    while comps and comps[-1].isdigit():
        comps.pop()
    if not comps:
        return None
    last = comps[-1]
    prev = comps[-2] if len(comps) > 1 else ""
    if last == "key" and "secret" in comps and ("access" in comps or "aws" in comps):
        return ("aws-secret-key", "pw")
    if last == "authorization":
        return ("secret", "authz")
    if last == "cookie":
        return ("secret", "cookie")
    if last.endswith(_PW_ENDS):
        return ("password", "pw")
    if last.endswith(_SECRET_ENDS):
        return ("secret", "pw")
    if last == "pass" and (prev in _PASS_QUALIFIERS or name == "PASS"):
        return ("password", "pw")
    if last == "auth" and len(comps) == 1:
        return ("secret", "auth")  # docker's "auth": "<base64>", not IMAP's AUTH=PLAIN
    if last.endswith(_TOKEN_ENDS) or last == "auth" or (last == "key" and prev in _KEY_QUALIFIERS):
        return ("secret", "tok")
    if env and name.upper() == name and last not in _NON_SECRET_SUFFIX:
        up = name.upper()
        if any(w in up for w in _ENV_SUBSTRINGS):
            return ("password" if "PASS" in up else "secret", "env")
        if any(c in _ENV_COMPONENTS for c in comps):
            return ("password" if ("pwd" in comps or "pass" in comps) else "secret", "env")
    return None


_AWS_SECRET_VALUE = re.compile(r"[A-Za-z0-9/+]{40}\Z")


def _value_ok(cls: str, body: str, quoted: bool, key: str) -> bool:
    """Whether `body`, the value of a secret-naming key of class `cls`, should be redacted."""
    s = body.strip()
    if cls == "pw" and _AWS_SECRET_VALUE.match(s):
        return True  # 40 base64 chars, even "/abc..." (not a path)
    if _is_placeholder(s, quoted, key):
        return False
    if cls == "auth":
        return len(s) >= 12 and not any(ch.isspace() for ch in s)
    if cls == "tok":
        if any(ch.isspace() for ch in s):
            return False  # tokens have no spaces; "Token: 1234 input tokens" is prose
        return len(s) >= 20 or (len(s) >= 5 and _HAS_DIGIT.search(s) is not None and _HAS_ALPHA.search(s) is not None)
    if cls == "env":
        return not (s.isdigit() and len(s) <= 4)
    # "pw": anything, except a label that names itself ("Enter your password")
    return not _is_label(s)


def _is_label(s: str) -> bool:
    return any(ch.isspace() for ch in s) and _KEYWORD_IN.search(s) is not None


# --------------------------------------------------------------------------------------------
# Token-shaped rules (provider keys and friends)
# --------------------------------------------------------------------------------------------

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
    provider = redact_text(raw)  # `--token ghp_...`: the provider's kind, not a generic one
    if provider is not raw:
        return m.group(1) + provider
    ph = _PH["password" if "pass" in m.group(1) else "secret"]
    return f"{m.group(1)}{raw[0]}{ph}{raw[0]}" if quoted else m.group(1) + ph


_CURL_USER = re.compile(rf"""({_DASH_LEFT}(?:u|-user)(?:[ \t]+|=)["']?([^\s:"'@]*):)([^\s"']+)""")


def _curl_user(m: re.Match) -> str:
    user, pw = m.group(2), m.group(3)
    if _is_placeholder(pw, False) or (user.isdigit() and pw.isdigit()):
        return m.group(0)  # docker -u 1000:1000 is a uid:gid
    return m.group(1) + _PH["basic-auth"]


_BEARER = re.compile(r"(B(?<!\wB)(?:earer|EARER))([ \t]+)([A-Za-z0-9\-._~+/]++=*+)(?![\w\-.~+/=])")


def _bearer(m: re.Match) -> str:
    tok = m.group(3)
    if tok.lower().startswith(("your", "token", "example")) or not _looks_random(tok):
        return m.group(0)
    return m.group(1) + m.group(2) + _PH["bearer-token"]


_URL_CRED = re.compile(
    r"(://(?<=[A-Za-z0-9+.\-]://)[^\s:/?#@\"'<>]*:)([^\s/\"'<>]+)@(?=[^\s/@\"'<>]*[A-Za-z0-9])"
)
_URL_PLACEHOLDERS = frozenset({"password", "pass", "passwd", "pwd", "secret", "token", "pw", "p"})


def _url_cred(m: re.Match) -> str:
    pw = m.group(2)
    if _is_placeholder(pw, True) or pw.lower() in _URL_PLACEHOLDERS:
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
_B_RULES = ((_BEARER, _bearer),)
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
)


def _apply(rules, text: str) -> str:
    out = text
    for rx, repl in rules:
        out = rx.sub(repl, out)
    # a rule may match and still keep the text (a placeholder, prose); keep the object then
    return text if out == text else out


# --------------------------------------------------------------------------------------------
# Assignment rules (key = value, key: value)
# --------------------------------------------------------------------------------------------

_ASSIGN = re.compile(
    r"""
    (?<![\w.\-\\])
    (?:
        (?P<q>\\?["'])(?P<qkey>[A-Za-z_\-][\w.\-]{0,100}+)(?P=q)
      | (?P<key>[A-Za-z_\-][\w.\-]{0,100}+)
        (?P<ann>[ \t]*:[ \t]*[A-Za-z_][\w.\[\],]{0,60}+(?:[ \t]*\|[ \t]*[A-Za-z_][\w.\[\],]{0,60}+)*(?=[ \t]+=[^=]))?
    )
    (?P<sep>[ \t]*(?::=|=(?![=>~])|:(?![:=/]))[ \t]*)
    """,
    re.X,
)
# The same without the type annotation: in prose "my password: X = Y" has none.
_ASSIGN_PLAIN = re.compile(_ASSIGN.pattern.replace("(?P<ann>", "(?P<ann>(?!)"), re.X)
_VALUE = re.compile(
    r"""
        (?:[rbfuRBFU]{1,2}(?=["']))?
        (?:
        (?P<eq>\\")(?P<ev>(?:[^"\\\n]|\\[^"\n])*+)
      | (?P<dq>")(?P<dv>(?:[^"\\\n]|\\.)*+)
      | (?P<sq>')(?P<sv>(?:[^'\\\n]|\\.)*+)
      | (?P<bq>`)(?P<bv>[^`\n]*+)
      | (?P<uv>[^\s"'`,;&<>(){}\[\]]++)
        )
    """,
    re.X,
)
_AUTHZ = re.compile(r"(?:([A-Za-z][\w\-]*)[ \t]+)?([^\s\"'\\,;]+)")
_AUTH_SCHEMES = {"bearer": "bearer-token", "basic": "basic-auth", "token": "secret", "bot": "secret",
                 "digest": "secret", "apikey": "secret", "api-key": "secret", "key": "secret",
                 "sso-key": "secret", "negotiate": "secret", "ntlm": "secret"}
_KEY_LEFT_OK = ("{", ",", "(", "[", '"', "'", ";", "|", ">", "<", "-H", "--header")
_COMMENT = re.compile(r"[ \t]#")


_LINE_START = frozenset(
    ("", "-", "*", "#", "//", "export", "set", "- export", "declare", "local", "readonly", "let",
     "var", "const", "val", "env", "setenv", "ENV", "ARG")
)
_CHAINED = re.compile(r"[ \t]*=(?!=)")
_OPERATOR_AFTER = re.compile(r"[ \t]*(?:[-+*/%|&^<>=!.(\[,?:@]|(?:if|else|or|and|for|in|is|not)\b)")
_WORD_END = re.compile(r"[^\s\"'`]*+")
_COOKIE = re.compile(r"[\w.\-]+=")


# The name before a separator, read backwards: spaces, a closing quote (maybe escaped), the name.
_REV_KEY = re.compile(r"[ \t]*+(?P<q>[\"'](?P<bs>\\)?)?[\w.\-]{1,100}+")


def _assignment_at(text: str, i: int, out: list) -> None:
    """The assignment whose separator (':' or '=') is at `i`: if it gives a secret a value, append
    (start, end, kind) of that value to `out`."""
    if i > 0 and text[i - 1] == ":" and text[i] == "=":
        i -= 1  # password := "x"
    r = _REV_KEY.match(text[max(0, i - 110) : i][::-1])
    if r is None:
        return
    ks = i - r.end()
    if r.group("q"):  # a quoted name: start at its opening quote
        if ks > 0 and text[ks - 1] == r.group("q")[0]:
            ks -= 1
            if r.group("bs") and ks > 0 and text[ks - 1] == "\\":
                ks -= 1
    hi = text.find("\n", i)
    if hi == -1:
        hi = len(text)
    m = _ASSIGN.match(text, ks, hi)
    if m is None:
        return
    line_start = text.rfind("\n", max(0, ks - 64), ks) + 1 or max(0, ks - 64)
    left = text[line_start:ks].strip()  # what precedes the name on its line (up to 64 chars)
    at_line_start = left in _LINE_START
    if m.group("ann") and not (at_line_start or left.endswith(("(", ","))):
        m = _ASSIGN_PLAIN.match(text, ks, hi)  # not code: "my password: X = Y" has no annotation
        if m is None:
            return
    quoted_key = m.group("q") is not None
    if not (m.end("qkey" if quoted_key else "key") <= i < m.end("sep")):
        return
    name = m.group("qkey") if quoted_key else m.group("key")
    sep = m.group("sep")
    eq = "=" in sep
    info = _key_info(name, sep == "=" and not quoted_key)
    if info is None:
        return
    kind, cls = info
    # `my password: Tr0ub4dor&3` in prose: only a secret-looking word after the colon counts
    prose = not eq and not quoted_key and not (at_line_start or left.endswith(_KEY_LEFT_OK))
    if not eq and not quoted_key:
        if sep[0] != ":":
            return  # "Pass :func:`x`" -- a YAML or header name sits right against its colon
        if not at_line_start and (sep == ":" or (prose and ks > 0 and not text[ks - 1].isspace())):
            return  # "passwd:gecos", arn:...:secret:name, user:email
    if eq and sep != sep.strip() and left.endswith(","):
        return  # user, password = "user", "coyote"
    v = _VALUE.match(text, m.end(), hi)
    if v is None:
        return
    vg = v.lastgroup  # the body group
    quoted = vg != "uv"
    vs, ve = v.span(vg)
    if not quoted_key and left and left[-1] in "\"'" and not eq:
        # `-H "X-Api-Key: abc"`: a header inside a string is the whole rest of that string
        if quoted and text[vs - 1] == left[-1]:
            return  # prompt='Password: ' -- the quote closes the string the name was in
        if cls not in ("authz", "cookie") and text[ve:hi].lstrip()[:1] not in ("", left[-1]):
            return  # "pwd: expected bytes, got str" is a message
    code = _CODE_REF.match(name) is not None  # self.password = ..., this.token = ...

    if prose:
        if quoted or cls not in ("pw", "tok"):
            return
        ve = _WORD_END.match(text, ve, hi).end()
        word = text[vs:ve].rstrip(".,;:!?)")
        if _secretish(word) and not _is_placeholder(word, False, name):
            out.append((vs, vs + len(word), kind))
        return  # else "the password: it is checked ..."

    if kind == "aws-secret-key" and _AWS_SECRET_VALUE.match(text, vs, ve):
        out.append((vs, ve, kind))  # 40 base64 characters: whatever the code around it
        return
    if not quoted:
        after = text[ve:hi]
        nxt = after[:1]
        identifier = _IDENT_PATH.match(text, vs, ve) is not None
        if (nxt and nxt in "([") or (identifier and eq and sep != sep.strip() and _CHAINED.match(after)):
            return  # config["x"], get(x), a = b = c
        if _IDENT.match(text, vs, ve) and (
            (nxt and nxt in ",)" and not _HAS_DIGIT.search(text, vs, ve))
            or quoted_key
            or code
            or (eq and sep != sep.strip() and not at_line_start)
        ):
            return  # code: f(password=pw, x); {"password": pw}; self._password = value
        in_code = (eq and sep != sep.strip()) or (not eq and left.endswith(("(", ",")))
        if identifier and in_code and _OPERATOR_AFTER.match(after):
            return  # PseudoToken = Whitespace + group(...); f(password: HiddenText | None)
        if sep == "=" and at_line_start and cls in ("pw", "env", "tok") and (name.isupper() or left == "export"):
            # NAME=value (.env, shell): the value is the whole word, `&` and `;` included
            if not _value_ok(cls, text[vs:ve], False, name):
                return
            ve = _WORD_END.match(text, ve, hi).end()
        elif at_line_start and not quoted_key and (not eq or sep[-1] in " \t") and cls in ("pw", "env"):
            # YAML / ini: the value runs to the end of the line, minus a trailing comment;
            # it is judged by its first word ("correct horse battery", not "x def main():")
            first = text[vs:ve]
            if _value_ok(cls, first, False, name):
                c = _COMMENT.search(after)
                end = ve + len((after[: c.start()] if c else after).rstrip())
                if not _is_label(text[vs:end]):
                    out.append((vs, end, kind))
                elif _secretish(first):
                    out.append((vs, ve, kind))  # "passwd: A0000000 password": just the word
                # else "- password:  The password for the authentication."
            return

    if cls in ("authz", "cookie"):
        if not quoted:
            # a header line: the value is the rest of the line up to a closing quote
            for ch in "\"'":
                j = text.find(ch, vs, hi)
                if j != -1:
                    hi = j
            ve = hi
        body = text[vs:ve]
        if cls == "cookie":
            if _COOKIE.match(body) and not _is_placeholder(body.strip(), True):
                out.append((vs, vs + len(body.rstrip()), kind))
            return
        a = _AUTHZ.match(body)
        if a is None:
            return
        scheme, cred = a.group(1), a.group(2)
        if scheme is not None and scheme.lower() not in _AUTH_SCHEMES:
            return  # "Authorization: see the docs" is prose
        if not _is_placeholder(cred, True) and not cred.lower().startswith("your"):
            out.append((vs + a.start(2), vs + a.end(2), _AUTH_SCHEMES[scheme.lower()] if scheme else "secret"))
        return

    if _value_ok(cls, text[vs:ve], quoted, name):
        out.append((vs, ve, kind))


def _redact_assignments(gate: re.Pattern, first: re.Match, text: str) -> str:
    """Redact the values of the secret assignments whose separators `gate` finds."""
    spans: list = []
    m = first
    while m is not None:
        _assignment_at(text, m.start(), spans)
        # skip separators inside a value just redacted (keeps `password=password=...` linear)
        m = gate.search(text, max(m.start() + 1, spans[-1][1] if spans else 0))
    if not spans:
        return text
    parts = []
    last = 0
    for s, e, kind in sorted(spans):
        if s < last:
            continue
        parts.append(text[last:s])
        parts.append(_PH[kind])
        last = e
    parts.append(text[last:])
    return "".join(parts)


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
_B_GATE = re.compile(r"B(?=earer[ \t]|EARER[ \t])")
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
    if len(text) >= 40 and _has_b64_run(text):
        text = _apply(_AWS_BARE_RULES, text)  # last: a key with its name beside it has its kind by now
    return text


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
        return None
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
