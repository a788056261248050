"""Every method the server serves × every kind of bad params, over the real server's stdio.

Each case sends one message whose params are broken in one way: absent, not an object, deeper than
any LSP message, a field removed, an unknown field added, or one value (any node of the valid params)
replaced by a wrong type, a negative or 2^40 line, a 5,000-character path, a NUL, a lone surrogate.

Pass rule: a request is answered (a result, or a JSON-RPC error other than InternalError with a
message and no traceback); after a notification, and after every case, the server still answers the
next request; no traceback reached stderr; the server's peak memory stayed within 256 MiB of warm-up.
"""

from __future__ import annotations

from typing import Any

import pytest
from conftest import adversarial_cases
from lsp_wire import Served, actionable, check_alive_and_clean, encode, frame

pytestmark = pytest.mark.adversarial("language-server")

DOC = {"uri": "{FILE_URI}"}
POSITION = {"line": "{LINE}", "character": 0}
COMMANDS = ("kitsoki.accept", "kitsoki.refine", "kitsoki.reject", "kitsoki.diff", "kitsoki.showProposals",
            "kitsoki.mineNow", "kitsoki.pause", "kitsoki.resume", "kitsoki.propose", "kitsoki.resolve")

# The valid params of every method we serve; a case breaks one part of them. Verdict-bearing bases
# carry an answer no verdict accepts ("maybe"), so no mutation can apply a proposal by accident.
REQUESTS: dict[str, Any] = {
    "textDocument/hover": {"textDocument": DOC, "position": POSITION},
    "textDocument/codeLens": {"textDocument": DOC},
    "textDocument/codeAction": {"textDocument": DOC, "range": {"start": POSITION, "end": POSITION},
                                "context": {"diagnostics": []}},
    "kitsoki/mineStatus": {"uri": "{WS_URI}"},
    "kitsoki/mineControl": {"action": "scope", "dirs": ["{TRANSCRIPTS}"], "uri": "{WS_URI}"},
    "kitsoki/proposals": {"uri": "{FILE_URI}"},
    "kitsoki/proposal": {"id": "{ID}"},
    "kitsoki/proposalContent": {"id": "{ID}", "uri": "{FILE_URI}"},
    "kitsoki/answerQuestion": {"question_id": "{ID}", "answers": {"{TITLE}": "maybe"}},
    "kitsoki/evolve": {"action": "list", "uri": "{WS_URI}", "transcriptDirs": ["{TRANSCRIPTS}"], "all": False},
    "kitsoki/evolve analyze": {"action": "analyze", "uri": "{WS_URI}", "transcriptDirs": ["{TRANSCRIPTS}"]},
    "kitsoki/runs": {"action": "list", "workdir": "{WORKDIR}", "offset": 0, "limit": 5},
    "kitsoki/runs projects": {"action": "projects", "dirs": ["{TRANSCRIPTS}"], "offset": 0, "limit": 5},
    "kitsoki/runs status": {"action": "status", "workdir": "{WORKDIR}", "run_id": "000000000000"},
    "kitsoki/runs groups": {"action": "groups", "workdir": "{WORKDIR}", "run_id": "000000000000",
                            "budget_bytes": 4096, "round": 1},
}
for _name in COMMANDS:
    REQUESTS[f"workspace/executeCommand {_name}"] = {"command": _name, "arguments": [{"id": "0000dead"}]}

NOTIFICATIONS: dict[str, Any] = {
    "textDocument/didOpen": {"textDocument": {"uri": "{FILE_URI}", "languageId": "yaml", "version": 1,
                                              "text": "x: 1\n"}},
    "textDocument/didChange": {"textDocument": {"uri": "{FILE_URI}", "version": 2},
                               "contentChanges": [{"text": "x: 2\n"}]},
    "textDocument/didSave": {"textDocument": DOC},
    "textDocument/didClose": {"textDocument": DOC},
    "$/cancelRequest": {"id": 5},
    "$/setTrace": {"value": "off"},
    "window/workDoneProgress/cancel": {"token": "t"},
    "workspace/didChangeWorkspaceFolders": {"event": {"added": [], "removed": []}},
    "initialized": {},
}

BAD_VALUES: dict[str, Any] = {
    "minus-5": -5, "2^40": 2 ** 40, "2^64": 2 ** 64, "fraction": 1.5, "null": None, "true": True,
    "empty-string": "", "long-string": "x" * 5000, "long-path": "/" + "a" * 5000, "nul": "a\u0000b",
    "lone-surrogate": "\ud800", "long-name": "/tmp/" + "n" * 300, "dotdot": "../../../etc/passwd", "long-uri": "file:///" + "a" * 5000,
    "nul-uri": "file:///a%00b", "other-scheme": "untitled:Untitled-1", "empty-list": [], "list": [1, "x"],
    "empty-object": {}, "object": {"a": {"b": [1]}},
}

WHOLE_PARAMS: dict[str, Any] = {
    "absent": ..., "null": None, "number": 5, "string": "x", "true": True, "empty-list": [], "list": [1, 2],
    "empty-object": {}, "unknown-key": {"bogus": 1}, "nested-100": "deep:100", "nested-3000": "deep:3000",
    "huge-string": {"k": "x" * (1 << 20)},
}


