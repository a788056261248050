"""Stream a JSONL transcript into records, accounting for every line read.

Memory is bounded by the longest line we agree to hold (`max_line_bytes`); a longer line is
skipped by reading it in chunks and throwing them away, so a 100 MB line never sits in memory.
Whatever the bytes, this never raises on content: each bad line becomes a counted Problem.
"""

from __future__ import annotations

import contextlib
import gc
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import msgspec
import orjson

from core.transcripts.display import display_path
from core.transcripts.model import LineAccounting, Problem, ProblemKind
from core.transcripts.redact import redact_text

MAX_LINE_BYTES = 32 * 1024 * 1024
"""Lines longer than this are skipped (counted, with file and line). Real lines with big tool
results or pasted images reach a few MB; 32 MB leaves room and still bounds memory."""

MAX_PROBLEMS = 200
"""Problems kept per file with full detail; the counts stay complete past this."""

_CHUNK = 1024 * 1024
_decoder = json.JSONDecoder()
_MSGSPEC_REFUSED = (msgspec.DecodeError, RecursionError)


@contextlib.contextmanager
def paused_gc():
    """The garbage collector off for a block that builds many objects and no reference cycles (a
    reader's records, a pass's episodes): a full collection rescans every object kept so far, and a
    seed pass keeping a corpus's episodes paid for several. Restored as it was."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def _utf8(raw: bytes) -> bool:
    """Whether the line is valid UTF-8 (msgspec does not check what it skips; orjson checks all)."""
    try:
        raw.decode()
    except UnicodeDecodeError:
        return False
    return True


_KINDS = {dict: "an object", list: "a list", int: "a number", float: "a number", bool: "a boolean", str: "a string"}


@dataclass
class LineReader:
    """Iterates `(line_number, record)` over a file; fills `accounting` and `problems` as it goes.

    `start`/`first_line` resume a file from a byte offset known to begin a line (a growing file read
    again); `end_offset` is where a later read should resume: after the last line that ended in a
    newline, so a torn tail is read again once it is complete.

    Records are dicts, or with `decoding` (core/transcripts/records.py) typed structs: msgspec
    decodes only the fields they name. Which lines count as parsed, malformed or recovered is the
    same either way: a line goes to msgspec only when it is valid UTF-8, and whatever msgspec
    refuses (nesting past its recursion limit, any error) takes the dict path, orjson then the
    recovery below, its dicts converted to the struct.

    The garbage collector is paused while a file is read: a reader makes many small objects and no
    reference cycles, and a collection pass every few thousand of them costs a tenth of the read.
    """

    path: Path
    max_line_bytes: int = MAX_LINE_BYTES
    decoding: object = None
    start: int = 0
    first_line: int = 1
    end_offset: int = 0
    accounting: LineAccounting = field(default_factory=LineAccounting)
    problems: list[Problem] = field(default_factory=list)
    problem_count: int = 0
    _bad: int = 0
    _recovered: int = 0
    _demoted: set[int] = field(default_factory=set)

    def problem(self, kind: ProblemKind, line: int, detail: str = "") -> None:
        self.problem_count += 1
        if len(self.problems) < MAX_PROBLEMS:
            # a detail quotes the line or an id from it: redacted like anything else that leaves a reader
            self.problems.append(Problem(kind=kind, file=display_path(self.path), line=line, detail=redact_text(detail)))

    def wrong_type(self, line: int, field_name: str, value: object, want: str = "a string") -> None:
        """A line that parsed but holds a field of the wrong type (a `call_id` that is a list): it is
        counted malformed, with that reason, instead of parsed; the reader then leaves it out."""
        if line in self._demoted:
            return
        self._demoted.add(line)
        self.accounting.parsed -= 1  # folded with the lines' own counts when the read ends: the sums hold
        self.accounting.malformed += 1
        got = "null" if value is None else _KINDS.get(type(value), type(value).__name__)
        self.problem(ProblemKind.malformed, line, f"{field_name}: expected {want}, got {got}")

    def __iter__(self) -> Iterator[tuple[int, dict]]:
        # Counters are plain locals on this hot path (a pydantic attribute write per line costs
        # more than the JSON parse of a small line); they are folded into `accounting` at the end.
        acc = self.accounting
        loads = orjson.loads
        decode = self.decoding.decode if self.decoding is not None else None
        convert = self.decoding.convert if self.decoding is not None else None
        lineno = self.first_line - 1
        parsed = skipped = 0
        self._bad = self._recovered = 0
        pos = self.end_offset = self.start
        collecting = gc.isenabled()
        gc.disable()
        try:
            with open(self.path, "rb") as fh:
                if pos:
                    fh.seek(pos)
                for lines, tail in _split_lines(fh, self.max_line_bytes):
                    for raw in lines:
                        lineno += 1
                        if type(raw) is int:
                            pos += raw + 1
                            skipped += 1
                            self.problem(ProblemKind.oversized, lineno,
                                         f"{raw} bytes > limit {self.max_line_bytes}")
                            continue
                        pos += len(raw) + 1
                        if decode is not None and (raw.isascii() or _utf8(raw)):
                            try:
                                obj = decode(raw)
                            except _MSGSPEC_REFUSED:
                                pass
                            else:
                                parsed += 1
                                yield lineno, obj
                                continue
                        try:
                            obj = loads(raw)
                        except orjson.JSONDecodeError:
                            if not raw.strip():
                                skipped += 1
                            else:
                                yield from self._recover(raw, lineno, torn=False)
                            continue
                        if type(obj) is dict:
                            parsed += 1
                            yield lineno, obj if convert is None else convert(obj)
                        else:
                            self._bad += 1
                            self.problem(ProblemKind.malformed, lineno, f"a JSON {type(obj).__name__}, not an object")
                    # Where a later read resumes: after the last line that ended in a newline (set
                    # once per chunk, not per line; the consumer reads it when the file is done).
                    self.end_offset = pos
                    if tail is not None:
                        # The last line has no newline: complete JSON counts (and is not read
                        # again); anything else is a line still being written, read again later.
                        lineno += 1
                        if type(tail) is int:
                            skipped += 1
                            self.problem(ProblemKind.oversized, lineno,
                                         f"{tail} bytes > limit {self.max_line_bytes}")
                            continue
                        before = self._bad
                        if not tail.strip():
                            skipped += 1
                            continue
                        yield from self._recover(tail, lineno, torn=True)
                        if self._bad == before:
                            self.end_offset = pos + len(tail)
        finally:
            if collecting:
                gc.enable()
            acc.lines_read += lineno - self.first_line + 1
            acc.parsed += parsed + self._recovered
            acc.skipped += skipped
            acc.malformed += self._bad

    def _recover(self, raw: bytes, lineno: int, torn: bool) -> Iterator[tuple[int, dict]]:
        """The slow path for a line orjson refused (or the unterminated last line): bad UTF-8,
        glued objects, a torn tail."""
        try:
            text = raw.decode("utf-8")
            bad_utf8 = False
        except UnicodeDecodeError:
            text = raw.decode("utf-8", errors="replace")
            bad_utf8 = True
        objects, why = _decode_glued(text)
        if objects and all(type(o) is dict for o in objects):
            self._recovered += 1
            if bad_utf8:
                self.problem(ProblemKind.invalid_utf8, lineno, "undecodable bytes replaced with U+FFFD")
            if len(objects) > 1:
                self.problem(ProblemKind.glued, lineno, f"{len(objects)} objects on one line, all recovered")
            convert = self.decoding.convert if self.decoding is not None else None
            for obj in objects:
                yield lineno, obj if convert is None else convert(obj)
            return
        self._bad += 1
        if why:
            self.problem(ProblemKind.malformed, lineno, why)
        elif torn:
            self.problem(ProblemKind.torn_tail, lineno, "last line is incomplete (file still being written?)")
        elif bad_utf8 and text.count("\ufffd") * 4 > len(text):
            self.problem(ProblemKind.malformed, lineno, "binary data, not JSON")
        else:
            head = text[:60] + ("…" if len(text) > 60 else "")  # "…" lets redaction see a token was cut
            self.problem(ProblemKind.malformed, lineno, f"not JSON: {head!r}")


def _split_lines(fh, limit: int) -> Iterator[tuple[list, bytes | int | None]]:
    """Yield (complete lines, tail) per chunk read; tail is None until the end of the file.

    Splitting whole chunks in C is several times cheaper than a readline call per line. A line is
    bytes without its newline, or an int (its length) when it is longer than `limit`: such a line
    is dropped chunk by chunk as it streams past, never joined. The tail is the unterminated last
    line (bytes, or int when oversized), or None when the file ends with a newline.
    """
    parts: list[bytes] = []
    pending = 0
    dropping = False
    while True:
        chunk = fh.read(_CHUNK)
        if not chunk:
            if dropping:
                yield [], pending
            elif parts:
                yield [], b"".join(parts)
            return
        lines = chunk.split(b"\n")
        last = lines.pop()
        if parts or dropping:
            if not lines:
                # No newline in this chunk: all of it continues the pending line.
                pending += len(last)
                if not dropping:
                    if pending > limit:
                        dropping, parts = True, []
                    else:
                        parts.append(last)
                continue
            first = lines[0]
            if dropping or pending + len(first) > limit:
                lines[0] = pending + len(first)
            else:
                parts.append(first)
                lines[0] = b"".join(parts)
            parts, pending, dropping = [], 0, False
        if lines:
            if limit < _CHUNK:  # only a limit below the chunk size can be passed within one chunk
                lines = [x if type(x) is int or len(x) <= limit else len(x) for x in lines]
            yield lines, None
        if last:
            pending = len(last)
            if pending > limit:
                dropping = True
            else:
                parts = [last]


def _decode_glued(text: str) -> tuple[list, str]:
    """Decode one or more JSON values written back to back on one line: (values, "") or, when any
    part fails, ([], why) where why is "" for plain bad JSON.

    orjson refused this line, so what json's decoder accepts beyond it is refused here too: nesting
    past orjson's depth (json's decoder recurses and would raise RecursionError) and a lone surrogate
    escape such as "\\ud800" (not a character: no UTF-8 file or store could hold it)."""
    out = []
    pos, end = 0, len(text)
    while True:
        while pos < end and text[pos] in " \t\r\n":
            pos += 1
        if pos >= end:
            break
        try:
            obj, pos = _decoder.raw_decode(text, pos)
        except RecursionError:
            return [], "nested too deeply to read"
        except ValueError:
            return [], ""
        out.append(obj)
    try:
        orjson.dumps(out)
    except orjson.JSONEncodeError as e:  # a lone surrogate, or nesting orjson cannot write back
        reason = "a lone surrogate escape (not text)" if "surrogate" in str(e) else "nested too deeply to keep"
        return [], reason
    return out, ""


NOT_A_TRANSCRIPT = "none"
"""sniff_format's answer for a file the agents keep beside their transcripts that is none."""


