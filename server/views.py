"""What an editor shows of the proposals: cards, code lenses, diagnostics, hovers, quick fixes, the
question cards, and the right side of a proposal diff (also once the proposal is decided).

Built from the sidecar's warm inbox; the wording comes from core.proposals.wording. No domain
rules here. The protocol models are imported on first use (server.protocol loads the domain,
which `initialize` must not wait for).

Lenses: a proposal's lenses sit above where its lines would go (the first line it replaces, or
the line after its insertion point). A proposal alone on its line gets `Accept: <title> (<what
the gate will do>)` · Refine · Diff · Reject…; the destructive one last, apart from Refine, and it
asks first. Proposals that share a line get one lens each (`[1/2] <title> …`, which asks what to
do), so each reads as its own thing instead of one run of buttons. Lenses on a line carry
increasing start characters in priority order: every client sorts them the same way. The Accept
lens is resolved (`codeLens/resolve`): what the gate will run is computed for the lenses in view,
from the gate's own preview.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.uris import from_fs_path, to_fs_path

from core.safeio import read_regular
from server import methods as M

if TYPE_CHECKING:
    from core.apply.gates import GatePreview
    from core.proposals.model import FileChange, Proposal
    from core.sidecar import WorkspaceSidecar

SOURCE = "kitsoki-miner"
DRAFTS = (".artifacts", "mining")


def _p() -> Any:
    return importlib.import_module("server.protocol")


def _core(name: str) -> Any:
    return importlib.import_module(name)


def uri_of(workspace: Path, rel: str) -> str:
    return from_fs_path(str(workspace / rel)) or (workspace / rel).as_uri()


def rel_path(sidecar: WorkspaceSidecar, uri: str) -> str:
    path = Path(to_fs_path(uri) if "://" in uri else uri).absolute()
    try:
        return path.relative_to(sidecar.workspace).as_posix()
    except ValueError:
        return str(path)


# -- cards ----------------------------------------------------------------------------------------------


def waits_of(sidecar: WorkspaceSidecar, proposal: Proposal) -> str | None:
    """Why a stale proposal is not re-drafted yet: the workspace does not load (the first problem)."""
    if proposal.status != "stale" or not sidecar.problems:
        return None
    issue = sidecar.problems[0]
    where = f"{rel_of_file(sidecar, issue.file)}:{issue.line}:{issue.column}"
    return f"{where} does not load ({_short(issue.message, 80)}); re-drafted once it loads"


def rel_of_file(sidecar: WorkspaceSidecar, file: str) -> str:
    path = Path(file)
    try:
        return path.relative_to(sidecar.workspace).as_posix() if path.is_absolute() else path.as_posix()
    except ValueError:
        return str(path)


def _short(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def card_of(workspace: Path, proposal: Proposal, waits: str | None = None) -> Any:
    P, hunks = _p(), _core("core.proposals.hunks").hunks
    files = [P.FileCard(uri=uri_of(workspace, change.path), path=change.path,
                        line=max(min(change.changed_lines or [1]) - 1, 0),
                        changed_lines=[line - 1 for line in change.changed_lines], added=change.added,
                        created=change.before_sha256 is None, hunks=hunks(change.diff))
             for change in proposal.files]
    return P.Card(id=proposal.recipe_id, workspace=from_fs_path(str(workspace)) or str(workspace),
                  title=proposal.title, kind=proposal.kind, rung=proposal.rung, target=proposal.target,
                  priority=proposal.priority, status=proposal.status,
                  classification=proposal.mapping.classification, score=proposal.mapping.score,
                  reason=proposal.mapping.reason, failure=proposal.failure, suggestion_only=proposal.suggestion_only,
                  files=files, question_id=proposal.recipe_id, waits=waits,
                  proof=proposal.proof.model_dump(mode="json") if proposal.proof is not None else None)


def detail_of(workspace: Path, proposal: Proposal, gate: GatePreview | None = None, waits: str | None = None) -> Any:
    P = _p()
    wording = _core("core.proposals.wording")
    card = card_of(workspace, proposal, waits)
    evidence = proposal.evidence
    stage_dir = _core("core.proposals.staging").stage_dir
    return P.ProposalDetail(
        **card.model_dump(), diff=proposal.diff, summary_markdown=proposal.summary_markdown,
        evidence=P.Evidence(sessions=evidence.sessions, phrasings=evidence.phrasings,
                            action_signature=evidence.action_signature,
                            cites=[c.model_dump(mode="json") for c in evidence.cites], value=evidence.value),
        draft_uris=[uri_of(stage_dir(workspace, proposal.recipe_id), c.path) for c in proposal.files], gate=gate,
        accept_brief=wording.accept_brief(gate), accept_says=wording.accept_says(gate, [c.path for c in proposal.files]))


def accept_option(proposal: Proposal, gate: GatePreview | None) -> str:
    """The accept option of a question card or an action list: where, and what the gate will do."""
    where = ", ".join(c.path for c in proposal.files) or "dev-story (a suggestion)"
    brief = _core("core.proposals.wording").accept_brief(gate)
    judged = gate is not None and gate.gated and not gate.held and gate.kind not in ("unknown",) and gate.runs
    return f"apply to {where}; {brief}" + (", kept only if they pass" if judged and gate.kind != "command" else
                                           ", kept only if it passes" if judged else "")


REJECT_OPTION = "reject; not raised again (restore it from the rejected list)"


def question_of(proposal: Proposal, gate: GatePreview | None = None, workspace: Path | None = None) -> Any:
    P = _p()
    return P.QuestionNotification(question_id=proposal.recipe_id, workspace=(
        from_fs_path(str(workspace)) or str(workspace)) if workspace is not None else None, questions=[P.Question(
        question=proposal.title,
        options=[P.QuestionOption(label="accept", description=accept_option(proposal, gate)),
                 P.QuestionOption(label="refine", description="open the staged draft to edit before accepting"),
                 P.QuestionOption(label="dismiss", description=REJECT_OPTION)])])


# -- where a change sits ---------------------------------------------------------------------------------


def _blocks(change: FileChange) -> list[Any]:
    return _core("core.proposals.hunks").hunks(change.diff)


def marked_lines(change: FileChange) -> list[int]:
    """0-based live lines a change touches: those it replaces, or the line its insertion follows."""
    lines: set[int] = set()
    for block in _blocks(change):
        lines.update(block.removed or [max(block.after, 0)])
    return sorted(lines) or [max(line - 1, 0) for line in change.changed_lines] or [0]


def lens_line(change: FileChange, line_count: int) -> int:
    """Above where the change's lines would go: its first replaced line, or the line after its
    insertion point (at most one past the last line: editors show an empty last line there)."""
    blocks = _blocks(change)
    if not blocks:
        return marked_lines(change)[0]
    first = blocks[0]
    line = first.removed[0] if first.removed else first.after + 1
    return max(0, min(line, line_count))


LIVE_FILE_MAX_BYTES = 16 << 20


def read_live(path: Path) -> bytes | None:
    """A workspace file as the editor shows it, or None: read only if it is a regular file within
    16 MiB (a FIFO or a link to /dev/zero in its place never hangs the server)."""
    try:
        return read_regular(path, LIVE_FILE_MAX_BYTES, what="the workspace file")
    except OSError:
        return None


def _line_count(workspace: Path, rel: str) -> int:
    data = read_live(workspace / rel)
    return data.count(b"\n") if data is not None else 0


# -- code lenses ------------------------------------------------------------------------------------------


def _lens(line: int, index: int, title: str, command: str, arguments: list) -> types.CodeLens:
    at = types.Position(line=line, character=index)
    return types.CodeLens(range=types.Range(start=at, end=types.Position(line=line, character=index + 1)),
                          command=types.Command(title=title, command=command, arguments=arguments))


ACCEPT_LENS = "accept"


def lenses_impl(ls: Any, params: types.CodeLensParams) -> list[types.CodeLens]:
    uri = params.text_document.uri
    sidecar = ls.sidecar_for(uri)
    if sidecar is None:
        return []
    rel = rel_path(sidecar, uri)
    if Path(rel).parts[:2] == DRAFTS:
        return draft_lenses(sidecar, rel, uri)
    cards = sidecar.cards(rel)
    if not cards:
        return []
    count = _line_count(sidecar.workspace, rel)
    rows: dict[int, list[Proposal]] = {}
    for card in cards:  # highest priority first (the inbox's order)
        change = next(c for c in card.files if c.path == rel)
        rows.setdefault(lens_line(change, count), []).append(card)
    wording = _core("core.proposals.wording")
    lenses = [_lens(0, 0, f"kitsoki-miner: {wording.plural(len(cards), 'proposal')} for this file",
                    M.CMD_SHOW, [{"uri": uri}])]
    for line in sorted(rows):
        row = rows[line]
        index = 1 if line == 0 else 0
        for number, card in enumerate(row, start=1):
            arg = [{"id": card.recipe_id}]
            if card.status == "stale":
                waits = waits_of(sidecar, card)
                title = f"Waiting: {card.title}: {waits}" if waits else \
                    f"Stale: {card.title} (the file changed; re-drafting)"
                lenses.append(_lens(line, index, title, M.CMD_PROPOSE, arg))
                index += 1
                continue
            if len(row) > 1:
                held = " (held: its last accept was reverted)" if card.status == "held" else ""
                lenses.append(_lens(line, index, f"[{number}/{len(row)}] {card.title}{held}: accept · refine · "
                                    "diff · reject…", M.CMD_CHOOSE, [{"id": card.recipe_id, "uri": uri}]))
                index += 1
                continue
            accept = "Accept again" if card.status == "held" else "Accept"
            at = types.Position(line=line, character=index)
            # Resolved when in view (codeLens/resolve): what the gate will do, from its own preview.
            lenses.append(types.CodeLens(range=types.Range(start=at, end=types.Position(line=line, character=index + 1)),
                                         data={"lens": ACCEPT_LENS, "id": card.recipe_id, "verb": accept,
                                               "title": card.title}))
            index += 1
            # Reject last, apart from Refine: the one that throws a proposal away is the hardest to hit.
            for title, command, args in (("Refine", M.CMD_REFINE, arg),
                                         ("Diff", M.CMD_DIFF, [{"id": card.recipe_id, "uri": uri}]),
                                         ("Reject…", M.CMD_REJECT, arg)):
                lenses.append(_lens(line, index, title, command, args))
                index += 1
    return lenses


def resolve_lens_impl(ls: Any, lens: types.CodeLens) -> types.CodeLens:
    """Fill in an Accept lens: `Accept: <title> (<what the gate will do>)`."""
    data = lens.data if isinstance(lens.data, dict) else {}
    if lens.command is not None or data.get("lens") != ACCEPT_LENS or not isinstance(data.get("id"), str):
        return lens
    found = None
    for sidecar in ls.sidecars.values():
        card = sidecar.card(data["id"])
        if card is not None:
            found = (sidecar, card)
            break
    if found is None:  # decided meanwhile: the next lens refresh drops it
        lens.command = types.Command(title=f"{data.get('title', 'proposal')}: decided", command=M.CMD_SHOW,
                                     arguments=[{}])
        return lens
    sidecar, card = found
    brief = _core("core.proposals.wording").accept_brief(sidecar.gate_preview_cached(card.recipe_id))
    verb = "Accept again" if card.status == "held" else "Accept"
    lens.command = types.Command(title=f"{verb}: {card.title} ({brief})", command=M.CMD_ACCEPT,
                                 arguments=[{"id": card.recipe_id}])
    return lens


def draft_of(sidecar: WorkspaceSidecar, rel: str) -> tuple[Proposal | None, str]:
    """The open proposal a staged draft file belongs to (`.artifacts/mining/<id>/<target>`), and the
    target's workspace-relative path."""
    parts = Path(rel).parts
    if len(parts) < 4 or parts[:2] != DRAFTS:
        return None, rel
    return sidecar.card(parts[2]), Path(*parts[3:]).as_posix()


