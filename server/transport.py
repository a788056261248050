"""The wire: JSON-RPC frames in, every request answered, nothing allocated beyond the input.

pygls 2.1.1 reads and dispatches messages in `pygls/io_.py:run_async` and
`pygls/protocol/json_rpc.py`. What it cannot do, and what this module does instead:

- Headers: it matches exactly `Content-Length: N\\r\\n`, so a lowercase `content-length` is not seen
  and the body is then read as header lines, swallowing the next message's header with it. Here
  header names are case-insensitive (as in HTTP), lines are bounded, and a body sent without a
  header is answered, not merged into the next message.
- Structuring happens inside `json.loads`' object hook, in the read loop: a message that does not
  structure (no `params`, an extra top-level key, no `"jsonrpc"`, a position at line -5 or 2^40,
  `codeLens {}`, `executeCommand` with `arguments: 5`) raises there and is never answered. Here the
  envelope is checked first and a structuring error becomes InvalidParams naming the field.
- No bounds: `json.loads` of params nested 3,000 deep raises RecursionError (unanswered), and any
  Content-Length is read into memory. Here bodies are capped (MAX_BODY_BYTES; larger ones are
  skipped in chunks and refused), nesting is capped (MAX_DEPTH), and the id of a message that
  cannot be parsed is recovered from its bytes so the refusal reaches the right request.
- Lifecycle: after `shutdown` every message but `exit` is dropped without an answer; LSP says
  requests then get InvalidRequest, and requests before `initialize` get ServerNotInitialized.
- Refusals: an InvalidParams is logged with a traceback on stderr and echoed to the client as an
  error log message. Here a deliberate JSON-RPC error from a handler is answered quietly (one log
  line); only an unexpected exception (a bug) keeps its traceback.

Blocking reads run on one daemon thread (a pending read never holds up exit); each frame is handed
to the event loop, which handles it before the next one is read, so a fast client cannot queue
unbounded input.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import re
import socket
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from contextvars import ContextVar
from typing import Any, BinaryIO

import cattrs
import orjson
from lsprotocol.types import EXIT, INITIALIZE, INITIALIZED, SHUTDOWN, ResponseErrorMessage
from pygls.exceptions import (
    JsonRpcException,
    JsonRpcInternalError,
    JsonRpcInvalidParams,
    JsonRpcInvalidRequest,
    JsonRpcMethodNotFound,
    JsonRpcParseError,
    JsonRpcServerNotInitialized,
)
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.json_rpc import JsonRPCNotification, JsonRPCRequestMessage, JsonRPCResponseMessage

from server.positions import speed_up

log = logging.getLogger("kitsoki_miner.transport")

MAX_HEADER_LINE = 8 * 1024
MAX_BODY_BYTES = 64 * 1024 * 1024
"""The largest message read into memory (a didOpen of a 64 MiB file is not a kitsoki file)."""
MAX_DEPTH = 64
"""Nesting levels of a whole message (the envelope is level 1); LSP's deepest params use about 8."""
SALVAGE_BYTES = 1 << 20
"""How much of an unparsable body is scanned for its id."""
SKIP_CHUNK = 1 << 16
ENVELOPE = ("jsonrpc", "id", "method", "params")
MsgId = int | str
CURRENT_REQUEST: ContextVar[MsgId | None] = ContextVar("kitsoki_current_request", default=None)
"""The id of the request a handler (and every task it starts) answers."""


# -- frames ---------------------------------------------------------------------------------------------


@dataclass
class Frame:
    """One message from the stream: its body, or why it was refused (with what is left of it)."""

    body: bytes | None
    problem: str | None = None
    salvage: bytes = b""


_HEADER = re.compile(rb"^([!#$%&'*+.^_`|~0-9A-Za-z-]+)[ \t]*:[ \t]*(.*?)[ \t]*$")
_CONTENT_LENGTH = re.compile(rb"content-length[ \t]*:", re.IGNORECASE)
NO_HEADER = "a message body without a Content-Length header"


