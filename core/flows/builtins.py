"""kitsoki's builtin host handlers, as a flow with `host_bindings:` reaches them.

With `host_bindings:` set, kitsoki's flow runner registers every builtin handler beside the
fixture's stubs (internal/host/handlers.go RegisterBuiltins); a stub of the same name replaces a
builtin, and a name resolves to its exact or longest dotted-prefix registration across both. The
builtins mostly shell out or call agents, which no flow verdict should depend on, so reaching one
is declined — except those whose answer follows from their arguments and the files they read:

* `host.artifacts_dir` (internal/host/artifacts_dir_transport.go), markdown-body path: the file
  `<root>/<thread>[.md]` (root: `artifacts_root`, else `$KITSOKI_ARTIFACTS_ROOT`, else
  `<cwd>/.artifacts`) gets the rendered chunk appended (after a `---` separator) or replaces it;
  the answer is `{ok, path, message_id: "<stem>#<n>"}`, n counting the chunks already there.
* `host.local_files.ticket` (localfiles_ticket.go) `comment` and `transition` on a ticket that does
  not exist (no `issues/{bugs,features,epics}/<id>.md` under `$KITSOKI_TICKETS_ROOT` or the cwd):
  the domain error kitsoki returns. A ticket that exists would be parsed and rewritten: declined.

The built-in runner never writes these files (it runs inside a gate): what kitsoki would write is
kept in memory (`Files`, shared by the flows of one run, as kitsoki's writes are), over what is on
disk, so a later call counts the chunks an earlier one added.
"""

from __future__ import annotations

import os
import posixpath
from typing import Any

from core.flows.machine import Unsupported
from core.flows.workdir import in_workdir, workdir

BUILTINS = frozenset({
    "host.workspace_manager.get", "host.run", "host.agent.ask", "host.transport.post",
    "host.jobs.answer_clarification", "host.chat.resolve", "host.chat.list", "host.chat.transcript",
    "host.chat.fork", "host.chat.archive", "host.chat.create", "host.chat.rename",
    "host.chat.suggest_title", "host.chat.resolve_ref", "host.chat.drive", "host.local_files.ticket",
    "host.git", "host.local", "host.git_worktree", "host.append_to_file", "host.artifacts_dir",
    "host.inbox.add", "host.gh.ticket", "host.cypilot_artifacts", "host.agent.extract",
    "host.agent.decide", "host.agent.task", "host.agent.converse", "host.ide.get_diagnostics",
    "host.ide.get_selection", "host.ide.get_open_editors", "host.ide.open_file", "host.ide.open_diff",
    "host.diff.open", "host.starlark.run", "host.slidey.render", "host.contact_sheet",
    "host.video.frame", "host.agent.search",
})
"""Every name RegisterBuiltins registers (kitsoki at the workspace's commit)."""

_SEPARATOR = "\n\n---\n\n"
_TICKET_DIRS = ("bugs", "features", "epics")


class Files:
    """What kitsoki's builtins would have written so far in this run, over the files on disk."""

    def __init__(self) -> None:
        self.written: dict[str, str] = {}

    def read(self, path: str) -> str | None:
        """The file's text as kitsoki would find it now, or None when it does not exist."""
        if path in self.written:
            return self.written[path]
        on_disk = in_workdir(path)
        if not os.path.lexists(on_disk):
            return None
        if not os.path.isfile(on_disk):
            raise Unsupported(f"host.artifacts_dir: {path} is not a regular file")
        with open(on_disk, "rb") as handle:
            return handle.read().decode("utf-8", "surrogateescape")


def answer(name: str, args: dict[str, Any], files: Files) -> tuple[dict[str, Any] | None, str]:
    """(data, domain error) of builtin `name` (its registered name); declines the rest."""
    if name == "host.artifacts_dir":
        return _artifacts_dir(args, files)
    if name == "host.local_files.ticket":
        op = _text(args, "op").strip()
        if not op:
            return None, "host.local_files.ticket: op argument is required"
        if op == "comment":
            return _ticket_comment(args)
        if op == "transition":
            return _ticket_transition(args)
    raise Unsupported(f"host_bindings: kitsoki would run its real builtin handler for {name}"
                      + (f" (op {args['op']})" if isinstance(args.get("op"), str) and args.get("op") else ""))


def _text(args: dict[str, Any], key: str) -> str:
    value = args.get(key)
    return value if isinstance(value, str) else ""


