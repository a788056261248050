"""Redaction: one case per kind in realistic contexts, false positives, idempotence, redact_value,
gate completeness (the fast path never skips what the full rules would redact), and a property
test planting every kind of secret into random surrounding text."""

from __future__ import annotations

import random
import re
import string

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from core.transcripts import redact as R
from core.transcripts.redact import encoded, ruleset
from core.transcripts.redact import tokens as T
from core.transcripts.redact import KINDS, redact_text, redact_value

PLACEHOLDER = re.compile(r"\[REDACTED:([a-z0-9\-]+)\]")

# Realistic-looking secrets (all fake).
ANTHROPIC = "sk-ant-api03-" + "Xq3vLm9TzR2wYp8Kd4Nf6Hs1Bj7Gc5Va0Ue" * 2 + "Xq3vLm9TzR2wYp8Kd4NfAA"
OPENAI_PROJ = "sk-proj-" + "T9pX2mQ7vR4kL8sW1zN6bY3cH5jD0fG" * 4 + "_Ab-Cd"
OPENAI_LEGACY = "sk-" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5bC7dE9fG1hJ3"
GOOGLE = "AIzaSyD4x9Kq2Lm7Np3Rs8Tv1Wx6Yz0Ab5Cd-E"
SLACK = "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"
SLACK_HOOK_PATH = "T0A1B2C3D/B4E5F6G7H/AbCdEfGhIjKlMnOpQrStUvWx"
STRIPE = "sk_live_51HxYzAbCdEfGhIjKlMnOpQrStUv"
HF = "hf_AbCdEfGhIjKlMnOpQrStUvWxYzAbCdEfGh"
NPM = "npm_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"
AWS_ID = "AKIAQ3EXAMPLE7XYZ4AB"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
GH = "ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghij"
GH_PAT = "github_pat_11ABCDEFG0123456789abc_" + "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789AbCdEfGhIjKlMnOpQrStUvW"
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
PEM_BODY = (
    "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\n"
    "VTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK"
)
PEM = f"-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}\n-----END RSA PRIVATE KEY-----"
PEM_ONE_LINE = PEM_BODY.replace("\n", "")
B64_GH = "Z2hwX0FCQ0RFRkdISUpLTE1OT1BRUlNUVVZXWFlaYWJjZGVmZ2hpag=="  # base64 of GH
B64URL_GH = "Z2hwX0FCQ0RFRkdISUpLTE1OT1BRUlNUVVZXWFlaYWJjZGVmZ2hpag"  # unpadded


def gone(secret: str, out: str, n: int = 8) -> bool:
    """No substring of `secret` of length >= n (or the whole, if shorter) is left in `out`."""
    out = PLACEHOLDER.sub("\0", out)  # "[REDACTED:bearer-token]" is not a leak of "bearer-t..."
    if len(secret) <= n:
        return secret not in out
    return all(secret[i : i + n] not in out for i in range(len(secret) - n + 1))