def _nodes(value: Any, path: tuple = ()) -> list[tuple]:
    """Every node's path in the params (a key or a list index per step), the root excluded."""
    found = []
    if isinstance(value, dict):
        for key, child in value.items():
            found.append((*path, key))
            found += _nodes(child, (*path, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            found.append((*path, index))
            found += _nodes(child, (*path, index))
    return found


def _replace(value: Any, path: tuple, new: Any) -> Any:
    if not path:
        return new
    head, *rest = path
    if isinstance(value, dict):
        copy = dict(value)
        if new is _DROP and not rest:
            copy.pop(head)
        else:
            copy[head] = _replace(value[head], tuple(rest), new)
        return copy
    copy = list(value)
    if new is _DROP and not rest:
        copy.pop(head)
    else:
        copy[head] = _replace(value[head], tuple(rest), new)
    return copy


_DROP = object()


def _cases() -> list:
    cases = []
    for kind, table in (("request", REQUESTS), ("notification", NOTIFICATIONS)):
        for label, base in table.items():
            method = label.split(" ")[0]
            for name, params in WHOLE_PARAMS.items():
                cases.append(pytest.param(kind, method, params, id=f"{label}|params={name}"))
            for path in _nodes(base):
                where = ".".join(map(str, path))
                cases.append(pytest.param(kind, method, _replace(base, path, _DROP), id=f"{label}|{where}=missing"))
                for name, bad in BAD_VALUES.items():
                    cases.append(pytest.param(kind, method, _replace(base, path, bad), id=f"{label}|{where}={name}"))
            for path in [(), *(p for p in _nodes(base) if isinstance(_get(base, p), dict))]:
                where = ".".join(map(str, path)) or "params"
                extra = _replace(base, path, {**_get(base, path), "unexpected": 1})
                cases.append(pytest.param(kind, method, extra, id=f"{label}|{where}+unknown-key"))
    return cases


def _get(value: Any, path: tuple) -> Any:
    for step in path:
        value = value[step]
    return value


def _body(served: Served, msg_id: int | None, method: str, params: Any) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if msg_id is not None:
        message["id"] = msg_id
    if isinstance(params, str) and params.startswith("deep:"):
        depth = int(params.split(":")[1])
        head = encode(message)[:-1]
        return head + b', "params": ' + b'{"a": ' * depth + b"1" + b"}" * depth + b"}"
    if params is not ...:
        message["params"] = served.fill(params)
    return encode(message)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    served = Served(tmp_path_factory.mktemp("lsp-params"))
    yield served
    served.close()


@pytest.mark.parametrize(("kind", "method", "params"), adversarial_cases(_cases(), fast=160))
def test_bad_params_are_answered_and_the_server_keeps_serving(served: Served, kind, method, params):
    """Answered with a result or an actionable error (a notification: the next request is answered);
    no traceback on stderr; server alive; peak memory bounded."""
    server = served.ensure()
    mark = server.stderr_mark()
    if kind == "request":
        msg_id = server.new_id()
        server.write(frame(_body(served, msg_id, method, params)))
        answer = server.answer(msg_id)
        assert answer is not None, f"{method} was not answered"
        problem = actionable(answer)
        assert problem is None, problem
    else:
        server.write(frame(_body(served, None, method, params)))
    check_alive_and_clean(served, server, mark)


RANGE_ENDS = {"end-10^9": 10 ** 9, "end-2^31-1": 2 ** 31 - 1, "end-before-start": 0}


@pytest.mark.parametrize("end", list(RANGE_ENDS.values()), ids=list(RANGE_ENDS))
def test_a_code_action_range_is_compared_never_expanded(served: Served, end):
    """A range ending at line 10^9 is answered at once with the actions of the lines it covers, and
    the server allocates nothing for the lines in between (peak memory bounded)."""
    server = served.ensure()
    mark = server.stderr_mark()
    line = served.values["{LINE}"]
    answer = server.request("textDocument/codeAction", served.fill({
        "textDocument": DOC, "range": {"start": {"line": line if end else 10, "character": 0},
                                       "end": {"line": end, "character": 0}},
        "context": {"diagnostics": []}}), timeout=10)
    assert answer is not None and "result" in answer, answer
    titles = [action["title"] for action in answer["result"]]
    assert bool(titles) == bool(end), titles  # a reversed range covers no line
    check_alive_and_clean(served, server, mark)


@pytest.mark.parametrize(("field", "value"), [("line", -5), ("line", 2 ** 40), ("character", -1),
                                               ("character", 2 ** 40)])
def test_hover_outside_the_file_is_invalid_params_naming_the_field(served: Served, field, value):
    """hover at line -5 or 2^40: InvalidParams whose message names position.<field> and the value."""
    server = served.ensure()
    position = {"line": 0, "character": 0, field: value}
    answer = server.request("textDocument/hover", served.fill({"textDocument": DOC, "position": position}))
    assert answer is not None and answer["error"]["code"] == -32602, answer
    message = answer["error"]["message"]
    assert f"position" in message and field in message and str(value) in message, message
