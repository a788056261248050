"""Typed records: what a reader decodes from a Claude Code line, naming only the fields it reads.

msgspec decodes a line straight into these structs and skips every other key without building it
(half the bytes are tool output, two lines in three are progress). Decoding never fails on a value
of an unexpected type: every field is `Any`, raw, or a union that takes every JSON kind, so a record
whose `message` is a string decodes as well as one whose `message` is an object, and the reader
checks types exactly as it did on dicts.

Sets: `Count*` for the counts-only path (`sessions`: the text of a tool result is kept raw, only its
first bytes are looked at), the full set for readers that build turns, and `Step*` for mining's steps
(core/transcripts/steps.py: tool results raw, of a tool input only the keys mining reads). A struct
with `Raw` fields has a twin with them typed `Any` (`*Loose`), for lines msgspec does not take but
orjson does (nesting msgspec's recursion limit refuses; core/transcripts/lines.py): orjson's dict is
converted to the twin, which has the same attributes, and readers take a raw value or a decoded one
alike.
"""

# no `from __future__ import annotations`: msgspec reads these annotations as objects (some are local)

from typing import Any, Union

import msgspec
from msgspec import Raw, Struct


def _either(struct):
    """A field holding `struct` when it is a JSON object, and any other JSON value as it is."""
    return Union[struct, str, int, float, bool, None, list]


def _list_of(struct):
    """A field holding a list whose objects are `struct`, or any other JSON value as it is."""
    return Union[list[_either(struct)], dict, str, int, float, bool, None]


def _pair(make):
    """The struct family `make(raw_type)` built twice: with Raw fields, and with them as Any."""
    return make(Raw), make(Any)


# -- counts-only (sessions) -----------------------------------------------------------------------

def _count_types(raw):
    class CountBlock(Struct, gc=False):
        type: Any = None
        text: Any = None
        id: Any = None
        name: Any = None
        tool_use_id: Any = None
        content: raw = None

    class CountMessage(Struct, gc=False):
        id: Any = None
        content: _list_of(CountBlock) = None

    class CountToolResult(Struct, gc=False):
        pass  # only "is it the string 'User rejected tool use'" is asked of it

    class CountLine(Struct, gc=False):
        type: Any = None
        uuid: Any = None
        timestamp: Any = None
        sessionId: Any = None
        version: Any = None
        cwd: Any = None
        gitBranch: Any = None
        agentId: Any = None
        entrypoint: Any = None
        promptSource: Any = None
        origin: Any = None
        isSidechain: Any = None
        isMeta: Any = None
        isCompactSummary: Any = None
        message: _either(CountMessage) = None
        toolUseResult: _either(CountToolResult) = None
        aiTitle: Any = None
        customTitle: Any = None
        title: Any = None
        summary: Any = None
        leafUuid: Any = None

    return CountLine, CountMessage, CountBlock


(CountLine, CountMessage, CountBlock), (CountLineLoose, CountMessageLoose, CountBlockLoose) = _pair(_count_types)


# -- full reader (turns, tool calls) --------------------------------------------------------------

def _full_types(result_content):  # one family: the full reader decodes a tool result's text whole
    class Block(Struct, gc=False):
        type: Any = None
        text: Any = None
        id: Any = None
        name: Any = None
        input: Any = None
        tool_use_id: Any = None
        content: result_content = None
        is_error: Any = None

    class Message(Struct, gc=False):
        id: Any = None
        model: Any = None
        content: _list_of(Block) = None

    class ToolUseResult(Struct, gc=False):
        interrupted: Any = None
        agentId: Any = None

    class ProgressData(Struct, gc=False):
        type: Any = None
        agentId: Any = None

    class Line(Struct, gc=False):
        type: Any = None
        uuid: Any = None
        parentUuid: Any = None
        logicalParentUuid: Any = None
        timestamp: Any = None
        sessionId: Any = None
        version: Any = None
        cwd: Any = None
        gitBranch: Any = None
        agentId: Any = None
        entrypoint: Any = None
        promptSource: Any = None
        origin: Any = None
        isSidechain: Any = None
        isMeta: Any = None
        isCompactSummary: Any = None
        isApiErrorMessage: Any = None
        subtype: Any = None
        content: Any = None
        message: _either(Message) = None
        toolUseResult: _either(ToolUseResult) = None
        aiTitle: Any = None
        customTitle: Any = None
        title: Any = None
        summary: Any = None
        leafUuid: Any = None
        data: _either(ProgressData) = None
        parentToolUseID: Any = None
        toolUseID: Any = None

    return Line, Message, Block, ToolUseResult, ProgressData


