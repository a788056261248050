"""`kitsoki-miner` command line: the same core calls the language server makes, for a terminal."""

from __future__ import annotations

import argparse
import os
import sys
from datetime import datetime, timezone
from pathlib import Path

from typing import TYPE_CHECKING

from server.client_paths import path_problem

if TYPE_CHECKING:
    from rich.console import Console

    from core.transcripts.ingest import ScanReport

# The domain is imported inside each command: `kitsoki-miner serve` must answer an editor's
# `initialize` without first loading what only the other commands use.

PROGRESS_BYTES = 32 * 1024 * 1024
"""Scans smaller than this finish before a progress bar would be worth drawing."""


def _date(text: str) -> datetime:
    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a date: {text!r} (use YYYY-MM-DD or an ISO-8601 time)")
    return value if value.tzinfo else value.replace(tzinfo=timezone.utc)


def _folder(text: str) -> Path:
    shown = text if len(text) <= 80 else text[:77] + "..."
    problem = path_problem(text)
    if problem:
        raise argparse.ArgumentTypeError(f"{shown}: {problem}")
    try:
        path = Path(text).expanduser()
        found = path.exists()
    except (OSError, RuntimeError) as exc:  # a name too long once expanded, an unknown ~user
        raise argparse.ArgumentTypeError(f"{shown}: {getattr(exc, 'strerror', None) or exc}") from None
    if not found:
        raise argparse.ArgumentTypeError(f"no such file or folder: {text}")
    return path


def path_arg(text: str) -> Path:
    """A path argument that need not exist yet, refused when no file system could hold it."""
    problem = path_problem(text)
    if problem:
        raise argparse.ArgumentTypeError(f"{text if len(text) <= 80 else text[:77] + '...'}: {problem}")
    return Path(text)


def fault_text(exc: OSError) -> str:
    """A file-system fault in a person's words, with the file ("disk full: <path> (No space ...)")."""
    from core.safeio import FAULTS

    word = FAULTS.get(exc.errno or 0, "cannot write")
    where = f": {exc.filename}" if isinstance(exc.filename, (str, bytes)) else ""
    return f"{word}{where} ({exc.strerror or exc})"


def no_workspace_message(repo: Path | None) -> str:
    """The refusal of a command that needs a kitsoki workspace (mine, propose, proposals, accept ...)."""
    from core.kitsoki.config import CONFIG_FILE

    where = f"in {repo}" if repo is not None else "here or above"
    return f"no {CONFIG_FILE} {where}: pass --repo with a kitsoki workspace"


