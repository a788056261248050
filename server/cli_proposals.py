"""`kitsoki-miner propose | proposals | accept | refine | reject | decided | undo | restore | resolve | flows |
demo`: the proposal half of the loop for a terminal, over the same core calls the language server makes.

Every workspace command first finishes what an interrupted accept left (recovery) and then says,
on stderr, what a person must know before anything else (core.attention): a signing key that
cannot be used, an accept that is not settled. A file-system fault (disk full, read-only, no
permission) is said in those words with the file, never as a traceback."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import orjson

from core.kitsoki.config import CONFIG_FILE, ConfigError, find_workspace
from server.cli import fault_text

# Each command imports what it runs inside its own function: a fresh `kitsoki-miner propose` with nothing
# changed answers from the proposer's memo in a fraction of a second, and must not first import the
# applier, the flow runner, the demo and rich for commands it is not running.


def _named_errors() -> tuple[type[BaseException], ...]:
    """The errors a command reports as one plain line (a damaged or planted state file is named, never a
    traceback). Imported only when an exception is on its way out: Python evaluates an `except`
    clause's expression only then."""
    from core.kitsoki.config import ConfigError
    from core.apply.resolve import ResolveRefused
    from core.mining.passes import RecipesFileError
    from core.proposals.outcomes import OutcomesError
    from core.proposals.settings import SettingsError
    from core.proposals.staging import StagedStateError
    from core.safeio import UnsafeFile
    from core.trace import TraceCorrupt

    return (ConfigError, SettingsError, RecipesFileError, StagedStateError, UnsafeFile, ResolveRefused,
            TraceCorrupt, OutcomesError)


def _key_unavailable() -> type[BaseException]:
    from core.authn import KeyUnavailable

    return KeyUnavailable


def _workspace_busy() -> type[BaseException]:
    from core.locks import WorkspaceBusy

    return WorkspaceBusy


def _trace_busy() -> type[BaseException]:
    from core.trace import TraceBusyError

    return TraceBusyError

def _workspace(args: argparse.Namespace) -> Path:
    workspace = args.repo or find_workspace(Path.cwd())
    if workspace is None or not (Path(workspace) / CONFIG_FILE).exists():
        raise ConfigError([])  # handled by _fail with a clear message
    return Path(workspace).absolute()


def _json(out, payload) -> None:
    out.write(orjson.dumps(payload, option=orjson.OPT_INDENT_2).decode() + "\n")


def _fail(err, message: str, code: int = 2) -> int:
    err.write(message.rstrip("\n") + "\n")  # plain: file:line:col stays on one line for editors
    return code


def _recover(workspace: Path, err) -> list[str]:
    """A leftover journal means an accept was interrupted: finish it before anything else, then say
    what a person must know (an unusable key, an accept left for them to settle)."""
    from core.apply import recover
    from core.locks import WorkspaceBusy
    from core.trace import trace_path
    from core.trace import Trace, TraceBusyError

    try:
        trace = Trace(trace_path(workspace))
        for record in recover(workspace, trace):
            if record.get("needs_person") or record.get("unresolved"):
                if record.get("gate"):
                    err.write(f"the gate of an interrupted accept of {record.get('recipe_id')}: {record['gate']}\n")
                continue  # said below, with its files, on this and every command until it is settled
            if record.get("refused"):
                err.write(f"refused an apply journal: {record['error']}; {record['advice']}\n")
                continue
            if record.get("spent"):
                err.write(f"an apply journal of {record.get('recipe_id')} was spent: {record['spent']}"
                          + (f"; moved to {record['moved_to']}" if record.get("moved_to") else "") + "\n")
                continue
            if record.get("left"):
                continue  # could not be finished here (read-only, full...): said below
            err.write(f"recovered an interrupted accept of {record.get('recipe_id')}: restored "
                      f"{', '.join(record.get('restored', [])) or 'nothing'}\n")
            if record.get("gate"):
                err.write(f"  its gate: {record['gate']}\n")
    except WorkspaceBusy:
        return []  # another process holds the workspace; it recovers, or we do next time
    except TraceBusyError:
        pass
    except OSError as exc:  # a read-only or full workspace, a state folder that is not one
        err.write(f"could not finish an interrupted accept here: {fault_text(exc)}\n")
    return say_attention(workspace, err)


