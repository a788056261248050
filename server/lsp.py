"""The language server: `kitsoki-miner serve`. It translates protocol <-> core and owns no domain logic.

One `WorkspaceSidecar` (core/sidecar.py) per workspace folder that has a `.kitsoki.yaml`. Requests
about proposals are answered from the sidecar's warm inbox on the event loop; anything slow (a
verdict through the apply gate, a proposer run) runs on the server's own worker threads, never on
the loop and never on pygls' thread pool (the stdin reader shares that one). Notifications from
worker threads are handed to the loop with call_soon_threadsafe. Handler exceptions become
JSON-RPC errors and a log message; the server keeps running.

The `*_impl(ls, params)` functions hold each handler's logic and are unit-tested without a client.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import logging
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
from lsprotocol import types
from pygls.exceptions import JsonRpcInternalError, JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer
from pygls.protocol import default_converter
from pygls.protocol.json_rpc import JsonRPCNotification, JsonRPCRequestMessage
from pygls.uris import from_fs_path, to_fs_path

from server import methods as M
from server.views import (
    card_of,
    code_actions_impl,
    decided_text,
    detail_of,
    diagnostics_for,
    hover_impl,
    lenses_impl,
    question_of,
    uri_of,
)
from server.views import read_live
from server.views import rel_path as _rel
from server.transport import GuardedProtocol, serve_stdio, serve_tcp

if TYPE_CHECKING:
    from pydantic import BaseModel

    from core.mining.passes import PassReport
    from core.proposals.decide import Decision
    from core.proposals.model import Proposal
    from core.proposals.proposer import ProposerReport
    from core.sidecar import SidecarEvents, WorkspaceSidecar


class _Lazy:
    """A module imported on first use: the server answers `initialize` before the domain (about
    0.4 s of imports) is loaded, which happens off the event loop right after."""

    def __init__(self, name: str) -> None:
        self._name, self._module = name, None

    def __getattr__(self, attr: str) -> Any:
        if self._module is None:
            self._module = importlib.import_module(self._name)
        return getattr(self._module, attr)


P = _Lazy("server.protocol")
_core = {name: _Lazy(name) for name in ("core.sidecar", "core.proposals.decide", "core.proposals.staging",
                                         "core.locks", "core.proposals.wording", "core.apply")}

log = logging.getLogger("kitsoki_miner.server")

VERSION = "0.1.0"
SOURCE = "kitsoki-miner"
PROGRESS_EVERY_S = 0.1


def _plain_params_converter():
    """Custom `kitsoki/*` params stay plain JSON (validated in the handler), not namedtuples."""
    converter = default_converter()

    def plain(obj, cls):
        return cls(**obj)

    converter.register_structure_hook(JsonRPCRequestMessage, plain)
    converter.register_structure_hook(JsonRPCNotification, plain)
    return converter


class KitsokiProtocol(GuardedProtocol):
    """Results and notifications we build as plain JSON data go out as they are: cattrs walking
    a 500-card answer element by element costs more than everything else in the request."""

    @staticmethod
    def _plain(data: Any) -> dict | None:
        result = getattr(data, "result", None)
        if isinstance(result, PlainJSON) and getattr(data, "error", None) is None:
            return {"jsonrpc": data.jsonrpc, "id": data.id, "result": result.value}
        params = getattr(data, "params", None)
        if isinstance(params, PlainJSON):
            return {"jsonrpc": data.jsonrpc, "method": data.method, "params": params.value}
        return None

    def _serialize_message(self, data: Any) -> Any:
        plain = self._plain(data)
        return plain if plain is not None else super()._serialize_message(data)

    def _send_data(self, data: Any) -> None:
        plain = self._plain(data)
        if plain is None or self.writer is None:
            return super()._send_data(data)
        body = orjson.dumps(plain)  # several times faster than json for the big answers
        result = self.writer.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        if inspect.isawaitable(result):
            asyncio.ensure_future(result)


class PlainJSON:
    """Wraps data that is already JSON (dicts, lists, strings, numbers) for KitsokiProtocol."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


class KitsokiServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__(SOURCE, VERSION, converter_factory=_plain_params_converter, max_workers=4,
                         protocol_cls=KitsokiProtocol)
        self.sidecars: dict[Path, WorkspaceSidecar] = {}
        self.work = ThreadPoolExecutor(max_workers=2, thread_name_prefix="kitsoki-work")
        self.loop: asyncio.AbstractEventLoop | None = None
        self.init_options: Any = None
        self.published: set[str] = set()
        self._pass_tokens: dict[Path, tuple[str, float]] = {}
        self._progress_live: set[str] = set()
        """Progress tokens begun and not yet ended (only those get reports and an end)."""
        self._progress_ended: set[str] = set()
        self._progress_tasks: set[asyncio.Future] = set()
        self._answers: dict[tuple, tuple[object, Any]] = {}

    def cached(self, sidecar: WorkspaceSidecar, key: tuple, compute: Callable[[], Any]) -> Any:
        """An answer computed from the sidecar's inbox, reused until the inbox is refreshed (so a
        client asking for lenses on every keystroke costs a dictionary lookup)."""
        generation = sidecar.generation
        hit = self._answers.get(key)
        if hit is not None and hit[0] == generation:
            return hit[1]
        value = compute()
        if len(self._answers) > 1024:
            self._answers.clear()
        self._answers[key] = (generation, value)
        return value

    def report_server_error(self, error: Exception, source) -> None:
        # A refusal (bad params, a closed proposal) is an answer the client shows as it sees fit;
        # only real failures reach the log, quietly: a log message, not a pop-up.
        if isinstance(error, JsonRpcInvalidParams):
            return
        self.window_log_message(types.LogMessageParams(type=types.MessageType.Error,
                                                       message=f"{SOURCE}: {type(error).__name__}: {error}"))

    # -- threads -> loop -----------------------------------------------------------------------------

    def soon(self, fn: Callable, *args: Any) -> None:
        """Run fn on the event loop (from any thread)."""
        loop = self.loop
        if loop is None or loop.is_closed():
            return
        if _running_loop() is loop:
            fn(*args)
        else:
            loop.call_soon_threadsafe(fn, *args)

    def notify(self, method: str, payload: BaseModel) -> None:
        self.soon(self.protocol.notify, method, PlainJSON(payload.model_dump(mode="json")))

    async def off_loop(self, fn: Callable, *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self.work, fn, *args)

    # -- workspaces -----------------------------------------------------------------------------------

    def sidecar_for(self, uri: str | None) -> WorkspaceSidecar | None:
        if not self.sidecars:
            return None
        if uri is None:
            return next(iter(self.sidecars.values())) if len(self.sidecars) == 1 else None
        path = Path(to_fs_path(uri) if "://" in uri else uri).absolute()
        best = None
        for root, sidecar in self.sidecars.items():
            if path == root or root in path.parents:
                if best is None or len(str(root)) > len(str(best.workspace)):
                    best = sidecar
        return best

    def sidecars_for(self, uri: str | None) -> list[WorkspaceSidecar]:
        if uri is None:
            return list(self.sidecars.values())
        found = self.sidecar_for(uri)
        if found is None:
            raise JsonRpcInvalidParams(f"{uri} is in no served kitsoki workspace "
                                       f"(served: {', '.join(str(p) for p in self.sidecars) or 'none'})")
        return [found]

    def find_card(self, recipe_id: str) -> tuple[WorkspaceSidecar, Proposal]:
        for sidecar in self.sidecars.values():
            card = sidecar.card(recipe_id)
            if card is not None:
                return sidecar, card
        raise JsonRpcInvalidParams(f"no open proposal {recipe_id!r}; kitsoki/proposals lists the open ones")


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def validated(model: type[BaseModel], params: Any, method: str) -> Any:
    from pydantic import ValidationError

    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise JsonRpcInvalidParams(f"{method}: params must be a JSON object, got {type(params).__name__}")
    try:
        return model.model_validate(params)
    except ValidationError as exc:
        raise JsonRpcInvalidParams(P.problems(exc, method)) from None


# -- custom requests -----------------------------------------------------------------------------------


def mine_status_impl(ls: KitsokiServer, params: Any) -> dict:
    p = validated(P.MineStatusParams, params, M.MINE_STATUS)
    return P.MineStatusResult(workspaces=[s.status() for s in ls.sidecars_for(p.uri)]).model_dump(mode="json")


def mine_control_impl(ls: KitsokiServer, params: Any) -> dict:
    p = validated(P.MineControlParams, params, M.MINE_CONTROL)
    out = []
    for sidecar in ls.sidecars_for(p.uri):
        try:
            out.append(sidecar.control(p.action, [Path(d) for d in p.dirs] if p.dirs else None))
        except ValueError as exc:
            raise JsonRpcInvalidParams(f"{M.MINE_CONTROL}: {exc}") from None
    return P.MineStatusResult(workspaces=out).model_dump(mode="json")


