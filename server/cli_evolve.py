"""`kitsoki-miner evolve analyze|list|confirm|prune`: learnings for a terminal, over core.learnings.evolve.

Exit codes: 0 applied or no-op; 1 input or usage error, nothing touched; 2 failure (the library
threw); 3 the store lock is held by another writer (nothing written).
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

import orjson

from core.learnings.evolve import EvolveConfig, InputError, analyze, confirm, label, list_records, prune
from core.learnings.judgment import AgentJudge
from core.learnings.schema import LearningValidationError
from core.learnings.store import LearningsLockError


class _EvolveParser(argparse.ArgumentParser):
    """Usage errors under `evolve` exit 1 (input error, nothing touched), not argparse's 2."""

    def error(self, message):
        self.print_usage(sys.stderr)
        self.exit(1, f"{self.prog}: error: {message}\n")

    def parse_known_args(self, args=None, namespace=None):
        namespace, extras = super().parse_known_args(args, namespace)
        if extras:  # otherwise the top-level parser reports them, with argparse's exit 2
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return namespace, extras


def add_evolve_commands(sub) -> None:
    evolve = sub.add_parser("evolve", help="learnings: mine, list, confirm and prune (never loses a record)",
                            description="Learnings with confidence and expiry, mined from transcripts, confirmed "
                                        "by a person, kept in a store that archives every record it drops.")
    actions = evolve.add_subparsers(dest="evolve_action", required=True, parser_class=_EvolveParser)

    def common(p):
        p.add_argument("--repo", type=Path, help="workspace (default: the current folder)")
        p.add_argument("--store", type=Path, help="learnings.jsonl (default: .orchestrator/metrics/learnings.jsonl "
                                                  "when it exists, else .artifacts/learnings/learnings.jsonl)")
        p.add_argument("--json", action="store_true", help="print JSON instead of text")

    a = actions.add_parser("analyze", help="mine candidate learnings and ask which to keep (writes nothing)")
    common(a)
    a.add_argument("--transcripts", type=Path, action="append", default=[], metavar="DIR",
                   help="transcript folder (repeatable; default: the workspace's Claude Code / Pi history)")
    a.add_argument("--sessions-jsonl", type=Path, help="session-orchestrator sessions.jsonl "
                                                       "(default: .orchestrator/metrics/sessions.jsonl if present)")
    a.add_argument("--host-class", help="host class for hardware-pattern learnings")
    a.add_argument("--judge-command", help="external judge command (gets the judgment prompt on stdin)")
    a.add_argument("--judge-cassettes", type=Path, help="judge cassette folder (default .artifacts/learnings/cassettes)")
    a.add_argument("--judge-mode", choices=("replay", "record", "live"), default="replay")
    lst = actions.add_parser("list", help="list the learnings in the store")
    common(lst)
    lst.add_argument("--all", action="store_true", help="include expired and dead records")
    c = actions.add_parser("confirm", help="write the selected candidates of the last analyze")
    common(c)
    c.add_argument("--select", nargs="+", action="extend", default=[], metavar="ID",
                   help="candidate ids (or `[type] subject` labels) to keep")
    p = actions.add_parser("prune", help="archive expired and dead learnings, consolidate duplicates")
    common(p)
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--dry-run", action="store_true", help="report what would change (the default)")
    mode.add_argument("--apply", action="store_true", help="write the change")


def _config(args) -> EvolveConfig:
    workspace = (args.repo or Path.cwd()).absolute()
    judge = None
    if getattr(args, "judge_command", None):
        cassettes = args.judge_cassettes or workspace / ".artifacts" / "learnings" / "cassettes"
        judge = AgentJudge(shlex.split(args.judge_command), cassettes, args.judge_mode)
    return EvolveConfig(workspace=workspace, store=args.store,
                        transcript_dirs=list(getattr(args, "transcripts", []) or []),
                        sessions_jsonl=getattr(args, "sessions_jsonl", None), judge=judge,
                        host_class=getattr(args, "host_class", None))


