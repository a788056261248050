"""Assignment rules: `key = value` and `key: value`, the key read backwards from the separator a
gate found."""

from __future__ import annotations

import re

from core.transcripts.redact.judgement import (
    _AWS_SECRET_VALUE, _CODE_REF, _HAS_DIGIT, _IDENT, _IDENT_PATH, _PH, _is_label, _is_placeholder, _key_info, _secretish,
    _value_ok, keylike, random_token, wrapped_credentials,
)

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
        if keylike(name, not (sep == "=" and name.isupper())):  # `cache_key: 9xQ…`, `SENTRY_DSN=…`: a random-looking word
            v = _VALUE.match(text, m.end(), hi)
            val = text[v.start(v.lastgroup):v.end(v.lastgroup)] if v is not None else ""
            if val and (random_token(val) or wrapped_credentials(val)):
                out.append((*v.span(v.lastgroup), "secret"))
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