def proposals_impl(ls: KitsokiServer, params: Any) -> dict:
    p = validated(P.ProposalsParams, params, M.PROPOSALS)
    cards: list[dict] = []
    for sidecar in ls.sidecars_for(p.uri):
        rel = None
        if p.uri is not None and Path(to_fs_path(p.uri) if "://" in p.uri else p.uri).absolute() != sidecar.workspace:
            rel = _rel(sidecar, p.uri)
        cards += ls.cached(sidecar, ("cards", rel), lambda s=sidecar, r=rel: [
            card_of(s.workspace, c).model_dump(mode="json") for c in s.cards(r)])
    return {"proposals": cards}


def _draft_recipe(sidecar: WorkspaceSidecar, path: Path) -> str | None:
    """The recipe whose staged draft `path` is (`.artifacts/mining/<recipe_id>/...`), or None."""
    try:
        parts = path.absolute().relative_to(sidecar.workspace).parts
    except ValueError:
        return None
    if len(parts) > 3 and parts[:2] == (".artifacts", "mining"):
        from core.ids import is_recipe_id

        return parts[2] if is_recipe_id(parts[2]) else None
    return None


def proposal_impl(ls: KitsokiServer, params: Any) -> dict:
    p = validated(P.ProposalParams, params, M.PROPOSAL)
    sidecar, card = ls.find_card(p.id)
    if card.status == "refining":  # the person asked to see it: a refined draft is shown (and signed) now
        sidecar.show_refined(card.recipe_id)
        card = sidecar.card(card.recipe_id) or card
    return detail_of(sidecar.workspace, card, gate=sidecar.gate_preview(card.recipe_id)).model_dump(mode="json")


def proposal_content_impl(ls: KitsokiServer, params: Any) -> dict:
    p = validated(P.ProposalContentParams, params, M.PROPOSAL_CONTENT)
    closed = closed_content(ls, p)
    if closed is not None:
        return closed
    sidecar, card = ls.find_card(p.id)
    rel = _rel(sidecar, p.uri)
    if rel not in {c.path for c in card.files}:
        raise JsonRpcInvalidParams(f"{M.PROPOSAL_CONTENT}: proposal {p.id} does not change {rel}")
    staging = _core['core.proposals.staging']
    try:  # reached and read as the accept reads it: no link followed, a regular file within its cap
        text = staging.staged_text(sidecar.workspace, card.recipe_id, rel)
    except staging.StagedStateError as exc:
        raise JsonRpcInternalError(f"the staged draft of {p.id} cannot be shown: {exc}") from None
    return P.ProposalContentResult(text=text).model_dump(mode="json")


def closed_content(ls: KitsokiServer, p: P.ProposalContentParams) -> dict | None:
    """A diff tab outlives its proposal: once decided, its right side says so over the live file
    (an editor asks again after every change), instead of an error and an empty document."""
    sidecar = ls.sidecar_for(p.uri)
    if sidecar is None or sidecar.card(p.id) is not None:
        return None
    state, proposal = sidecar.closed_state(p.id)
    rel = _rel(sidecar, p.uri)
    if state is None or proposal is None or rel not in {c.path for c in proposal.files}:
        return None
    live = (read_live(sidecar.workspace / rel) or b"").decode("utf-8", "replace")
    return P.ProposalContentResult(text=decided_text(state, proposal.title, live), state=state).model_dump(mode="json")


def answer_of(params: P.AnswerQuestionParams, card: Proposal) -> str:
    """The verdict in kitsoki's answers map: keyed by the question text (the card's title); a
    single answer under any key is taken too, as people do not retype titles."""
    answers = params.answers
    value = answers.get(card.title, next(iter(answers.values())) if len(answers) == 1 else None)
    if isinstance(value, list):
        value = value[0] if len(value) == 1 else None
    if value not in M.ANSWERS and value != "reject":
        raise JsonRpcInvalidParams(f'{M.ANSWER_QUESTION}: answers["{card.title}"] must be one of accept, refine, '
                                   f"reject or dismiss, got {value!r}")
    return value


def evolve_impl(ls: KitsokiServer, params: Any) -> Any:
    """Learnings through core/learnings: the same calls as `kitsoki-miner evolve`."""
    from core.learnings.evolve import EvolveConfig, InputError, analyze, confirm, list_records, prune

    p = validated(P.EvolveParams, params, M.EVOLVE)
    if p.uri is None and len(ls.sidecars) != 1:
        raise JsonRpcInvalidParams(f"{M.EVOLVE}: pass uri to say which workspace ({len(ls.sidecars)} are served)")
    [sidecar] = ls.sidecars_for(p.uri)
    config = EvolveConfig(workspace=sidecar.workspace, transcript_dirs=[Path(d) for d in p.transcriptDirs],
                          sessions_jsonl=Path(p.sessionsJsonl) if p.sessionsJsonl else None, host_class=p.hostClass)
    try:
        if p.action == "analyze":
            analysis = analyze(config)
            if analysis.question is not None:
                card = {**analysis.question.model_dump(mode="json"), "kind": "learnings"}
                ls.soon(ls.protocol.notify, M.QUESTION, PlainJSON(card))
            return analysis.model_dump(mode="json")
        if p.action == "list":
            return {"records": list_records(config, include_expired=p.all)}
        if p.action == "confirm":
            return confirm(config, p.select).model_dump(mode="json")
        return prune(config, dry_run=not p.apply).model_dump(mode="json")
    except InputError as exc:
        raise JsonRpcInvalidParams(f"{M.EVOLVE} {p.action}: {exc}") from None


