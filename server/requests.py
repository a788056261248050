"""What the language server answers about mining and proposals: `kitsoki/mineStatus`,
`kitsoki/mineControl`, `kitsoki/proposals`, `kitsoki/proposal`, `kitsoki/proposalContent`,
`kitsoki/decided`, learnings (`kitsoki/evolve`) and runs (`kitsoki/runs`). Each `*_impl(ls, params)`
validates its params and translates to core calls; no domain logic here."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
from pygls.exceptions import JsonRpcInternalError, JsonRpcInvalidParams
from pygls.uris import to_fs_path

from server import lsp as _lsp
from server import methods as M
from server.views import card_of, decided_text, detail_of, read_live, waits_of
from server.views import rel_path as _rel

if TYPE_CHECKING:
    from core.proposals.model import Proposal
    from core.sidecar import WorkspaceSidecar
    from server.lsp import KitsokiServer

P = _lsp.P
_core = _lsp._core
validated = _lsp.validated


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
            card_of(s.workspace, c, waits_of(s, c)).model_dump(mode="json") for c in s.cards(r)])
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
    return detail_of(sidecar.workspace, card, gate=sidecar.gate_preview(card.recipe_id),
                     waits=waits_of(sidecar, card)).model_dump(mode="json")


def decided_impl(ls: KitsokiServer, params: Any) -> dict:
    """Accepted and rejected proposals of the served workspaces, and whether each can be undone
    (kitsoki.undo) or restored (kitsoki.restore) now."""
    from pygls.uris import from_fs_path

    p = validated(P.DecidedParams, params, M.DECIDED)
    out = []
    for sidecar in ls.sidecars_for(p.uri):
        folder = from_fs_path(str(sidecar.workspace)) or str(sidecar.workspace)
        out += [P.DecidedCard(id=d.recipe_id, workspace=folder, title=d.title, kind=d.kind, state=d.state,
                              decided_at=d.decided_at, files=d.files, can=d.can, why_not=d.why_not)
                for d in sidecar.decided(p.state)]
    out.sort(key=lambda d: d.decided_at, reverse=True)
    return P.DecidedResult(decided=out).model_dump(mode="json")


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
                ls.soon(ls.protocol.notify, M.QUESTION, _lsp.PlainJSON(card))
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