# (kind, text, secret, kept): `secret` must be gone, `[REDACTED:kind]` present, `kept` still there.
CASES = [
    # shell commands, .env dumps, curl
    ("anthropic-key", f"export ANTHROPIC_API_KEY={ANTHROPIC}", ANTHROPIC, "export ANTHROPIC_API_KEY="),
    ("openai-key", f"OPENAI_API_KEY={OPENAI_LEGACY}\nDEBUG=1", OPENAI_LEGACY, "DEBUG=1"),
    ("huggingface-token", f"huggingface-cli login --token {HF}", HF, "huggingface-cli login --token "),
    ("github-token", f"GH_TOKEN={GH_PAT} gh pr list", GH_PAT, " gh pr list"),
    ("github-token", f"git clone https://x-access-token:{GH}@github.com/o/r.git", GH, "@github.com/o/r.git"),
    ("github-token", f'curl -H "Authorization: token {GH}" https://api.github.com/user', GH, "Authorization: token "),
    ("aws-secret-key", f"aws configure set aws_secret_access_key {AWS_SECRET}", AWS_SECRET, "aws configure set "),
    ("bearer-token", f'curl -s -H "Authorization: Bearer {JWT}" https://api.example.com/v1/me', JWT,
     'curl -s -H "Authorization: Bearer '),
    ("basic-auth", "curl -u admin:Zq8vR2mLx9 https://jenkins.internal/api/json", "Zq8vR2mLx9", "curl -u admin:"),
    ("url-credential", "DATABASE_URL=postgres://app:Xy7pQ2zLm4@db.internal:5432/app", "Xy7pQ2zLm4", "postgres://app:"),
    ("url-credential", "git remote add origin https://bob:hunter2hunter2@git.example.com/r.git", "hunter2hunter2",
     "https://bob:"),
    ("password", "mysql -u root --password=rootPw9x db < dump.sql", "rootPw9x", "mysql -u root --password="),
    ("password", "mysql --password hunter22 -h db", "hunter22", "mysql --password "),
    ("password", "--password hunter22 --host db", "hunter22", "--host db"),
    ("basic-auth", "-u deploy:Zq8vR2mLx9 https://ci.internal", "Zq8vR2mLx9", "-u deploy:"),
    ("password", "DB_HOST=db\nDB_PASSWORD=Pg_s3cret_42\nDB_USER=app\n", "Pg_s3cret_42", "DB_USER=app"),
    ("password", "DB_PASSWORD=Tr0ub4dor&3horse;x\n", "Tr0ub4dor&3horse;x", "DB_PASSWORD="),
    ("password", "export PGPASSWORD='w0rd with spaces'\npsql -h db", "w0rd with spaces", "export PGPASSWORD="),
    ("secret", "export SECRET_KEY_BASE=3b1f9c0e8d7a6b5c4d3e2f1a", "3b1f9c0e8d7a6b5c4d3e2f1a",
     "export SECRET_KEY_BASE="),
    ("secret", "curl 'https://api.example.com/v2/items?access_token=at9f8e7d6c5b4a&limit=5'", "at9f8e7d6c5b4a",
     "&limit=5"),
    ("google-api-key", f"curl 'https://maps.googleapis.com/maps/api/geocode/json?address=x&key={GOOGLE}'", GOOGLE,
     "address=x&key="),
    ("slack-webhook", f"curl -X POST -d @msg.json https://hooks.slack.com/services/{SLACK_HOOK_PATH}", SLACK_HOOK_PATH,
     "https://hooks.slack.com/services/"),
    # JSON tool inputs and outputs
    ("anthropic-key", f'{{"command": "curl -H \'x-api-key: {ANTHROPIC}\' https://api.anthropic.com"}}', ANTHROPIC,
     "x-api-key: "),
    ("aws-access-key", f'{{"Credentials": {{"AccessKeyId": "{AWS_ID}"}}}}', AWS_ID, '"AccessKeyId": "'),
    ("aws-secret-key", f'{{"SecretAccessKey": "{AWS_SECRET}", "Expiration": "2026-01-01"}}', AWS_SECRET,
     '"Expiration": "2026-01-01"'),
    ("private-key", f'{{"type": "service_account", "private_key": "-----BEGIN PRIVATE KEY-----\\n{PEM_ONE_LINE}'
     f'\\n-----END PRIVATE KEY-----\\n"}}', PEM_ONE_LINE, '"type": "service_account"'),
    ("password", '{"username": "bob", "password": "S3cr3t!Pass"}', "S3cr3t!Pass", '"password": "'),
    ("secret", '{"client_id": "web", "client_secret": "cs_9x8y7z6w5v4u"}', "cs_9x8y7z6w5v4u", '"client_id": "web"'),
    ("jwt", f'{{"id_token": "x", "access_token_value": {JWT!r}}}', JWT, '"id_token": "x"'),
    ("jwt", f"output: {JWT}\n", JWT, "output: "),
    # YAML, ini, headers
    ("slack-token", f"slack:\n  bot_token: {SLACK}\n  channel: '#ops'", SLACK, "channel: '#ops'"),
    ("aws-access-key", f"[default]\naws_access_key_id = {AWS_ID}\nregion = eu-west-1", AWS_ID, "region = eu-west-1"),
    ("aws-secret-key", f"[default]\naws_secret_access_key = {AWS_SECRET}\n", AWS_SECRET, "aws_secret_access_key = "),
    ("password", "passwd: corr3ct-horse\nuser: bob", "corr3ct-horse", "passwd: "),
    ("password", "[server]\npassword = correct horse battery staple\n", "correct horse battery staple", "password = "),
    ("password", 'db:\n  password: "Tr1cky#Pass"\n', "Tr1cky#Pass", "  password: "),
    ("password", "spring.datasource.password=Sup3rS3cret", "Sup3rS3cret", "spring.datasource.password="),
    ("secret", "headers:\n  X-Api-Key: k3y-9f8e7d6c5b\n", "k3y-9f8e7d6c5b", "X-Api-Key: "),
    ("secret", 'jwt_secret: "my super long phrase 42"', "my super long phrase 42", "jwt_secret: "),
    ("secret", "Cookie: sessionid=9f8e7d6c5b4a3; csrftoken=abc", "9f8e7d6c5b4a3", "Cookie: "),
    ("bearer-token", f"GET /v1/me HTTP/1.1\nHost: api.example.com\nauthorization: bearer {JWT}\n", JWT,
     "authorization: bearer "),
    ("basic-auth", "Authorization: Basic YWRtaW46WnE4dlIybUx4OQ==", "YWRtaW46WnE4dlIybUx4OQ==",
     "Authorization: Basic "),
    ("private-key", f"$ cat ~/.ssh/id_rsa\n{PEM}\n$ ls", PEM_BODY, "$ ls"),
    ("private-key", "-----BEGIN OPENSSH PRIVATE KEY-----\n" + PEM_BODY + "…[2400 more chars]", PEM_BODY, ""),
    # Python snippets
    ("openai-key", f'client = OpenAI(api_key="{OPENAI_PROJ}")', OPENAI_PROJ, "client = OpenAI(api_key="),
    ("stripe-key", f'stripe.api_key = "{STRIPE}"', STRIPE, "stripe.api_key = "),
    ("secret", "api_key = 'a8f5f167f44f4964e6c998dee827110c'", "a8f5f167f44f4964e6c998dee827110c", "api_key = "),
    ("secret", 'self.token = "tok_4f3e2d1c0b9a"', "tok_4f3e2d1c0b9a", "self.token = "),
    ("bearer-token", f"requests.get(url, headers={{'Authorization': 'Bearer {JWT}'}})", JWT,
     "'Authorization': 'Bearer "),
    # prose and config files
    ("password", "my password: Tr0ub4dor&3horse, please use it", "Tr0ub4dor&3horse", ", please use it"),
    ("npm-token", f"//registry.npmjs.org/:_authToken={NPM}", NPM, "//registry.npmjs.org/:_authToken="),
    # a password glued to (or right after) a database or remote-shell client's short flag
    ("password", "mysql -uroot -pS3cr3tPw9 app < dump.sql", "S3cr3tPw9", "mysql -uroot -p"),
    ("password", "mysqldump -u root -p'my pass 42' app > x.sql", "my pass 42", " app > x.sql"),
    ("password", 'docker exec db mariadb -uroot -p"Rt9#x" -e "show databases"', "Rt9#x", '-e "show databases"'),
    ("password", "sshpass -p Hunter22x ssh deploy@host", "Hunter22x", " ssh deploy@host"),
    ("password", "redis-cli -h cache -a R3disPw77 ping", "R3disPw77", " ping"),
    # a bare AWS secret access key: no key name beside it
    ("aws-secret-key", f"the secret is {AWS_SECRET}, keep it safe", AWS_SECRET, ", keep it safe"),
    ("aws-secret-key", f"{AWS_ID},{AWS_SECRET}\n", AWS_SECRET, ","),
    ("aws-secret-key", f'{{"creds": ["{AWS_SECRET}"]}}', AWS_SECRET, '{"creds": ["'),
    # issue 28: a Basic header in prose, a Sentry DSN, a token wrapped in base64 (also as a folder)
    ("basic-auth", "then it sent Authorization: Basic YWRtaW46WnE4dlIybUx4OQ== and got 200",
     "YWRtaW46WnE4dlIybUx4OQ==", " and got 200"),
    ("url-credential", "SENTRY_DSN=https://8c1f0e2d9b7a4c3e8f6d5b4a3c2e1f0d@o4504.ingest.sentry.io/4505",
     "8c1f0e2d9b7a4c3e8f6d5b4a3c2e1f0d", "@o4504.ingest.sentry.io/4505"),
    ("base64-secret", f"echo {B64_GH} | base64 -d > token", B64_GH, " | base64 -d > token"),
    ("base64-secret", f"cd /home/dev/{B64_GH}/src", B64_GH, "/src"),
    ("base64-secret", f'{{"value": "{B64URL_GH}"}}', B64URL_GH, '{"value": "'),
    # a random-looking value beside a key-like name that names no secret kind by itself
    ("secret", "cache_key: a1B2c3D4e5F6g7H8i9J0kLmN\nttl: 60", "a1B2c3D4e5F6g7H8i9J0kLmN", "ttl: 60"),
    ("secret", "export SENTRY_DSN=Zk3mQ9vR2wLp8TnY4bHc6Jd1", "Zk3mQ9vR2wLp8TnY4bHc6Jd1", "export SENTRY_DSN="),
    ("secret", "REGISTRY_KEY=Y2ktYm90Omh1bnRlcjJ4", "Y2ktYm90Omh1bnRlcjJ4", "REGISTRY_KEY="),
    # a provider token cut short by a reader (normalize.cut): too short for its rule, still redacted
    ("secret", "vault login hvs.CAESIJ9x2Kq7Lm…[61 more chars]", "hvs.CAESIJ9x2Kq7Lm", "vault login "),
]


