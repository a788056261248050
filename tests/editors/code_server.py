"""A real VS Code for the tests: code-server from the npm registry, installed the way that works on
this kind of machine, and cached between runs.

A plain `npm install code-server` fails here: its postinstall refuses root, `@vscode/ripgrep`
downloads `rg` from the internet, and node-gyp wants to download Node's headers. So: install with
`--ignore-scripts`, do the postinstall's work by hand (install Code's own dependencies, link the
asar folder and the helper scripts), build the native modules with npm's own node-gyp against the
system's Node headers (`--nodedir=/usr`), and put Debian's `rg` where `@vscode/ripgrep` keeps its
binary.

The result is cached outside the clone (`$KITSOKI_CI_CACHE`, default
`~/.cache/kitsoki-miner-ci/`), keyed by code-server's and Node's versions, and built in a scratch
folder renamed into place only once complete: a killed install leaves nothing half-made.

    python -m tests.editors.code_server      # install (or find) it and print where it is
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from filelock import FileLock

VERSION = "4.100.3"
"""Code 1.100.3: the newest code-server on the npm registry that runs on Node 20."""
NATIVE_MODULES = ("@vscode/spdlog", "node-pty", "native-watchdog", "@vscode/deviceid")
"""Code's native modules the server side loads (lib/vscode/node_modules)."""
INSTALL_TIMEOUT_S = 900


class InstallError(RuntimeError):
    pass


def cache_dir() -> Path:
    return Path(os.environ.get("KITSOKI_CI_CACHE", "~/.cache/kitsoki-miner-ci")).expanduser()


def _run(argv: list[str], cwd: Path, env: dict[str, str] | None = None, what: str = "") -> str:
    started = time.monotonic()
    try:
        done = subprocess.run(argv, cwd=cwd, env={**os.environ, **(env or {})}, capture_output=True, text=True,
                              timeout=INSTALL_TIMEOUT_S, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise InstallError(f"{what or ' '.join(argv)} took over {INSTALL_TIMEOUT_S} s in {cwd}") from None
    if done.returncode != 0:
        raise InstallError(f"{what or ' '.join(argv)} exited {done.returncode} after "
                           f"{time.monotonic() - started:.0f} s in {cwd}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return done.stdout


def node_major() -> str:
    node = shutil.which("node")
    if node is None:
        raise InstallError("node is not on PATH: code-server needs Node 20")
    version = _run([node, "--version"], Path.cwd()).strip().lstrip("v")
    return version.split(".")[0]


def _node_gyp() -> Path:
    """npm's own node-gyp (npm bundles one; nothing is downloaded)."""
    root = Path(_run(["npm", "root", "-g"], Path.cwd()).strip())
    gyp = root / "npm" / "node_modules" / "node-gyp" / "bin" / "node-gyp.js"
    if not gyp.is_file():
        raise InstallError(f"npm's node-gyp is not at {gyp}")
    return gyp


def install_dir() -> Path:
    return cache_dir() / f"code-server-{VERSION}-node{node_major()}"


def entry_point(prefix: Path) -> Path:
    return prefix / "node_modules" / "code-server" / "out" / "node" / "entry.js"


def _install(scratch: Path) -> None:
    if node_major() != "20":
        raise InstallError(f"code-server {VERSION} needs Node 20; this is Node {node_major()}")
    headers = Path("/usr/include/node/node.h")
    if not headers.is_file():
        raise InstallError(f"{headers} is missing: the native modules are built against the system's Node "
                           "headers (Debian's nodejs package has them)")
    rg = shutil.which("rg")
    if rg is None:
        raise InstallError("rg is not on PATH: `apt-get install ripgrep` (code-server's search needs it; "
                           "@vscode/ripgrep would download its own)")
    env = {"npm_config_nodedir": "/usr", "npm_config_update_notifier": "false", "npm_config_fund": "false",
           "npm_config_audit": "false"}
    scratch.mkdir(parents=True)
    _run(["npm", "install", "--prefix", str(scratch), "--ignore-scripts", "--no-save", f"code-server@{VERSION}"],
         scratch, env, "npm install code-server")
    package = scratch / "node_modules" / "code-server"
    code = package / "lib" / "vscode"
    # What code-server's postinstall.sh does, minus its root check and downloads.
    _run(["npm", "install", "--omit=dev", "--ignore-scripts"], code, env, "npm install (Code's dependencies)")
    _run(["npm", "install", "--omit=dev", "--ignore-scripts"], code / "extensions", env,
         "npm install (Code's built-in extensions)")
    (code / "node_modules.asar").symlink_to("node_modules")
    (code / "bin" / "remote-cli" / "code-server").symlink_to("code-linux.sh")
    (code / "bin" / "helpers" / "browser.sh").symlink_to("browser-linux.sh")
    ripgrep = code / "node_modules" / "@vscode" / "ripgrep" / "bin"
    ripgrep.mkdir(parents=True, exist_ok=True)
    (ripgrep / "rg").symlink_to(rg)
    gyp = _node_gyp()
    for module in NATIVE_MODULES:
        _run(["node", str(gyp), "rebuild", "--nodedir=/usr"], code / "node_modules" / module, env,
             f"node-gyp rebuild {module}")
    # code-server's own password hashing (loaded at start even with --auth none).
    pre_gyp = scratch / "node_modules" / "@mapbox" / "node-pre-gyp" / "bin" / "node-pre-gyp"
    _run(["node", str(pre_gyp), "rebuild", "--build-from-source"], scratch / "node_modules" / "argon2",
         {**env, "PATH": f"{gyp.parent}{os.pathsep}{os.environ.get('PATH', '')}"}, "build argon2")
    _run(["node", str(entry_point(scratch)), "--version"], scratch, env, "code-server --version")


def ensure_code_server(log=None) -> Path:
    """The cached install (made now if missing). Returns its prefix; see entry_point()."""
    prefix = install_dir()
    marker = prefix / ".installed"
    if marker.is_file():
        return prefix
    cache_dir().mkdir(parents=True, exist_ok=True)
    with FileLock(str(prefix) + ".lock", timeout=INSTALL_TIMEOUT_S * 2):
        if marker.is_file():
            return prefix
        scratch = prefix.with_name(f"{prefix.name}.partial-{os.getpid()}")
        shutil.rmtree(scratch, ignore_errors=True)
        started = time.monotonic()
        try:
            _install(scratch)
        except BaseException:
            shutil.rmtree(scratch, ignore_errors=True)
            raise
        (scratch / ".installed").write_text(f"code-server {VERSION}, built in {time.monotonic() - started:.0f} s\n")
        shutil.rmtree(prefix, ignore_errors=True)
        os.replace(scratch, prefix)
        if log is not None:
            log(f"installed code-server {VERSION} into {prefix} in {time.monotonic() - started:.0f} s")
    return prefix


if __name__ == "__main__":
    try:
        where = ensure_code_server(log=lambda text: print(text, file=sys.stderr))
    except InstallError as exc:
        print(f"code-server: {exc}", file=sys.stderr)
        sys.exit(1)
    print(entry_point(where))