def _json(out, payload) -> None:
    out.write(orjson.dumps(payload, option=orjson.OPT_INDENT_2).decode() + "\n")


def run_evolve(args: argparse.Namespace, out=sys.stdout, err=sys.stderr) -> int:
    try:
        if args.repo is not None and not Path(args.repo).is_dir():
            raise InputError(f"no such workspace folder: {args.repo}")
        from server.cli import say_attention

        say_attention(args.repo, err)
        config = _config(args)
        action = args.evolve_action
        if action == "analyze":
            return _analyze(config, args, out)
        if action == "list":
            return _list(config, args, out)
        if action == "confirm":
            return _confirm(config, args, out)
        if action == "prune":
            return _prune(config, args, out)
        raise InputError(f"unknown evolve action {action!r}")
    except InputError as exc:
        err.write(f"evolve: {exc}\n")
        return 1
    except LearningsLockError as exc:
        err.write(f"evolve: {exc}\n")
        return 3
    except LearningValidationError as exc:
        err.write(f"evolve: refused, nothing written: {exc}\n")
        return 2
    except Exception as exc:  # the library threw: report, never a traceback for the person
        err.write(f"evolve: failed: {type(exc).__name__}: {exc}\n")
        return 2


def _analyze(config: EvolveConfig, args, out) -> int:
    analysis = analyze(config)
    if args.json:
        _json(out, analysis.model_dump(mode="json"))
        return 0
    if not analysis.candidates:
        out.write("no candidate learnings\n")
        return 0
    for c in analysis.candidates:
        what = f"confirm {c.existing_id} -> {c.confidence:.2f}" if c.action == "confirm" else f"new {c.confidence}"
        out.write(f"{c.id}  {label(c)}  ({what})\n    {c.insight}\n    evidence: {c.evidence}\n")
        for cite in c.cites[:3]:
            out.write(f"    {cite.file}:{cite.line}\n")
        if c.relations:
            for d in c.relations:
                out.write(f"    judge: {d.decision} {', '.join(d.target_ids)}: {d.rationale}\n")
        elif c.possible_duplicates:
            out.write("    possible duplicates: " + ", ".join(f"{m.id} ({m.score:.2f})"
                                                           for m in c.possible_duplicates) + "\n")
    out.write(f"\nkeep some with: kitsoki-miner evolve confirm --select ID ...  (store: {analysis.store})\n")
    return 0


def _list(config: EvolveConfig, args, out) -> int:
    records = list_records(config, include_expired=args.all)
    if args.json:
        _json(out, {"store": str(config.store_path), "records": records})
        return 0
    for r in records:
        out.write(f"{r.get('id')}  [{r.get('type')}] {r.get('subject')}  conf {r.get('confidence')}  "
                  f"expires {r.get('expires_at')}\n")
    if not records:
        out.write(f"no learnings in {config.store_path}\n")
    return 0


def _confirm(config: EvolveConfig, args, out) -> int:
    result = confirm(config, args.select)
    if args.json:
        _json(out, result.model_dump(mode="json"))
    else:
        w = result.write
        out.write(f"confirmed {len(result.applied)}: kept {w.kept}, archived {w.archived} "
                  f"{w.byReason or ''} in {config.store_path}\n")
    return 0


def _prune(config: EvolveConfig, args, out) -> int:
    dry = not args.apply
    result = prune(config, dry_run=dry)
    payload = {"file": str(config.store_path), "entries_from": None, "scanned": result.scanned,
               "kept": result.kept, "archived": result.archived, "byReason": result.byReason,
               "dryRun": result.dryRun, "archivePath": result.archivePath}
    if result.malformed:
        payload["malformed"] = result.malformed
    if args.json:
        _json(out, payload)
    else:
        verb = "would archive" if dry else "archived"
        out.write(f"{config.store_path}: scanned {result.scanned}, kept {result.kept}, {verb} {result.archived} "
                  f"{result.byReason or ''}\n")
    return 0
