"""Action signatures: a tool call reduced to what stays the same each time a person asks for it.

`pytest tests/test_x.py -k foo` and `pytest -q` are both `Bash: pytest`; `gh pr create --fill` is
`Bash: gh pr create`; an edit is its file path relative to the project. Signatures are what
episodes are compared by, so the rules favour a stable head over detail.
"""

from __future__ import annotations

import functools
import re
import shlex
from pathlib import PurePosixPath

# Programs whose first (and sometimes second) word is the real command.
_SUBCOMMANDS_2 = frozenset({"gh", "kubectl", "docker-compose", "az", "gcloud", "aws", "glab"})
_SUBCOMMANDS_1 = frozenset({
    "git", "go", "npm", "pnpm", "yarn", "bun", "cargo", "docker", "mix", "uv", "poetry", "pip", "pip3",
    "make", "just", "bd", "kitsoki", "terraform", "helm", "rake", "bundle", "dotnet", "mvn", "gradle",
    "./gradlew", "brew", "apt", "apt-get", "systemctl", "tmux", "deno", "nx", "turbo", "rails", "composer",
    "supabase", "vercel", "wrangler", "flyctl", "fly", "heroku", "pre-commit", "tox", "nox", "hatch", "pdm",
    "alembic", "django-admin", "conda", "linear", "jira",
})
# `npm run build`, `yarn test`: the script name is the stable part.
_SCRIPT_RUNNERS = frozenset({"npm", "pnpm", "yarn", "bun", "uv", "poetry", "pdm", "hatch"})
# `go test ./...` keeps its package pattern: it is how people say "all of it".
_KEEP_PATTERNS = frozenset({"./...", "."})
_WRAPPERS = frozenset({"sudo", "time", "nohup", "env", "exec", "command", "npx", "bunx", "pnpx", "xargs"})
_SEPARATORS = re.compile(r"\s*(?:&&|\|\||;|\|(?!\|)|\n)\s*")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")

FILE_TOOLS = frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit", "Read", "Update", "edit", "write", "read",
                        "apply_patch"})
EDIT_TOOLS = frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit", "Update", "edit", "write", "apply_patch"})
# Codex: shell (argv joined by its reader), shell_command, exec_command, local_shell, container.exec
SHELL_TOOLS = frozenset({"Bash", "bash", "shell", "BashOutput", "shell_command", "exec_command", "local_shell",
                         "container.exec"})
QUESTION_TOOLS = frozenset({"AskUserQuestion", "ask_user", "askUserQuestion", "request_user_input"})
PLAN_TOOLS = frozenset({"ExitPlanMode"})
MACHINERY_TOOLS = frozenset({
    # plan mode and questions to the person (Claude Code, Codex, Pi extensions)
    "ExitPlanMode", "EnterPlanMode", "exit_plan_mode", "update_plan", "plan", *QUESTION_TOOLS,
    # todo lists
    "TodoWrite", "TodoRead", "todo_write", "todo_read", "todowrite", "todoread", "TaskCreate", "TaskUpdate",
    "TaskList", "TaskGet",
    # subagents and background work
    "Task", "Agent", "TaskOutput", "TaskStop", "KillShell", "KillBash", "BashOutput", "spawn_agent", "wait",
    "send_input", "close_agent", "resume_agent",
    # skills, slash commands, MCP resource listing, tool search
    "Skill", "SlashCommand", "ListMcpResourcesTool", "ReadMcpResourceTool", "list_mcp_resources",
    "list_mcp_resource_templates", "read_mcp_resource", "ToolSearch",
})
"""The agent's conversation machinery: how it talks with the person and organises itself, never the project's
own work. Never a gate, an intent's action or a binding."""

# Commands whose outcome the work forks on: a person refusing or stopping one is a decision about the project.
_CONSEQUENTIAL = re.compile(
    r"^(?:git (?:push|merge|rebase|reset|tag|commit|cherry-pick|revert|branch|clean|checkout)|"
    r"gh (?:pr (?:merge|create|close|review)|release|issue (?:close|create|edit)|workflow run|repo)|glab (?:mr|release)|"
    r"(?:npm|yarn|pnpm|cargo|gem|twine|poetry|uv|hatch|flit) publish|docker (?:push|rm|rmi|compose)|kubectl|helm|"
    r"terraform|pulumi|fly|flyctl|vercel|netlify|wrangler|heroku|supabase|alembic|rm|dropdb|psql|mysql|redis-cli|"
    r"aws|gcloud|az|ssh|scp|rsync)\b|(?:deploy|release|publish|migrat|destroy|drop|rollback|prod)")


