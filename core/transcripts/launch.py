"""Who started a session: a person, or a program (an "agent session").

A seed pass mines what people asked, so it leaves out sessions a program started: their prompts are a
program's briefs, and mining them would have the miner eat its own output. The decision is made from
what the files carry, in this order; the first rule that applies decides (README, "Who started a
session"):

1. Spawned by another agent: a Claude Code subagent transcript with no session of its own, a Codex
   rollout whose `source` is `{"subagent": ...}` (thread_spawn, review, compact, guardian, ...).
2. kitsoki's own dispatched sessions (`host.agent.task`, `ask`, `decide`): `claude -p` runs that call
   kitsoki's tools (`mcp__validator__submit`, `mcp__kitsoki-bash__Bash`, `mcp__operator__ask`).
3. How it was launched, by name. Claude Code's `entrypoint` (the first record that carries one): a
   terminal, an IDE panel, the desktop or web app are people; `claude -p` (sdk-cli), the SDKs
   (sdk-ts, sdk-py), `claude mcp serve` (mcp), the GitHub Action and benches are programs. Codex's
   `source` exec (`codex exec`, which the SDKs run) and mcp (`codex mcp-server`) and an originator
   naming exec or an SDK are programs; cli and vscode with a known originator are people.
   A program launch still counts as a person's when a person is plainly there: they interrupted the
   agent, refused one of its calls, or answered its question (GUIs built on the SDKs).
4. Otherwise (no entrypoint, as Claude Code before 2.1.40 wrote none, or one not listed): the first
   prompt's `origin.kind` (`human` is a person, another kind such as `peer` a program); else a person.
   `promptSource: "sdk"` alone decides nothing: Claude Desktop writes it on prompts people type.
   `userType` is never used: it says whose account ("external", "ant"), not who typed.

`Launch.why` says which rule decided, for the `sessions` report and the tests.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

PERSON_ENTRYPOINTS = frozenset({
    "cli",                # the terminal
    "claude-vscode",      # the VS Code / Cursor extension's panel
    "claude-desktop",     # Claude Desktop's Code tab (it writes promptSource "sdk" on typed prompts)
    "claude-desktop-3p",  # the same app with a third-party model provider
    "local-agent",        # Claude Desktop's local agent mode (Cowork)
    "remote",             # Claude Code on the web
    "remote_mobile",      # the same, from the mobile app
    "ssh-remote",         # the desktop app driving a remote machine over SSH
})
"""Entrypoints where a person types."""

PROGRAM_ENTRYPOINTS = frozenset({
    "sdk-cli",                    # `claude -p` / --print, how kitsoki and scripts dispatch
    "sdk-ts",                     # the TypeScript Agent SDK
    "sdk-py",                     # the Python Agent SDK
    "mcp",                        # `claude mcp serve`: another program's tool
    "claude-code-github-action",  # CI
    "bench",                      # benchmark harnesses
})
"""Entrypoints of sessions a program started (any other `sdk-*` too)."""

KITSOKI_TOOLS = frozenset({"mcp__validator__submit", "mcp__kitsoki-bash__Bash", "mcp__operator__ask"})
"""Tools kitsoki attaches to the `claude -p` runs it dispatches (internal/host/agent_task.go)."""

PERSON_ORIGINATORS = frozenset({
    "codex_cli_rs", "codex-tui",             # the terminal UI
    "codex_vscode", "codex_vscode_copilot",  # the VS Code extension
    "Codex Desktop", "codex_app", "codex_chatgpt_desktop", "codex_atlas",  # the apps
})
"""Codex originators where a person types."""

PROGRAM_SOURCES = frozenset({"exec", "mcp"})
"""Codex `source` of sessions a program drives: `codex exec` (and the SDKs), `codex mcp-server`."""

_PROGRAM_ORIGINATOR = re.compile(r"exec|sdk", re.I)
"""codex_exec, codex_sdk_ts, ...: programmatic runs whatever their source says."""

ANSWERED_MARKER = "User has answered your question"
"""How Claude Code records a person's answer to AskUserQuestion."""


@dataclass(frozen=True, slots=True)
class Launch:
    """The decision and the rule that made it."""

    agent: bool
    why: str


@dataclass(slots=True)
class PersonSigns:
    """What only a person does inside a session, as the readers count it."""

    interrupted: bool = False
    refused: bool = False
    answered: bool = False

    def any(self) -> bool:
        return self.interrupted or self.refused or self.answered

    def describe(self) -> str:
        return "interrupted" if self.interrupted else "refused a call" if self.refused else "answered a question"


def claude_launch(entrypoint: str | None, *, origin: str | None = None, subagent: bool = False,
                  kitsoki: bool = False, signs: PersonSigns | None = None) -> Launch:
    """Claude Code: the rules above, from a session's first entrypoint, its first prompt's origin kind,
    whether it is only a subagent's transcript, whether it calls kitsoki's tools, and a person's signs."""
    if subagent:
        return Launch(True, "a subagent another agent spawned")
    if kitsoki:
        return Launch(True, "dispatched by kitsoki (host.agent.*)")
    if entrypoint in PERSON_ENTRYPOINTS:
        return Launch(False, f"entrypoint {entrypoint}")
    if entrypoint is not None and (entrypoint in PROGRAM_ENTRYPOINTS or entrypoint.startswith("sdk")):
        if signs is not None and signs.any():
            return Launch(False, f"entrypoint {entrypoint}, but a person {signs.describe()}")
        return Launch(True, f"entrypoint {entrypoint}")
    what = f"entrypoint {entrypoint}" if entrypoint is not None else "no entrypoint"
    if origin is not None and origin != "human":
        return Launch(True, f"{what}; the first prompt came from {origin}")
    return Launch(False, f"{what}; a person's by default")


def codex_launch(source, originator: str | None, *, signs: PersonSigns | None = None) -> Launch:
    """Codex CLI: the rules above, from a rollout's session_meta `source` and `originator`."""
    if type(source) is dict:
        kind = next(iter(source.get("subagent") or {}), None) if type(source.get("subagent")) is dict \
            else source.get("subagent")
        return Launch(True, f"a subagent another agent spawned ({kind})" if type(kind) is str
                      else "a subagent another agent spawned")
    program = None
    if type(source) is str and source.lower() in PROGRAM_SOURCES:
        program = f"source {source}"
    elif type(originator) is str and originator not in PERSON_ORIGINATORS and _PROGRAM_ORIGINATOR.search(originator):
        program = f"originator {originator}"
    if program is not None:
        if signs is not None and signs.any():
            return Launch(False, f"{program}, but a person {signs.describe()}")
        return Launch(True, program)
    if type(originator) is str:
        return Launch(False, f"originator {originator}" + ("" if originator in PERSON_ORIGINATORS
                                                         else "; a person's by default"))
    return Launch(False, f"source {source}" if type(source) is str else "no source; a person's by default")


def is_agent_session(entrypoint: str | None, prompt_source: str | None = None) -> bool:
    """Claude Code, from the entrypoint alone (no other evidence at hand). `prompt_source` is accepted
    and ignored: Claude Desktop writes "sdk" on prompts people type."""
    return claude_launch(entrypoint).agent


def decided_by_head(entrypoint: str | None) -> bool:
    """Whether a Claude file's first lines settle the question for the seed pass's sampling (a listed
    entrypoint of a person); a program's launch may still turn out a person's, and a missing or
    unknown entrypoint waits for the whole file."""
    return entrypoint in PERSON_ENTRYPOINTS