def add_commands(sub, folder_type) -> None:
    def workspace_arg(p):
        p.add_argument("--repo", type=folder_type, help="workspace (default: the one holding the current folder)")
        p.add_argument("--json", action="store_true", help="print JSON instead of text")

    propose = sub.add_parser("propose", help="turn the latest recipes into proposals (drafted, validated, staged)",
                             description="Run the proposer on .artifacts/mining/recipes.json: map each recipe "
                                         "against what the workspace already models, draft the change, validate "
                                         "it and stage it under .artifacts/mining/<recipe_id>/. The live tree "
                                         "is never touched.")
    workspace_arg(propose)
    proposals = sub.add_parser("proposals", help="list the proposals waiting for a verdict, with diff and evidence")
    workspace_arg(proposals)
    proposals.add_argument("--file", help="only proposals that change this workspace-relative file")
    for verdict, text in (("accept", "apply a proposal; it is kept only if the flow gate stays green"),
                          ("refine", "mark a proposal for editing and print the staged draft to edit"),
                          ("reject", "reject a proposal; its recipe is not raised again")):
        p = sub.add_parser(verdict, help=text, description=text[0].upper() + text[1:] + ".")
        p.add_argument("id", help="the proposal's recipe id (or a unique prefix of it)")
        workspace_arg(p)
        if verdict == "accept":
            p.add_argument("--unsaved", action="append", default=[],
                           help="a workspace-relative file with unsaved editor changes (refused); repeatable")
    decided = sub.add_parser("decided", help="list accepted and rejected proposals, and whether each can be "
                                             "undone (accepted) or restored (rejected)")
    workspace_arg(decided)
    decided.add_argument("--state", choices=("accepted", "rejected"), help="only those")
    for verb, text in (("undo", "undo a kept accept: put back the bytes it replaced (refused when a file changed "
                                "since) and offer the proposal again"),
                       ("restore", "take a rejection back: the proposal is offered again")):
        p = sub.add_parser(verb, help=text, description=text[0].upper() + text[1:] + ".")
        p.add_argument("id", help="the proposal's recipe id (or a unique prefix of it)")
        workspace_arg(p)
    outcomes = sub.add_parser("outcomes", help="follow decided proposals: uses since, free-form asks since, status",
                              description="Follow every decided proposal through the sessions mined since its "
                                          "verdict: how many later prompts route to what it added, how many still "
                                          "asked the agent free-form, when it was last used. A kept change unused "
                                          "for miner.outcome_window (default 30d) is offered for revert as a "
                                          "proposal (accepted only through the flow gate).")
    workspace_arg(outcomes)
    resolve = sub.add_parser("resolve", help="show or settle an accept left unsettled (restore or keep)",
                             description="An accept that was interrupted and cannot be finished by the tool alone "
                                         "(its journal is signed with another key, or a file was edited while it "
                                         "ran) is listed on every command until a person settles it. Without "
                                         "--restore or --keep, show each such accept: its files' before / after / "
                                         "now hashes and what a restore would change. --restore puts the pre-accept "
                                         "bytes back (a version of yours is copied under .artifacts/mining/resolved/ "
                                         "first); --keep keeps the tree as it is. Either is recorded as the verdict.")
    resolve.add_argument("id", nargs="?", help="the proposal's recipe id (or a unique prefix of it)")
    workspace_arg(resolve)
    choice = resolve.add_mutually_exclusive_group()
    choice.add_argument("--restore", action="store_true", help="put the pre-accept bytes back")
    choice.add_argument("--keep", action="store_true", help="keep the tree as it is")
    flows = sub.add_parser("flows", help="run the workspace's flow fixtures with the built-in runner",
                           description="Run kitsoki flow fixtures (each story's flows/*.yaml and ./flows/*.yaml) "
                                       "with the built-in runner, a documented subset of `kitsoki test flows`. "
                                       "Exit 0 when every flow passes, 1 when one fails, 2 when none matched.")
    workspace_arg(flows)
    flows.add_argument("--flows", dest="glob", help="fixture glob, relative to the workspace")
    demo = sub.add_parser("demo", help="run the whole loop on the embedded demo workspace",
                          description="Lay out the embedded release-desk workspace and its transcripts, mine "
                                      "them, raise proposals and accept two through the flow gate: one that "
                                      "stays (flows green) and one that is reverted (a flow goes red).")
    demo.add_argument("--into", type=Path, help="an empty or new folder for the demo (default: a new temp folder)")
    demo.add_argument("--pending", action="store_true",
                      help="accept nothing: leave the proposals waiting for an editor, with mining pointed at "
                           "the demo's transcripts and editor settings that start this server")


def version() -> str:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed("kitsoki-miner")
    except PackageNotFoundError:
        return "unknown (not installed)"


class _Version(argparse.Action):
    """argparse's version action, with the version looked up only when asked for."""

    def __call__(self, parser, namespace, values, option_string=None):
        parser.exit(message=f"kitsoki-miner {version()}\n")