class FrameReader:
    """Frames from a blocking binary stream (stdin, a socket file)."""

    def __init__(self, stream: BinaryIO) -> None:
        self.stream = stream
        self._early: list[Frame] = []

    def next(self) -> Frame | None:
        """The next frame; None at the end of the stream."""
        if self._early:
            return self._early.pop(0)
        return self._read()

    def _read(self) -> Frame | None:
        stream = self.stream
        length: int | None = None
        length_problem: str | None = None
        seen = False
        while True:
            line = stream.readline(MAX_HEADER_LINE + 1)
            if not line:
                return None
            if len(line) > MAX_HEADER_LINE and not line.endswith(b"\n"):
                head = line[:SALVAGE_BYTES]
                while line and not line.endswith(b"\n"):  # skip the rest of the line, in bounded reads
                    line = stream.readline(SKIP_CHUNK)
                if head.lstrip().startswith((b"{", b"[")):
                    return Frame(None, NO_HEADER, head)
                log.warning("skipped a header line longer than %d bytes", MAX_HEADER_LINE)
                seen = True
                continue
            text = line.rstrip(b"\r\n")
            if not text.strip():
                if seen:
                    break
                continue  # a stray blank line between messages
            seen = True
            match = _HEADER.match(text)
            if match is None:
                # A body sent without a header, perhaps glued to the next message's header:
                # refuse the body, keep the header.
                glued = _CONTENT_LENGTH.search(text)
                garbage = text[:glued.start()] if glued else text
                match = _HEADER.match(text[glued.start():]) if glued else None
                if garbage.strip():
                    if match is None:
                        return Frame(None, NO_HEADER, garbage)
                    self._early.append(Frame(None, NO_HEADER, garbage))
                if match is None:
                    continue
            name, value = match.group(1).lower(), match.group(2)
            if name == b"content-length":
                if value.isdigit() and len(value) <= 12:
                    length, length_problem = int(value), None
                else:
                    length = None
                    length_problem = f"Content-Length {value[:40].decode('latin-1')!r} is not a byte count"
            # Content-Type: LSP allows only utf-8; the body is decoded as UTF-8 whatever it says.
        if length is None:
            frame = Frame(None, length_problem or "a message header without Content-Length")
        elif length > MAX_BODY_BYTES:
            head = stream.read(min(length, SALVAGE_BYTES))
            left = length - len(head)
            while left > 0:  # skipped in bounded reads: the stream stays in step
                chunk = stream.read(min(left, SKIP_CHUNK))
                if not chunk:
                    return None
                left -= len(chunk)
            frame = Frame(None, f"a message of {length} bytes; the limit is {MAX_BODY_BYTES}", head)
        else:
            body = stream.read(length)
            if len(body) < length:
                return None
            frame = Frame(body)
        if self._early:
            self._early.append(frame)
            return self._early.pop(0)
        return frame


# -- what can be said about a message that cannot be read -------------------------------------------


_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"|[{}\[\]:,]|[^\s{}\[\]:,"]+', re.S)


def salvage_id(raw: bytes) -> tuple[bool, MsgId | None]:
    """Whether a message too deep, too large or too broken to parse has a top-level "id", and the
    id a reply can carry (None when it is not an integer or a string). A linear scan of its
    tokens, never a parse."""
    depth, key, state = 0, None, "key"
    for match in _TOKEN.finditer(raw[:SALVAGE_BYTES]):
        token = match.group()
        first = token[:1]
        if first in b"{[":
            if depth == 1 and state == "value" and key == b'"id"':
                return True, None
            depth += 1
            continue
        if first in b"}]":
            depth -= 1
            if depth == 1:
                state = "comma"
            continue
        if depth != 1:
            continue
        if first == b":":
            state = "value"
        elif first == b",":
            state, key = "key", None
        elif state == "key":
            key, state = token, "colon"
        elif state == "value":
            if key == b'"id"':
                try:
                    value = orjson.loads(token)
                except orjson.JSONDecodeError:
                    return True, None
                usable = isinstance(value, (int, str)) and not isinstance(value, bool)
                return True, value if usable else None
            state = "comma"
    return False, None


