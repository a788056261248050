"""The demo laid out for an editor: `kitsoki-miner demo --into DIR --pending`.

The same workspace and transcripts as the walkthrough, mined and proposed with the same core
calls, but nothing is accepted: the proposals wait in `.artifacts/mining/` for a person in an
editor. Beside them, everything an editor needs to find them with no further set-up:

- `.kitsoki.yaml`'s `mining.transcript_dirs` points at the demo's transcripts (they are in no
  default location), so the server's own passes read them too (not `.kitsoki.local.yaml`: kitsoki,
  and so this tool, ignores a `mining:` block there);
- `.vscode/settings.json` starts this very `kitsoki-miner` (the one that laid the demo out) and
  hides `.artifacts/` from the explorer from the first frame (the extension's own default applies
  only once it has loaded);
- `DIR/nvim-init.lua` runs Neovim with the plugin of this checkout and the same server, in the
  workspace (so the walkthrough's relative paths open its files, wherever Neovim was started).

Nothing has asked about the proposals yet: the first editor to serve the workspace asks each once
("Capture as structure?").
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from pydantic import BaseModel, Field

from core.demo.walkthrough import lay_out, seed_pass
from core.mining.service import record_pass, trace_path
from core.proposals.inbox import inbox
from core.proposals.model import Proposal
from core.proposals.proposer import run_proposer
from core.trace import Trace

NVIM_PLUGIN = Path(__file__).resolve().parents[2] / "editors" / "nvim"
"""The Neovim plugin of this checkout (present when installed from a clone, as `make venv` does)."""


class PendingDemo(BaseModel):
    root: Path
    workspace: Path
    transcripts: Path
    server_command: list[str]
    nvim_init: Path | None = None
    proposals: list[Proposal] = Field(default_factory=list)


def server_command() -> list[str]:
    """This installation's server: the `kitsoki-miner` script beside this Python, else `-m`."""
    script = Path(sys.executable).parent / "kitsoki-miner"
    if script.is_file():
        return [str(script), "serve"]
    return [sys.executable, "-m", "server.cli", "serve"]


def _lua(text: str) -> str:
    return json.dumps(text)  # a JSON string is a valid Lua string literal for paths


MINING_BLOCK = "mining:\n"


def _point_mining_at(config: Path, transcripts: Path) -> None:
    """Add `transcript_dirs: [<transcripts>]` as the first key of the demo config's mining block."""
    text = config.read_text(encoding="utf-8")
    if MINING_BLOCK not in text:
        raise ValueError(f"{config}: the demo config has no top-level mining: block")
    addition = ("  # Written by `kitsoki-miner demo --pending`: the demo's transcripts are in no default location.\n"
                f"  transcript_dirs:\n    - {json.dumps(str(transcripts))}\n")
    config.write_text(text.replace(MINING_BLOCK, MINING_BLOCK + addition, 1), encoding="utf-8")


def lay_out_pending(into: Path | None = None, command: list[str] | None = None, *, staged: bool = True) -> PendingDemo:
    """`staged=False` leaves the mining to the server's own first pass (it then raises the
    proposals itself, with their question cards)."""
    root, workspace, transcripts = lay_out(into)
    command = command or server_command()
    _point_mining_at(workspace / ".kitsoki.yaml", transcripts)
    settings = workspace / ".vscode" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"kitsoki.serverCommand": command, "files.exclude": {"**/.artifacts": True}},
                                   indent=2) + "\n")

    if staged:
        report, recipes = seed_pass(workspace, transcripts)
        record_pass(Trace(trace_path(workspace)), report)
        run_proposer(workspace, recipes)
    demo = PendingDemo(root=root, workspace=workspace, transcripts=transcripts, server_command=command,
                       proposals=inbox(workspace))
    if (NVIM_PLUGIN / "lua" / "kitsoki" / "init.lua").is_file():
        demo.nvim_init = root / "nvim-init.lua"
        demo.nvim_init.write_text(
            "-- Written by `kitsoki-miner demo --pending`: Neovim with the kitsoki plugin and this demo's server.\n"
            f"vim.opt.rtp:prepend({_lua(str(NVIM_PLUGIN))})\n"
            "vim.opt.swapfile = false\n"
            f"vim.fn.chdir({_lua(str(workspace))}) -- the walkthrough's relative paths are the workspace's\n"
            "vim.o.statusline = \"%f %m%=%{v:lua.require'kitsoki'.statusline()}  %l:%c \"\n"
            f"require('kitsoki').setup({{ cmd = {{ {', '.join(_lua(part) for part in command)} }} }})\n")
    return demo


def describe(demo: PendingDemo) -> str:
    """What `demo --pending` prints: where things are and the two commands that open them, and what
    accepting each proposal will do (from the gate's own preview, as the editors say it)."""
    from core.proposals.wording import accept_brief, plural
    from core.sidecar import planned_gate

    lines = [f"Demo workspace with {plural(len(demo.proposals), 'proposal')} pending: {demo.workspace}",
             f"  transcripts:         {demo.transcripts} (.kitsoki.yaml's mining.transcript_dirs points at them)",
             f"  server:              {' '.join(demo.server_command)} (.vscode/settings.json names it)", "",
             "Waiting for a verdict (and what an accept does):"]
    for proposal in demo.proposals:
        where = ", ".join(f"{c.path}:{min(c.changed_lines or [1])}" for c in proposal.files) or "a suggestion"
        brief = accept_brief(planned_gate(demo.workspace, proposal.recipe_id))
        lines.append(f"  {proposal.priority:5.2f}  {proposal.title}  ({where}; {brief})")
    lines += ["", "Open it in VS Code (with editors/vscode/kitsoki-miner.vsix installed; trust the folder):",
              f"  code {demo.workspace}"]
    if demo.nvim_init is not None:
        nvim = Path(sys.executable).parent / "nvim"
        lines += ["Or in Neovim 0.11 (the test extra installs one beside this Python):",
                  f"  {nvim if nvim.exists() else 'nvim'} -u {demo.nvim_init} {demo.workspace / '.kitsoki.yaml'}"]
    lines += ["", "Each proposal is asked about once (\"Capture as structure?\"). The words after each say what its "
              "accept does, from the gate's own preview: one that runs flow files is kept only if they all pass "
              "(otherwise every byte is restored)."]
    return "\n".join(lines)
