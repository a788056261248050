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
from pygls.exceptions import JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer
from pygls.protocol import default_converter
from pygls.protocol.json_rpc import JsonRPCNotification, JsonRPCRequestMessage
from pygls.uris import from_fs_path, to_fs_path

from server import methods as M
from server.views import (
    code_actions_impl,
    diagnostics_for,
    hover_impl,
    lenses_impl,
    question_of,
    resolve_lens_impl,
    uri_of,
)
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
                                         "core.locks", "core.proposals.wording", "core.proposals.reversal",
                                         "core.apply")}

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
        self.attention_said: set[tuple[Path, str]] = set()
        self.work = ThreadPoolExecutor(max_workers=2, thread_name_prefix="kitsoki-work")
        self.loop: asyncio.AbstractEventLoop | None = None
        self.init_options: Any = None
        self.options: Any = None
        """The checked initializationOptions (server.protocol.InitializationOptions)."""
        self.published: set[str] = set()
        self._pass_tokens: dict[Path, tuple[str, float]] = {}
        self.ready = asyncio.Event()
        """Set once the workspaces are served (after `initialized`): requests about proposals wait
        for it, so an editor's first question never gets an empty answer that only means "not yet"."""
        self.initializing = False
        self._progress_live: set[str] = set()
        """Progress tokens begun and not yet ended (only those get reports and an end)."""
        self._progress_ended: set[str] = set()
        self._progress_tasks: set[asyncio.Future] = set()
        self._answers: dict[tuple, tuple[object, Any]] = {}

    def cached(self, sidecar: WorkspaceSidecar, key: tuple, compute: Callable[[], Any]) -> Any:
        """An answer computed from the sidecar's inbox, reused until the inbox is refreshed (so a
        client asking for lenses on every keystroke costs a dictionary lookup)."""
        generation = sidecar.generation
        key = (sidecar.workspace, *key)  # two workspaces never share an answer (their generations may agree)
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


async def when_ready(ls: KitsokiServer, timeout: float = 120.0) -> None:
    """Wait (once, at start) until the workspaces are served; a client that never sent `initialized`
    is not kept waiting forever."""
    if ls.initializing and not ls.ready.is_set():
        try:
            await asyncio.wait_for(ls.ready.wait(), timeout)
        except TimeoutError:
            log.warning("answering before the workspaces were served (%.0f s)", timeout)


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


# The handlers' logic, by box (they use the names above; re-exported here for callers and tests).
from server.requests import (  # noqa: E402
    _draft_recipe,
    answer_of,
    decided_impl,
    evolve_impl,
    learnings_answer,
    mine_control_impl,
    mine_status_impl,
    proposal_content_impl,
    proposal_impl,
    proposals_impl,
    runs_impl,
)
from server.verdicts import (  # noqa: E402
    _decision_result,
    choose_impl,
    decide_impl,
    draft_in_front,
    resolve_impl,
    take_back_impl,
    taken_back_result,
    verdict_error,
)


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
        if sidecar is not None:
            report_problems(ls, new_attention(ls, sidecar))
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
        sidecar = ls.sidecars.get(workspace)
        for card in cards:  # the accept option says what the gate will do (computed here, off the loop)
            gate = sidecar.gate_preview_cached(card.recipe_id) if sidecar is not None else None
            ls.notify(M.QUESTION, question_of(card, gate, workspace))

    def taken_back(workspace: Path, reversal) -> None:
        ls.notify(M.TAKEN_BACK, taken_back_result(workspace, reversal))

    def problems_changed(workspace: Path, paths: set[str]) -> None:
        sidecar = ls.sidecars.get(workspace)
        if sidecar is None:
            return
        for rel in paths:  # published, or cleared once the file loads again
            ls.soon(ls.text_document_publish_diagnostics,
                    types.PublishDiagnosticsParams(uri=uri_of(workspace, rel), diagnostics=diagnostics_for(sidecar, rel)))
        caps = ls.client_capabilities.workspace
        if caps is not None and caps.code_lens is not None and caps.code_lens.refresh_support:
            ls.soon(lambda: ls.workspace_code_lens_refresh(None))

    def withdrawn(workspace: Path, ids: list[str], why: str) -> None:
        ls.notify(M.QUESTION_WITHDRAWN, P.QuestionWithdrawnNotification(
            workspace=from_fs_path(str(workspace)) or str(workspace), question_ids=ids, reason=why))

    return _core['core.sidecar'].SidecarEvents(pass_started=started, pass_progress=progress, pass_ran=ran, proposals_changed=changed,
                         decided=decided, raised=raised, questions_withdrawn=withdrawn, taken_back=taken_back,
                         problems_changed=problems_changed)