def learnings_answer(ls: KitsokiServer, params: Any) -> dict | None:
    """An answer to a learnings card (kind "learnings"): the selected labels are confirmed.
    None when the question is not a pending learnings analysis of a served workspace."""
    from core.learnings.evolve import EvolveConfig, InputError, confirm, load_pending

    for sidecar in ls.sidecars.values():
        config = EvolveConfig(workspace=sidecar.workspace)
        try:
            pending = load_pending(config)
        except InputError:
            continue
        if pending is None or pending.question_id != params.question_id:
            continue
        chosen: list[str] = []
        for value in params.answers.values():
            chosen += value if isinstance(value, list) else [value]
        try:
            return confirm(config, chosen).model_dump(mode="json")
        except InputError as exc:
            raise JsonRpcInvalidParams(f"{M.ANSWER_QUESTION}: {exc}") from None
    return None


def runs_impl(ls: KitsokiServer, params: Any) -> Any:
    """Prepared analysis runs through core/runs: the same calls as `kitsoki-miner runs`."""
    import inspect as _inspect

    from core import runs
    from core.runs.errors import RunError
    from core.runs.inventory import Sources

    p = validated(P.RunsParams, params, M.RUNS)
    args = dict(p.model_extra or {})
    fn = {"projects": runs.list_projects, "coverage": runs.coverage, "confirm": runs.confirm,
          "prepare": runs.prepare, "list": runs.list_runs, "status": runs.status, "reuse": runs.reuse,
          "resume": runs.resume, "finish": runs.finish, "cancel": runs.cancel, "delete": runs.delete,
          "groups": runs.groups, "workdir": runs.suggest_workdir}[p.action]
    dirs = args.pop("dirs", None)
    accepted = _inspect.signature(fn).parameters
    if "sources" in accepted:
        args["sources"] = Sources(dirs=[Path(d) for d in dirs or []])
    unknown = sorted(set(args) - set(accepted))
    if unknown:
        raise JsonRpcInvalidParams(f"{M.RUNS} {p.action}: unknown argument(s) {', '.join(unknown)}; "
                                   f"it takes {', '.join(n for n in accepted if n not in ('sources', 'prefs', 'progress'))}")
    try:
        result = fn(**args)
    except RunError as exc:
        raise JsonRpcInvalidParams(orjson.dumps(exc.to_json()).decode()) from None
    except TypeError as exc:
        raise JsonRpcInvalidParams(f"{M.RUNS} {p.action}: {exc}") from None
    return result.model_dump(mode="json") if hasattr(result, "model_dump") else result


