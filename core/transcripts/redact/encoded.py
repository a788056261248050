"""Secrets wrapped in base64: `echo Z2hwX3…== | base64 -d`, a Docker or Kubernetes auth blob, a key
passed base64-encoded in an environment variable. A base64 run is decoded and the decoded text
redacted with every rule; when that finds a secret, the whole run is `[REDACTED:base64-secret]`.
So is a run that decodes to `user:password` (a Docker `auth`, Basic credentials kept without their
header).

Cost: only a text holding a run of MIN_RUN base64 characters gets here (one bytes.translate pass,
the same trick as the bare AWS key); runs that are one case only or hex (hashes, words) are not
decoded, and decoding is bounded by MAX_RUN.
"""

from __future__ import annotations

import base64
import binascii
import re

MIN_RUN = 28  # base64 of 21 bytes: `deploy:` and a 14-character password; provider tokens are longer
MAX_RUN = 8192
# The class comes first (a leading look-behind would make sre try every position); the left boundary
# is checked after the run.
# Base64's standard alphabet only (what `base64`, Docker and Kubernetes write): with '-' and '_' every
# snake-case identifier and tool-call id would be a run. URL-safe base64 is judged beside key-like
# names (judgement.wrapped_credentials) and as JWTs.
TABLE = bytes(0x61 if chr(i).isascii() and (chr(i).isalnum() or chr(i) in "/+=") else 0x20 for i in range(256))
NEEDLE = b"a" * MIN_RUN
_HEX = frozenset("0123456789abcdefABCDEF")
PLACEHOLDER = "[REDACTED:base64-secret]"


def has_run(text: str) -> bool:
    return NEEDLE in text.encode("utf-8", "surrogatepass").translate(TABLE)


def _runs(text: str, by_regex: bool = False, translated: bytes | None = None):
    """(start, end) of every run of MIN_RUN+ base64 characters (either alphabet, '=' included), found
    on the translated bytes with bytes.find (C speed); a regex scan when the text is not ASCII (and in
    the tests' reference)."""
    if by_regex or not text.isascii():
        for m in _ANY_RUN.finditer(text):
            yield m.span()
        return
    b = translated if translated is not None else text.encode("ascii").translate(TABLE)
    i = b.find(NEEDLE)
    while i != -1:
        j = b.find(b" ", i)
        if j == -1:
            j = len(b)
        yield i, j
        i = b.find(NEEDLE, j)


_ANY_RUN = re.compile(r"[A-Za-z0-9+/=]{%d,}+" % MIN_RUN)


def _decoded(run: str, urlsafe: bool) -> str | None:
    """The text a base64 run encodes, when it is one: valid base64 of printable UTF-8."""
    body = run.rstrip("=")
    if len(body) > MAX_RUN or len(body) % 4 == 1:
        return None
    if body.islower() or body.isupper() or body.isdigit() or set(body) <= _HEX:
        return None  # a word, a constant, a hash: base64 of text has both cases
    try:
        raw = (base64.urlsafe_b64decode if urlsafe else base64.b64decode)(body + "=" * (-len(body) % 4))
        text = raw.decode("utf-8")
    except (binascii.Error, ValueError):
        return None
    if not text or sum(1 for ch in text if ch.isprintable() or ch in "\n\r\t") < len(text) * 0.95:
        return None
    return text


def _pieces(run: str, at: int):
    """(start, end, url-safe alphabet) of what in a run may be one base64 value: the run itself, its
    '/'-separated segments ('/' is also a path's separator: a base64 secret used as a folder name,
    `/home/u/Z2hw…==/src`) and its pieces ending at '=' padding; each in one alphabet only."""
    spans = [(0, len(run))]
    if "/" in run:
        pos = 0
        for seg in run.split("/"):
            spans.append((pos, pos + len(seg)))
            pos += len(seg) + 1
    if "=" in run.rstrip("="):
        spans += [m.span() for m in _PADDED.finditer(run)]
    for s, e in spans:
        piece = run[s:e]
        if e - s < MIN_RUN or "=" in piece.rstrip("="):
            continue
        std = "-" not in piece and "_" not in piece
        if std or ("+" not in piece and "/" not in piece):
            yield at + s, at + e, not std


# `user:password`, what Basic credentials and Docker's `auth` wrap: a user name, a colon, then a password
# with a letter and a digit or symbol in it (not `key:value` prose).
_CREDENTIALS = re.compile(r"[\w.@+\-]{1,64}:(?=[^\s:]*[A-Za-z])(?=[^\s:]*[\d\W])[^\s:]{6,128}\s*")
_PADDED = re.compile(r"[^=]+={0,2}")


def redact_encoded(text: str, redact_text, by_regex: bool = False, translated: bytes | None = None) -> str:
    """`text` with every base64 run whose decoded text holds a secret replaced by PLACEHOLDER.
    `translated`: the text's bytes through TABLE, when the caller has them."""
    spans = []
    for rs, re_ in _runs(text, by_regex, translated):
        run = text[rs:re_]
        if run.islower() or run.isupper() or run.isdigit():
            continue  # words, paths, constants, hashes: base64 of text has both cases
        for s, e, urlsafe in _pieces(run, rs):
            if (s and text[s - 1] in "_-") or text[e : e + 1] in ("_", "-"):
                continue  # a piece of an identifier (toolu_01…, msg_01…)
            inner = _decoded(text[s:e], urlsafe)
            if inner is not None and len(inner) >= 7 and (_CREDENTIALS.fullmatch(inner) or redact_text(inner) is not inner):
                spans.append((s, e))
                break
    if not spans:
        return text
    parts, last = [], 0
    for s, e in sorted(spans):
        if s < last:
            continue
        parts += [text[last:s], PLACEHOLDER]
        last = e
    parts.append(text[last:])
    return "".join(parts)