# -- the server -------------------------------------------------------------------------------------------


def build_server() -> KitsokiServer:
    server = KitsokiServer()

    @server.feature(types.INITIALIZE)
    def initialize(ls: KitsokiServer, params: types.InitializeParams) -> None:
        ls.init_options = params.initialization_options  # checked in start_sidecars, where it is used
        ls.initializing = True

    @server.feature(types.INITIALIZED)
    async def initialized(ls: KitsokiServer, params: types.InitializedParams) -> None:
        ls.loop = asyncio.get_running_loop()
        try:
            await ls.off_loop(_start_quietly, ls)
        finally:
            ls.ready.set()
        for sidecar in ls.sidecars.values():
            # Publish what is already pending (from a previous session's trace and stage).
            paths = set(sidecar.paths()) | {sidecar._rel(i.file) for i in sidecar.problems}
            ls.soon(lambda s=sidecar, paths=paths: [ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
                uri=uri_of(s.workspace, rel), diagnostics=diagnostics_for(s, rel))) for rel in paths])

    @server.feature(types.SHUTDOWN)
    async def shutdown(ls: KitsokiServer, params: None) -> None:
        await ls.off_loop(stop_sidecars, ls)

    @server.feature(types.TEXT_DOCUMENT_CODE_LENS, types.CodeLensOptions(resolve_provider=True))
    async def code_lens(ls: KitsokiServer, params: types.CodeLensParams):
        await when_ready(ls)
        sidecar = ls.sidecar_for(params.text_document.uri)
        if sidecar is None:
            return []
        return PlainJSON(ls.cached(sidecar, ("lens", params.text_document.uri),
                                   lambda: ls.protocol._converter.unstructure(lenses_impl(ls, params))))

    @server.feature(types.CODE_LENS_RESOLVE)
    async def code_lens_resolve(ls: KitsokiServer, params: types.CodeLens):
        # The gate preview loads the workspace: off the loop (a cached answer is a lookup).
        return await ls.off_loop(resolve_lens_impl, ls, params)

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
            card = sidecar.card(recipe_id) if recipe_id is not None else None
            in_front = draft_in_front(ls, sidecar, card) if card is not None else {}
            if in_front:  # an accept sent right after the save shows it again itself (server.verdicts)
                await ls.off_loop(sidecar.show_refined, card.recipe_id, in_front)

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: KitsokiServer, params: types.DidOpenTextDocumentParams) -> None:
        sidecar = ls.sidecar_for(params.text_document.uri)
        if sidecar is not None:
            rel = _rel(sidecar, params.text_document.uri)
            ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
                uri=params.text_document.uri, diagnostics=diagnostics_for(sidecar, rel)))

    @server.feature(M.MINE_STATUS)
    async def mine_status(ls: KitsokiServer, params: Any):
        await when_ready(ls)
        return PlainJSON(mine_status_impl(ls, params))

    @server.feature(M.MINE_CONTROL)
    async def mine_control(ls: KitsokiServer, params: Any):
        await when_ready(ls)
        return PlainJSON(mine_control_impl(ls, params))

    @server.feature(M.PROPOSALS)
    async def proposals(ls: KitsokiServer, params: Any):
        await when_ready(ls)
        return PlainJSON(proposals_impl(ls, params))

    @server.feature(M.PROPOSAL)
    async def proposal(ls: KitsokiServer, params: Any):
        await when_ready(ls)
        return PlainJSON(proposal_impl(ls, params))

    @server.feature(M.PROPOSAL_CONTENT)
    async def proposal_content(ls: KitsokiServer, params: Any):
        await when_ready(ls)
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

    for name, action in ((M.CMD_UNDO, "undo"), (M.CMD_RESTORE, "restore")):
        def make_take_back(action: str, name: str):
            async def command(ls: KitsokiServer, *args):
                return await take_back_impl(ls, _id_arg(args, name), action)
            return command
        server.command(name)(make_take_back(action, name))

    @server.feature(M.DECIDED)
    async def decided(ls: KitsokiServer, params: Any):
        await when_ready(ls)
        return PlainJSON(await ls.off_loop(decided_impl, ls, params))

    @server.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    async def folders_changed(ls: KitsokiServer, params: types.DidChangeWorkspaceFoldersParams) -> None:
        # pygls keeps ls.workspace.folders; serve the folders added, stop those removed.
        await ls.off_loop(change_folders, ls, [f.uri for f in params.event.added],
                          [f.uri for f in params.event.removed])

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