def draft_lenses(sidecar: WorkspaceSidecar, rel: str, uri: str) -> list[types.CodeLens]:
    """A staged draft must never pass for the live file: say so on its first line."""
    card, target = draft_of(sidecar, rel)
    if card is None:
        return [_lens(0, 0, f"kitsoki-miner: an old draft of {target} (its proposal is closed); "
                            "not the live file", M.CMD_SHOW, [{}])]
    arg = [{"id": card.recipe_id}]
    live = uri_of(sidecar.workspace, target)
    brief = _core("core.proposals.wording").accept_brief(sidecar.gate_preview_cached(card.recipe_id))
    return [_lens(0, 0, f"DRAFT of {target} for \"{card.title}\": not the live file", M.CMD_SHOW, [{"uri": live}]),
            _lens(0, 1, f"Accept this draft ({brief})", M.CMD_ACCEPT, arg),
            _lens(0, 2, "Diff against the live file", M.CMD_DIFF, [{"id": card.recipe_id, "uri": live}])]


# -- diagnostics, hover, quick fixes -------------------------------------------------------------------


def diagnostics_for(sidecar: WorkspaceSidecar, rel: str) -> list[types.Diagnostic]:
    out = problem_diagnostics(sidecar, rel)
    for card in sidecar.cards(rel):
        change = next(c for c in card.files if c.path == rel)
        lines = marked_lines(change)
        what = ("stale: the file changed since it was drafted" if card.status == "stale" else
                f"held: the last accept was reverted ({card.failure})" if card.status == "held" else
                "accept, refine or reject")
        message = f"kitsoki-miner proposal: {card.title} — {what}"
        out.append(types.Diagnostic(
            range=types.Range(start=types.Position(line=lines[0], character=0),
                              end=types.Position(line=lines[-1] + 1, character=0)),
            message=message, severity=types.DiagnosticSeverity.Information, source=SOURCE, code=card.kind,
            data={"id": card.recipe_id}))
    return out


