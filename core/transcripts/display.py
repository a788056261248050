"""Display paths: a transcript file's path as every output names it, with any folder or file name that
holds a secret redacted, and how such a path is turned back into the file it names.

A coding agent names its transcript folders after where it ran: Claude Code's `<slug of cwd>`, Pi's
`--<cwd>--`, and CODEX_HOME or a `--dir` can sit anywhere. A session run in `/home/dev/ghp_…/app` is
kept under `~/.claude/projects/-home-dev-ghp-…-app/`, so its path holds the token. Every output (the
`sessions` table and JSON, `mine`, cites in recipes and proposals, the episode store and its keys, run
packets, the language server's answers) names a file by `display_path(path)` instead:

- each path segment is run through the redactor (core/transcripts/redact: the gitleaks ruleset and the
  local rules), as written and with the separators a slug made of `_`, `.` and `/` put back, plus a
  check for runs that read as random (mixed case and digits, 12+ characters, high entropy);
- a segment that is the Claude slug or Pi folder name of the file's own `cwd` (read from the file's
  first lines, only for a segment that looks suspicious) is shown as the slug of the redacted cwd,
  which keeps the project's name readable (`-home-dev--REDACTED-github-token--app`);
- a redacted segment carries a tag, `~<12 hex>`: the first 48 bits of the SHA-256 of the real path up
  to and including that segment. It tells two redacted folders apart and lets `real_path` find the
  file again by listing the parent folder and matching the tag.

A path with nothing to redact is its own display path (the same string): state keyed by paths is
unchanged for everyone else. The real path is kept nowhere but in memory, where a reader opens the
file; `real_path(display)` walks the file system from the longest clean prefix, one listing per
redacted segment. What a tag allows: confirming a guess of the whole real path (SHA-256 of a path
with a random token in it cannot be searched).
"""

from __future__ import annotations

import functools
import hashlib
import math
import os
import re
from pathlib import Path

TAG_LEN = 12
_TAG = re.compile(r"~([0-9a-f]{%d})(?=\.meta\.json\Z|\.jsonl\Z|\.json\Z|\Z)" % TAG_LEN)
"""A segment's tag (at the end of the segment, before its suffix)."""
_TAG_ANYWHERE = re.compile(r"~[0-9a-f]{%d}(?=\.meta\.json/|\.meta\.json\Z|\.jsonl/|\.jsonl\Z|\.json/|\.json\Z|/|\Z)" % TAG_LEN)
_PLACEHOLDER = re.compile(r"\[REDACTED:[A-Za-z0-9_\-.]+\]")
_RUN = re.compile(r"[A-Za-z0-9]{12,}")
_SUFFIXES = (".meta.json", ".jsonl", ".json")
HEAD_BYTES = 64 * 1024


def tag(real_prefix: str) -> str:
    return hashlib.sha256(real_prefix.encode("utf-8", "surrogatepass")).hexdigest()[:TAG_LEN]


def _entropy(s: str) -> float:
    counts: dict[str, int] = {}
    for ch in s:
        counts[ch] = counts.get(ch, 0) + 1
    n = len(s)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def _random_run(run: str) -> bool:
    """A run of letters and digits that reads as a token's body rather than a name: upper and lower
    case and digits mixed, and no letter repeated much (a random 12 characters of 62 carry ~3.4 bits
    a character)."""
    return (any(c.isupper() for c in run) and any(c.islower() for c in run) and any(c.isdigit() for c in run)
            and _entropy(run) >= 3.0)


def _spans_of(original: str, redacted: str) -> list[tuple[int, int]]:
    """Where `redacted` (original with some spans replaced by placeholders, nothing else changed)
    replaced text: the literal pieces between placeholders are found in order."""
    if redacted == original:
        return []
    pieces = _PLACEHOLDER.split(redacted)
    spans, pos = [], 0
    for i, piece in enumerate(pieces):
        if i == 0:
            if not original.startswith(piece):
                return [(0, len(original))]
            pos = len(piece)
            continue
        if i == len(pieces) - 1:
            end = len(original) - len(piece)
            if not original.endswith(piece) or end < pos:
                return [(0, len(original))]
            spans.append((pos, end))
            continue
        at = original.find(piece, pos) if piece else pos
        if at < 0:
            return [(0, len(original))]
        spans.append((pos, at))
        pos = at + len(piece)
    return spans


def _redacted_text(text: str) -> str:
    """`text` (a segment, no `/`) with every secret the redactor finds replaced, as written and with a
    slug's `-` read back as `_`, `.` or `/`; then runs that read as random."""
    from core.transcripts.redact import redact_text

    spans: list[tuple[int, int]] = []
    variants = [text]
    if "-" in text:
        variants += [text.replace("-", c) for c in "_./"]
    if _long_run(text):
        # a token glued to the rest of a name (`…000Z_ya29.…`, `dop_v1_…-2`): its rule wants a word
        # boundary, which a space in place of one separator gives, the length kept
        variants += [text[:i] + " " + text[i + 1:] for i, c in enumerate(text) if c in "-_.~"][:64]
    for variant in variants:
        spans += _spans_of(variant, redact_text(variant))
    for m in _RUN.finditer(text):
        if _random_run(m.group()):
            spans.append(m.span())
    if not spans:
        return text
    spans.sort()
    out, last = [], 0
    for s, e in spans:
        if e <= last:
            continue
        s = max(s, last)
        out += [text[last:s], _kind_of(s, e, variants)]
        last = e
    out.append(text[last:])
    return "".join(out)