def not_a_transcript(record: dict) -> bool:
    """A line of a file that sits beside transcripts but holds no conversation: Codex's thread index
    (`session_index.jsonl`: id, thread_name, updated_at), Claude Code's prompt history
    (`history.jsonl`: display, pastedContents, project) and Codex's (`history.jsonl`: session_id, ts,
    text). A hook's record with a `cwd` is read: it says where a session ran."""
    if "type" in record:
        return False
    return ("thread_name" in record and "id" in record) or ("display" in record and "project" in record) or (
        "session_id" in record and "ts" in record and "text" in record)


def sniff_format(path: Path) -> str | None:
    """'pi' when the first parseable record is a Pi session header, 'codex' for a Codex rollout line
    ({timestamp, type, payload}), NOT_A_TRANSCRIPT for an index or a prompt history, 'claude' for
    other records."""
    try:
        with open(path, "rb") as fh:
            for _ in range(20):
                raw = fh.readline(1024 * 1024)
                if not raw:
                    return None
                try:
                    obj = orjson.loads(raw)
                except orjson.JSONDecodeError:
                    continue
                if type(obj) is not dict or obj.get("type") == "title":
                    continue  # a title line some tools write before a Pi header
                kind = obj.get("type")
                if kind == "session":
                    return "pi"
                if kind in ("session_meta", "response_item", "event_msg", "turn_context") and "payload" in obj:
                    return "codex"
                if not_a_transcript(obj):
                    return NOT_A_TRANSCRIPT
                return "claude"
    except OSError:
        return None
    return None