def _body(value: Any) -> str:
    """bodyArg, as far as the answer depends on it: a map or list is pretty JSON (never blank)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    # pretty JSON or Go's %v: never blank, and never a `---` line (JSON escapes newlines), which is
    # all the answer reads of it
    return "{}" if isinstance(value, (dict, list)) else "value"


def _go_ext(name: str) -> str:
    """Go's filepath.Ext: from the last dot of the last element (a leading dot counts)."""
    for index in range(len(name) - 1, -1, -1):
        if name[index] == "/":
            return ""
        if name[index] == ".":
            return name[index:]
    return ""


def _artifacts_dir(args: dict[str, Any], files: Files) -> tuple[dict[str, Any] | None, str]:
    thread = _text(args, "thread").strip()
    if not thread:
        return None, "host.artifacts_dir: thread argument is required"
    if _text(args, "src_path").strip():
        raise Unsupported("host_bindings: host.artifacts_dir copying a media file (src_path)")
    body = _body(args.get("body"))
    if not body.strip():
        return None, "host.artifacts_dir: body argument is required"
    root = _text(args, "artifacts_root")
    if not root.strip():
        root = os.environ.get("KITSOKI_ARTIFACTS_ROOT") or os.path.join(workdir(), ".artifacts")
    if os.path.exists(in_workdir(root)) and not os.path.isdir(in_workdir(root)):
        raise Unsupported(f"host.artifacts_dir: artifacts root {root} is not a folder")
    name = thread
    if not _go_ext(name) and "/" not in name and "\\" not in name:
        name += ".md"
    path = name if os.path.isabs(name) else posixpath.normpath(posixpath.join(root, name))
    mode = _text(args, "mode").strip().lower() or "append"
    title, phase_id = _text(args, "title"), _text(args, "phase_id")
    chunk = (f"### {title}\n\n" if title else "") + body.rstrip("\n") + (f"\n\n_phase: {phase_id}_" if phase_id else "") + "\n"
    existing = files.read(path)
    counter = existing.count("\n---\n") + 2 if existing else 1
    if mode == "replace":
        files.written[path], counter = chunk, 1
    else:
        files.written[path] = (existing + _SEPARATOR + chunk) if existing else chunk
    stem = posixpath.basename(path)
    stem = stem[: -len(_go_ext(stem))] if _go_ext(stem) else stem
    return {"ok": True, "path": path, "message_id": f"{stem}#{counter}"}, ""


def _ticket_path(ticket: str) -> str:
    """findTicketPath: issues/{bugs,features,epics}/<id>.md under the tickets root, "" for none."""
    root = os.environ.get("KITSOKI_TICKETS_ROOT") or workdir()
    for folder in _TICKET_DIRS:
        candidate = os.path.join(root, "issues", folder, f"{ticket}.md")
        if os.path.exists(in_workdir(candidate)):
            return candidate
    return ""


def _existing_ticket(op: str, path: str) -> Unsupported:
    return Unsupported(f"host_bindings: host.local_files.ticket {op} on {path} (kitsoki would rewrite the ticket)")


def _ticket_comment(args: dict[str, Any]) -> tuple[dict[str, Any] | None, str]:
    if _text(args, "root"):
        raise Unsupported("host_bindings: host.local_files.ticket with a root argument")
    ticket, body, thread = _text(args, "id"), _text(args, "body"), _text(args, "thread")
    if not body.strip():
        return None, "ticket.comment: body argument is required"
    if thread and (thread.endswith(".md") or os.path.isabs(thread)):
        path = thread
    elif ticket.strip():
        path = _ticket_path(ticket)
        if not path:
            return None, f"ticket.comment: {ticket} not found"
    else:
        return None, "ticket.comment: id or thread is required"
    if not os.path.exists(in_workdir(path)):
        return None, f"ticket.comment: {path} not found"
    raise _existing_ticket("comment", path)


def _ticket_transition(args: dict[str, Any]) -> tuple[dict[str, Any] | None, str]:
    if _text(args, "root"):
        raise Unsupported("host_bindings: host.local_files.ticket with a root argument")
    ticket, to = _text(args, "id"), _text(args, "to")
    if not ticket.strip():
        return None, "ticket.transition: id argument is required"
    if not to.strip():
        return None, "ticket.transition: to argument is required"
    path = _ticket_path(ticket)
    if not path:
        return None, f"ticket.transition: {ticket} not found"
    raise _existing_ticket("transition", path)