def say_attention(workspace: Path, err) -> list[str]:
    """core.attention's lines, each on its own line of stderr; the lines."""
    from core.attention import attention

    lines = attention(workspace)
    for line in lines:
        err.write(f"attention: {line}\n")
    return lines


def run_command(args: argparse.Namespace, out=sys.stdout, err=sys.stderr) -> int:
    if args.command == "demo":
        return _demo(args, out, err)
    try:
        workspace = _workspace(args)
    except ConfigError:
        return _fail(err, f"no {CONFIG_FILE} here or above: pass --repo with a kitsoki workspace")
    said: list[str] = []
    try:
        if args.command == "flows":
            say_attention(workspace, err)
            return _flows(workspace, args, out, err)
        said = _recover(workspace, err)
        if args.command == "propose":
            return _propose(workspace, args, out)
        if args.command == "proposals":
            return _proposals(workspace, args, out)
        if args.command == "outcomes":
            return _outcomes(workspace, args, out)
        if args.command in ("decided", "undo", "restore"):
            return _take_back(workspace, args, out, err)
        if args.command == "resolve":
            return _resolve(workspace, args, out, err)
        return _decide(workspace, args, out, err)
    except _key_unavailable() as exc:
        if any(line.startswith("the signing key cannot be used") for line in said):
            return _fail(err, f"{args.command}: stopped: nothing can be shown or applied without a usable signing key "
                              "(see above)")
        return _fail(err, str(exc))
    except _named_errors() as exc:
        return _fail(err, str(exc))  # a damaged or planted state file is named, never a traceback
    except _workspace_busy() as exc:
        return _fail(err, str(exc), 3)
    except _trace_busy() as exc:
        return _fail(err, f"{exc}", 3)
    except OSError as exc:  # disk full, read-only, permission denied: said, with the file
        return _fail(err, f"{args.command}: {fault_text(exc)}; nothing was left half-written", 5)


def _propose(workspace: Path, args, out) -> int:
    from core.kitsoki.config import load_config
    from core.proposals.proposer import run_proposer
    from core.proposals.settings import configured_drafter

    drafter = configured_drafter(workspace, load_config(workspace))
    report = run_proposer(workspace, drafter=drafter)
    if args.json:
        _json(out, report.model_dump(mode="json"))
        return 0
    from rich.console import Console
    from rich.markup import escape

    console = Console(file=out, width=None if out.isatty() else 160, highlight=False)
    if not report.recipes:
        console.print("No recipes yet: run `kitsoki-miner mine` first.")
        return 0
    for outcome in report.outcomes:
        console.print(f"{outcome.result:<16} {outcome.kind:<8} {escape(outcome.title)}: {escape(outcome.reason)}")
    console.print(f"{len(report.raised)} raised; `kitsoki-miner proposals` shows them.")
    return 0


def _proposals(workspace: Path, args, out) -> int:
    from core.attention import attention
    from core.kitsoki.config import load_config
    from core.proposals.inbox import inbox

    unusable: dict[str, str] = {}
    cards = inbox(workspace, path=args.file, unusable=unusable, show=True)
    if args.json:
        from core.kitsoki.workspace import dev_story_source, workspace_sources

        _json(out, {"proposals": [card.model_dump(mode="json") for card in cards],
                    "unusable": unusable, "attention": attention(workspace),
                    "dev_story": dev_story_source(workspace, workspace_sources(workspace, load_config(workspace)))
                    .model_dump(mode="json")})
        return 0
    if not cards:
        out.write("No proposals waiting for a verdict.\n")
    for recipe_id, why in sorted(unusable.items()):
        out.write(f"{recipe_id}  not shown: {why}\n")
    for card in cards:
        label = ", MOVES ROUTES" if card.impact is not None and card.impact.moved else ""
        out.write(f"{card.recipe_id}  [{card.status}{label}] rung {card.rung} {card.kind}  priority {card.priority:g}\n")
        out.write(f"  {card.title}\n  {card.mapping.classification}: {card.mapping.reason}\n")
        if card.impact is not None:
            out.write("".join(f"  {line}\n" for line in card.impact.lines()))
        if card.runs_commands:
            out.write(f"  ! accepting it changes how kitsoki-miner runs commands: {', '.join(card.runs_commands)}\n")
        if card.failure:
            label = "refined draft" if card.status == "refining" else "last accept reverted"
            out.write(f"  {label}: {card.failure}\n")
        if card.proof is not None:
            if card.proof.path:
                out.write(f"  proof: {card.proof.path} asserts that {'; that '.join(card.proof.claims)}"
                          + (f" ({card.proof.verified})" if card.proof.verified else "") + "\n")
            for line in card.proof.unprovable:
                out.write(f"  not proven by a flow: {line}\n")
        for text, count in card.evidence.phrasings[:3]:
            out.write(f'  asked: "{text}" x{count}\n')
        for cite in card.evidence.cites[:3]:
            out.write(f"  cite: {cite.path}:{cite.line_start}-{cite.line_end}\n")
        if card.diff:
            out.write("".join(f"    {line}\n" for line in card.diff.rstrip("\n").splitlines()))
        out.write("\n")
    return 0


