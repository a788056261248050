"""The VS Code client (editors/vscode): install its locked dependencies, type-check it, run its Node
tests (which drive this repository's real server with this Python) and package it as a .vsix.

Node 20 and npm are required (CI always has them): a missing npm fails, it is never skipped.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
CLIENT = REPO / "editors" / "vscode"


def npm() -> str:
    found = shutil.which("npm")
    if found is None:
        pytest.fail("npm not found on PATH: the VS Code client's tests need Node 20 and npm "
                    "(apt-get install nodejs npm, or a Node 20 distribution)", pytrace=False)
    return found


def run(*args: str, timeout: float, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    command = [npm(), *args]
    started = time.monotonic()
    try:
        done = subprocess.run(command, cwd=CLIENT, env={**os.environ, **(env or {})}, capture_output=True,
                              text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"`{' '.join(args)}` in {CLIENT} took over {timeout:.0f} s\n"
                    f"--- stdout ---\n{exc.stdout or ''}\n--- stderr ---\n{exc.stderr or ''}", pytrace=False)
    if done.returncode != 0:
        pytest.fail(f"`npm {' '.join(args)}` in {CLIENT} exited {done.returncode} after "
                    f"{time.monotonic() - started:.1f} s\n--- stdout ---\n{done.stdout}\n--- stderr ---\n{done.stderr}",
                    pytrace=False)
    return done


def needs_install() -> bool:
    """node_modules missing, or older than package-lock.json."""
    marker = CLIENT / "node_modules" / ".package-lock.json"  # npm rewrites it on every install
    if not marker.is_file():
        return True
    return marker.stat().st_mtime < (CLIENT / "package-lock.json").stat().st_mtime


@pytest.fixture(scope="module")
def installed() -> None:
    npm()
    if needs_install():
        run("ci", "--no-audit", "--no-fund", timeout=900)


def test_typecheck(installed):
    run("run", "typecheck", timeout=300)


def test_node_tests_against_the_real_server(installed):
    done = run("test", timeout=900, env={"KITSOKI_PYTHON": sys.executable})
    out = done.stdout + done.stderr
    assert "# fail 0" in out and "# pass " in out, out[-4000:]


def test_package_builds_a_vsix(installed):
    vsix = CLIENT / "kitsoki-miner.vsix"
    vsix.unlink(missing_ok=True)
    run("run", "package", timeout=600)
    assert vsix.is_file(), f"npm run package made no {vsix.name}"
    names = set(zipfile.ZipFile(vsix).namelist())
    manifest = json.loads(zipfile.ZipFile(vsix).read("extension/package.json"))
    assert manifest["main"] == "./out/src/extension.js"
    assert "extension/out/src/extension.js" in names
    assert "extension/node_modules/vscode-languageclient/package.json" in names
    assert not any(n.startswith(("extension/out/test/", "extension/src/", "extension/test/")) for n in names)
    assert not any(n.startswith("extension/node_modules/@vscode/vsce") or n.startswith("extension/node_modules/typescript/")
                   for n in names), "dev dependencies stay out of the package"
