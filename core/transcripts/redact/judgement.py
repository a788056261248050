"""What redaction counts as a secret: the placeholder kinds, which values are not secrets
(templates, references, masks, code, paths) and which assignment keys name one."""

from __future__ import annotations

import functools
import math
import re


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
# Entropy: a random-looking value beside a key-like name that _key_info does not count
# --------------------------------------------------------------------------------------------

_KEYLIKE = frozenset(
    """
    key keys token tokens secret secrets auth credential credentials password passwd pwd pass apikey dsn
    signature sig session cookie jwt hmac salt private pat bearer license
    """.split()
)
_TOKEN_VALUE = re.compile(r"[A-Za-z0-9+/=_\-.~]{20,512}\Z")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\Z")


_NAME_SEPARATORS = re.compile(r"[\-_.~]")


def _entropy(s: str) -> float:
    counts: dict[str, int] = {}
    for ch in s:
        counts[ch] = counts.get(ch, 0) + 1
    n = len(s)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


# What a name in running text must end with for the ':' and '=' gates to reach it (their tails).
_GATED_ENDS = frozenset("key token secret auth credential credentials password passwd pwd pass cookie apikey".split())


@functools.lru_cache(maxsize=4096)
def keylike(name: str, in_text: bool = False) -> bool:
    """A name with a secret-ish word in it (`cache_key`, `sessionToken`, `SENTRY_DSN`, `X-Signature`)
    whose last word does not say it holds something else (`_id`, `_path`, `_url`, `_count`). `in_text`:
    a name in running text, which the gates reach only by its end (or as an upper-case NAME=)."""
    comps = [c.lower() for c in _SPLIT.findall(name)]
    if not comps or comps[-1] in _NON_SECRET_SUFFIX or not any(c in _KEYLIKE for c in comps):
        return False
    return not in_text or comps[-1] in _GATED_ENDS


def random_token(value: str) -> bool:
    """A value that reads as a random token: one word of 20+ token characters, letters and digits
    mixed, Shannon entropy of at least 3.5 bits a character (4.0 when it is only hex: a digest), not a
    UUID, a path or words joined by separators."""
    s = value.strip()
    if _TOKEN_VALUE.match(s) is None or _UUID.match(s) or s.startswith(("/", "./", "../", "~")):
        return False
    if _HAS_DIGIT.search(s) is None or _HAS_ALPHA.search(s) is None:
        return False
    parts = _NAME_SEPARATORS.split(s)
    if len(parts) >= 3 and sum(1 for p in parts if p.isalpha() or p.isdigit() or len(p) <= 3) >= len(parts) - 1:
        return False  # words and numbers joined: build-2024-linux-x86_64-py311, v1.2.3-rc.1
    hexy = all(ch in "0123456789abcdefABCDEF" for ch in s)
    return _entropy(s) >= (4.0 if hexy else 3.5)


def wrapped_credentials(value: str) -> bool:
    """A base64 value that decodes to `user:password` (a Docker `auth`, a Basic credential kept in a
    variable): 12+ characters of one base64 alphabet, decoding to printable text with a colon inside."""
    import base64
    import binascii

    s = value.strip()
    if len(s) < 12 or len(s) > 4096 or _TOKEN_VALUE.match(s.rstrip("=") + "=" * 20) is None:
        return False
    body = s.rstrip("=")
    try:
        raw = (base64.urlsafe_b64decode if ("-" in body or "_" in body) else base64.b64decode)(body + "=" * (-len(body) % 4))
        plain = raw.decode("utf-8")
    except (binascii.Error, ValueError):
        return False
    user, sep, pw = plain.partition(":")
    return bool(sep and user and len(pw) >= 4 and plain.isprintable())