HEAVY_COMMANDS = frozenset({"evolve", "runs"})
"""Commands whose parsers live in modules that import most of the domain (learnings, runs): their
subparsers are built only when the command line names them, or asks for the list of commands."""


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole command line; given the command about to run, the heavy commands' parsers are left
    out unless it is one of them, so that `sessions` or `mine` does not import what only they use."""
    parser = argparse.ArgumentParser(
        prog="kitsoki-miner",
        description="Mine coding-agent transcripts (Claude Code, Pi) into proposals for kitsoki projects.",
    )
    parser.add_argument("--version", action=_Version, nargs=0, help="print the version and exit")
    sub = parser.add_subparsers(dest="command", required=True)
    sessions = sub.add_parser(
        "sessions",
        help="list the transcript sessions found, with what each holds",
        description=(
            "List transcript sessions. With --repo, the sessions Claude Code, Pi and Codex recorded for that "
            "repository; with --dir, every transcript under those folders; with neither, all history "
            "in the default locations, or the bundled example transcripts when there is none."
        ),
    )
    sessions.add_argument("--repo", type=_folder, help="repository whose sessions to find")
    sessions.add_argument("--dir", type=_folder, action="append", default=[], dest="dirs",
                          help="extra folder (or file) of transcripts; repeatable")
    sessions.add_argument("--format", choices=["auto", "claude", "pi", "codex"], default="auto")
    sessions.add_argument("--since", type=_date, help="only sessions active on or after this date")
    sessions.add_argument("--json", action="store_true", help="print JSON instead of a table")
    sessions.add_argument("--workers", type=int, default=None, help="reader processes (default: CPU count)")
    sessions.add_argument("--no-redact", action="store_true",
                          help="keep secrets in text (redaction is on by default)")

    where = sub.add_parser(
        "open", help="the transcript file a cite or session path names (a redacted path is found again)",
        description="Print the file on disk that a cite (`path:12` or `path:12-19`) or a session's `path` names. "
                    "A folder or file name that held a secret is shown redacted, with a `~<tag>`: this finds it "
                    "again by the tag. The answer is the real path, secrets included: for your own terminal.",
    )
    where.add_argument("cite", help="a display path, optionally with :LINE or :FIRST-LAST")

    mine = sub.add_parser(
        "mine",
        help="mine the workspace's transcripts into ranked recipes",
        description=(
            "Run one mining pass for a workspace (the folder holding .kitsoki.yaml; its mining: block "
            "is honoured). The first pass for a workspace is a seed pass over the most recent sessions; "
            "later passes read only what is new. Recipes go to .artifacts/mining/recipes.json and the "
            "pass is recorded in .artifacts/mining/trace.jsonl."
        ),
    )
    mine.add_argument("--repo", type=_folder, help="workspace (default: the one holding the current folder)")
    mine.add_argument("--dir", type=_folder, action="append", default=[], dest="dirs",
                      help="extra folder of transcripts; repeatable (adds to mining.transcript_dirs)")
    kind = mine.add_mutually_exclusive_group()
    kind.add_argument("--seed", action="store_const", const="seed", dest="trigger",
                      help="start over: mine the most recent sessions as on first launch")
    kind.add_argument("--live", action="store_const", const="live", dest="trigger",
                      help="mine only what is new since the last pass")
    mine.add_argument("--other-projects", action="store_true", default=None,
                      help="read the sessions of other projects found in the transcript folders too (as "
                           "mining.other_projects: true); their evidence only makes dev-story-enrich suggestions")
    mine.add_argument("--json", action="store_true", help="print JSON instead of a table")
    mine.add_argument("--workers", type=int, default=None, help="reader processes (default: CPU count)")
    add_commands(sub, _folder)
    _add_serve(sub)
    if command is None or command in HEAVY_COMMANDS:
        from server.cli_evolve import add_evolve_commands
        from server.cli_runs import add_runs_commands

        add_evolve_commands(sub)
        add_runs_commands(sub)
    mcp = sub.add_parser("mcp", help="run the MCP server for prepared analysis runs (stdio)",
                         description="Run an MCP server over stdio exposing the `runs` operations as tools, "
                                     "with the same argument bounds, for a coordinating coding agent.")
    mcp.set_defaults(command="mcp")
    return parser


def _add_serve(sub) -> None:
    serve = sub.add_parser("serve", help="run the language server (stdio by default)",
                           description="Run the kitsoki-miner language server for an editor: stdio by default, "
                                       "or TCP with --tcp HOST:PORT.")
    serve.add_argument("--tcp", metavar="HOST:PORT", help="listen on TCP instead of stdio")
    # Language clients (vscode-languageclient's TransportKind.stdio among them) append --stdio.
    serve.add_argument("--stdio", action="store_true", help="talk LSP over stdin/stdout (the default)")
    serve.add_argument("--log", type=Path, help="write the server's log to this file")


def _serve_parser() -> argparse.ArgumentParser:
    """`serve` alone: an editor starting the server should not pay for every command's imports."""
    parser = argparse.ArgumentParser(prog="kitsoki-miner")
    _add_serve(parser.add_subparsers(dest="command", required=True))
    return parser