def problem_diagnostics(sidecar: WorkspaceSidecar, rel: str) -> list[types.Diagnostic]:
    """Why the workspace does not load, on the line that says so (proposals wait until it loads)."""
    out = []
    issues = sidecar.problems_for(rel)
    lines = (read_live(sidecar.workspace / rel) or b"").decode("utf-8", "replace").splitlines() if issues else []
    for issue in issues:
        at = types.Position(line=max(issue.line - 1, 0), character=max(issue.column - 1, 0))
        text = lines[at.line] if at.line < len(lines) else ""
        end = max(len(text), at.character + 1)  # to the end of the line: a squiggle a person sees
        what = f"{issue.key}: {issue.message}" if issue.key else issue.message
        out.append(types.Diagnostic(
            range=types.Range(start=at, end=types.Position(line=at.line, character=end)),
            message=f"{what} (kitsoki-miner: the workspace does not load; its proposals wait until it does)",
            severity=types.DiagnosticSeverity.Error, source=SOURCE, code="load"))
    return out


def _hit(change: FileChange, line: int, line_count: int) -> bool:
    return line in marked_lines(change) or line == lens_line(change, line_count)


def hover_impl(ls: Any, params: types.HoverParams) -> types.Hover | None:
    sidecar = ls.sidecar_for(params.text_document.uri)
    if sidecar is None:
        return None
    rel = rel_path(sidecar, params.text_document.uri)
    count = _line_count(sidecar.workspace, rel)
    parts = [hover_text(card) for card in sidecar.cards(rel)
             if _hit(next(c for c in card.files if c.path == rel), params.position.line, count)]
    if not parts:
        return None
    return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value="\n\n---\n\n".join(parts)))


