"""Shared by the real-editor tests: the npm client, the extension's .vsix, free ports, screenshots."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
VSCODE_CLIENT = REPO / "editors" / "vscode"
NVIM_PLUGIN = REPO / "editors" / "nvim"


def npm() -> str:
    found = shutil.which("npm")
    if found is None:
        pytest.fail("npm not found on PATH: the VS Code client's tests need Node 20 and npm", pytrace=False)
    return found


def run(argv: list[str], cwd: Path, timeout: float, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    started = time.monotonic()
    try:
        done = subprocess.run(argv, cwd=cwd, env={**os.environ, **(env or {})}, capture_output=True, text=True,
                              timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"`{' '.join(argv)}` in {cwd} took over {timeout:.0f} s\n--- stdout ---\n{exc.stdout or ''}\n"
                    f"--- stderr ---\n{exc.stderr or ''}", pytrace=False)
    if done.returncode != 0:
        pytest.fail(f"`{' '.join(argv)}` in {cwd} exited {done.returncode} after {time.monotonic() - started:.1f} s\n"
                    f"--- stdout ---\n{done.stdout[-6000:]}\n--- stderr ---\n{done.stderr[-6000:]}", pytrace=False)
    return done


def node_modules() -> None:
    """The extension's locked dependencies (npm ci), unless already installed from this lockfile."""
    marker = VSCODE_CLIENT / "node_modules" / ".package-lock.json"
    if not marker.is_file() or marker.stat().st_mtime < (VSCODE_CLIENT / "package-lock.json").stat().st_mtime:
        run([npm(), "ci", "--no-audit", "--no-fund"], VSCODE_CLIENT, timeout=900)


def build_vsix() -> Path:
    """The .vsix the build makes (`npm run package`), as a person installs it."""
    node_modules()
    vsix = VSCODE_CLIENT / "kitsoki-miner.vsix"
    vsix.unlink(missing_ok=True)
    run([npm(), "run", "package"], VSCODE_CLIENT, timeout=600)
    assert vsix.is_file(), f"npm run package made no {vsix}"
    return vsix


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def publish_screenshots(folder: Path, editor: str, *, clear: bool = True) -> Path | None:
    """With KITSOKI_SCREENSHOTS=DIR (`make screenshots`), the test's screenshots are copied to
    DIR/<editor>/ (the README shows those in docs/screenshots); `clear=False` adds to what an
    earlier test of the same editor put there."""
    target = os.environ.get("KITSOKI_SCREENSHOTS")
    if not target:
        return None
    dest = Path(target) / editor
    if clear:
        shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True, exist_ok=True)
    for shot in sorted(folder.iterdir()):
        if shot.suffix == ".png" and "FAILED" not in shot.name:
            shutil.copy2(shot, dest / shot.name)
    return dest