def say_attention(workspace: Path | str | None, err) -> None:
    """An unusable key, an unsettled accept: said by every command that names a kitsoki workspace
    (core.attention; reads only). Nothing is imported without one: `sessions` stays light."""
    if workspace is None or not os.path.lexists(Path(workspace) / ".kitsoki.yaml"):  # core.kitsoki.config's name
        return
    from core.attention import attention

    for line in attention(Path(workspace).absolute()):
        err.write(f"attention: {line}\n")


def run_sessions(args: argparse.Namespace, out=sys.stdout, err=sys.stderr) -> int:
    import orjson

    from core.demo import demo_transcripts
    from core.transcripts.discover import discover
    from core.transcripts.ingest import scan

    say_attention(args.repo, err)
    units = discover(args.repo, args.dirs, fmt=args.format)
    source = None
    if not units and args.repo is None and not args.dirs:
        units = discover(None, [demo_transcripts()], fmt=args.format)
        source = "no transcripts found in the default locations; showing the bundled examples"
    total = sum(u.size for u in units)
    kwargs = dict(redact=not args.no_redact, workers=args.workers, since=args.since)
    if total >= PROGRESS_BYTES and err.isatty():
        from rich.console import Console
        from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn, TransferSpeedColumn

        columns = (BarColumn(), DownloadColumn(), TransferSpeedColumn(), TimeRemainingColumn())
        with Progress(*columns, console=Console(file=err), transient=True) as bar:
            task = bar.add_task("reading", total=total)
            report = scan(units, progress=lambda done, _t: bar.update(task, completed=done), **kwargs)
    else:
        report = scan(units, **kwargs)
    if args.json:
        payload = report.model_dump(mode="json")
        if source:
            payload["note"] = source
        out.write(orjson.dumps(payload, option=orjson.OPT_INDENT_2).decode() + "\n")
        return 0
    from rich.console import Console

    if source:
        Console(file=err).print(f"[dim]{source}[/dim]")
    # A pipe has no width; rich would fold every column into 80 characters.
    _print_table(report, Console(file=out, width=None if out.isatty() else 160))
    return 0


def _print_table(report: ScanReport, console: Console) -> None:
    from rich.table import Table

    if not report.sessions:
        console.print("No transcript sessions found.")
        return
    table = Table(show_footer=True, footer_style="bold")
    t = report.totals
    table.add_column("session", footer=f"{t.sessions} sessions")
    table.add_column("format")
    table.add_column("project")
    table.add_column("started")
    table.add_column("lines", justify="right", footer=str(t.lines))
    table.add_column("malformed", justify="right", footer=str(t.malformed))
    table.add_column("prompts", justify="right", footer=str(t.human_prompts))
    table.add_column("tool calls", justify="right", footer=str(t.tool_calls))
    table.add_column("agent", footer=str(t.agent_sessions))
    for s in report.sessions:
        table.add_row(
            s.id[:8],
            s.format,
            _short_path(s.project),
            s.started_at.strftime("%Y-%m-%d %H:%M") if s.started_at else "?",
            str(s.lines),
            str(s.malformed) if s.malformed else "",
            str(s.human_prompts),
            str(s.tool_calls),
            "yes" if s.agent_session else "",
        )
    console.print(table)


def _short_path(path: str | None) -> str:
    if not path:
        return "?"
    parts = Path(path).parts
    return path if len(parts) <= 4 else str(Path("…", *parts[-3:]))


def run_open(args: argparse.Namespace, out=sys.stdout, err=sys.stderr) -> int:
    """`open`: a cite's display path -> the file on disk (core/transcripts/display.py), lines kept."""
    import re

    from core.transcripts.display import real_path

    m = re.fullmatch(r"(.*?)(:\d+(?:-\d+)?)?", args.cite)
    try:
        found = real_path(m.group(1))
    except FileNotFoundError as exc:
        err.write(f"kitsoki-miner open: {exc}\n")
        return 1
    if not found.is_file():
        err.write(f"kitsoki-miner open: {args.cite}: no such file\n")
        return 1
    out.write(f"{found}{m.group(2) or ''}\n")
    return 0


