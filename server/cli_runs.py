"""`kitsoki-miner runs ...`: prepared analysis runs from a terminal, over the core.runs functions.

Verbs: projects, coverage, confirm, prepare, list, status, reuse, resume, finish, delete, groups,
cancel, workdir. Every verb takes --json; prepare shows a progress bar (on a terminal) with the
phases checking sessions, preparing excerpts, creating snippets, writing and validating the plan.
"""

from __future__ import annotations

import argparse
import sys

import orjson
from rich.console import Console
from rich.markup import escape

from core import runs
from core.runs.errors import RunError
from core.runs.inventory import Sources
from server.cli import path_arg

VERBS = ("projects", "coverage", "confirm", "prepare", "list", "status", "reuse", "resume", "finish", "delete",
         "groups", "cancel", "workdir")


def add_runs_commands(sub) -> argparse.ArgumentParser:
    runs_p = sub.add_parser("runs", help="prepared analysis runs: cut history into task packets for LLM review",
                            description="Prepare Claude Code and Pi history as bounded task packets for LLM "
                                        "review, and keep the run's state truthful.")
    verbs = runs_p.add_subparsers(dest="runs_command", required=True, metavar="VERB")

    def verb(name, text, *, workdir=True, run=False, session=False, sources=False):
        p = verbs.add_parser(name, help=text, description=text[0].upper() + text[1:] + ".")
        p.add_argument("--json", action="store_true", help="print JSON")
        if workdir:
            p.add_argument("--workdir", help="the run workdir (absolute); `runs workdir` suggests one")
        if run:
            p.add_argument("--run", dest="run_id", required=run == "required", metavar="RUN_ID",
                           help="the exact Run ID")
        if session:
            p.add_argument("--session", dest="current_session", metavar="ID",
                           help="the current session's id (excluded from coverage; one active run per session)")
        if sources:
            p.add_argument("--dir", dest="dirs", action="append", type=path_arg, default=[],
                           help="read transcripts under DIR instead of the default locations (repeatable)")
        return p

    p = verb("projects", "list projects named by session headers (full roots), a page at a time",
             workdir=False, sources=True)
    p.add_argument("--offset", type=int, default=0)
    p.add_argument("--limit", type=int, default=50)
    p = verb("coverage", "aggregate coverage of one project and timeframe; creates or updates a run",
             run=True, session=True, sources=True)
    p.add_argument("project", help="the project's full root, as `runs projects` lists it")
    p.add_argument("--since", help="YYYY-MM-DD or ISO-8601 instant")
    p.add_argument("--until", help="YYYY-MM-DD (the whole day) or ISO-8601 instant")
    p.add_argument("--name", help="run name (default: the project's folder name)")
    p.add_argument("--goal", default="", help="what the analysis is for")
    p.add_argument("--assignment", help="the English assignment each worker gets")
    p.add_argument("--exclude", action="append", default=[], metavar="SESSION_ID", help="leave a session out")
    p.add_argument("--no-redact", action="store_true", help="keep secrets in the evidence")
    p = verb("confirm", "confirm the coverage last shown", run=True, session=True)
    p.add_argument("--digest", help="the coverage digest shown (refused when the coverage changed)")
    p = verb("prepare", "prepare the confirmed run: check sessions, excerpt, cut snippets, write the plan",
             run=True, session=True, sources=True)
    p.add_argument("--workers", type=int, default=4, help="worker processes (default 4)")
    verb("list", "list the runs in a workdir")
    verb("status", "a run's status as the files on disk support it", run="required")
    p = verb("reuse", "a new run over an existing cut, with its own goal and outputs", run="required", session=True)
    p.add_argument("--goal", required=True)
    p.add_argument("--name")
    p.add_argument("--assignment")
    verb("resume", "take up a prepared run again (same Run ID)", run="required", session=True)
    p = verb("finish", "verify every analysis and summary.md; complete the run", run="required")
    p.add_argument("--partial", action="store_true",
                   help="complete over missing tasks; summary.md must say PARTIAL and name them")
    verb("delete", "delete a finished, canceled or failed run (exact Run ID)", run="required")
    p = verb("groups", "ordered groups of analyses that fit a context budget", run="required")
    p.add_argument("--budget", dest="budget_bytes", type=int, required=True, help="bytes per group")
    p.add_argument("--round", type=int, default=1)
    verb("cancel", "cancel an active run; every file is kept", run="required")
    verb("workdir", "the suggested workdir (the last plan-ready run's, or the default)", workdir=False)
    return runs_p


def _json(out, payload) -> None:
    out.write(orjson.dumps(payload, option=orjson.OPT_INDENT_2).decode() + "\n")


def _dump(value):
    return value.model_dump(mode="json") if hasattr(value, "model_dump") else value


def _sources(args) -> Sources:
    return Sources(dirs=list(getattr(args, "dirs", []) or []))


def run_runs(args: argparse.Namespace, out=sys.stdout, err=sys.stderr) -> int:
    verb = args.runs_command
    console = Console(file=out, width=None if out.isatty() else 160, highlight=False)
    try:
        if verb == "workdir":
            result = runs.suggest_workdir()
        elif verb == "projects":
            result = runs.list_projects(_sources(args), offset=args.offset, limit=args.limit)
        else:
            if not args.workdir:
                hint = runs.suggest_workdir()
                note = f" ({hint['warning']})" if hint["warning"] else ""
                err.write(f"--workdir is required; suggested: --workdir {hint['suggestion']}{note}\n")
                return 2
            result = _call(verb, args, err)
    except RunError as exc:
        if args.json:
            _json(out, exc.to_json())
        err.write(f"{exc}\n")
        return 2
    payload = _dump(result)
    if args.json:
        _json(out, payload)
    else:
        _print(verb, payload, console)
    if verb == "finish" and not payload["complete"]:
        return 1
    return 0