def _kind_of(s: int, e: int, variants: list[str]) -> str:
    """The placeholder the redactor gives the span [s, e) in one of the variants, else a generic one."""
    from core.transcripts.redact import redact_text

    for variant in variants:
        m = _PLACEHOLDER.search(redact_text(variant[s:e]))
        if m is not None:
            return m.group()
    return "[REDACTED:secret]"


_ROUTINE = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
                      r"|\d{4}-\d\d-\d\dT\d\d[-:]\d\d[-:]\d\d(?:[-.]\d{3})?Z?")
"""What most transcript names are made of (a session's UUID, a Pi or Codex start time): nothing to redact."""


@functools.lru_cache(maxsize=16384)
def _segment(segment: str) -> str:
    """A segment's redacted text (its file suffix kept), or the segment itself."""
    stem, suffix = segment, ""
    for s in _SUFFIXES:
        if segment.endswith(s) and len(segment) > len(s):
            stem, suffix = segment[: -len(s)], s
            break
    if len(_ROUTINE.sub("", stem)) < 10:
        return segment  # `<uuid>`, `<time>_<uuid>`, `rollout-<time>-<uuid>`: no room left for a secret
    out = _redacted_text(stem)
    return segment if out == stem else out + suffix


def _long_run(segment: str) -> bool:
    """A run of 12+ letters and digits mixed, outside a UUID (session ids name most files): what a
    secret's body looks like, and what a slug may have cut out of one (`dop-v1-<64 hex>`)."""
    return any(any(c.isdigit() for c in run) and any(c.isalpha() for c in run)
               for run in _RUN.findall(_ROUTINE.sub("-", segment)))


@functools.lru_cache(maxsize=16384)
def _suspicious(segment: str) -> bool:
    """A segment the redactor changes, or one with a long run (a slug's secret the cwd may show)."""
    return _segment(segment) != segment or _long_run(segment)


def _slug_forms(cwd: str) -> dict[str, str]:
    """The folder names an agent gives a cwd (Claude's slug, Pi's `--…--`) -> the same of the redacted cwd."""
    from core.transcripts.discover import claude_slug, pi_dirname
    from core.transcripts.redact import redact_text

    clean = redact_text(cwd)
    if clean is cwd or clean == cwd:
        return {}
    return {claude_slug(cwd): claude_slug(clean), pi_dirname(cwd): pi_dirname(clean)}


def _head_cwd(path: str) -> str | None:
    """The `cwd` a transcript records in its first lines (Claude/Pi records, a Codex session_meta)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(HEAD_BYTES)
    except OSError:
        return None
    import orjson

    for raw in head.split(b"\n")[:50]:
        if b'"cwd"' not in raw:
            continue
        try:
            rec = orjson.loads(raw)
        except orjson.JSONDecodeError:
            continue
        if type(rec) is not dict:
            continue
        cwd = rec.get("cwd")
        if cwd is None and type(rec.get("payload")) is dict:
            cwd = rec["payload"].get("cwd")
        if type(cwd) is str:
            return cwd
    return None


@functools.lru_cache(maxsize=65536)
def _display(text: str) -> str:
    parts = text.split("/")
    if not any(_suspicious(p) for p in parts if p):
        return text
    forms = _slug_forms(cwd) if text.endswith(".jsonl") and (cwd := _head_cwd(text)) else {}
    if not forms and not any(_segment(p) != p for p in parts if p):
        return text
    out = []
    for i, part in enumerate(parts):
        shown = forms.get(part) or _segment(part) if part else part
        if shown != part:
            suffix = next((s for s in _SUFFIXES if shown.endswith(s) and part.endswith(s)), "")
            body = shown[: len(shown) - len(suffix)] if suffix else shown
            shown = f"{body}~{tag('/'.join(parts[: i + 1]))}{suffix}"
        out.append(shown)
    return "/".join(out)


def display_path(path: str | Path | None) -> str:
    """The path as outputs name it (module docstring); the same string when nothing in it is secret."""
    if path is None:
        return ""
    text = os.fspath(path)
    if os.sep != "/":
        text = text.replace(os.sep, "/")
    return _display(text)


def display_stem(path: str | Path) -> str:
    """The file's name without `.jsonl` as outputs show it: what an id read from a file name becomes."""
    name = display_path(path).rsplit("/", 1)[-1]
    for suffix in _SUFFIXES:
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return name


def real_path(shown: str | Path) -> Path:
    """The file a display path names: each tagged segment is the child of the folder above whose tag
    matches. Raises FileNotFoundError naming the display path when no such file is there (any more)."""
    text = os.fspath(shown)
    if not _TAG_ANYWHERE.search(text):
        return Path(text)
    parts = text.split("/")
    real: list[str] = []
    for part in parts:
        if not part:
            real.append(part)
            continue
        m = _TAG.search(part)
        here = "/".join(real) or ("/" if text.startswith("/") else ".")
        if m is None or os.path.lexists(os.path.join(here, part)):
            real.append(part)
            continue
        want = m.group(1)
        try:
            names = os.listdir(here)
        except OSError as exc:
            raise FileNotFoundError(f"{text}: the folder holding {part} cannot be listed ({exc.strerror})") from None
        found = [n for n in names if tag("/".join([*real, n])) == want]
        if not found:
            raise FileNotFoundError(f"{text}: no file or folder matches {part} any more")
        real.append(found[0])
    return Path("/".join(real))
