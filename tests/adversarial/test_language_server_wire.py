"""Broken frames and envelopes, byte for byte, over the real server's stdio.

Headers in any case, without a length, with a length that lies or is not a number, lines too long,
bodies sent without a header (glued to the next message), bodies that are not JSON, not UTF-8, not
an object, or JSON-RPC envelopes with a wrong `jsonrpc`, `id`, `method` or `params`.

Pass rule: every request is answered (with its own id when it can be read, else with a null id, as
JSON-RPC says), the stream stays in step (the request after each case is answered, so no message is
lost to a broken one before it), no traceback reaches stderr, and peak memory stays bounded.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from conftest import adversarial_cases
from lsp_wire import NO_ID, Served, actionable, check_alive_and_clean, encode, frame

pytestmark = pytest.mark.adversarial("language-server")

MAX_BODY = 64 * 1024 * 1024  # server/transport.py MAX_BODY_BYTES


def status(msg_id) -> bytes:
    return encode({"jsonrpc": "2.0", "id": msg_id, "method": "kitsoki/mineStatus", "params": {}})


# Each case: (what it sends, for a fresh request id) -> (the bytes, the answers expected in order:
# an id, NO_ID for a null id, with the error code expected or None for a result).
Case = Callable[[int], tuple[bytes, list[tuple[object, int | None]]]]

FRAMING: dict[str, Case] = {
    "lowercase-content-length": lambda i: (frame(status(i), b"content-length"), [(i, None)]),
    "uppercase-content-length": lambda i: (frame(status(i), b"CONTENT-LENGTH"), [(i, None)]),
    "no-space-after-colon": lambda i: (b"Content-Length:%d\r\n\r\n" % len(status(i)) + status(i), [(i, None)]),
    "spaces-and-tabs": lambda i: (b"Content-Length \t: \t%d \t\r\n\r\n" % len(status(i)) + status(i), [(i, None)]),
    "content-type-first": lambda i: (b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n"
                                     + frame(status(i)), [(i, None)]),
    "content-type-after": lambda i: (b"Content-Length: %d\r\nContent-Type: application/vscode-jsonrpc; charset=utf8"
                                     b"\r\n\r\n" % len(status(i)) + status(i), [(i, None)]),
    "unknown-header": lambda i: (b"X-Trace: 1\r\n" + frame(status(i)), [(i, None)]),
    "lf-line-endings": lambda i: (b"Content-Length: %d\n\n" % len(status(i)) + status(i), [(i, None)]),
    "blank-lines-before": lambda i: (b"\r\n\r\n" + frame(status(i)), [(i, None)]),
    "body-without-header": lambda i: (status(i), [(i, -32600)]),
    "garbage-line": lambda i: (b"hello there\r\n", [(NO_ID, -32600)]),
    "header-line-100k": lambda i: (b"X-Long: " + b"a" * 100_000 + b"\r\n" + frame(status(i)), [(i, None)]),
    "body-100k-without-header": lambda i: (status(i)[:-1] + b', "pad": "' + b"p" * 100_000 + b'"}\r\n',
                                           [(i, -32600)]),
    "length-not-a-number": lambda i: (b"Content-Length: abc\r\n\r\n" + status(i), [(NO_ID, -32600), (i, -32600)]),
    "length-negative": lambda i: (b"Content-Length: -5\r\n\r\n" + status(i), [(NO_ID, -32600), (i, -32600)]),
    "length-fraction": lambda i: (b"Content-Length: 1.5\r\n\r\n" + status(i), [(NO_ID, -32600), (i, -32600)]),
    "length-empty": lambda i: (b"Content-Length:\r\n\r\n" + status(i), [(NO_ID, -32600), (i, -32600)]),
    "length-13-digits": lambda i: (b"Content-Length: 1000000000000\r\n\r\n" + status(i),
                                   [(NO_ID, -32600), (i, -32600)]),
    "no-length-header": lambda i: (b"Content-Type: application/vscode-jsonrpc\r\n\r\n" + status(i),
                                   [(NO_ID, -32600), (i, -32600)]),
    "length-shorter-than-body": lambda i: (b"Content-Length: %d\r\n\r\n" % (len(status(i)) - 5) + status(i),
                                           [(i, -32700), (NO_ID, -32600)]),
    "length-zero": lambda i: (b"Content-Length: 0\r\n\r\n", [(NO_ID, -32700)]),
    "length-over-the-cap": lambda i: (frame(status(i)[:-1] + b', "pad": "' + b"p" * MAX_BODY + b'"}'),
                                      [(i, -32600)]),
}

BODIES: dict[str, Case] = {
    "not-json": lambda i: (frame(b"hello"), [(NO_ID, -32700)]),
    "not-utf8": lambda i: (frame(b'{"jsonrpc": "2.0", "id": %d, "method": "kitsoki/\xff"}' % i), [(i, -32700)]),
    "utf8-bom": lambda i: (frame(b"\xef\xbb\xbf" + status(i)), [(i, -32700)]),
    "nan": lambda i: (frame(status(i)[:-2] + b'"x": NaN}}'), [(i, -32700)]),
    "infinity": lambda i: (frame(status(i)[:-2] + b'"x": -Infinity}}'), [(i, -32700)]),
    "1e400": lambda i: (frame(b'{"jsonrpc": "2.0", "id": %d, "method": "kitsoki/mineStatus", "params": '
                              b'{"uri": 1e400}}' % i), [(i, -32700)]),
    "trailing-comma": lambda i: (frame(status(i)[:-1] + b",}"), [(i, -32700)]),
    "trailing-garbage": lambda i: (frame(status(i) + b" xyz"), [(i, -32700)]),
    "lone-surrogate-method": lambda i: (frame(b'{"jsonrpc": "2.0", "id": %d, "method": "\\ud800"}' % i),
                                        [(i, -32700)]),
    "batch": lambda i: (frame(b"[" + status(i) + b"]"), [(NO_ID, -32600)]),
    "number": lambda i: (frame(b"5"), [(NO_ID, -32600)]),
    "string": lambda i: (frame(b'"x"'), [(NO_ID, -32600)]),
    "null": lambda i: (frame(b"null"), [(NO_ID, -32600)]),
    "empty-object": lambda i: (frame(b"{}"), [(NO_ID, -32600)]),
    "id-nested-3000": lambda i: (frame(b'{"jsonrpc": "2.0", "method": "kitsoki/mineStatus", "id": '
                                       + b"[" * 3000 + b"]" * 3000 + b"}"), [(NO_ID, -32602)]),
    "params-nested-3000-id-last": lambda i: (frame(b'{"jsonrpc": "2.0", "method": "kitsoki/proposals", "params": '
                                                   + b'{"a": ' * 3000 + b"1" + b"}" * 3000 + b', "id": %d}' % i),
                                             [(i, -32602)]),
}


def _envelope(message: dict, expect: int | None, reply=True) -> Case:
    def case(i: int):
        filled = {k: (i if v == "{ID}" else v) for k, v in message.items()}
        return frame(encode(filled)), ([(i if "id" in filled and filled["id"] == i else NO_ID, expect)]
                                       if reply else [])
    return case


ENVELOPES: dict[str, Case] = {
    "no-jsonrpc": _envelope({"id": "{ID}", "method": "kitsoki/mineStatus", "params": {}}, -32600),
    "jsonrpc-1.0": _envelope({"jsonrpc": "1.0", "id": "{ID}", "method": "kitsoki/mineStatus"}, -32600),
    "jsonrpc-number": _envelope({"jsonrpc": 2.0, "id": "{ID}", "method": "kitsoki/mineStatus"}, -32600),
    "jsonrpc-null": _envelope({"jsonrpc": None, "id": "{ID}", "method": "kitsoki/mineStatus"}, -32600),
    "id-true": _envelope({"jsonrpc": "2.0", "id": True, "method": "kitsoki/mineStatus"}, -32600),
    "id-fraction": _envelope({"jsonrpc": "2.0", "id": 1.5, "method": "kitsoki/mineStatus"}, -32600),
    "id-object": _envelope({"jsonrpc": "2.0", "id": {}, "method": "kitsoki/mineStatus"}, -32600),
    "id-list": _envelope({"jsonrpc": "2.0", "id": [1], "method": "kitsoki/mineStatus"}, -32600),
    "id-null": _envelope({"jsonrpc": "2.0", "id": None, "method": "kitsoki/mineStatus"}, -32600),
    "id-2^70": _envelope({"jsonrpc": "2.0", "id": 2 ** 70, "method": "kitsoki/mineStatus"}, -32600),
    "no-method": _envelope({"jsonrpc": "2.0", "id": "{ID}"}, -32600),
    "method-number": _envelope({"jsonrpc": "2.0", "id": "{ID}", "method": 5}, -32600),
    "method-empty": _envelope({"jsonrpc": "2.0", "id": "{ID}", "method": ""}, -32600),
    "method-null": _envelope({"jsonrpc": "2.0", "id": "{ID}", "method": None}, -32600),
    "method-unknown": _envelope({"jsonrpc": "2.0", "id": "{ID}", "method": "kitsoki/explode"}, -32601),
    "method-dollar": _envelope({"jsonrpc": "2.0", "id": "{ID}", "method": "$/unknown"}, -32601),
    "method-10k": _envelope({"jsonrpc": "2.0", "id": "{ID}", "method": "m" * 10_000}, -32601),
    "extra-top-level-key": _envelope({"jsonrpc": "2.0", "id": "{ID}", "method": "kitsoki/mineStatus",
                                      "params": {}, "trace": "x"}, None),
    "params-number": _envelope({"jsonrpc": "2.0", "id": "{ID}", "method": "kitsoki/mineStatus", "params": 5},
                               -32602),
    "notification-as-request": _envelope({"jsonrpc": "2.0", "id": "{ID}", "method": "textDocument/didSave",
                                          "params": {"textDocument": {"uri": "file:///x.yaml"}}}, -32600),
    "initialize-again": _envelope({"jsonrpc": "2.0", "id": "{ID}", "method": "initialize",
                                   "params": {"processId": None, "rootUri": None, "capabilities": {}}}, -32600),
    "request-as-notification": _envelope({"jsonrpc": "2.0", "method": "kitsoki/proposals", "params": {}}, None,
                                         reply=False),
    "unknown-notification": _envelope({"jsonrpc": "2.0", "method": "$/kitsoki/unknown"}, None, reply=False),
    "response-to-nothing": _envelope({"jsonrpc": "2.0", "id": "not-ours", "result": 1}, None, reply=False),
    "response-with-both": _envelope({"jsonrpc": "2.0", "id": "not-ours", "result": 1,
                                     "error": {"code": 1, "message": "x"}}, None, reply=False),
    "error-response-broken": _envelope({"jsonrpc": "2.0", "id": "not-ours", "error": 5}, None, reply=False),
    "initialized-again": _envelope({"jsonrpc": "2.0", "method": "initialized", "params": {}}, None, reply=False),
}

CASES = [pytest.param(case, id=f"{group}|{name}")
         for group, table in (("framing", FRAMING), ("body", BODIES), ("envelope", ENVELOPES))
         for name, case in table.items()]


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    served = Served(tmp_path_factory.mktemp("lsp-wire"))
    yield served
    served.close()


@pytest.mark.parametrize("case", adversarial_cases(CASES, fast=30))
def test_broken_frames_are_answered_and_the_stream_stays_in_step(served: Served, case: Case):
    """Each expected answer arrives (its id, or null), with the expected code and a message a
    person can act on, and the request written right after the broken bytes is answered too (a
    frame without a newline is only known to be over when the next one starts); no traceback;
    memory bounded."""
    server = served.ensure()
    mark = server.stderr_mark()
    msg_id, after = server.new_id(), server.new_id()
    data, expected = case(msg_id)
    server.write(data + frame(status(after)))
    for want_id, want_code in [*expected, (after, None)]:
        answer = server.answer(want_id)
        assert answer is not None, f"no answer with id {'null' if want_id is NO_ID else want_id}"
        if want_code is None:
            assert "result" in answer, answer
        else:
            assert answer.get("error", {}).get("code") == want_code, answer
        problem = actionable(answer)
        assert problem is None, problem
    check_alive_and_clean(served, server, mark)
    assert len(server.wait_served()) == 1, "still one served workspace (initialized again starts nothing)"


def test_a_lowercase_header_loses_no_message_after_it(served: Served):
    """`content-length` in lower case, then a normal request at once: both answered, in order."""
    server = served.ensure()
    first, second = server.new_id(), server.new_id()
    server.write(frame(status(first), b"content-length") + frame(status(second)))
    assert server.answer(first) is not None and server.answer(second) is not None


def test_requests_pipelined_without_waiting_are_all_answered(served: Served):
    """200 requests written in one go, some broken: every one gets its own answer."""
    server = served.ensure()
    ids = [server.new_id() for _ in range(200)]
    data = b"".join(frame(status(i) if n % 3 else encode({"jsonrpc": "2.0", "id": i, "method": "kitsoki/proposal",
                                                           "params": {"id": 5}}))
                    for n, i in enumerate(ids))
    server.write(data)
    answers = {i: server.answer(i) for i in ids}
    assert all(answer is not None for answer in answers.values()), [i for i, a in answers.items() if a is None]
    assert sum("error" in a for a in answers.values()) == len(ids[::3])


def test_error_messages_name_the_field_in_the_wire_spelling(served: Served):
    """`codeLens {}` is InvalidParams naming params.textDocument (camelCase, as the client wrote it)."""
    server = served.ensure()
    answer = server.request("textDocument/codeLens", {})
    assert answer["error"]["code"] == -32602
    assert answer["error"]["message"] == "textDocument/codeLens: params.textDocument: required field missing"
    answer = server.request("workspace/executeCommand", {"command": "kitsoki.accept", "arguments": 5})
    assert answer["error"]["code"] == -32602 and "params.arguments" in answer["error"]["message"]
    answer = server.request("kitsoki/proposals")
    assert "result" in answer, "kitsoki/* without params is the same as {}"
    answer = server.request("kitsoki/proposal")
    assert answer["error"]["code"] == -32602 and "id: Field required" in answer["error"]["message"]
    json.dumps(answer)