# -- verdicts ------------------------------------------------------------------------------------------


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
        from core.apply.journal import FAULTS

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
    token = _begin_progress_soon(ls, f"Accepting: {card.title}") if verdict == "accept" else None

    def hook(name: str) -> None:
        stage = _stages().get(name)
        if token is not None and stage is not None:
            ls.soon(_report_progress, ls, token, stage)

    protocol = ls.protocol
    if not getattr(protocol, "enter_critical", lambda: True)():
        _end_progress(ls, token, "cancelled before it began: nothing was done")
        raise asyncio.CancelledError  # the client was already answered RequestCancelled
    try:
        decision: Decision = await ls.off_loop(lambda: sidecar.decide(card.recipe_id, verdict, unsaved=unsaved,
                                                                      hook=hook))
    except Exception as exc:  # noqa: BLE001 - answered in words, never a traceback
        error = verdict_error(exc)
        if error is None:
            raise
        _end_progress(ls, token, str(error))
        raise error from None
    finally:
        cancelled = getattr(protocol, "leave_critical", lambda: False)()
    result = _decision_result(sidecar, decision)
    if cancelled:
        result.note = (f"the cancel came after the {verdict} had begun, so it was carried out: "
                       + ("kept" if decision.flows_green else "refined" if verdict == "refine" else
                          "rejected" if verdict == "reject" else "not kept"))
    if token is not None:
        _end_progress(ls, token, ("kept: flows green" if decision.gated else "kept, not gated") if decision.flows_green
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


def resolve_impl(ls: KitsokiServer, args: tuple) -> dict:
    """kitsoki.resolve (core.apply.resolve): list the accepts left unsettled, or settle one."""
    from core.apply.resolve import ResolveRefused, resolve_accept, unsettled

    p = validated(P.ResolveArgs, args[0] if args else {}, M.CMD_RESOLVE)
    sidecars = ls.sidecars_for(p.uri)
    if p.choice is None:
        return P.ResolveListResult(unsettled=[
            P.UnsettledAccept(**u.model_dump(), workspace=str(s.workspace)) for s in sidecars
            for u in unsettled(s.workspace) if p.id is None or u.recipe_id.startswith(p.id)]).model_dump(mode="json")
    if p.id is None:
        raise JsonRpcInvalidParams(f"{M.CMD_RESOLVE}: a choice needs the proposal's id")
    for sidecar in sidecars:
        if any(u.recipe_id.startswith(p.id) for u in unsettled(sidecar.workspace)):
            try:
                result = resolve_accept(sidecar.workspace, p.id, p.choice)
            except ResolveRefused as exc:
                raise JsonRpcInvalidParams(f"{M.CMD_RESOLVE}: {exc}") from None
            sidecar.refresh()
            return result.model_dump(mode="json")
    raise JsonRpcInvalidParams(f"{M.CMD_RESOLVE}: no unsettled accept {p.id}")


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


def _begin_progress_soon(ls: KitsokiServer, title: str) -> str | None:
    """A progress token asked for without waiting: `begin` is sent once the client accepts it, and
    reports before that (or for a client that never answers) are dropped."""
    caps = ls.client_capabilities.window
    if caps is None or not caps.work_done_progress:
        return None
    token = str(uuid.uuid4())

    async def create() -> None:
        try:
            await asyncio.wait_for(ls.work_done_progress.create_async(token), 30)
        except Exception as exc:  # noqa: BLE001 - progress is optional
            log.warning("window/workDoneProgress/create failed: %s", exc)
            return
        if token in ls._progress_ended:
            ls._progress_ended.discard(token)
            return
        ls.work_done_progress.begin(token, types.WorkDoneProgressBegin(title=title, percentage=0, cancellable=False))
        ls._progress_live.add(token)

    ls._progress_tasks.add(task := asyncio.ensure_future(create()))
    task.add_done_callback(ls._progress_tasks.discard)
    return token


def _report_progress(ls: KitsokiServer, token: str, stage: tuple[int, str]) -> None:
    if token in ls._progress_live:
        ls.work_done_progress.report(token, types.WorkDoneProgressReport(message=stage[1], percentage=stage[0]))


async def _begin_progress(ls: KitsokiServer, title: str, cancellable: bool,
                          on_cancel: Callable[[], None] | None = None) -> str | None:
    caps = ls.client_capabilities.window
    if caps is None or not caps.work_done_progress:
        return None
    token = str(uuid.uuid4())
    try:
        await asyncio.wait_for(ls.work_done_progress.create_async(token), 30)  # a client that never replies
    except Exception as exc:  # noqa: BLE001 - progress is optional
        log.warning("window/workDoneProgress/create failed: %s", exc)
        return None
    ls.work_done_progress.begin(token, types.WorkDoneProgressBegin(title=title, percentage=0, cancellable=cancellable))
    ls._progress_live.add(token)
    if on_cancel is not None:
        future = ls.work_done_progress.tokens.get(token)
        if future is not None:
            future.add_done_callback(lambda f: on_cancel() if f.cancelled() else None)
    return token


def _end_progress(ls: KitsokiServer, token: str | None, message: str) -> None:
    if token is not None:
        ls.soon(_end_if_live, ls, token, message)


def _end_if_live(ls: KitsokiServer, token: str, message: str) -> None:
    """End a progress that was begun; one not begun yet never will be."""
    ls._progress_ended.add(token)
    if token in ls._progress_live:
        ls._progress_live.discard(token)
        ls.work_done_progress.end(token, types.WorkDoneProgressEnd(message=message[:200]))


def _id_arg(args: tuple, command: str) -> str:
    """The proposal id of `[{"id": ...}]` (IdArgs, or DiffArgs for kitsoki.diff) or `["<id>"]`."""
    if not args:
        raise JsonRpcInvalidParams(f"{command}: needs the proposal id as its argument ({{\"id\": ...}} or a string)")
    first = args[0]
    if isinstance(first, str) and first:
        return first
    if isinstance(first, dict):
        model = P.DiffArgs if command in (M.CMD_DIFF, M.CMD_CHOOSE) else P.IdArgs
        return validated(model, first, command).id
    raise JsonRpcInvalidParams(f"{command}: the argument must be a proposal id or {{\"id\": \"<id>\"}}, got {first!r}")


def _uri_arg(args: tuple, command: str) -> str | None:
    """The optional `[{"uri": ...}]` (UriArgs) of the show and mining commands."""
    if not args:
        return None
    return validated(P.UriArgs, args[0], command).uri


# -- events from the sidecars ----------------------------------------------------------------------


def make_events(ls: KitsokiServer) -> SidecarEvents:
    def started(workspace: Path) -> None:
        sidecar = ls.sidecars.get(workspace)

        async def begin() -> None:
            token = await _begin_progress(ls, f"Mining transcripts for {workspace.name}", cancellable=True,
                                          on_cancel=(lambda: sidecar.miner.cancel()) if sidecar and sidecar.miner
                                          else None)
            if token is not None:
                ls._pass_tokens[workspace] = (token, 0.0)

        if ls.loop is not None:
            try:  # wait briefly for the client to accept the token; a slow client only loses the bar
                asyncio.run_coroutine_threadsafe(begin(), ls.loop).result(5)
            except Exception as exc:  # noqa: BLE001
                log.warning("no progress for this pass: %s", exc)

    def progress(workspace: Path, done: int, total: int) -> None:
        entry = ls._pass_tokens.get(workspace)
        if entry is None or total <= 0:
            return
        token, last = entry
        now = time.monotonic()
        if now - last < PROGRESS_EVERY_S and done < total:
            return
        ls._pass_tokens[workspace] = (token, now)
        ls.soon(ls.work_done_progress.report, token,
                types.WorkDoneProgressReport(message=f"{done * 100 // total}% of transcripts read",
                                             percentage=min(100, done * 100 // total)))

    def ran(workspace: Path, report: PassReport, proposer: ProposerReport | None) -> None:
        entry = ls._pass_tokens.pop(workspace, None)
        if entry is not None:
            _end_progress(ls, entry[0], f"{report.sessions} sessions, {report.recipes} recipes")
        sidecar = ls.sidecars.get(workspace)
        ls.notify(M.PASS_RAN, P.PassRanNotification(
            workspace=from_fs_path(str(workspace)) or str(workspace), report=report,
            raised=proposer.raised if proposer else [], proposer_error=sidecar.proposer_error if sidecar else None))

    def changed(workspace: Path, cards: list[Proposal], paths: set[str]) -> None:
        sidecar = ls.sidecars.get(workspace)
        if sidecar is None:
            return
        uris = sorted(uri_of(workspace, rel) for rel in paths)
        for rel in paths:
            ls.soon(ls.text_document_publish_diagnostics,
                    types.PublishDiagnosticsParams(uri=uri_of(workspace, rel), diagnostics=diagnostics_for(sidecar, rel)))
        ls.notify(M.PROPOSALS_CHANGED, P.ProposalsChangedNotification(
            workspace=from_fs_path(str(workspace)) or str(workspace), uris=uris, pending=len(cards)))
        caps = ls.client_capabilities.workspace
        if caps is not None and caps.code_lens is not None and caps.code_lens.refresh_support:
            ls.soon(lambda: ls.workspace_code_lens_refresh(None))

    def decided(workspace: Path, decision: Decision) -> None:
        sidecar = ls.sidecars.get(workspace)
        ls.notify(M.PROPOSAL_DECIDED, P.ProposalDecidedNotification(
            **_decision_result(sidecar, decision).model_dump(), workspace=from_fs_path(str(workspace)) or "",
            title=decision.title,
            gate_summary=decision.gate.summary if decision.gate else None,
            gate_failures=_core['core.proposals.wording'].readable_failures(decision.gate.failures[:20])
            if decision.gate else []))

    def raised(workspace: Path, cards: list[Proposal]) -> None:
        for card in cards:
            ls.notify(M.QUESTION, question_of(card))

    def withdrawn(workspace: Path, ids: list[str], why: str) -> None:
        ls.notify(M.QUESTION_WITHDRAWN, P.QuestionWithdrawnNotification(
            workspace=from_fs_path(str(workspace)) or str(workspace), question_ids=ids, reason=why))

    return _core['core.sidecar'].SidecarEvents(pass_started=started, pass_progress=progress, pass_ran=ran, proposals_changed=changed,
                         decided=decided, raised=raised, questions_withdrawn=withdrawn)


# -- the server -------------------------------------------------------------------------------------------


def build_server() -> KitsokiServer:
    server = KitsokiServer()

    @server.feature(types.INITIALIZE)
    def initialize(ls: KitsokiServer, params: types.InitializeParams) -> None:
        ls.init_options = params.initialization_options  # checked in start_sidecars, where it is used

    @server.feature(types.INITIALIZED)
    async def initialized(ls: KitsokiServer, params: types.InitializedParams) -> None:
        ls.loop = asyncio.get_running_loop()
        await ls.off_loop(start_sidecars, ls)
        for sidecar in ls.sidecars.values():
            # Publish what is already pending (from a previous session's trace and stage).
            ls.soon(lambda s=sidecar: [ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
                uri=uri_of(s.workspace, rel), diagnostics=diagnostics_for(s, rel))) for rel in s.paths()])

    @server.feature(types.SHUTDOWN)
    async def shutdown(ls: KitsokiServer, params: None) -> None:
        await ls.off_loop(stop_sidecars, ls)

    @server.feature(types.TEXT_DOCUMENT_CODE_LENS)
    def code_lens(ls: KitsokiServer, params: types.CodeLensParams):
        sidecar = ls.sidecar_for(params.text_document.uri)
        if sidecar is None:
            return []
        return PlainJSON(ls.cached(sidecar, ("lens", params.text_document.uri),
                                   lambda: ls.protocol._converter.unstructure(lenses_impl(ls, params))))

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def hover(ls: KitsokiServer, params: types.HoverParams):
        return hover_impl(ls, params)

    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION,
                    types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix]))
    def code_action(ls: KitsokiServer, params: types.CodeActionParams):
        return code_actions_impl(ls, params)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    async def did_save(ls: KitsokiServer, params: types.DidSaveTextDocumentParams) -> None:
        sidecar = ls.sidecar_for(params.text_document.uri)
        path = to_fs_path(params.text_document.uri)
        # A staged draft being refined lives under .artifacts/: saving it changes no live target, but
        # the person saw what they saved, so its card is shown with that draft (when disk holds it).
        if sidecar is not None and path and ".artifacts" not in Path(path).parts:
            await ls.off_loop(sidecar.kitsoki_files_changed, [path])
        elif sidecar is not None and path:
            recipe_id = _draft_recipe(sidecar, Path(path))
            document = ls.workspace.text_documents.get(params.text_document.uri)
            if recipe_id is not None and document is not None and read_live(Path(path)) == document.source.encode():
                await ls.off_loop(sidecar.show_refined, recipe_id)

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: KitsokiServer, params: types.DidOpenTextDocumentParams) -> None:
        sidecar = ls.sidecar_for(params.text_document.uri)
        if sidecar is not None:
            rel = _rel(sidecar, params.text_document.uri)
            ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
                uri=params.text_document.uri, diagnostics=diagnostics_for(sidecar, rel)))

    @server.feature(M.MINE_STATUS)
    def mine_status(ls: KitsokiServer, params: Any):
        return PlainJSON(mine_status_impl(ls, params))

    @server.feature(M.MINE_CONTROL)
    def mine_control(ls: KitsokiServer, params: Any):
        return PlainJSON(mine_control_impl(ls, params))

    @server.feature(M.PROPOSALS)
    def proposals(ls: KitsokiServer, params: Any):
        return PlainJSON(proposals_impl(ls, params))

    @server.feature(M.PROPOSAL)
    def proposal(ls: KitsokiServer, params: Any):
        return PlainJSON(proposal_impl(ls, params))

    @server.feature(M.PROPOSAL_CONTENT)
    def proposal_content(ls: KitsokiServer, params: Any):
        return PlainJSON(proposal_content_impl(ls, params))

    @server.feature(M.ANSWER_QUESTION)
    async def answer_question(ls: KitsokiServer, params: Any):
        p = validated(P.AnswerQuestionParams, params, M.ANSWER_QUESTION)
        learnings = await ls.off_loop(learnings_answer, ls, p)
        if learnings is not None:
            return PlainJSON(learnings)
        _, card = ls.find_card(p.question_id)
        result = await decide_impl(ls, card.recipe_id, answer_of(p, card))
        return result.model_dump(mode="json")

    @server.feature(M.EVOLVE)
    async def evolve(ls: KitsokiServer, params: Any):
        return PlainJSON(await ls.off_loop(evolve_impl, ls, params))

    @server.feature(M.RUNS)
    async def runs(ls: KitsokiServer, params: Any):
        return PlainJSON(await ls.off_loop(runs_impl, ls, params))

    for name, verdict in ((M.CMD_ACCEPT, "accept"), (M.CMD_REFINE, "refine"), (M.CMD_REJECT, "reject")):
        def make(verdict: str, name: str):
            async def command(ls: KitsokiServer, *args):
                return (await decide_impl(ls, _id_arg(args, name), verdict)).model_dump(mode="json")
            return command
        server.command(name)(make(verdict, name))

    @server.command(M.CMD_RESOLVE)
    async def resolve(ls: KitsokiServer, *args):
        return await ls.off_loop(resolve_impl, ls, args)

    @server.command(M.CMD_DIFF)
    def diff(ls: KitsokiServer, *args):
        sidecar, card = ls.find_card(_id_arg(args, M.CMD_DIFF))
        return P.DiffResult(id=card.recipe_id, diff=card.diff).model_dump(mode="json")

    @server.command(M.CMD_CHOOSE)
    async def choose(ls: KitsokiServer, *args):
        return await choose_impl(ls, _id_arg(args, M.CMD_CHOOSE))

    @server.command(M.CMD_SHOW)
    def show_proposals(ls: KitsokiServer, *args):
        uri = _uri_arg(args, M.CMD_SHOW)
        return proposals_impl(ls, {"uri": uri} if uri else {})

    for name, action in ((M.CMD_MINE_NOW, "now"), (M.CMD_PAUSE, "pause"), (M.CMD_RESUME, "resume")):
        def make_control(action: str):
            def command(ls: KitsokiServer, *args):
                uri = _uri_arg(args, f"kitsoki.{action}")
                return mine_control_impl(ls, {"action": action, **({"uri": uri} if uri else {})})
            return command
        server.command(name)(make_control(action))

    @server.command(M.CMD_PROPOSE)
    async def propose(ls: KitsokiServer, *args):
        reports = []
        for sidecar in ls.sidecars.values():
            report = await ls.off_loop(sidecar.propose)
            reports.append(report.model_dump(mode="json") if report else {"error": sidecar.proposer_error})
        return {"reports": reports}

    return server


