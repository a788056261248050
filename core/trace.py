"""The kitsoki trace format: a session header line, then one event per line (reference §3).

We append the miner's events to traces kitsoki itself writes and reads, so every line must be
one kitsoki's Go reader accepts and its Go writer could have written:

- JSONL, LF only. Line 1 is `{"kind":"session.header","schema_version":1,"written_at":...}`.
- Event keys in Go's struct order (turn, seq, ts, kind, state_path, parent_turn, call_id,
  episode_id, match_idx, payload); the optional ones are omitted when empty or zero (omitempty).
- Timestamps are Go RFC3339Nano in UTC: nanosecond digits with trailing zeros trimmed.
- Numbers, escapes and string normalization as Go's encoding/json plus kitsoki's writer rules
  (floats in Go's shortest form, `<>&` escaped, strings NFC, no NaN/Inf).

Mining events are off-path: each gets `turn = max_turn + 1`, `parent_turn = max_turn`, `seq` 0 and
no `state_path`. Appends are serialized across processes by a `<trace>.lock` file lock.
"""

from __future__ import annotations

import calendar
import errno
import math
import os
import re
import threading
import time
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic.json_schema import SkipJsonSchema

from core import statefs
from core.locks import LockTimeout, acquire
from core.trace_rules import _SKIP, HEADER_KIND, SCHEMA_VERSION, KitsokiReader, TraceCorrupt  # noqa: F401

try:  # POSIX only; on Windows the `<trace>.lock` file lock is the only guard.
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None  # type: ignore[assignment]


PASS_RAN = "mining.pass_ran"
PROPOSAL_RAISED = "mining.proposal_raised"
PROPOSAL_DECIDED = "mining.proposal_decided"
RECOVERED = "mining.recovered"
"""Written by the apply gate at start-up; a free-form payload."""

_MINING_KIND = re.compile(r"mining\.[a-z][a-z0-9_]*")
"""Kinds we may write. Kitsoki's replay ignores unknown kinds, but never a kind of its own (a
`machine.transition` would move its state), so we stay inside the mining namespace."""

LOCK_TIMEOUT_SECONDS = 30.0
"""A writer holds the lock for one read-max-turn + append; 30 s means something is wedged."""

MAX_LINE_BYTES = 64 * 1024 * 1024
"""Longer lines are counted as malformed without being held whole. Kitsoki's `session.story`
lines embed a whole story base64-encoded; 64 MiB leaves a wide margin."""

_READ_CHUNK = 64 * 1024
_MAX_TURN = 2**63 - 1  # Go's TurnNumber is int64
_TURN_PREFIX = re.compile(rb'\s*\{\s*"turn"\s*:\s*(\d{1,19})\s*[,}]')
_RFC3339 = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$"
_RFC3339_PARTS = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(Z|([+-])(\d{2}):(\d{2}))"
)


def trace_path(workspace: Path) -> Path:
    """The workspace's trace: `.artifacts/mining/trace.jsonl`."""
    return Path(workspace) / ".artifacts" / "mining" / "trace.jsonl"


class TraceBusyError(OSError):
    """Another writer (a live kitsoki session) holds the trace open; appending now would give two
    writers the same turn number, and kitsoki refuses a trace with a duplicate (turn, seq)."""


# ── timestamps ────────────────────────────────────────────────────────────────────────────────