def too_deep(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether a parsed message nests more than `limit` levels (iterative: no recursion to exhaust)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        children = item.values() if isinstance(item, dict) else item
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _format(exc: BaseException, expected: type | None) -> str:
    if isinstance(exc, KeyError):
        return "required field missing"
    if isinstance(exc, (ValueError, TypeError)) and str(exc) and not isinstance(exc, cattrs.BaseValidationError):
        return str(exc).rstrip(".")
    return cattrs.v.format_exception(exc, expected)


def describe(exc: BaseException, limit: int = 5) -> str:
    """A structuring error as `field: what is wrong` items, with the wire's camelCase names."""
    items = []
    for text in cattrs.transform_error(exc, path="$", format_exception=_format)[:limit]:
        what, _, where = text.rpartition(" @ ")
        where = where.removeprefix("$").removeprefix(".") or "message"
        where = ".".join(_camel(part) for part in where.split("."))
        items.append(f"{where}: {what[:200]}")
    return "; ".join(items) or str(exc)[:200]


# -- the protocol side -------------------------------------------------------------------------------------


class GuardedProtocol(LanguageServerProtocol):
    """LanguageServerProtocol that takes raw frames (see the module docstring): it checks each
    envelope, structures it where a failure can still be answered, and keeps the lifecycle."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._critical: set[MsgId] = set()
        self._cancels_seen: dict[MsgId, None] = {}
        self.initialize_received = False
        self.initialized_received = False
        self.shutdown_received = False

    # -- one frame ----------------------------------------------------------------------------------

    def receive(self, frame: Frame) -> None:
        if frame.body is None:
            log.warning("refused a frame: %s", frame.problem)
            self.refuse(salvage_id(frame.salvage)[1], JsonRpcInvalidRequest(f"{frame.problem}"))
            return
        try:
            data = orjson.loads(frame.body)
        except orjson.JSONDecodeError as exc:
            has_id, msg_id = salvage_id(frame.body)
            if "depth" in str(exc):  # valid JSON, just deeper than anything we read
                self.refuse(msg_id, JsonRpcInvalidParams(f"the message nests deeper than {MAX_DEPTH} levels"),
                            notification=not has_id)
            else:  # JSON-RPC: a parse error is answered, with a null id when none can be read
                self.refuse(msg_id, JsonRpcParseError(f"the message is not valid JSON in UTF-8: {exc}"))
            return
        self.receive_data(data)

    def receive_data(self, data: Any) -> None:
        envelope = self._envelope(data)
        if envelope is None:
            return
        method = envelope.get("method")
        msg_id = envelope.get("id")
        is_request = method is not None and "id" in envelope
        if method is None:
            self._receive_response(envelope)
            return
        if not self._admitted(method, msg_id, is_request):
            return
        if is_request and method not in self.fm.builtin_features and method not in self.fm.features:
            self.refuse(msg_id, JsonRpcMethodNotFound(f"unknown method {method!r}"))
            return
        try:
            message = self._converter.structure(envelope, self._message_type(method, is_request))
        except Exception as exc:  # noqa: BLE001 - cattrs raises validation errors and plain TypeErrors
            problem = f"{method}: {describe(exc)}"
            if is_request:
                self.refuse(msg_id, JsonRpcInvalidParams(problem))
            else:
                log.warning("dropped a %s notification: %s", method, problem)
            return
        if is_request and not hasattr(message, "id"):
            self.refuse(msg_id, JsonRpcInvalidRequest(f"{method} is a notification: send it without an id"))
            return
        if method == INITIALIZE:
            self.initialize_received = True
        elif method == SHUTDOWN:
            self.shutdown_received = True
        token = CURRENT_REQUEST.set(msg_id if is_request else None)  # a handler's tasks see their request
        try:
            self.handle_message(message)
        except Exception as exc:  # noqa: BLE001 - pygls catches handler errors; this is a dispatch failure
            log.exception("could not dispatch %s", method)
            if is_request:
                self.refuse(msg_id, JsonRpcInternalError(f"{method}: {type(exc).__name__}: {exc}"))
        finally:
            CURRENT_REQUEST.reset(token)
        if method == INITIALIZE and getattr(self, "_workspace", None) is not None:
            speed_up(self._workspace)  # positions in huge lines: never seconds on the event loop

    def _envelope(self, data: Any) -> dict | None:
        """The message's JSON-RPC members, checked; None (after refusing it) when it is not one."""
        if not isinstance(data, dict):
            kind = "an array (LSP has no batches)" if isinstance(data, list) else type(data).__name__
            self.refuse(None, JsonRpcInvalidRequest(f"a message must be a JSON object, got {kind}"))
            return None
        has_id = "id" in data
        msg_id = data.get("id")
        id_ok = isinstance(msg_id, (int, str)) and not isinstance(msg_id, bool)
        method = data.get("method")
        notification = "method" in data and not has_id
        reply_to = msg_id if id_ok else None
        if data.get("jsonrpc") != "2.0":
            self.refuse(reply_to, JsonRpcInvalidRequest(
                f'"jsonrpc" must be "2.0", got {_short(data.get("jsonrpc"))}'), notification=notification)
            return None
        if has_id and not id_ok:
            self.refuse(None, JsonRpcInvalidRequest(f'"id" must be an integer or a string, got {_short(msg_id)}'),
                        notification="method" not in data)
            return None
        if too_deep(data):
            self.refuse(reply_to, JsonRpcInvalidParams(
                f"{method if isinstance(method, str) else 'the message'}: nests deeper than {MAX_DEPTH} levels"),
                notification=notification)
            return None
        extra = sorted(set(data) - {*ENVELOPE, "result", "error"})
        if extra:
            log.info("ignored unknown top-level member(s) %s of a message", ", ".join(map(repr, extra[:5])))
        if "method" in data:
            if not isinstance(method, str) or not method:
                self.refuse(reply_to, JsonRpcInvalidRequest(f'"method" must be a non-empty string, got {_short(method)}'),
                            notification=notification)
                return None
            params = data.get("params")
            if params is not None and not isinstance(params, (dict, list)):
                self.refuse(reply_to, JsonRpcInvalidParams(
                    f"{method}: params must be an object or an array, got {_short(params)}"), notification=notification)
                return None
            envelope = {"jsonrpc": "2.0", "method": method, "params": params}
            if has_id:
                envelope["id"] = msg_id
            return envelope
        if not has_id:
            log.warning("dropped a message that is neither a request, a notification nor a response")
            return None
        if "result" not in data and "error" not in data:
            if msg_id in self._request_futures:  # an answer to us that says nothing
                self._fail_pending(msg_id, 'the client answered without a "result" or an "error"')
            else:
                self.refuse(msg_id, JsonRpcInvalidRequest(
                    'a message with an id needs a "method" (a request) or a "result" or an "error" (a response)'))
            return None
        if "result" in data and "error" in data:
            self._fail_pending(msg_id, 'the client answered with both a "result" and an "error"')
            return None
        if "error" in data:
            return {"jsonrpc": "2.0", "id": msg_id, "error": data["error"]}
        return {"jsonrpc": "2.0", "id": msg_id, "result": data["result"]}

    def _admitted(self, method: str, msg_id: Any, is_request: bool) -> bool:
        """LSP's lifecycle: nothing before initialize, only exit after shutdown."""
        if method == EXIT:
            return True
        if self.shutdown_received:
            if is_request:
                self.refuse(msg_id, JsonRpcInvalidRequest(
                    f"{method}: the server is shutting down (shutdown was received); only exit is accepted"))
            else:
                log.info("dropped %s after shutdown", method)
            return False
        if method == INITIALIZED:
            if self.initialized_received or not self.initialize_received:
                log.info("dropped an initialized notification %s", "sent twice" if self.initialized_received
                         else "sent before initialize")
                return False
            self.initialized_received = True
            return True
        if method == INITIALIZE and self.initialize_received:
            self.refuse(msg_id, JsonRpcInvalidRequest("initialize was already received; send it once per session"))
            return False
        if not self.initialize_received and method != INITIALIZE:
            if is_request:
                self.refuse(msg_id, JsonRpcServerNotInitialized(
                    f"{method}: the server is not initialized yet; send initialize first"))
            else:
                log.info("dropped %s before initialize", method)
            return False
        return True

    def _message_type(self, method: str, is_request: bool) -> type:
        return self.get_message_type(method) or (JsonRPCRequestMessage if is_request else JsonRPCNotification)

    def _receive_response(self, envelope: dict) -> None:
        msg_id = envelope["id"]
        try:
            if "error" in envelope:
                message = self._converter.structure(envelope, ResponseErrorMessage)
            else:
                message = self._converter.structure(
                    envelope, self._result_types.pop(msg_id, None) or JsonRPCResponseMessage)
        except Exception as exc:  # noqa: BLE001
            self._fail_pending(msg_id, f"the client's response does not read: {describe(exc)}")
            return
        self.handle_message(message)

    def _fail_pending(self, msg_id: Any, problem: str) -> None:
        """A broken answer to one of our requests: whoever awaits it gets an error, not a hang."""
        log.warning("response %s: %s", _short(msg_id), problem)
        future = self._request_futures.pop(msg_id, None)
        self._result_types.pop(msg_id, None)
        if future is not None and not future.done():
            future.set_exception(JsonRpcInternalError(problem))

    def _run_generator(self, future, *, gen, result_future):
        # A step of a generator handler (initialize, initialized, shutdown, executeCommand) whose
        # awaited handler was cancelled, as at the end of the loop: pygls calls .result() on it and
        # the CancelledError escapes into asyncio's "Exception in callback" traceback.
        if future is not None and future.cancelled():
            gen.close()
            if not result_future.done():
                result_future.cancel()
            return
        super()._run_generator(future, gen=gen, result_future=result_future)

    def _handle_cancel_notification(self, msg_id: Any) -> None:
        # lsprotocol does not check the union `int | str`: a list or an object arrives as it is.
        if not isinstance(msg_id, (int, str)) or isinstance(msg_id, bool):
            log.warning("dropped a $/cancelRequest whose id is %s, not an integer or a string", _short(msg_id))
            return
        if msg_id in self._critical:  # begun and not to be stopped half way: it answers what it did
            self._cancels_seen[msg_id] = None
            log.info("cancel of %r came after its work began; it runs to its end and says so", msg_id)
            return
        if msg_id in self._request_futures:  # its handler may not have begun its work: it must not now
            self._cancels_seen[msg_id] = None
            while len(self._cancels_seen) > 1024:
                self._cancels_seen.pop(next(iter(self._cancels_seen)))
        super()._handle_cancel_notification(msg_id)

    # -- work a cancel must not cut in two -----------------------------------------------------------

    def enter_critical(self) -> bool:
        """Called by a handler (on the event loop) just before work that cannot be stopped half way
        (an accept). False when its request was already cancelled: the client was told nothing
        happened, so nothing may. From then on a cancel no longer cancels it (leave_critical says
        whether one came)."""
        msg_id = CURRENT_REQUEST.get()
        if msg_id is None:
            return True
        if msg_id in self._cancels_seen:
            self._cancels_seen.pop(msg_id, None)
            return False
        self._critical.add(msg_id)
        return True

    def leave_critical(self) -> bool:
        """End of the work enter_critical began; True when a cancel arrived during it."""
        msg_id = CURRENT_REQUEST.get()
        self._critical.discard(msg_id)
        return msg_id is not None and self._cancels_seen.pop(msg_id, 0) is None

    # -- answers -------------------------------------------------------------------------------------

    def refuse(self, msg_id: MsgId | None, error: JsonRpcException, notification: bool = False) -> None:
        """Answer a request with an error (id null when its id cannot be known, as JSON-RPC says);
        a notification is only logged."""
        if notification:
            log.warning("dropped a notification: %s", error.message)
            return
        log.info("refused %r: %s", msg_id, error.message)
        # A plain dict: lsprotocol's ResponseErrorMessage would drop an `"id": null`.
        self._send_data({"jsonrpc": "2.0", "id": msg_id, "error": {"code": error.code, "message": error.message}})

    def _send_handler_result(self, future, *, msg_id):
        # A JSON-RPC error raised on purpose (bad params, an unknown id, a busy workspace) is an
        # answer, not a server fault: sent with one log line, no traceback, no error pop-up.
        if not future.cancelled():
            exc = future.exception()
            if isinstance(exc, JsonRpcException):
                self._request_futures.pop(msg_id, None)
                log.info("answered %r with error %d: %s", msg_id, exc.code, exc.message)
                self._send_response(msg_id, error=exc.to_response_error())
                return
        super()._send_handler_result(future, msg_id=msg_id)


def _short(value: Any) -> str:
    try:
        text = orjson.dumps(value).decode()
    except TypeError:
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


# -- reading off the event loop ----------------------------------------------------------------------------


class _Reads:
    """Runs blocking reads on one daemon thread, one at a time, for the event loop."""

    def __init__(self, reader: FrameReader) -> None:
        self.reader = reader
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        threading.Thread(target=self._run, name="kitsoki-read", daemon=True).start()

    def _run(self) -> None:
        while True:
            loop, future = self._jobs.get()
            try:
                result, error = self.reader.next(), None
            except BaseException as exc:  # noqa: BLE001 - handed to the loop
                result, error = None, exc
            try:
                loop.call_soon_threadsafe(_settle, future, result, error)
            except RuntimeError:  # the loop closed: the server is gone
                return

    def next(self) -> asyncio.Future:
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        self._jobs.put((loop, future))
        return future


def _settle(future: asyncio.Future, result: Any, error: BaseException | None) -> None:
    if future.cancelled():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)


