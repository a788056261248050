"""How every parsed record of every format is accounted for: one place, for every reader.

A reader's books (LineAccounting) say, for each physical line, that it was parsed, malformed or
skipped (lines.py decides that, for all formats alike), and for each parsed record its label in
`by_type` and whether it is conversation, metadata (about the session, kept out of the
conversation) or of a kind the reader does not know. The full readers and a counts-only pass must
keep the same books, so both take each record's label and category from here.
"""

from __future__ import annotations

CONVERSATION, METADATA, UNKNOWN = "conversation", "metadata", "unknown"

CLAUDE_CONVERSATION = frozenset({"user", "assistant", "system"})
CLAUDE_METADATA = frozenset(
    {
        "summary", "ai-title", "custom-title", "last-prompt", "permission-mode",
        "file-history-snapshot", "progress", "queue-operation", "attachment", "agent-name",
        "agent-setting", "mode", "pr-link", "frame-link", "worktree-state", "bridge-session", "tag",
    }
)
"""Claude Code records about the session, not part of the conversation (counted, kept out)."""

PI_CONVERSATION = frozenset({"message", "compaction", "branch_summary", "custom_message"})
PI_METADATA = frozenset(
    {"session", "title", "model_change", "thinking_level_change", "label", "session_info", "custom", "usage",
     "context_edit"}
)
"""Pi entries about the session. `session` is the header; `title` is a line some tools write before it."""

CODEX_CONVERSATION = frozenset({"response_item", "compacted"})
CODEX_METADATA = frozenset({"session_meta", "turn_context"})
CODEX_EVENTS_CONVERSATION = frozenset({"user_message", "turn_aborted"})
"""event_msg payloads that are conversation: what the person typed, and an interrupt. Every other
persisted event (agent_message repeats the assistant's response item, token_count, task_started,
patch_apply_end, ...) is metadata."""


def _name(value) -> str:
    return value if type(value) is str else "<none>"


def claude_label(rec: dict) -> tuple[str, str]:
    kind = _name(rec.get("type"))
    if kind in CLAUDE_CONVERSATION:
        return kind, CONVERSATION
    return kind, METADATA if kind in CLAUDE_METADATA else UNKNOWN


def pi_label(rec: dict) -> tuple[str, str]:
    kind = _name(rec.get("type"))
    if kind == "message":
        msg = rec.get("message")
        return f"message/{msg.get('role') if type(msg) is dict else None}", CONVERSATION
    if kind in PI_CONVERSATION:
        return kind, CONVERSATION
    return kind, METADATA if kind in PI_METADATA else UNKNOWN


def codex_label(rec: dict) -> tuple[str, str]:
    kind = _name(rec.get("type"))
    payload = rec.get("payload")
    inner = _name(payload.get("type")) if type(payload) is dict else "<none>"
    if kind == "response_item":
        return f"response_item/{inner}", CONVERSATION
    if kind == "event_msg":
        return f"event_msg/{inner}", CONVERSATION if inner in CODEX_EVENTS_CONVERSATION else METADATA
    if kind in CODEX_CONVERSATION:
        return kind, CONVERSATION
    return kind, METADATA if kind in CODEX_METADATA else UNKNOWN


LABELS = {"claude": claude_label, "pi": pi_label, "codex": codex_label}