@pytest.mark.parametrize("kind,text,secret,kept", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_each_kind_in_context(kind, text, secret, kept):
    out = redact_text(text)
    assert gone(secret, out), out
    assert f"[REDACTED:{kind}]" in out, out
    assert kept in out, out
    assert set(PLACEHOLDER.findall(out)) <= set(KINDS)


def test_kinds_is_a_tuple_of_every_kind_produced():
    assert type(KINDS) is tuple and len(set(KINDS)) == len(KINDS)
    # the ruleset's kinds (one per rule) are tests/test_redact_ruleset.py's
    assert {c[0] for c in CASES} | set(ruleset.rule_ids()) == set(KINDS)


UNTOUCHED = [
    "Please refactor the token parser; the password reset flow is broken.",
    "reset the password flow and rotate the api key next sprint",
    "The user must enter the password: it is checked against the hash.",
    "/home/alice/projects/kitsoki/stories/dev/app.yaml",
    "git checkout 4b825dc642cb6eb9a060e54bf8d69288fbee4904 && git log -1",
    "session 123e4567-e89b-12d3-a456-426614174000 started at 2026-02-12T14:11:57.624Z",
    "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "password=\nPASSWORD=''\n\"password\": \"\"\ntoken:",
    "password: ${DB_PASSWORD}\napi_key: $OPENAI_API_KEY\nsecret: <your-secret>\ntoken: '***'",
    'password = os.environ["DB_PASSWORD"]\nSECRET_KEY = os.getenv("SECRET_KEY")',
    "const apiKey = process.env.OPENAI_API_KEY;",
    "password: {{ vault_db_password }}\ntoken: \"%(token)s\"",
    "def login(user, password=None):\n    password = password or getpass.getpass()",
    "connect(user=user, password=password, host=host)",
    "self.user, self.password = user, password",
    "token = tokenizer.encode(text)\nfor key, value in items: cache_key = key",
    "password: str\ntoken: Optional[str] = None\napi_key: SecretStr",
    '{"usage": {"input_tokens": 1234, "output_tokens": 56}, "max_tokens": 4096}',
    "MAX_TOKENS=4096\nTOKENIZERS_PARALLELISM=false\nPWD=/home/me/src\nKEY_ID=7",
    "password_min_length: 8\nreset_password_url: https://example.com/reset",
    "private_key_path: ~/.ssh/id_ed25519\nssh_key_file: /etc/ssh/key",
    "we pass a Bearer token in the Authorization header",
    'curl -H "Authorization: Bearer $GITHUB_TOKEN" https://api.github.com',
    'if pem.startswith("-----BEGIN RSA PRIVATE KEY-----"):\n    raise ValueError',
    "sk-learn is a misspelling of scikit-learn; the xoxb- prefix marks bot tokens",
    "docker run -u 1000:1000 -p 8080:80 image:latest",
    "postgres://app:${DB_PASS}@db:5432/app and https://user:password@example.com",
    "Token usage: 1234 input tokens, 56 output tokens",
    "class PasswordField(Field):\n    widget = PasswordInput",
    '{"type": "password", "name": "password", "placeholder": "Enter your password"}',
    "def unix_getpass(prompt='Password: ', stream=None):",
    "aws_access_key_id = AKIA...\nmax_keys = 1000",
    "Authorization: see the API docs for details",
    "git@github.com:org/repo.git https://github.com/org/repo",
    "a" * 6,
    "",
    # client flags that carry no password
    "mysql -u root -p app",
    "docker exec db mysql -uroot -p$MYSQL_ROOT_PASSWORD app",
    "mkdir -p /tmp/x && cp -a a b && gcc -pthread -pedantic x.c && ssh -p 2222 host",
    "redis-cli -a $REDIS_PASSWORD ping",
    # 40 characters of the base64 alphabet that are not a key
    "git rev-parse HEAD -> 4b825dc642cb6eb9a060e54bf8d69288fbee4904",
    "class 3CPythonOrderedDictWithSlotsCopyingTests(unittest.TestCase):",
    "ls /home/alice/projects/kitsoki/stories/release/flows",
    "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB",
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==",
    # key-like names whose values are names, digests, ids (the entropy check leaves them)
    "cache_key: build-2024-linux-x86_64-py311\nsort_key: 4b825dc642cb6eb9a060e54bf8d69288fbee4904",
    'primary_key: users_email_2024_idx_unique\nidempotency_key = "123e4567-e89b-12d3-a456-426614174000"',
    # words the ruleset's keywords are made of, and base64 that wraps no secret
    "Read SKILL.md and the tests. Ask the SK team; see docs/api/auth and the key, token and secret pages.",
    "echo aGVsbG8gd29ybGQsIHRoaXMgaXMgbm90IGEgc2VjcmV0 | base64 -d",
    "ya29 is a prefix; hvs. and glpat- and dop_v1_ and SG. and pypi- are prefixes too",
    "see /home/alice/projects/kitsoki/stories/release/flows/smoke…[40 more chars]",
    "the api-gateway-service-handler…[12 more chars]",
]


@pytest.mark.parametrize("text", UNTOUCHED)
def test_false_positives_left_alone(text):
    assert redact_text(text) is text


def test_cut_text_is_redacted_to_the_end():
    text = "key file:\n-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBkg4LVWM9nuwNSk3yBdA4tFf…[900 more chars]"
    assert redact_text(text) == "key file:\n[REDACTED:private-key]"
    cut = "token ghp_ABCDEFGH…[30 more chars]"
    assert redact_text(cut) == "token [REDACTED:github-token]…[30 more chars]"


@pytest.mark.parametrize("kind,text,secret,kept", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_idempotent(kind, text, secret, kept):
    once = redact_text(text)
    twice = redact_text(once)
    assert twice == once
    assert twice is once  # nothing left to match


def test_redact_value_nested():
    keep = {"path": "/tmp/x", "n": 3}
    value = {
        "command": f"export GITHUB_TOKEN={GH}",
        "env": {"DB_PASSWORD": "hunter2hunter2", "LANG": "C"},
        "args": ["--verbose", (f"AKIA{'Q3EXAMPLE7XYZ4AB'}", 5, None)],
        "api_key": "a8f5f167f44f4964",
        "keep": keep,
        "count": 7,
    }
    out = redact_value(value)
    assert out is not value and list(out) == list(value)
    assert out["command"] == "export GITHUB_TOKEN=[REDACTED:github-token]"
    assert out["env"] == {"DB_PASSWORD": "[REDACTED:password]", "LANG": "C"}
    assert out["args"][0] == "--verbose" and type(out["args"][1]) is tuple
    assert out["args"][1] == ("[REDACTED:aws-access-key]", 5, None)
    assert out["api_key"] == "[REDACTED:secret]"  # the key is the context
    assert out["keep"] is keep and out["count"] == 7
    assert value["command"].startswith("export GITHUB_TOKEN=ghp_")  # input not mutated


def test_redact_value_unchanged_is_same_object():
    value = {"a": ["x", ("y", 1.5)], "b": {"c": None, "password": ""}, "token": "${TOKEN}", "d": b"bytes"}
    assert redact_value(value) is value
    for v in (None, 3, 2.5, b"password=hunter2", "plain", [], (), {}):
        assert redact_value(v) is v


def test_redact_value_authorization_key():
    out = redact_value({"headers": {"Authorization": f"Bearer {JWT}", "Accept": "*/*"}})
    assert out == {"headers": {"Authorization": "Bearer [REDACTED:bearer-token]", "Accept": "*/*"}}


# --- gate completeness ---------------------------------------------------------------------

_EVERY_SEPARATOR = re.compile(r"[:=]")


def reference(text: str) -> str:
    """Every rule applied everywhere, with no gate: what redact_text must always equal."""
    text = R._client_passwords(R._apply(R._DASH_RULES, text))
    for rules in (R._UNDERSCORE_RULES, R._A_RULES, R._B_RULES, R._URL_RULES):
        text = R._apply(rules, text)
    for _ in range(2):  # the ':' pass and the '=' pass
        m = _EVERY_SEPARATOR.search(text)
        if m is not None:
            text = R._redact_assignments(_EVERY_SEPARATOR, m, text)
    text = R._apply(R._J_RULES, text)
    text = _ruleset_reference(text)
    text = encoded.redact_encoded(text, redact_text, by_regex=True)
    text = R._apply(R._AWS_BARE_RULES, text)
    return R._cut_token(text) if text.endswith(" more chars]") else text


def _ruleset_reference(text: str) -> str:
    """Every ruleset rule one of whose keywords the text holds (plain `in`, no Aho-Corasick), run over
    the whole text (no windows round the keywords)."""
    rs = ruleset.ruleset()
    low = text.lower()
    spans = []
    for rule in rs.rules:
        if not rule.keywords or any(k in low for k in rule.keywords):
            spans += [(s, e, rule.id) for s, e in ruleset.rule_spans(rule, text, rs.allow)]
    if not spans:
        return text
    parts, last = [], 0
    for s, e, kind in sorted(spans, key=lambda x: (x[0], -x[1])):
        if s < last:
            continue
        parts += [text[last:s], f"[REDACTED:{kind}]"]
        last = e
    parts.append(text[last:])
    return "".join(parts)


@pytest.mark.parametrize("text", [c[1] for c in CASES] + UNTOUCHED)
def test_gates_never_skip_a_rule(text):
    assert redact_text(text) == reference(text)


# --- property: planted secrets never survive -------------------------------------------------

ALNUM = string.ascii_letters + string.digits
B64 = ALNUM + "+/"
B64URL = ALNUM + "-_"


def _s(alphabet: str, n: int, m: int | None = None):
    return st.text(alphabet=alphabet, min_size=n, max_size=m if m is not None else n)


def _mixed(alphabet: str, n: int, m: int | None = None):
    """Random token text with at least one lowercase letter, one uppercase letter and one digit."""
    parts = st.tuples(_s(alphabet, n, m), _s(string.ascii_lowercase, 1), _s(string.ascii_uppercase, 1),
                      _s(string.digits, 1))
    return parts.map(lambda t: t[1] + t[0] + t[3] + t[2])


_VALUE_CHARS = ALNUM + "!@#%^*-_.+~"
_LOOKS_LIKE_A_NAME = re.compile(r"pass|pwd|secret|token|key|cred|auth|your|example|dummy", re.I)
# Passwords and generic secrets: start with a letter, hold a digit, and do not read like a variable
# name (db_password, csrfToken) or a placeholder (your-key), which are left alone by design.
value = (
    st.tuples(_s(string.ascii_letters, 1), _s(string.digits, 1), _s(_VALUE_CHARS, 6, 24))
    .map("".join)
    .filter(lambda v: not _LOOKS_LIKE_A_NAME.search(v))
)
pem_body = st.lists(_s(B64, 64), min_size=1, max_size=4).map("\n".join)

def _token(prefix: str, alphabet: str, n: int, m: int | None = None):
    return _s(alphabet, n, m).map(lambda b: prefix + b)


_SEGMENTS = st.tuples(_s(B64URL, 10, 40), _s(B64URL, 10, 80), _s(B64URL, 20, 43))
_JWT = _SEGMENTS.map(lambda t: f"eyJ{t[0]}.eyJ{t[1]}.{t[2]}")
_JWT_LIKE = _SEGMENTS.map(lambda t: f"eyJ{t[0]}.{t[1]}.{t[2]}")  # an opaque token with dots
_GITHUB = st.one_of(
    st.tuples(st.sampled_from("pousr"), _s(ALNUM, 36)).map(lambda t: f"gh{t[0]}_{t[1]}"),
    st.tuples(_s(ALNUM, 22), _s(ALNUM, 59)).map(lambda t: f"github_pat_{t[0]}_{t[1]}"),
)
_UPPER_DIGITS = string.ascii_uppercase + string.digits
_RANDOM = random.Random(20260612)
BARE_AWS_KEYS = ["".join(_RANDOM.choice(B64) for _ in range(40)) for _ in range(20000)]
"""Random secret access keys, as AWS issues them (40 characters of the base64 alphabet)."""

# kind -> (secret strategy, contexts it is planted in)
PLANTS = {
    "anthropic-key": (
        _mixed(B64URL, 90, 95).map(lambda b: f"sk-ant-api03-{b}AA"),
        ["export ANTHROPIC_API_KEY={s}", '{{"api_key": "{s}"}}', "{s}",
         "curl -H 'x-api-key: {s}' https://api.anthropic.com"],
    ),
    "openai-key": (
        st.one_of(_mixed(B64URL, 40, 160).map(lambda b: f"sk-proj-{b}"), _mixed(ALNUM, 45).map(lambda b: f"sk-{b}")),
        ["OPENAI_API_KEY={s}", 'client = OpenAI(api_key="{s}")', "{s}"],
    ),
    "google-api-key": (
        _token("AIza", B64URL, 35),
        ["https://maps.googleapis.com/maps/api/js?key={s}&callback=init", "GOOGLE_API_KEY={s}", "{s}"],
    ),
    "slack-token": (
        st.tuples(_s(string.digits, 12), _s(string.digits, 13), _s(ALNUM, 24)).map(lambda t: "xoxb-" + "-".join(t)),
        ["SLACK_BOT_TOKEN={s}", 'curl -H "Authorization: Bearer {s}" https://slack.com/api/auth.test', "{s}"],
    ),
    "slack-webhook": (
        st.tuples(_s(_UPPER_DIGITS, 9), _s(_UPPER_DIGITS, 9), _s(ALNUM, 24)).map(lambda t: f"T{t[0]}/B{t[1]}/{t[2]}"),
        ["curl -X POST -d @msg.json https://hooks.slack.com/services/{s}",
         "webhook_url: https://hooks.slack.com/services/{s}"],
    ),
    "stripe-key": (_token("sk_live_", ALNUM, 24, 99), ['stripe.api_key = "{s}"', "STRIPE_SECRET_KEY={s}", "{s}"]),
    "huggingface-token": (
        _token("hf_", string.ascii_letters, 34),
        ["huggingface-cli login --token {s}", "HF_TOKEN={s}", "{s}"],
    ),
    "npm-token": (_token("npm_", ALNUM, 36), ["//registry.npmjs.org/:_authToken={s}", "NPM_TOKEN={s}", "{s}"]),
    "aws-access-key": (
        st.tuples(st.sampled_from(["AKIA", "ASIA"]), _s(_UPPER_DIGITS, 16)).map("".join),
        ["aws_access_key_id = {s}", '"AccessKeyId": "{s}"', "{s}"],
    ),
    "aws-secret-key": (
        _s(B64, 40),
        ["aws_secret_access_key = {s}", "AWS_SECRET_ACCESS_KEY={s}", '"SecretAccessKey": "{s}"',
         "aws configure set aws_secret_access_key {s}"],
    ),
    "github-token": (
        _GITHUB,
        ["GITHUB_TOKEN={s}", 'curl -H "Authorization: token {s}" https://api.github.com/user', "{s}",
         "git clone https://x-access-token:{s}@github.com/o/r.git", "echo {s} | gh auth login --with-token"],
    ),
    "private-key": (
        pem_body,
        ["-----BEGIN RSA PRIVATE KEY-----\n{s}\n-----END RSA PRIVATE KEY-----",
         "-----BEGIN OPENSSH PRIVATE KEY-----\n{s}",
         '"private_key": "-----BEGIN PRIVATE KEY-----\\n{s}\\n-----END PRIVATE KEY-----\\n"'],
    ),
    "jwt": (_JWT, ["{s}", "id_token={s}", '"output": "{s}"', "echo {s} | base64 -d"]),
    "bearer-token": (
        st.one_of(_JWT_LIKE, _mixed(ALNUM, 20, 40)),
        ['curl -H "Authorization: Bearer {s}" https://api.example.com/v1/me', "Authorization: Bearer {s}",
         "requests.get(url, headers={{'Authorization': 'Bearer {s}'}})", "BEARER {s}"],
    ),
    "basic-auth": (value, ["curl -u admin:{s} https://ci.internal/api", "curl --user bob:{s} https://ci.internal/api"]),
    "url-credential": (
        value,
        ["postgres://app:{s}@db.internal:5432/app", "git clone https://bob:{s}@git.example.com/r.git",
         "DATABASE_URL=mysql://root:{s}@localhost/db", "redis://:{s}@cache:6379/0"],
    ),
    "password": (
        value,
        ["my password: {s}", "password={s}", "mysql --password={s} -u root", "passwd: {s}", '{{"password": "{s}"}}',
         "DB_PASSWORD={s}", "export DB_PASSWORD={s}", "password = '{s}'", "PGPASSWORD={s} psql -h db",
         "mysql --password {s} db"],
    ),
    "secret": (
        value,
        ["api_key = '{s}'", '{{"client_secret": "{s}"}}', "token={s}", "https://x.io/v1?access_token={s}&format=json",
         "SECRET_KEY_BASE={s}", "  client_secret: {s}", '"secret": "{s}"', "X-Api-Key: {s}"],
    ),
}

PLANTS["aws-secret-key-bare"] = (
    st.sampled_from([k for k in BARE_AWS_KEYS[:500] if T._aws_bare(T._AWS_BARE.match(k)) != k]),
    ["{s}", "the new secret is {s}", "{s},eu-west-1", '"{s}"', "echo {s} | pbcopy"],
)
PLANTS["client-password"] = (
    value,
    ["mysql -uroot -p{s} app", "mysqldump -u root -p'{s}' app > dump.sql", "sshpass -p {s} ssh host",
     "redis-cli -h cache -a {s} ping", "mariadb -p{s}"],
)

FRAGMENTS = [
    "def main():", "    return 0", "INFO 2026-01-02 12:00:01 listening on :8080", '{"id": 1, "name": "x"}',
    "password", "token", "Bearer", "key:", "=", "export", "--", "- item", "https://example.com/a?b=c",
    "user@example.com", "${HOME}", "$PATH", "'", '"', "\\", "Authorization:", "sk-", "ghp_", "AKIA", "-----BEGIN",
    "-----BEGIN PRIVATE KEY-----", "…[12 more chars]", "x = y", "a: b", "# comment", "ls -la", "curl -u", "::",
    "://", "\t", "é ü 日本", "\n", "api_key", "[REDACTED:secret]", "-H", "1234", "Basic",
]
surround = st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=12)), max_size=6).map(" ".join)