def _outcomes(workspace: Path, args, out) -> int:
    from core.proposals.outcomes import follow, status_line

    data = follow(workspace)
    if args.json:
        _json(out, data.model_dump(mode="json"))
        return 0
    if not data.outcomes:
        out.write("No decided proposals yet.\n")
        return 0
    out.write(f"{status_line(data)} (window {data.window_days:g} days)\n")
    for item in data.outcomes:
        last = f", last used {item.last_used[:10]}" if item.last_used else ""
        out.write(f"{item.recipe_id[:12]}  {item.verdict:<6}  {item.decided_at[:10]}  {item.status:<22}  {item.title}\n")
        if item.verdict == "accept":
            out.write(f"    uses since {item.uses}, free-form asks since {item.free_form}{last}"
                      + (f"; {item.target}" if item.target else "") + "\n")
        if item.note:
            out.write(f"    {item.note}\n")
    return 0


def _decide(workspace: Path, args, out, err) -> int:
    from core.apply import RevertFailed
    from core.proposals.decide import DecisionRefused, decide

    kwargs = {"unsaved": args.unsaved} if args.command == "accept" else {}
    try:
        decision = decide(workspace, args.id, args.command, **kwargs)
    except DecisionRefused as exc:
        if args.json:
            _json(out, {"recipe_id": args.id, "verdict": args.command, "refused": exc.reason, "message": str(exc)})
        return _fail(err, f"refused: {exc}", 1)
    except RevertFailed as exc:
        return _fail(err, f"the revert did not finish: {exc}; the journal is kept and the next start retries it", 4)
    if args.json:
        _json(out, decision.answer() | ({"draft_path": decision.draft_path} if decision.draft_path else {}))
    elif decision.verdict == "accept" and decision.unresolved:
        out.write(f"not settled: {decision.failure}\n")
    elif decision.verdict == "accept":
        if decision.flows_green:
            out.write(f"kept: {', '.join(decision.files)} ({decision.gate.summary if decision.gate else 'green'})\n")
        else:
            verb = "held" if decision.held else "reverted"
            why = (decision.failure or "").removeprefix("held: ") if decision.held else decision.failure
            out.write(f"{verb}, every byte restored: {why}\n")
            for failure in (decision.gate.failures if decision.gate else [])[:10]:
                out.write(f"  {failure}\n")
        ran = decision.ran_lines()
        if ran:
            out.write("flows:\n" + "".join(f"  {line}\n" for line in ran))
        if decision.proof:
            out.write(f"proof: {decision.proof}: {decision.proof_status()}\n")
        if decision.gate is not None and decision.gate.dev_story and decision.gate.runs:
            out.write(f"dev-story: {decision.gate.dev_story}\n")
        if decision.note:
            out.write(f"note: {decision.note}\n")
    elif decision.verdict == "refine":
        out.write(f"edit the staged draft, then accept again: {decision.draft_path}\n")
    else:
        out.write(f"rejected {decision.recipe_id}; it will not be raised again\n")
    return 0 if decision.verdict != "accept" or decision.flows_green else 1