def run_mine(args: argparse.Namespace, out=sys.stdout, err=sys.stderr) -> int:
    import orjson

    from core.kitsoki.config import CONFIG_FILE, ConfigError, find_workspace, load_config
    from core.mining.passes import MineResult, RecipesFileError, run_pass
    from core.mining.service import record_pass, trace_path
    from core.safeio import UnsafeFile
    from core.trace import Trace, TraceBusyError

    workspace = args.repo or find_workspace(Path.cwd())
    # Like proposals and accept: no workspace, no pass (it would write .artifacts/ wherever it ran).
    # A dangling .kitsoki.yaml symlink is the loader's to refuse, by name.
    if workspace is None or not os.path.lexists(Path(workspace) / CONFIG_FILE):
        err.write(no_workspace_message(args.repo) + "\n")
        return 2
    workspace = Path(workspace).absolute()
    try:
        kitsoki_config = load_config(workspace)
    except ConfigError as exc:
        err.write(f"{exc}\n")  # plain: a file:line:col must stay on one line for editors to link it
        return 2
    except OSError as exc:  # a special file, a loop: the loader names the file when it can
        err.write(f"{workspace / CONFIG_FILE}: cannot be read: {exc.strerror or exc}\n")
        return 2
    for warning in kitsoki_config.warnings:  # e.g. a mining: block in .kitsoki.local.yaml, which kitsoki ignores
        err.write(f"warning: {warning}\n")
    say_attention(workspace, err)
    config = kitsoki_config.mining
    dirs = [Path(d).expanduser().resolve() for d in [*config.transcript_dirs, *args.dirs]]
    kwargs = dict(repo=workspace, dirs=dirs, trigger=args.trigger, first_pass_sample=config.first_pass_sample,
                  priority_threshold=config.priority_threshold, mined_through=config.mined_through,
                  workers=args.workers, other_projects=bool(args.other_projects or config.other_projects),
                  project_paths=config.project_paths)
    try:
        if err.isatty():
            from rich.console import Console
            from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn, TransferSpeedColumn

            columns = (BarColumn(), DownloadColumn(), TransferSpeedColumn(), TimeRemainingColumn())
            with Progress(*columns, console=Console(file=err), transient=True) as bar:
                task = bar.add_task("mining", total=None)
                report, recipes = run_pass(
                    workspace, progress=lambda done, total: bar.update(task, completed=done, total=total), **kwargs)
        else:
            report, recipes = run_pass(workspace, **kwargs)
        try:
            record_pass(Trace(trace_path(workspace)), report)
        except TraceBusyError:
            from rich.console import Console

            Console(file=err).print("[yellow]the trace is held by a running kitsoki session: this pass is not recorded "
                                    "in it[/yellow]")
    except (RecipesFileError, UnsafeFile) as exc:  # our own state files, damaged or planted: named, never a traceback
        err.write(f"{exc}\n")
        return 2
    except OSError as exc:  # a full disk, a read-only workspace, a folder we may not use
        err.write(f"mine: {fault_text(exc)}; this pass was not recorded (the last complete pass's recipes stay)\n")
        return 5
    if args.json:
        result = MineResult(pass_=report, recipes=recipes)
        out.write(orjson.dumps(result.model_dump(mode="json", by_alias=True), option=orjson.OPT_INDENT_2).decode())
        out.write("\n")
        return 0
    from rich.console import Console

    _print_recipes(report, recipes, Console(file=out, width=None if out.isatty() else 160))
    return 0


def _print_recipes(report, recipes, console: Console) -> None:
    from rich.table import Table

    console.print(f"{report.trigger} pass: {report.sessions} sessions read ({report.bytes_read} bytes), "
                  f"{report.recipes} recipes -> {report.recipes_path}")
    if report.other_projects and report.reads_other_projects:
        console.print(f"other projects: {report.other_projects} sessions, read for suggestions only "
                      "(mining.other_projects)")
    elif report.other_projects:
        console.print(f"other projects: {report.other_projects} sessions left out (recorded outside this workspace "
                      "and its worktrees; mining.project_paths names other places this project was worked in)")
    if not recipes:
        console.print("No recipe recurs across sessions yet.")
        return
    table = Table()
    for name, justify in (("priority", "right"), ("kind", "left"), ("recipe", "left"), ("sessions", "right"),
                          ("actions", "left"), ("evidence", "left")):
        table.add_column(name, justify=justify)
    for r in recipes:
        cites = ", ".join(f"{Path(i.path).name}:{i.line_start}" for i in r.instances[:3])
        if len(r.instances) > 3:
            cites += f" (+{len(r.instances) - 3})"
        table.add_row(
            f"{r.priority:.1f}" + (" (below threshold)" if r.below_threshold else ""),
            r.kind, r.title, str(r.sessions), ", ".join(r.action_signature[:4]), cites,
        )
    console.print(table)