def format_rfc3339nano(unix_ns: int) -> str:
    """Go's `time.RFC3339Nano` for a UTC instant: the fraction keeps nanosecond digits with its
    trailing zeros trimmed, and disappears when it is zero."""
    seconds, nanos = divmod(unix_ns, 1_000_000_000)
    stamp = datetime.fromtimestamp(seconds, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
    fraction = f"{nanos:09d}".rstrip("0")
    return f"{stamp}.{fraction}Z" if fraction else f"{stamp}Z"


def parse_rfc3339nano(text: str) -> int:
    """Unix nanoseconds of an RFC3339 timestamp (any offset, up to nine fraction digits)."""
    m = _RFC3339_PARTS.fullmatch(text)
    if not m:
        raise ValueError(f"not an RFC3339 timestamp: {text!r}")
    year, month, day, hour, minute, second = (int(g) for g in m.groups()[:6])
    seconds = calendar.timegm((year, month, day, hour, minute, second))
    if m.group(9):
        offset = (int(m.group(10)) * 60 + int(m.group(11))) * 60
        seconds -= offset if m.group(9) == "+" else -offset
    return seconds * 1_000_000_000 + int((m.group(7) or "").ljust(9, "0"))


# ── Go-compatible JSON ────────────────────────────────────────────────────────────────────────


def go_float(value: float) -> str:
    """A float64 as Go's encoding/json writes it: shortest round-trip digits, plain notation for
    1e-6 <= |x| < 1e21 (so 3.0 is `3`), otherwise exponent form with `e-07` shortened to `e-7`."""
    if not math.isfinite(value):
        raise ValueError(f"{value!r} is not representable in JSON (kitsoki refuses NaN/Inf)")
    shortest = repr(value)
    magnitude = abs(value)
    if magnitude != 0 and (magnitude < 1e-6 or magnitude >= 1e21):
        # repr is already in exponent form here, with Go's two-digit minimum exponent.
        if shortest[-4:-2] == "e-" and shortest[-2] == "0":
            shortest = shortest[:-2] + shortest[-1]
        return shortest
    plain = format(Decimal(shortest), "f")
    if "." in plain:
        plain = plain.rstrip("0").rstrip(".")
    return plain


_GO_HTML_ESCAPES = (
    (b"<", b"\\u003c"),
    (b">", b"\\u003e"),
    (b"&", b"\\u0026"),
    ("\u2028".encode(), b"\\u2028"),
    ("\u2029".encode(), b"\\u2029"),
)


def _go_escape_html(encoded: bytes) -> bytes:
    # These bytes only ever occur inside JSON strings, so a plain replace is exact.
    for raw, escaped in _GO_HTML_ESCAPES:
        if raw in encoded:
            encoded = encoded.replace(raw, escaped)
    return encoded


def _nfc(text: str) -> str:
    # Kitsoki's writer rejects payload strings that are not NFC (macOS paths arrive as NFD).
    return text if unicodedata.is_normalized("NFC", text) else unicodedata.normalize("NFC", text)


def _plain_json(value: Any, *, sort_keys: bool) -> Any:
    """Copy `value` as plain JSON data with NFC strings; optionally sort mapping keys the way Go
    marshals a map. Anything that is not JSON data is refused rather than stringified."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        return _nfc(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{value!r} is not representable in JSON (kitsoki refuses NaN/Inf)")
        return float(value)
    if isinstance(value, Mapping):
        items = []
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(f"payload keys must be strings, got {key!r}")
            items.append((_nfc(key), _plain_json(item, sort_keys=sort_keys)))
        if sort_keys:
            items.sort(key=lambda kv: kv[0].encode())  # Go sorts map keys by bytes
        return dict(items)
    if isinstance(value, (list, tuple)):
        return [_plain_json(item, sort_keys=sort_keys) for item in value]
    raise TypeError(f"payload values must be JSON data, got {type(value).__name__}")


def _go_numbers(value: Any) -> Any:
    """Swap floats for pre-encoded fragments so orjson writes them as Go would."""
    if type(value) is float:
        return orjson.Fragment(go_float(value).encode())
    if type(value) is dict:
        return {key: _go_numbers(item) for key, item in value.items()}
    if type(value) is list:
        return [_go_numbers(item) for item in value]
    return value


def go_json(value: Any) -> bytes:
    """Encode plain JSON data byte-for-byte as Go's json.Marshal would (keys in the given order)."""
    return _go_escape_html(orjson.dumps(_go_numbers(value)))


# ── payloads ──────────────────────────────────────────────────────────────────────────────────

_payload_config = ConfigDict(strict=True, extra="forbid", frozen=True, allow_inf_nan=False)
RecipeId = Annotated[str, Field(min_length=1)]


class MiningPayload(BaseModel, defer_build=True):
    """A typed mining event payload; `to_payload()` is the JSON object kitsoki's Go struct gives."""

    model_config = _payload_config
    event_kind: ClassVar[str]

    def to_payload(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


class PassRan(MiningPayload):
    """`mining.pass_ran` (store.MiningPassRanPayload): one per completed pass, or a paused one."""

    event_kind: ClassVar[str] = PASS_RAN
    trigger: Literal["seed", "live"]
    slug: str
    sessions: int = Field(default=0, ge=0)
    recipes: int = Field(default=0, ge=0)
    job_id: str = ""
    paused: bool = False
    """True when the miner was disabled as a pass would have fired; omitted from JSON when false."""

    @model_validator(mode="after")
    def _paused_passes_mine_nothing(self) -> PassRan:
        # Kitsoki's recordPaused fills only trigger "live" and the slug; the counts stay zero.
        if self.paused and (self.trigger != "live" or self.sessions or self.recipes or self.job_id):
            raise ValueError("a paused pass is {trigger: live, slug, paused: true}: it ran nothing")
        return self

    def to_payload(self) -> dict[str, Any]:
        # Go: `Paused bool json:"paused,omitempty"`; the counts and job_id have no omitempty.
        return self.model_dump(mode="json", exclude=None if self.paused else {"paused"})


ProposalKind = Literal["binding", "world", "intent", "stub-wire", "gate", "dev-story-enrich"]


class ProposalRaised(MiningPayload):
    """`mining.proposal_raised` (store.MiningProposalRaisedPayload): a drafted, validated,
    staged proposal is now waiting for a verdict."""

    event_kind: ClassVar[str] = PROPOSAL_RAISED
    recipe_id: RecipeId
    kind: ProposalKind
    target: Literal["root-instance", "dev-story"]
    priority: float
    rung: Literal[1, 2]
    draft_path: str
    """Where the delta is staged: `.artifacts/mining/<recipe_id>`."""


class ProposalDecided(MiningPayload):
    """`mining.proposal_decided` (store.MiningProposalDecidedPayload): the recorded verdict."""

    event_kind: ClassVar[str] = PROPOSAL_DECIDED
    recipe_id: RecipeId
    verdict: Literal["accept", "refine", "reject"]
    by: Literal["human", "llm"]
    flows_green: bool = False
    reverted: bool = False

    @model_validator(mode="after")
    def _outcome_matches_verdict(self) -> ProposalDecided:
        # Reference §3: refine/reject apply nothing (both false); an accept is kept on green
        # (true/false) or restored on red or a failed reload (false/true).
        if self.verdict != "accept" and (self.flows_green or self.reverted):
            raise ValueError(f"a {self.verdict} applies nothing: flows_green and reverted must be false")
        if self.verdict == "accept" and self.flows_green == self.reverted:
            raise ValueError("an accept is either kept on green (flows_green) or reverted, exactly one")
        return self


PAYLOAD_MODELS: dict[str, type[MiningPayload]] = {
    PASS_RAN: PassRan,
    PROPOSAL_RAISED: ProposalRaised,
    PROPOSAL_DECIDED: ProposalDecided,
}


# ── lines ─────────────────────────────────────────────────────────────────────────────────────


class SessionHeader(BaseModel, defer_build=True):
    """Line 1 of every trace."""

    model_config = ConfigDict(extra="ignore")
    kind: Literal["session.header"] = HEADER_KIND
    schema_version: int = SCHEMA_VERSION
    written_at: str = Field(pattern=_RFC3339)


_NonNegative = Annotated[int, Field(ge=0)]


def _absent() -> Any:
    """An omitempty field: None in Python, absent on disk, and in the schema just its type
    (never null, which no line holds)."""
    return Field(default=None, json_schema_extra=lambda schema: schema.pop("default", None))


_OMIT_WHEN_EMPTY = ("state_path", "call_id", "episode_id")
_OMIT_WHEN_ZERO = ("parent_turn", "match_idx")


class Event(BaseModel, defer_build=True):
    """One trace line after the header (kitsoki's store.Event as it is written to JSONL).

    Fields Go marks omitempty are None when absent; an empty string or a zero is the same thing
    on disk (kitsoki: "parent_turn=0 is semantically identical to absent"), so both read as None.
    """

    model_config = ConfigDict(strict=True, extra="ignore", frozen=True)

    turn: int = Field(ge=0)
    seq: int = Field(ge=0)
    ts: str = Field(pattern=_RFC3339)
    """RFC3339Nano, kept as written: a datetime would drop kitsoki's nanoseconds."""
    kind: str = Field(min_length=1)
    state_path: str | SkipJsonSchema[None] = _absent()
    parent_turn: _NonNegative | SkipJsonSchema[None] = _absent()
    call_id: str | SkipJsonSchema[None] = _absent()
    episode_id: str | SkipJsonSchema[None] = _absent()
    match_idx: _NonNegative | SkipJsonSchema[None] = _absent()
    payload: dict[str, Any] = Field(default_factory=dict)

    @field_validator("payload", mode="before")
    @classmethod
    def _null_payload_is_empty(cls, value: Any) -> Any:
        return {} if value is None else value  # Go writes `{}` for a nil payload

    @field_validator(*_OMIT_WHEN_EMPTY, *_OMIT_WHEN_ZERO)
    @classmethod
    def _go_zero_is_absent(cls, value: str | int | None) -> str | int | None:
        return value or None

    def ts_unix_ns(self) -> int:
        return parse_rfc3339nano(self.ts)

    def typed_payload(self) -> MiningPayload | dict[str, Any]:
        """The payload as its mining model (raises ValidationError if it does not fit), or the
        plain dict for any other kind."""
        model = PAYLOAD_MODELS.get(self.kind)
        return model.model_validate(self.payload) if model else self.payload

    def to_json(self) -> bytes:
        """The line as kitsoki writes it, without the newline."""
        line: dict[str, Any] = {"turn": self.turn, "seq": self.seq, "ts": self.ts, "kind": self.kind}
        for name in ("state_path", "parent_turn", "call_id", "episode_id", "match_idx"):
            value = getattr(self, name)
            if value is not None:
                line[name] = value
        line["payload"] = self.payload
        return go_json(line)


TRACE_MODELS: dict[str, type[BaseModel]] = {
    "trace-event.schema.json": Event,
    "trace-header.schema.json": SessionHeader,
    "mining-pass-ran.schema.json": PassRan,
    "mining-proposal-raised.schema.json": ProposalRaised,
    "mining-proposal-decided.schema.json": ProposalDecided,
}
"""Models whose JSON Schemas describe the trace lines and the mining payloads we write."""


# ── reading ───────────────────────────────────────────────────────────────────────────────────


@dataclass
class ReadStats:
    """What the last `events()` pass saw. Content problems are counted here, never raised."""

    lines: int = 0
    events: int = 0
    malformed: int = 0
    """Lines that are not JSON, not an object, not an event, oversized, or a second header."""
    torn_tail: bool = False
    """The last line has no newline and does not parse (a writer died mid-line, or is writing)."""
    bad_payloads: int = 0
    """Mining events whose payload does not fit its model (skipped by pending_proposals)."""
    header: SessionHeader | None = None


@dataclass(frozen=True)
class _RawLine:
    data: bytes
    """The line without its newline; only the first _READ_CHUNK bytes when oversized."""
    complete: bool
    oversized: bool
    end: int
    """File offset just after this line."""


def _raw_lines(fh, offset: int) -> Iterator[_RawLine]:
    """Stream lines from a binary file positioned at `offset`. Memory is bounded by
    MAX_LINE_BYTES: the rest of a longer line is read and dropped."""
    while True:
        chunk = fh.readline(_READ_CHUNK)
        if not chunk:
            return
        if chunk[-1:] == b"\n":
            offset += len(chunk)
            yield _RawLine(chunk[:-1], True, False, offset)
            continue
        parts, size, oversized = [chunk], len(chunk), False
        while len(chunk) == _READ_CHUNK and chunk[-1:] != b"\n":
            chunk = fh.readline(_READ_CHUNK)
            if not chunk:
                break
            size += len(chunk)
            if not oversized:
                if size > MAX_LINE_BYTES:
                    oversized, parts = True, parts[:1]
                else:
                    parts.append(chunk)
        complete = chunk[-1:] == b"\n"
        offset += size
        data = b"".join(parts)
        if complete and not oversized:
            data = data[:-1]
        yield _RawLine(data, complete, oversized, offset)


def _turn_of(line: _RawLine) -> int:
    """The turn a line claims, or 0. Lenient on purpose: any number a line plausibly holds (even
    a torn or malformed one) is kept out of reuse, since turns only need to be unique."""
    prefix = _TURN_PREFIX.match(line.data)  # kitsoki and we always write "turn" first
    if prefix:
        turn = int(prefix.group(1))
        return turn if turn <= _MAX_TURN else 0
    if line.oversized or not line.complete:
        return 0
    try:
        obj = orjson.loads(line.data)
    except orjson.JSONDecodeError:
        return 0
    turn = obj.get("turn") if type(obj) is dict else None
    return turn if type(turn) is int and 0 <= turn <= _MAX_TURN else 0


def _scan_turns(path: Path, start: int) -> tuple[int, int]:
    """(max turn, offset after the last complete line) of the file from `start` on."""
    best, scanned_to = 0, start
    with _open_for_reading(path) as fh:
        fh.seek(start)
        for line in _raw_lines(fh, start):
            best = max(best, _turn_of(line))
            if line.complete:
                scanned_to = line.end
    return best, scanned_to


@dataclass(frozen=True)
class _TurnCache:
    """The max turn of the file as last seen, and which bytes that covers."""

    device: int
    inode: int
    size: int
    mtime_ns: int
    scanned_to: int
    max_turn: int


# ── the trace ─────────────────────────────────────────────────────────────────────────────────


class Trace:
    """A kitsoki trace file we append mining events to and read events from.

    Any number of Trace objects, threads and processes may append to one file: each append runs
    under the `<path>.lock` file lock. A live kitsoki session holds its own flock on the trace
    itself; appending then raises TraceBusyError instead of corrupting its turn numbering.
    """

    def __init__(self, path: str | os.PathLike[str], *, clock_ns: Callable[[], int] = time.time_ns):
        self.path = Path(path)
        self.lock_path = Path(f"{self.path}.lock")
        self._thread_lock = threading.Lock()  # guards the cache between threads sharing this object
        self._clock_ns = clock_ns
        self._cache: _TurnCache | None = None
        self.last_read = ReadStats()

    def __repr__(self) -> str:
        return f"Trace({str(self.path)!r})"

    # writing

    def append(self, kind: str, payload: MiningPayload | Mapping[str, Any], *, call_id: str | None = None) -> Event:
        """Append one off-path event and return it as written.

        Mining kinds take their model (or a mapping validated into it); any other `mining.*` kind
        (e.g. `mining.recovered`) takes a free mapping of JSON data. `call_id` (the envelope's own
        field) ties the event to the call that made it: an accept's verdict carries the accept's id,
        so its journal can tell it was decided (core.apply.journal).
        """
        body = _payload_body(kind, payload)
        statefs.ensure_dir(self.path.parent)  # the lock file lives there too; no link on the way
        with self._thread_lock, self._locked():
            fd = statefs.open_file(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644, what="the trace")
            try:
                _refuse_if_held_by_another_writer(fd, self.path)
                before = os.fstat(fd)
                max_turn = self._max_turn(before)
                now = format_rfc3339nano(self._clock_ns())
                event = Event(
                    turn=max_turn + 1,
                    seq=0,
                    ts=now,
                    kind=kind,
                    parent_turn=max_turn,
                    call_id=call_id or None,
                    payload=body,
                )
                data = event.to_json() + b"\n"
                if before.st_size == 0:
                    data = _header_line(now) + data
                elif os.pread(fd, 1, before.st_size - 1) != b"\n":
                    data = b"\n" + data  # a torn last line: never glue our event onto it
                _write_all(fd, data)
                os.fsync(fd)
                written_to = os.lseek(fd, 0, os.SEEK_CUR)  # O_APPEND: the end of our write
                after = os.fstat(fd)
            finally:
                os.close(fd)
            if before.st_size == 0:
                _fsync_directory(self.path.parent)
            self._cache = _TurnCache(
                device=after.st_dev,
                inode=after.st_ino,
                size=written_to,
                # A size that moved past our write means bytes we have not scanned: let the
                # next append see a changed mtime and scan the tail.
                mtime_ns=after.st_mtime_ns if after.st_size == written_to else -1,
                scanned_to=written_to,
                max_turn=event.turn,
            )
        return event

    @contextmanager
    def _locked(self) -> Iterator[None]:
        """The `<trace>.lock` file lock (no link on the way, never truncated)."""
        try:
            fd = acquire(self.lock_path, LOCK_TIMEOUT_SECONDS, what="the trace lock")
        except LockTimeout:
            raise TraceBusyError(errno.EAGAIN, f"the trace lock {self.lock_path} has been held for "
                                               f"{LOCK_TIMEOUT_SECONDS:g}s by another writer") from None
        try:
            yield
        finally:
            os.close(fd)

    def pass_ran(self, *, trigger: Literal["seed", "live"], slug: str, sessions: int = 0,
                 recipes: int = 0, job_id: str = "", paused: bool = False) -> Event:
        return self.append(PASS_RAN, PassRan(trigger=trigger, slug=slug, sessions=sessions,
                                             recipes=recipes, job_id=job_id, paused=paused))

    def proposal_raised(self, *, recipe_id: str, kind: str, target: str, priority: float,
                        rung: int, draft_path: str | None = None) -> Event:
        """`draft_path` defaults to `.artifacts/mining/<recipe_id>`, where the proposer stages."""
        if draft_path is None:
            draft_path = f".artifacts/mining/{recipe_id}"
        return self.append(PROPOSAL_RAISED, ProposalRaised(
            recipe_id=recipe_id, kind=kind, target=target, priority=priority, rung=rung, draft_path=draft_path))

    def proposal_decided(self, *, recipe_id: str, verdict: Literal["accept", "refine", "reject"],
                         by: Literal["human", "llm"] = "human", flows_green: bool = False,
                         reverted: bool = False, call_id: str | None = None) -> Event:
        return self.append(PROPOSAL_DECIDED, ProposalDecided(
            recipe_id=recipe_id, verdict=verdict, by=by, flows_green=flows_green, reverted=reverted), call_id=call_id)

    # turn numbering

    def max_turn(self) -> int:
        """The highest turn in the file (0 for a missing or empty file)."""
        with self._thread_lock:
            try:
                st = os.stat(self.path)
            except FileNotFoundError:
                return 0
            return self._max_turn(st)

    def _max_turn(self, st: os.stat_result) -> int:
        """Cached when the file is as we last saw it; a file that only grew is scanned from where
        the last scan stopped; anything else (replaced, shrunk, rewritten) is scanned again."""
        cache = self._cache
        same_file = cache is not None and (cache.device, cache.inode) == (st.st_dev, st.st_ino)
        if same_file and st.st_size == cache.size and st.st_mtime_ns == cache.mtime_ns:
            return cache.max_turn
        if same_file and st.st_size > cache.size:
            start, known = cache.scanned_to, cache.max_turn
        else:
            start, known = 0, 0
        if st.st_size == 0:
            tail_max, scanned_to = 0, 0
        else:
            tail_max, scanned_to = _scan_turns(self.path, start)
        best = max(known, tail_max)
        self._cache = _TurnCache(st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, scanned_to, best)
        return best

    # reading

    def header(self) -> SessionHeader | None:
        """Line 1 when it is a valid session header."""
        try:
            with _open_for_reading(self.path) as fh:
                first = next(_raw_lines(fh, 0), None)
        except FileNotFoundError:
            return None
        return _parse_header(first)

    def events(self, kinds: Iterable[str] | str | None = None) -> Iterator[Event]:
        """Stream the events (not the header) in file order, optionally only some kinds.

        Raises TraceCorrupt where kitsoki refuses the file (TraceCorrupt's docstring), at the first
        line it refuses; lines kitsoki accepts that we cannot type (an odd but legal field) are
        counted in `self.last_read.malformed` and skipped. A missing or empty file has no events.
        """
        wanted = None if kinds is None else frozenset((kinds,) if isinstance(kinds, str) else kinds)
        stats = self.last_read = ReadStats()
        try:
            fh = _open_for_reading(self.path)
        except FileNotFoundError:
            return
        check = KitsokiReader(self.path)
        with fh:
            for line in _raw_lines(fh, 0):
                obj = check.line(line)
                if obj is _SKIP:
                    continue
                stats.lines += 1
                if check.count == 1:
                    stats.header = _parse_header(line)
                    continue
                if wanted is not None and obj.get("kind") not in wanted:
                    continue
                event = _parse_event(line, None, stats)
                if event is not None:
                    stats.events += 1
                    yield event

    def pending_proposal_events(self) -> dict[str, tuple[Event, ProposalRaised]]:
        """Raised proposals with no later decision, by recipe_id, in first-raised order.

        Kitsoki's rule (pendingMiningProposals): a raise (re)opens its recipe_id, keeping the newest
        payload; any decision (accept, refine, reject) closes it. A raise whose payload does not fit
        ProposalRaised is skipped and counted (fail closed: a proposal we cannot type is not shown);
        a decision needs only its recipe_id, so a decision is never lost to an odd field.
        """
        pending: dict[str, tuple[Event, ProposalRaised]] = {}
        for event in self.events(kinds=(PROPOSAL_RAISED, PROPOSAL_DECIDED)):
            if event.kind == PROPOSAL_RAISED:
                try:
                    raised = ProposalRaised.model_validate(event.payload)
                except ValidationError:
                    self.last_read.bad_payloads += 1
                    continue
                pending[raised.recipe_id] = (event, raised)
            else:
                recipe_id = event.payload.get("recipe_id")
                if type(recipe_id) is str and recipe_id:
                    pending.pop(recipe_id, None)
                else:
                    self.last_read.bad_payloads += 1
        return pending

    def pending_proposals(self) -> dict[str, ProposalRaised]:
        """recipe_id → the raised payload, for proposals still waiting for a verdict."""
        return {recipe_id: raised for recipe_id, (_, raised) in self.pending_proposal_events().items()}


# ── helpers ───────────────────────────────────────────────────────────────────────────────────


def _payload_body(kind: str, payload: MiningPayload | Mapping[str, Any]) -> dict[str, Any]:
    model = PAYLOAD_MODELS.get(kind)
    if model is not None:
        if isinstance(payload, MiningPayload) and not isinstance(payload, model):
            raise TypeError(f"{kind} takes a {model.__name__} payload, not {type(payload).__name__}")
        if not isinstance(payload, model):
            if not isinstance(payload, Mapping):
                raise TypeError(f"{kind} takes a {model.__name__} or a mapping, not {type(payload).__name__}")
            payload = model.model_validate(dict(payload))
        return _plain_json(payload.to_payload(), sort_keys=False)  # Go struct order
    if not _MINING_KIND.fullmatch(kind):
        raise ValueError(f"refusing to write kind {kind!r}: the miner writes only mining.* events")
    if isinstance(payload, BaseModel):
        payload = payload.model_dump(mode="json")
    if not isinstance(payload, Mapping):
        raise TypeError(f"{kind} takes a mapping payload, not {type(payload).__name__}")
    return _plain_json(payload, sort_keys=True)  # Go marshals a map with sorted keys


def _header_line(written_at: str) -> bytes:
    return go_json({"kind": HEADER_KIND, "schema_version": SCHEMA_VERSION, "written_at": written_at}) + b"\n"


def _parse_header(line: _RawLine | None) -> SessionHeader | None:
    if line is None or not line.complete or line.oversized:
        return None
    try:
        obj = orjson.loads(line.data)
    except orjson.JSONDecodeError:
        return None
    if type(obj) is not dict or obj.get("kind") != HEADER_KIND:
        return None
    try:
        return SessionHeader.model_validate(obj)
    except ValidationError:
        return None


def _parse_event(line: _RawLine, wanted: frozenset[str] | None, stats: ReadStats) -> Event | None:
    if line.oversized:
        stats.malformed += 1
        return None
    try:
        obj = orjson.loads(line.data)
    except orjson.JSONDecodeError:
        if line.complete:
            stats.malformed += 1
        else:
            stats.torn_tail = True
        return None
    if type(obj) is not dict or obj.get("kind") == HEADER_KIND:
        stats.malformed += 1  # not an object, or a second header
        return None
    if wanted is not None and obj.get("kind") not in wanted:
        return None
    for key, zero in (("turn", 0), ("seq", 0), ("ts", "0001-01-01T00:00:00Z")):
        if obj.get(key) is None:  # absent or null: Go's zero value, as kitsoki reads it
            obj[key] = zero
    try:
        return Event.model_validate(obj)
    except ValidationError:
        stats.malformed += 1
        return None


def _open_for_reading(path: Path):
    """A binary file object of the trace: a regular file reached without a link under `.artifacts/`
    (FileNotFoundError when absent; UnsafeFile, naming it, for a FIFO, a folder or a link)."""
    return os.fdopen(statefs.open_file(path, os.O_RDONLY, what="the trace"), "rb")


def _refuse_if_held_by_another_writer(fd: int, path: Path) -> None:
    """Take (until fd closes) the same non-blocking exclusive flock kitsoki's JSONLSink holds for
    a whole session. If a session holds it, its next turn number lives in its memory and would
    collide with ours, so we refuse instead."""
    if fcntl is None:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError as exc:
        raise TraceBusyError(exc.errno, f"trace is held open by another writer (a live kitsoki session?): {path}") from exc
    except OSError:
        pass  # a filesystem without flock: the `.lock` file still serializes our own writers


def _write_all(fd: int, data: bytes) -> None:
    # One write for the whole line is what keeps it whole; the loop only finishes a short write.
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        if written <= 0:
            raise OSError("short write to trace")
        view = view[written:]


def _fsync_directory(directory: Path) -> None:
    """Make a newly created trace's directory entry durable too (POSIX; best effort)."""
    try:
        dir_fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dir_fd)
    except OSError:
        pass
    finally:
        os.close(dir_fd)