def forks_work(tool: str, signature: str) -> bool:
    """A shell command whose outcome the project's work forks on (push, merge, deploy, migrate, publish, delete)."""
    if tool not in SHELL_TOOLS:
        return False
    head = signature.partition(": ")[2]
    return bool(head) and _CONSEQUENTIAL.search(head) is not None


def _segments(command: str) -> list[str]:
    return [s for s in _SEPARATORS.split(command.strip()) if s]


_SHELL_SPACE = re.compile(r"[ \t\r\n]+")
_SHLEX_SPECIAL = re.compile(r"[\"'\\#]")


def _words(segment: str) -> list[str]:
    """shlex.split(segment, comments=True), without shlex for the common segment that has nothing
    it would treat specially (no quote, backslash or `#`): then its words are the runs between
    shlex's whitespace. (shlex's tokenizer is a Python loop per character: it was most of the time
    spent cutting episodes.)"""
    if _SHLEX_SPECIAL.search(segment) is None:
        return [w for w in _SHELL_SPACE.split(segment) if w]
    try:
        return shlex.split(segment, comments=True)
    except ValueError:
        return segment.split()


@functools.lru_cache(maxsize=8192)
def command_head(command: str) -> str:
    """The stable head of a shell command line: `cd x && pytest -q tests/` -> `pytest`.
    Cached: a person runs the same few commands again and again."""
    for segment in _segments(command.replace("\\\n", " ")):
        words = [w for w in _words(segment) if w != "\\"]
        while words and (_ASSIGNMENT.match(words[0]) or words[0] in _WRAPPERS or words[0].startswith("-")):
            words.pop(0)
        if not words:
            continue
        program = PurePosixPath(words[0]).name if "/" in words[0] and not words[0].startswith("./") else words[0]
        if program in ("cd", "pushd", "popd", "source", ".", "export", "set", "echo", "sleep", "true"):
            continue
        if program in ("python", "python3") and len(words) > 2 and words[1] == "-m":
            program, rest = words[2], words[3:]
        else:
            rest = words[1:]
        if program.startswith("python") and rest and rest[0].endswith(".py"):
            return f"python {PurePosixPath(rest[0]).name}"
        args = [w for w in rest if not w.startswith("-")]
        if program in _SUBCOMMANDS_2:
            return " ".join([program, *args[:2]])
        if program in _SUBCOMMANDS_1:
            head = [program, *args[:1]]
            if program in _SCRIPT_RUNNERS and args[:1] == ["run"] and len(args) > 1:
                head.append(args[1])
            elif program == "go" and len(args) > 1 and args[1] in _KEEP_PATTERNS:
                head.append(args[1])
            return " ".join(head)
        return program
    return command.strip().split(" ", 1)[0][:40]


def relative_path(path: str, project: str | None) -> str:
    if project and path.startswith(project.rstrip("/") + "/"):
        return path[len(project.rstrip("/")) + 1 :]
    return path


def action_signature(tool: str, arguments: dict, project: str | None = None) -> str:
    """`Tool: key` for a tool call; the key is what identifies the action, not its details."""
    if tool in SHELL_TOOLS:
        command = arguments.get("command") or arguments.get("cmd") or ""
        return f"{tool}: {command_head(command)}" if isinstance(command, str) and command else tool
    if tool in FILE_TOOLS:
        path = arguments.get("file_path") or arguments.get("path") or arguments.get("notebook_path")
        return f"{tool}: {relative_path(path, project)}" if isinstance(path, str) and path else tool
    if tool in ("Skill", "SlashCommand"):
        name = arguments.get("skill") or arguments.get("command") or arguments.get("name")
        return f"{tool}: {name}" if isinstance(name, str) and name else tool
    if tool in ("Task", "Agent"):
        kind = arguments.get("subagent_type")
        return f"{tool}: {kind}" if isinstance(kind, str) and kind else tool
    return tool