def _parser_for(argv: list[str]) -> argparse.ArgumentParser:
    if argv[:1] == ["serve"]:
        return _serve_parser()
    named = argv[0] if argv and not argv[0].startswith("-") else None
    return build_parser(named if named and named not in HEAVY_COMMANDS and named in _LIGHT else None)


_LIGHT = frozenset({"sessions", "mine", "open", "propose", "proposals", "outcomes", "accept", "refine", "reject", "decided", "undo",
                    "restore", "resolve", "flows", "demo", "mcp"})


_COLLECTOR_OFF = frozenset({"mine", "propose", "flows"})


def _collector_off_for_good() -> None:
    """`mine`, `propose` or `flows` as a process of its own: the cyclic collector is not needed (every object
    goes with the process), and what the command keeps (a corpus's episodes, a loaded tree) is frozen at exit
    so that the interpreter's last collection does not walk it (each walk of it cost tens of milliseconds).
    A propose allocates a loaded tree of a few hundred thousand objects that every full collection walked:
    cold on kitsoki's repository the collector was a fifth to a third of its CPU (a few MB more at peak;
    50 recipes on the shared workspace: 14.1 -> 11.1 s CPU, 252 -> 273 MB). A flows run on kitsoki's whole
    repository spent 0.5-0.7 s of its ~4 s in the collector even with core.quiet.fewer_collections (what
    each flow keeps is walked as it ages); without it, 148 -> 194 MB at peak (the runner's exceptions leave
    small cycles behind). In the server, flows keep the collector (core.quiet)."""
    import atexit
    import gc

    gc.disable()
    atexit.register(gc.freeze)


def main(argv: list[str] | None = None) -> int:
    whole_process = argv is None  # the console script: the process ends with the command
    argv = sys.argv[1:] if argv is None else argv
    if argv == ["--version"]:  # before any parser is built: the answer needs none
        sys.stdout.write(f"kitsoki-miner {version()}\n")
        return 0
    try:
        parser = _parser_for(argv)
        args = parser.parse_args(argv)
        if whole_process and args.command in _COLLECTOR_OFF:
            _collector_off_for_good()
        return _dispatch(args)
    except BrokenPipeError:  # `kitsoki-miner demo | head`: the reader left, nothing is wrong
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def _dispatch(args: argparse.Namespace) -> int:
    if args.command == "sessions":
        return run_sessions(args)
    if args.command == "mine":
        return run_mine(args)
    if args.command == "open":
        return run_open(args)
    if args.command == "serve":
        return run_serve(args)
    if args.command == "evolve":
        from server.cli_evolve import run_evolve

        return run_evolve(args)
    if args.command == "runs":
        from server.cli_runs import run_runs

        return run_runs(args)
    if args.command == "mcp":
        from server.mcp_runs import main as mcp_main

        return mcp_main() or 0
    from server.cli_proposals import run_command

    return run_command(args)


def run_serve(args: argparse.Namespace) -> int:
    import logging

    import faulthandler
    import signal

    from server.lsp import serve

    faulthandler.register(signal.SIGUSR1)  # `kill -USR1 <pid>` dumps every thread's stack to stderr
    if args.log:
        logging.basicConfig(filename=args.log, level=logging.INFO,
                            format="%(asctime)s %(name)s %(levelname)s %(message)s")
    if args.tcp and args.stdio:
        sys.stderr.write("kitsoki-miner serve: choose --stdio or --tcp, not both\n")
        return 2
    return serve(args.tcp)


if __name__ == "__main__":
    sys.exit(main())