def _take_back(workspace: Path, args, out, err) -> int:
    """`decided` lists what can be taken back; `undo` and `restore` take it back (core.proposals.reversal)."""
    from core.proposals.reversal import ReversalRefused, decided, restore_rejected, undo_accept
    from core.apply import RevertFailed

    if args.command == "decided":
        items = decided(workspace, state=args.state)
        if args.json:
            _json(out, {"decided": [item.model_dump(mode="json") for item in items]})
            return 0
        if not items:
            out.write("Nothing accepted or rejected yet.\n")
            return 0
        for item in items:
            action = f"`kitsoki-miner {item.can} {item.recipe_id[:12]}`" if item.can else f"cannot: {item.why_not}"
            out.write(f"{item.recipe_id[:12]}  {item.state:<8}  {item.decided_at[:19]}  {item.title}\n"
                      f"    {', '.join(item.files) or 'no file'}; {action}\n")
        return 0
    try:
        reversal = (undo_accept if args.command == "undo" else restore_rejected)(workspace, args.id)
    except ReversalRefused as exc:
        if args.json:
            _json(out, {"recipe_id": args.id, "action": args.command, "refused": exc.reason, "message": str(exc)})
        return _fail(err, f"refused: {exc}", 1)
    except RevertFailed as exc:
        return _fail(err, f"the undo did not finish: {exc}; the journal is kept and the next start retries it", 4)
    if args.json:
        _json(out, reversal.model_dump(mode="json"))
    elif reversal.action == "undo":
        put = f"put back {', '.join(reversal.restored)}" if reversal.restored else "the files already held their bytes"
        out.write(f"undid the accept of \"{reversal.title}\" ({put}); it is offered again\n")
    else:
        out.write(f"restored \"{reversal.title}\"; it is offered again\n")
    return 0


def _resolve(workspace: Path, args, out, err) -> int:
    """Show the accepts left for a person, or settle one by their choice (core.apply.resolve)."""
    from core.apply.resolve import resolve_accept, unsettled

    choice = "restore" if args.restore else "keep" if args.keep else None
    if choice is None:
        waiting = [u for u in unsettled(workspace) if args.id is None or u.recipe_id.startswith(args.id)]
        if args.json:
            _json(out, {"unsettled": [u.model_dump(mode="json") for u in waiting]})
            return 0
        if not waiting:
            out.write("No accept is waiting to be settled.\n")
            return 0
        for item in waiting:
            out.write(f"{item.recipe_id}  {'(journal verified)' if item.verified else '(journal NOT verified)'}"
                      f"  {item.journal}\n  {item.why}\n")
            for f in item.files:
                out.write(f"  {f.path}: before {f.before_sha256 or 'absent'}, accept wrote {f.after_sha256}, "
                          f"now {f.now_sha256 or 'absent'} ({f.now_is})\n")
            if item.restore_diff:
                out.write("  --restore would change:\n")
                out.write("".join(f"    {line}\n" for line in item.restore_diff.rstrip("\n").splitlines()))
            out.write(f"  settle it: kitsoki-miner resolve {item.recipe_id} --restore | --keep\n\n")
        return 0
    if args.id is None:
        return _fail(err, "resolve --restore / --keep needs the proposal's id")
    result = resolve_accept(workspace, args.id, choice)
    if args.json:
        _json(out, result.model_dump(mode="json"))
        return 0
    if choice == "keep":
        out.write(f"kept the tree as it is for {result.recipe_id}; recorded as accepted (kept by you, not gated)\n")
    else:
        out.write(f"restored {result.recipe_id}: {', '.join(result.restored + result.removed) or 'nothing to do'}\n")
        for path, copy in result.saved.items():
            out.write(f"  your version of {path} was copied to {copy} first\n")
        for path in result.kept:
            out.write(f"  {path} changed again while resolving and was left as it is\n")
    if result.gate:
        out.write(f"  its gate: {result.gate}\n")
    return 0


def _flows(workspace: Path, args, out, err=sys.stderr) -> int:
    from core.flows import format_text, run_flows

    report = run_flows(workspace, args.glob)
    if args.json:
        _json(out, report.model_dump(mode="json"))
    else:
        out.write(format_text(report))
    fatal = report.fatal()
    if fatal is not None:  # where kitsoki's `test flows` aborts the app run (exit 2), say so
        err.write(f"kitsoki-miner flows: {fatal}: kitsoki aborts that app's run here (exit 2, no report)\n")
        return 2
    if not report.Results:
        return 2
    return 0 if report.Failed == 0 else 1


def _demo(args, out, err) -> int:
    from core.demo.walkthrough import DemoError, run_demo

    try:
        if getattr(args, "pending", False):
            from core.demo.pending import describe, lay_out_pending

            out.write(describe(lay_out_pending(args.into)) + "\n")
            return 0
        run_demo(args.into, say=lambda text: out.write(text + "\n"))
    except DemoError as exc:
        return _fail(err, f"demo: {exc}")
    return 0