async def pump(protocol: GuardedProtocol, reader: FrameReader, stop: threading.Event) -> None:
    """Read frames until the stream ends (or `exit` ends the process)."""
    reads = _Reads(reader)
    while not stop.is_set():
        try:
            frame = await reads.next()
        except OSError as exc:
            log.warning("the input stream failed: %s", exc)
            return
        if frame is None:
            return
        protocol.receive(frame)


class GuardedWriter:
    """The output stream for pygls. Once it is closed (exit) or broken (the client left), writes
    are dropped: a notification a worker thread sends at exit must neither raise into the event
    loop nor, as pygls does with a failed write, report the failure by writing again."""

    def __init__(self, stream: BinaryIO) -> None:
        self._stream = stream
        self._lock = threading.Lock()
        self.closed = False

    def write(self, data: bytes) -> None:
        with self._lock:
            if self.closed:
                return
            try:
                self._stream.write(data)
                self._stream.flush()
            except (OSError, ValueError) as exc:
                self.closed = True
                log.info("the client's stream is closed (%s); output from now on is dropped", exc)

    def close(self) -> None:
        with self._lock:
            self.closed = True
            try:
                self._stream.close()
            except (OSError, ValueError):
                pass


def _run(server, reader: FrameReader, writer) -> int:
    """Serve one stream to its end; the exit code LSP asks for (0 after shutdown, else 1)."""
    server._stop_event = stop = threading.Event()
    server.protocol.set_writer(writer)
    code = 0
    try:
        asyncio.run(pump(server.protocol, reader, stop))
    except BrokenPipeError:
        log.error("the client closed the connection")
    except SystemExit as exc:  # `exit`: pygls ends the process from its handler
        code = exc.code if isinstance(exc.code, int) else 0
    except KeyboardInterrupt:
        pass
    finally:
        server.shutdown()
    return code


def serve_stdio(server, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None) -> int:
    return _run(server, FrameReader(stdin or sys.stdin.buffer), GuardedWriter(stdout or sys.stdout.buffer))


def serve_tcp(server, host: str, port: int, on_listen: Callable[[int], None] | None = None) -> int:
    """One client over TCP (as pygls' start_tcp: the server ends when that connection does)."""
    with socket.create_server((host, port)) as listener:
        log.info("listening on %s:%d", host, listener.getsockname()[1])
        if on_listen is not None:
            on_listen(listener.getsockname()[1])
        conn, _ = listener.accept()
    with conn, conn.makefile("rb") as rfile, conn.makefile("wb") as wfile:
        return _run(server, FrameReader(rfile), GuardedWriter(wfile))
