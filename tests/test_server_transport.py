"""server/transport.py without a client process: frames read from bytes, ids recovered from
messages that cannot be parsed, structuring errors described with the wire's field names, the
client's initializationOptions checked part by part, and one TCP session end to end."""

from __future__ import annotations

import io
import socket
import threading

import orjson
import pytest

from server import transport
from server.protocol import initialization_options
from server.transport import FrameReader, describe, salvage_id, too_deep


def frames(data: bytes) -> list[transport.Frame]:
    reader = FrameReader(io.BufferedReader(io.BytesIO(data)))
    out = []
    while (frame := reader.next()) is not None:
        out.append(frame)
    return out


def body(n: int) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", "id": n, "method": "kitsoki/mineStatus"})


def test_headers_are_case_insensitive_and_lf_endings_are_read():
    data = (b"content-length: %d\r\n\r\n" % len(body(1)) + body(1)
            + b"CONTENT-TYPE: application/vscode-jsonrpc\nContent-Length:%d\n\n" % len(body(2)) + body(2))
    assert [f.body for f in frames(data)] == [body(1), body(2)]


def test_a_body_without_a_header_is_refused_and_the_next_message_kept():
    data = body(1) + b"Content-Length: %d\r\n\r\n" % len(body(2)) + body(2)
    first, second = frames(data)
    assert first.body is None and first.problem == transport.NO_HEADER and salvage_id(first.salvage) == (True, 1)
    assert second.body == body(2)


@pytest.mark.parametrize("value", [b"abc", b"-5", b"1.5", b"", b"1" * 13])
def test_a_length_that_is_not_a_byte_count_is_refused(value):
    [frame, *rest] = frames(b"Content-Length: " + value + b"\r\n\r\n")
    assert frame.body is None and ("is not a byte count" in frame.problem or "without Content-Length" in frame.problem)


def test_an_over_long_header_line_is_skipped_in_bounded_reads():
    data = b"X-Long: " + b"a" * (transport.MAX_HEADER_LINE * 10) + b"\r\n" + b"Content-Length: %d\r\n\r\n" % len(
        body(3)) + body(3)
    assert [f.body for f in frames(data)] == [body(3)]


def test_a_body_over_the_cap_is_skipped_and_its_id_recovered(monkeypatch):
    monkeypatch.setattr(transport, "MAX_BODY_BYTES", 100)
    big = orjson.dumps({"jsonrpc": "2.0", "id": 7, "method": "m", "params": {"pad": "p" * 500}})
    data = b"Content-Length: %d\r\n\r\n" % len(big) + big + b"Content-Length: %d\r\n\r\n" % len(body(8)) + body(8)
    refused, kept = frames(data)
    assert refused.body is None and "limit is 100" in refused.problem and salvage_id(refused.salvage) == (True, 7)
    assert kept.body == body(8)


def test_the_end_of_the_stream_in_the_middle_of_a_frame_is_the_end():
    assert frames(b"Content-Length: 50\r\n\r\n{") == []
    assert [f.body for f in frames(b"Content-Len")] == [None], "a torn header is refused, never read as a body"


@pytest.mark.parametrize(("raw", "found"), [
    (b'{"jsonrpc": "2.0", "id": 5, "params": ' + b"[" * 3000 + b"]" * 3000 + b"}", (True, 5)),
    (b'{"params": {"id": 1, "x": [{"id": 2}]}, "id": "last"}', (True, "last")),
    (b'{"method": "m", "params": {"id": 3}}', (False, None)),
    (b'{"id": true}', (True, None)),
    (b'{"id": [[1]]}', (True, None)),
    (b'{"a": "\\"id\\": 4", "id": 9', (True, 9)),
    (b"garbage", (False, None)),
])
def test_the_id_of_an_unparsable_message_is_recovered_from_its_top_level(raw, found):
    assert salvage_id(raw) == found


def test_nesting_is_measured_without_recursion():
    deep: list = []
    node = deep
    for _ in range(5000):
        node.append([])
        node = node[0]
    assert too_deep(deep) and not too_deep({"a": [{"b": 1}]}) and too_deep({"a": {"b": 1}}, limit=1)


def test_structuring_errors_name_the_field_as_the_client_wrote_it():
    from lsprotocol import types
    from pygls.protocol import default_converter

    converter = default_converter()
    with pytest.raises(Exception) as caught:
        converter.structure({"jsonrpc": "2.0", "id": 1, "method": "textDocument/hover",
                             "params": {"textDocument": {"uri": "file:///x"}, "position": {"line": -5, "character": 0}}},
                            types.HoverRequest)
    assert describe(caught.value) == "params.position: Position.line should be in range [0:2147483647], but was -5"
    with pytest.raises(Exception) as caught:
        converter.structure({"jsonrpc": "2.0", "id": 1, "method": "textDocument/codeLens", "params": {}},
                            types.CodeLensRequest)
    assert describe(caught.value) == "params.textDocument: required field missing"


@pytest.mark.parametrize(("raw", "usable", "problem"), [
    (None, {}, None),
    ({"transcriptDirs": 5, "mining": True}, {"mining": True, "transcriptDirs": []},
     "initializationOptions.transcriptDirs: Input should be a valid list (got 5); ignored"),
    (5, {}, "initializationOptions must be an object"),
    ({"transcriptDirs": ["/ok", "relative", 7]}, {"transcriptDirs": ["/ok"]},
     "initializationOptions.transcriptDirs[1]: 'relative' is not an absolute path; ignored"),
    ({"mining": "yes", "watch": False}, {"mining": None, "watch": False},
     'initializationOptions.mining: Input should be a valid boolean (got "yes"); ignored'),
    ({"transcriptDir": ["/a"]}, {"transcriptDirs": []},
     "initializationOptions.transcriptDir: unknown option (did you mean 'transcriptDirs'?); ignored"),
    ({"transcriptDirs": ["/" + "n" * 300]}, {"transcriptDirs": []}, "a path with a 300-byte name"),
])
def test_initialization_options_are_checked_part_by_part(raw, usable, problem):
    options, problems = initialization_options(raw)
    for key, value in usable.items():
        assert getattr(options, key) == value
    if problem is None:
        assert problems == []
    else:
        assert any(problem in p for p in problems), problems


def test_one_session_over_tcp_reads_the_same_wire(tmp_path):
    from server.lsp import build_server

    port: list[int] = []
    listening = threading.Event()
    code: list[int] = []

    def serve() -> None:
        code.append(transport.serve_tcp(build_server(), "127.0.0.1", 0,
                                        on_listen=lambda p: (port.append(p), listening.set())))

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    assert listening.wait(10)
    with socket.create_connection(("127.0.0.1", port[0]), timeout=20) as conn:
        reader = conn.makefile("rb")

        def send(message: dict, header: bytes = b"Content-Length") -> None:
            data = orjson.dumps(message)
            conn.sendall(header + b": %d\r\n\r\n" % len(data) + data)

        def answer() -> dict:
            while True:
                [frame] = [FrameReader(reader).next()]
                message = orjson.loads(frame.body)
                if "method" not in message:
                    return message

        send({"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"processId": None, "rootUri": None, "capabilities": {}}}, b"content-length")
        assert answer()["result"]["serverInfo"]["name"] == "kitsoki-miner"
        send({"jsonrpc": "2.0", "id": 2, "method": "textDocument/hover", "params": {}})
        assert answer()["error"]["code"] == -32602
        send({"jsonrpc": "2.0", "id": 3, "method": "shutdown"})
        assert answer()["id"] == 3
        send({"jsonrpc": "2.0", "method": "exit"})
        thread.join(20)
    assert code == [0]