@pytest.mark.parametrize("kind", sorted(PLANTS))
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_planted_secret_never_survives(kind, data):
    secrets, templates = PLANTS[kind]
    secret = data.draw(secrets, label="secret")
    template = data.draw(st.sampled_from(templates), label="template")
    pre = data.draw(surround, label="pre")
    post = data.draw(surround, label="post")
    glue = data.draw(st.sampled_from(["\n", " "]), label="glue")
    context = pre + post + template
    assume(all(secret[i : i + 8] not in context for i in range(max(1, len(secret) - 7))))
    lead = "\n" if pre else data.draw(st.sampled_from(["", "\n"]), label="lead")  # "" tests start of text
    text = pre + lead + template.format(s=secret) + glue + post
    out = redact_text(text)
    assert gone(secret, out), out
    assert redact_text(out) == out
    assert out == reference(text)


@settings(max_examples=60, deadline=None)
@given(text=st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=30)), max_size=12).map(" ".join))
def test_random_text_gates_and_idempotence(text):
    out = redact_text(text)
    assert out == reference(text)
    assert redact_text(out) == out
    if out == text:
        assert out is text


def test_bare_aws_keys_are_caught_but_not_what_only_looks_like_one():
    """Of random keys, at most 0.5% are regular enough (no digit, few class changes) to pass for an
    identifier and be kept; hex digests, base32, paths and camel-case names are never taken."""
    missed = sum(1 for k in BARE_AWS_KEYS if redact_text(f"key {k} here") == f"key {k} here")
    assert missed / len(BARE_AWS_KEYS) < 0.005
    rnd = random.Random(7)
    hexes = ["".join(rnd.choice("0123456789abcdef") for _ in range(40)) for _ in range(200)]
    base32 = ["".join(rnd.choice(string.ascii_uppercase + "234567") for _ in range(40)) for _ in range(200)]
    names = ["src/components/Header/HeaderButton2Impls", "TestFiberForceLengthActiveDeGroote2016xy",
             "home/dev/src/kitsoki/core/transcripts/a1"]
    for text in hexes + base32 + names:
        assert len(text) == 40 and redact_text(text) is text, text
    # longer runs are blobs (an image, a certificate body), not keys
    blob = "".join(rnd.choice(B64) for _ in range(400))
    assert redact_text(blob) is blob