def _call(verb: str, args, err):
    wd = args.workdir
    a = vars(args)
    if verb == "coverage":
        return runs.coverage(wd, args.project, args.since, args.until, run_id=args.run_id, name=args.name,
                             goal=args.goal, assignment=args.assignment, exclude=args.exclude,
                             current_session=args.current_session, redact=not args.no_redact,
                             sources=_sources(args))
    if verb == "confirm":
        return runs.confirm(wd, args.run_id, digest=args.digest, current_session=args.current_session)
    if verb == "prepare":
        return _prepare(args, err)
    if verb == "list":
        return runs.list_runs(wd)
    if verb == "status":
        return runs.status(wd, args.run_id)
    if verb == "reuse":
        return runs.reuse(wd, args.run_id, goal=args.goal, name=args.name, assignment=args.assignment,
                          current_session=args.current_session)
    if verb == "resume":
        return runs.resume(wd, args.run_id, current_session=a.get("current_session"))
    if verb == "finish":
        return runs.finish(wd, args.run_id, partial=args.partial)
    if verb == "delete":
        return runs.delete(wd, args.run_id)
    if verb == "groups":
        return runs.groups(wd, args.run_id, args.budget_bytes, args.round)
    if verb == "cancel":
        return runs.cancel(wd, args.run_id)
    raise RunError(f"unknown verb {verb}")


def _prepare(args, err):
    kwargs = dict(run_id=args.run_id, current_session=args.current_session, sources=_sources(args),
                  workers=args.workers)
    if not err.isatty():
        return runs.prepare(args.workdir, **kwargs)
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  console=Console(file=err), transient=True) as bar:
        tasks: dict[str, int] = {}

        def progress(phase: str, done: int, total: int) -> None:
            if phase not in tasks:
                tasks[phase] = bar.add_task(phase, total=total or None)
            bar.update(tasks[phase], completed=done, total=total or None)

        return runs.prepare(args.workdir, progress=progress, **kwargs)


def _print(verb: str, p: dict, console: Console) -> None:
    say = console.print
    if verb == "workdir":
        say(escape(p["suggestion"]) + (f"  [dim]({escape(p['warning'])})[/dim]" if p["warning"] else ""))
    elif verb == "projects":
        for e in p["projects"]:
            say(f"{escape(e['project'])}  [dim]{e['sessions']} sessions, latest {e['latest']}[/dim]")
        if p["next_offset"] is not None:
            say(f"[dim]more: --offset {p['next_offset']} ({p['total']} projects)[/dim]")
    elif verb in ("coverage", "confirm"):
        c = p["coverage"]
        say(f"run {p['run_id']} ({p['status']}{', confirmed' if p['confirmed'] else ''}): {escape(c['project'])}")
        say(f"  {c['sessions']} sessions, {c['earliest']} .. {c['latest']}, about {c['approx_bytes']} bytes; "
            f"{c['supported']} supported, {c['unsupported']} unsupported; {c['excluded']} excluded")
        for e in p["exclusions"]:
            say(f"  excluded {escape(e['id'])} ({e['reason']}{'' if e['matched'] else ', not in this coverage'})")
        if p.get("cleared_confirmation"):
            say("  the earlier confirmation was cleared: confirm again")
        if not p["confirmed"]:
            say(f"  confirm with: kitsoki-miner runs confirm --workdir ... --digest {c['digest']}")
    elif verb == "prepare":
        say(f"run {p['run_id']}: {p['status']}, {p['tasks']} tasks, {p['evidence_bytes']} bytes of evidence, "
            f"{p['malformed_lines']} malformed and {p['omitted_lines']} omitted lines (see run.json)")
        say(f"  start with {escape(p['readme'])}")
    elif verb == "list":
        for r in p["runs"]:
            say(f"{r['run_id']}  {r['status']:<10} {r['done']}/{r['tasks']}  {escape(r['name'])}")
        for b in p["broken"]:
            say(f"[red]{escape(b['message'])}[/red]")
    elif verb in ("status", "reuse", "resume", "cancel"):
        say(f"run {p['run_id']} ({escape(p['name'])}): {p['status']}"
            + (f" [{p['phase']}]" if p["status"] == "preparing" else "") + f", {p['done']}/{p['tasks']} analyzed")
        for s in p["task_states"]:
            if s["state"] != "done":
                say(f"  {s['id']} {s['state']}" + (f": {escape(s['detail'])}" if s["detail"] else ""))
        for n in p["notes"]:
            say(f"  note: {escape(n)}")
        if p.get("last_error"):
            say(f"  last error: {escape(p['last_error']['message'])}")
    elif verb == "finish":
        say(f"run {p['run_id']}: {p['status']}" + (" (partial)" if p["complete"] and p["partial"] else ""))
        for prob in p["problems"]:
            say(f"  {escape(prob)}")
    elif verb == "groups":
        say(f"round {p['round']} (budget {p['budget_bytes']} bytes){', final' if p['final'] else ''}:")
        for g in p["groups"]:
            say(f"  {g['id']} -> {escape(g['output'])}: {len(g['inputs'])} inputs, {g['bytes']} bytes"
                + (" (over budget alone)" if g["oversize"] else ""))
    elif verb == "delete":
        say(f"deleted {escape(p['deleted'])}")
