"""Verdicts as the language server takes them: accept (through the apply gate, with progress),
refine, reject, and taking one back (undo a kept accept, restore a rejection), each a core call
through the workspace's sidecar; the answers and the notification payloads they become."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.exceptions import JsonRpcInternalError, JsonRpcInvalidParams
from pygls.uris import from_fs_path

from server import lsp as _lsp
from server.views import read_live, uri_of

if TYPE_CHECKING:
    from core.proposals.decide import Decision
    from core.proposals.model import Proposal
    from core.sidecar import WorkspaceSidecar
    from server.lsp import KitsokiServer

P = _lsp.P
_core = _lsp._core
log = _lsp.log


def unsaved_targets(ls: KitsokiServer, sidecar: WorkspaceSidecar, card: Proposal) -> list[str]:
    """Targets open in the editor whose text differs from the bytes on disk."""
    out = []
    for change in card.files:
        uri = uri_of(sidecar.workspace, change.path)
        document = ls.workspace.text_documents.get(uri)
        if document is None:
            continue
        data = read_live(sidecar.workspace / change.path)
        on_disk = data.decode("utf-8", "replace") if data is not None else None
        if document.source != on_disk:
            out.append(change.path)
    return out


def draft_in_front(ls: KitsokiServer, sidecar: WorkspaceSidecar, card: Proposal) -> dict[str, bytes]:
    """The card's staged draft files the editor has open and saved (its text is the bytes on disk),
    by draft path: what of a refined draft the person has in front of them."""
    from core.proposals.staging import stage_dir

    folder = stage_dir(sidecar.workspace, card.recipe_id)
    out = {}
    for change in card.files:
        path = folder / change.path
        document = ls.workspace.text_documents.get(from_fs_path(str(path)) or "")
        if document is not None and read_live(path) == (text := document.source.encode()):
            out[change.path] = text
    return out


def _stages() -> dict[str, tuple[int, str]]:
    return {"locked": (10, "locked the workspace"), "journal_written": (20, "journal written"),
            "before_reload": (40, "reloading the workspace"), "before_gate": (55, "running the flow gate"),
            "after_gate": (90, "flow gate done")}


def verdict_error(exc: BaseException) -> Exception | None:
    """The answer to a verdict that raised: a refusal (invalid params, nothing done), a busy
    workspace, or a file-system fault said in a person's words with the file; None for anything else."""
    if isinstance(exc, _core['core.proposals.decide'].DecisionRefused):
        return JsonRpcInvalidParams(f"refused: {exc}")
    if isinstance(exc, _core['core.locks'].WorkspaceBusy):
        return JsonRpcInternalError(str(exc))
    if isinstance(exc, OSError):
        from core.safeio import FAULTS

        word = FAULTS.get(exc.errno or 0, "file-system error")
        where = f": {exc.filename}" if isinstance(exc.filename, str) else ""
        return JsonRpcInternalError(f"{word}{where} ({exc.strerror or exc}); nothing was left half-written")
    if isinstance(exc, _core['core.apply'].RevertFailed):
        return JsonRpcInternalError(str(exc))
    return None


async def decide_impl(ls: KitsokiServer, recipe_id: str, verdict: str) -> P.DecisionResult:
    """A verdict, run off the loop. A cancel that arrives before the verdict starts means nothing was
    done (RequestCancelled); once it has started it runs to its end (an accept is a critical
    section: core.apply) and the answer says what happened, with `note` saying the cancel came too
    late (server.transport: enter_critical / leave_critical). Progress is optional: the accept
    never waits for the client to accept a progress token."""
    sidecar, card = ls.find_card(recipe_id)
    unsaved = unsaved_targets(ls, sidecar, card) if verdict == "accept" else []
    token = _lsp._begin_progress_soon(ls, f"Accepting: {card.title}") if verdict == "accept" else None

    def hook(name: str) -> None:
        stage = _stages().get(name)
        if token is not None and stage is not None:
            ls.soon(_lsp._report_progress, ls, token, stage)

    in_front = draft_in_front(ls, sidecar, card) if verdict == "accept" and card.status == "refining" else {}
    protocol = ls.protocol
    if not getattr(protocol, "enter_critical", lambda: True)():
        _lsp._end_progress(ls, token, "cancelled before it began: nothing was done")
        raise asyncio.CancelledError  # the client was already answered RequestCancelled
    try:
        def run() -> Decision:
            if in_front:  # the saved refined draft open in front of the person is shown (all of it, or nothing)
                sidecar.show_refined(card.recipe_id, seen=in_front)
            return sidecar.decide(card.recipe_id, verdict, unsaved=unsaved, hook=hook)

        decision: Decision = await ls.off_loop(run)
    except Exception as exc:  # noqa: BLE001 - answered in words, never a traceback
        error = verdict_error(exc)
        if error is None:
            raise
        _lsp._end_progress(ls, token, str(error))
        raise error from None
    finally:
        cancelled = getattr(protocol, "leave_critical", lambda: False)()
    result = _decision_result(sidecar, decision)
    if cancelled:
        result.note = (f"the cancel came after the {verdict} had begun, so it was carried out: "
                       + ("kept" if decision.flows_green else "refined" if verdict == "refine" else
                          "rejected" if verdict == "reject" else "not kept"))
    if token is not None:
        _lsp._end_progress(ls, token, ("kept: flows green" if decision.gated else "kept, not gated") if decision.flows_green
                      else f"{'held' if decision.held else 'reverted'}: {decision.failure}")
    if decision.verdict == "refine" and decision.draft_path:
        await _show(ls, from_fs_path(decision.draft_path))
    return result