def hover_text(card: Proposal) -> str:
    w = _core("core.proposals.wording")
    ev = card.evidence
    lines = [f"**{card.title}** ({card.kind}, rung {card.rung})", "",
             f"{w.classification_text(card.mapping.classification, card.mapping.near)}: {card.mapping.reason}."]
    if ev.phrasings:
        lines += ["", "Asked as: " + "; ".join(f'"{t}" ×{n}' for t, n in ev.phrasings[:5])]
    if ev.action_signature:
        lines += ["", "Actions: " + w.actions_text(ev.action_signature)]
    seen = f"Seen in {w.plural(ev.sessions, 'session')}"
    if ev.cites:
        seen += ": " + ", ".join(f"`{w.cite_text(c.path, c.line_start, c.line_end)}`" for c in ev.cites[:5])
    lines += ["", seen]
    if card.failure:
        lines += ["", f"Last accept reverted: {w.readable_failure(card.failure)}"]
    return "\n".join(lines)


def code_actions_impl(ls: Any, params: types.CodeActionParams) -> list[types.CodeAction]:
    sidecar = ls.sidecar_for(params.text_document.uri)
    if sidecar is None:
        return []
    rel = rel_path(sidecar, params.text_document.uri)
    first, last = params.range.start.line, params.range.end.line  # compared, never expanded (a 10^9 range)
    actions = []
    for card in sidecar.cards(rel):
        if card.status == "stale" or card.suggestion_only:
            continue
        change = next(c for c in card.files if c.path == rel)
        if not any(first <= line <= last for line in marked_lines(change)):
            continue
        arg = [{"id": card.recipe_id}]
        brief = _core("core.proposals.wording").accept_brief(sidecar.gate_preview_cached(card.recipe_id))
        actions.append(types.CodeAction(title=f"Accept proposal ({brief}): {card.title}",
                                        kind=types.CodeActionKind.QuickFix,
                                        command=types.Command(title=f"Accept proposal ({brief})",
                                                              command=M.CMD_ACCEPT, arguments=arg)))
        actions.append(types.CodeAction(title=f"Reject proposal: {card.title}", kind=types.CodeActionKind.QuickFix,
                                        command=types.Command(title="Reject proposal", command=M.CMD_REJECT,
                                                              arguments=arg)))
    return actions


# -- the right side of a diff, once decided --------------------------------------------------------------

_DECIDED = {
    "accepted": "was accepted and kept (the flows stayed green); the file now holds it",
    "rejected": "was rejected; nothing was changed and it is not raised again",
    "withdrawn": "was withdrawn: its draft no longer applies to this file",
}


def decided_text(state: str | None, title: str, live: str) -> str:
    """The right side of a diff whose proposal is no longer open: the live file under one comment
    line that says what became of the proposal (the left side stays the live file)."""
    what = _DECIDED.get(state or "", "is no longer open")
    return f"# kitsoki-miner: \"{title}\" {what}.\n{live}"