def _start_quietly(ls: KitsokiServer) -> None:
    from core.quiet import long_work

    with long_work():  # what the start loads (inbox, config) is long-lived: never walked by the collector again
        start_sidecars(ls)


def start_sidecars(ls: KitsokiServer) -> None:
    folders = ls.workspace.folders.values() if ls.workspace.folders else []
    options, problems = P.initialization_options(ls.init_options)
    ls.options = options
    roots = roots_of(ls, [folder.uri for folder in folders], problems)
    if not roots and not folders and ls.workspace.root_path:
        roots = [Path(ls.workspace.root_path)]
    serve_roots(ls, roots, problems)
    report_problems(ls, problems)


def roots_of(ls: KitsokiServer, uris: list[str], problems: list[str]) -> list[Path]:
    roots = []
    for uri in uris:
        path = to_fs_path(uri) if uri.startswith("file:") else None
        if path and "\x00" in path:
            problems.append(f"workspace folder {uri[:200]!r} names a path with a NUL; not served")
        elif path:
            roots.append(Path(path))
        else:
            problems.append(f"workspace folder {uri[:200]!r} is not a file: URI; not served")
    return roots


def serve_roots(ls: KitsokiServer, roots: list[Path], problems: list[str]) -> None:
    """A sidecar for each folder that holds a `.kitsoki.yaml` (and is not a staged draft)."""
    options = getattr(ls, "options", None) or P.initialization_options(None)[0]
    mining, dirs = options.mining, [Path(d) for d in options.transcriptDirs]
    for root in roots:
        try:
            if not (root / ".kitsoki.yaml").is_file():
                continue
        except (OSError, ValueError) as exc:  # a name too long, a NUL, a loop: say so, serve the others
            problems.append(f"workspace folder {str(root)[:200]!r} cannot be read "
                            f"({getattr(exc, 'strerror', None) or exc}); not served")
            continue
        refused = _core['core.sidecar'].not_a_workspace(root)
        if refused:  # a staged draft has a .kitsoki.yaml of its own: never mine or propose there
            problems.append(f"{refused}; not served")
            continue
        if root.absolute() in ls.sidecars:
            continue
        sidecar = _core['core.sidecar'].WorkspaceSidecar(root.absolute(), events=make_events(ls), mining=mining,
                                                          transcript_dirs=dirs, watch=options.watch)
        ls.sidecars[sidecar.workspace] = sidecar
        sidecar.start()
        problems.extend(new_attention(ls, sidecar))
        ls.soon(ls.window_log_message, types.LogMessageParams(
            type=types.MessageType.Info, message=f"{SOURCE}: serving {root} ({len(sidecar.cards())} pending)"))


def change_folders(ls: KitsokiServer, added: list[str], removed: list[str]) -> None:
    """workspace/didChangeWorkspaceFolders: serve the folders added, stop serving those removed."""
    problems: list[str] = []
    for root in roots_of(ls, removed, problems):
        sidecar = ls.sidecars.pop(root.absolute(), None)
        if sidecar is not None:
            sidecar.stop()
            ls.soon(ls.window_log_message, types.LogMessageParams(
                type=types.MessageType.Info, message=f"{SOURCE}: no longer serving {root}"))
    serve_roots(ls, roots_of(ls, added, problems), problems)
    report_problems(ls, problems)


def new_attention(ls: KitsokiServer, sidecar: WorkspaceSidecar) -> list[str]:
    """The workspace's attention lines (core.attention: a signing key that cannot be used, an accept
    left unsettled) not yet said to this client: a pop-up once each, so an editor never shows an empty
    inbox with no word why; the status (`attention`) carries them all the time."""
    from core.attention import attention

    try:
        lines = attention(sidecar.workspace)
    except Exception as exc:  # noqa: BLE001 - a notice must never be what fails serving
        log.warning("could not read what needs attention in %s: %s", sidecar.workspace, exc)
        return []
    fresh = [line for line in lines if (sidecar.workspace, line) not in ls.attention_said]
    ls.attention_said.update((sidecar.workspace, line) for line in fresh)
    return fresh


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
    from core import quiet

    quiet.enable()  # passes and proposes on its worker threads must not stall the answers (collector pauses)
    server = build_server()
    if tcp:
        host, _, port = tcp.rpartition(":")
        return serve_tcp(server, host or "127.0.0.1", int(port))
    return serve_stdio(server)