async def choose_impl(ls: KitsokiServer, recipe_id: str) -> Any:
    """kitsoki.choose for a client that does not handle it itself (both of ours do): ask with
    window/showMessageRequest, then run what was picked."""
    _, card = ls.find_card(recipe_id)
    picks = {"Accept (runs flows)": "accept", "Refine": "refine", "Reject": "reject"}
    answer = await ls.window_show_message_request_async(types.ShowMessageRequestParams(
        type=types.MessageType.Info, message=f"kitsoki-miner proposal: {card.title}",
        actions=[types.MessageActionItem(title=t) for t in picks]))
    if answer is None or answer.title not in picks:
        return None
    return (await decide_impl(ls, card.recipe_id, picks[answer.title])).model_dump(mode="json")


def _decision_result(sidecar: WorkspaceSidecar, decision: Decision) -> P.DecisionResult:
    wording = _core['core.proposals.wording']
    return P.DecisionResult(recipe_id=decision.recipe_id, verdict=decision.verdict, flows_green=decision.flows_green,
                            reverted=decision.reverted,
                            failure=wording.readable_failure(decision.failure) if decision.failure else None,
                            draft_uri=from_fs_path(decision.draft_path) if decision.draft_path else None,
                            files=[uri_of(sidecar.workspace, f) for f in decision.files],
                            gated=decision.gated, held=decision.held,
                            flows=list(decision.gate.runs) if decision.gate else [],
                            skipped=list(decision.gate.skipped) if decision.gate else [],
                            kept=wording.kept_text(decision.gated)
                            if decision.verdict == "accept" and decision.flows_green else None,
                            unresolved=decision.unresolved, note=decision.note)


async def _show(ls: KitsokiServer, uri: str | None) -> None:
    caps = ls.client_capabilities.window
    if uri is None or caps is None or caps.show_document is None or not caps.show_document.support:
        return
    try:
        await ls.window_show_document_async(types.ShowDocumentParams(uri=uri, take_focus=True))
    except Exception as exc:  # noqa: BLE001 - opening the draft is a courtesy
        log.warning("showDocument failed: %s", exc)




def taken_back_result(workspace, reversal) -> P.TakenBackResult:
    return P.TakenBackResult(recipe_id=reversal.recipe_id, workspace=from_fs_path(str(workspace)) or str(workspace),
                             action=reversal.action, how=reversal.how, title=reversal.title,
                             files=[uri_of(workspace, f) for f in reversal.files],
                             restored=[uri_of(workspace, f) for f in reversal.restored])


async def take_back_impl(ls: KitsokiServer, recipe_id: str, action: str) -> dict:
    """kitsoki.undo | kitsoki.restore: in the served workspace that holds that decided proposal."""
    reversal_mod = _core["core.proposals.reversal"]
    refusals = []
    for sidecar in list(ls.sidecars.values()):
        run = sidecar.undo if action == "undo" else sidecar.restore
        try:
            reversal = await ls.off_loop(run, recipe_id)
        except reversal_mod.ReversalRefused as exc:
            if exc.reason == "unknown":
                refusals.append(str(exc))
                continue
            raise JsonRpcInvalidParams(f"refused: {exc}") from None
        except _core["core.locks"].WorkspaceBusy as exc:
            raise JsonRpcInternalError(str(exc)) from None
        except _core["core.apply"].RevertFailed as exc:
            raise JsonRpcInternalError(f"the undo did not finish: {exc}") from None
        return taken_back_result(sidecar.workspace, reversal).model_dump(mode="json")
    what = "kept accept" if action == "undo" else "rejected proposal"
    raise JsonRpcInvalidParams(f"refused: no {what} {recipe_id} in the served workspaces"
                               + (f" ({refusals[0]})" if len(refusals) == 1 else ""))


def resolve_impl(ls: KitsokiServer, args: tuple) -> dict:
    """kitsoki.resolve (core.apply.resolve): list the accepts left unsettled, or settle one."""
    from core.apply.resolve import ResolveRefused, resolve_accept, unsettled

    p = _lsp.validated(P.ResolveArgs, args[0] if args else {}, _lsp.M.CMD_RESOLVE)
    sidecars = ls.sidecars_for(p.uri)
    if p.choice is None:
        return P.ResolveListResult(unsettled=[
            P.UnsettledAccept(**u.model_dump(), workspace=str(s.workspace)) for s in sidecars
            for u in unsettled(s.workspace) if p.id is None or u.recipe_id.startswith(p.id)]).model_dump(mode="json")
    if p.id is None:
        raise JsonRpcInvalidParams(f"{_lsp.M.CMD_RESOLVE}: a choice needs the proposal's id")
    for sidecar in sidecars:
        if any(u.recipe_id.startswith(p.id) for u in unsettled(sidecar.workspace)):
            try:
                result = resolve_accept(sidecar.workspace, p.id, p.choice)
            except ResolveRefused as exc:
                raise JsonRpcInvalidParams(f"{_lsp.M.CMD_RESOLVE}: {exc}") from None
            sidecar.refresh()
            return result.model_dump(mode="json")
    raise JsonRpcInvalidParams(f"{_lsp.M.CMD_RESOLVE}: no unsettled accept {p.id}")