def start_sidecars(ls: KitsokiServer) -> None:
    folders = ls.workspace.folders.values() if ls.workspace.folders else []
    options, problems = P.initialization_options(ls.init_options)
    roots = []
    for folder in folders:
        path = to_fs_path(folder.uri) if folder.uri.startswith("file:") else None
        if path and "\x00" in path:
            problems.append(f"workspace folder {folder.uri[:200]!r} names a path with a NUL; not served")
        elif path:
            roots.append(Path(path))
        else:
            problems.append(f"workspace folder {folder.uri[:200]!r} is not a file: URI; not served")
    if not roots and not folders and ls.workspace.root_path:
        roots = [Path(ls.workspace.root_path)]
    mining, dirs = options.mining, [Path(d) for d in options.transcriptDirs]
    for root in roots:
        try:
            if not (root / ".kitsoki.yaml").is_file():
                continue
        except (OSError, ValueError) as exc:  # a name too long, a NUL, a loop: say so, serve the others
            problems.append(f"workspace folder {str(root)[:200]!r} cannot be read "
                            f"({getattr(exc, 'strerror', None) or exc}); not served")
            continue
        sidecar = _core['core.sidecar'].WorkspaceSidecar(root.absolute(), events=make_events(ls), mining=mining, transcript_dirs=dirs,
                                   watch=options.watch)
        ls.sidecars[sidecar.workspace] = sidecar
        sidecar.start()
        ls.soon(ls.window_log_message, types.LogMessageParams(
            type=types.MessageType.Info, message=f"{SOURCE}: serving {root} ({len(sidecar.cards())} pending)"))
    report_problems(ls, problems)


def report_problems(ls: KitsokiServer, problems: list[str]) -> None:
    """Bad settings from the client: one pop-up for all, a log line each; the rest is still used."""
    if not problems:
        return
    for problem in problems:
        log.warning("%s", problem)
        ls.soon(ls.window_log_message, types.LogMessageParams(type=types.MessageType.Warning,
                                                              message=f"{SOURCE}: {problem}"))
    ls.soon(ls.window_show_message, types.ShowMessageParams(type=types.MessageType.Warning,
                                                            message=f"{SOURCE}: " + "; ".join(problems)))


def stop_sidecars(ls: KitsokiServer) -> None:
    for sidecar in ls.sidecars.values():
        sidecar.stop()
    ls.work.shutdown(wait=False, cancel_futures=True)


def serve(tcp: str | None = None) -> int:
    """Serve until the client exits; the exit code LSP asks for (server/transport.py reads the wire)."""
    server = build_server()
    if tcp:
        host, _, port = tcp.rpartition(":")
        return serve_tcp(server, host or "127.0.0.1", int(port))
    return serve_stdio(server)