Line, Message, Block, ToolUseResult, ProgressData = _full_types(Any)

# -- steps (mining: core/transcripts/steps.py) ----------------------------------------------------

TOOL_INPUT_KEYS = ("command", "cmd", "file_path", "path", "notebook_path", "pattern", "query", "url", "skill",
                   "prompt", "name", "subagent_type")
"""The keys of a tool call's input that mining reads (an action's signature and its argument,
core/mining/signatures.py and episodes.py; tests/test_steps.py checks they read no other). The steps
reader decodes only these: a Write's content or an Edit's strings are skipped, never built."""

StepInput = msgspec.defstruct("StepInput", [(key, Any, None) for key in TOOL_INPUT_KEYS], gc=False)


def _step_types(result_content):
    class StepBlock(Struct, gc=False):
        type: Any = None
        text: Any = None
        id: Any = None
        name: Any = None
        input: _either(StepInput) = None
        tool_use_id: Any = None
        content: result_content = None
        is_error: Any = None

    class StepMessage(Struct, gc=False):
        id: Any = None
        content: _list_of(StepBlock) = None

    class StepToolResult(Struct, gc=False):
        interrupted: Any = None

    class StepLine(Struct, gc=False):
        type: Any = None
        uuid: Any = None
        parentUuid: Any = None
        logicalParentUuid: Any = None
        timestamp: Any = None
        sessionId: Any = None
        version: Any = None
        cwd: Any = None
        gitBranch: Any = None
        agentId: Any = None
        entrypoint: Any = None
        promptSource: Any = None
        origin: Any = None
        isSidechain: Any = None
        isMeta: Any = None
        isCompactSummary: Any = None
        message: _either(StepMessage) = None
        toolUseResult: _either(StepToolResult) = None

    return StepLine, StepMessage, StepBlock, StepToolResult


(StepLine, StepMessage, StepBlock, StepToolResult), (StepLineLoose, StepMessageLoose, StepBlockLoose,
                                                     StepToolResultLoose) = _pair(_step_types)

MESSAGE_TYPES = (Message, CountMessage, CountMessageLoose, StepMessage, StepMessageLoose)
BLOCK_TYPES = (Block, CountBlock, CountBlockLoose, StepBlock, StepBlockLoose)
TOOL_USE_RESULT_TYPES = (ToolUseResult, StepToolResult, StepToolResultLoose)
PROGRESS_DATA_TYPES = (ProgressData,)


class Decoding:
    """How a LineReader turns a line into a record: a msgspec decoder for the fast path, and the
    struct an orjson-decoded dict is converted to when msgspec refused the line."""

    __slots__ = ("decode", "loose")

    def __init__(self, struct, loose) -> None:
        self.decode = msgspec.json.Decoder(struct).decode
        self.loose = loose

    def convert(self, obj: dict):
        return msgspec.convert(obj, self.loose)


class BranchLine(Struct, gc=False):
    """What the final branch of a file is made of (a session's title, claude_walk.final_branch_summary)."""

    type: Any = None
    uuid: Any = None
    parentUuid: Any = None
    logicalParentUuid: Any = None


COUNTS = Decoding(CountLine, CountLineLoose)
BRANCH = Decoding(BranchLine, BranchLine)
FULL = Decoding(Line, Line)
STEPS = Decoding(StepLine, StepLineLoose)
