"""The VS Code extension in a real VS Code: code-server 4.100.3 (Code 1.100.3) with the extension
installed from the .vsix the build makes, driven in Debian's Chromium by playwright-core
(editors/vscode/test/e2e/drive.mjs) as a person would use it, on the demo laid out exactly as the
README's walkthrough does (`kitsoki-miner demo --into DIR --pending`).

What the page must show: with workspace trust on, the folder opened in Restricted Mode first: the
status item says the extension waits for trust and why, no server runs until the folder is
trusted from that item, and `.artifacts/` is never in the explorer; once trusted the status says
loading (never "proposals: 0") until the server answers, and the proposals nobody was asked about
yet get their question card. Then the lenses on `.kitsoki.yaml` and on the story, saying what the
gate will do (from its own preview), Reject… last; the hover, the diff view; an accept that is
kept, undone from its message, kept again and undone by hand (Ctrl+Z, save: noticed and offered
again), kept again; one that is reverted (the failing flow shown); a story saved as invalid YAML
(a Waiting lens that says where, an error on the line); a refined draft that the explorer does
not reveal, left unsaved and accepted with "Save and accept"; a killed server restarted and said,
and "Restart the server"; one question card at a time, withdrawn once its proposal is rejected
(asked first), the rejection restored from "Show rejected proposals"; two workspaces told apart;
no error notification. The bytes on disk are checked here. Screenshots of every step land in the
test's folder (and in docs/screenshots with `make screenshots`).

Needs Debian's chromium and ripgrep and Node 20 (.ci/run installs them); a missing one fails,
it is never skipped.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from code_server import InstallError, ensure_code_server, entry_point
from editor_support import REPO, VSCODE_CLIENT, build_vsix, free_port, publish_screenshots, run

from core.demo.pending import lay_out_pending

CHROMIUM = Path(os.environ.get("KITSOKI_CHROMIUM", "/usr/bin/chromium"))
DRIVER = VSCODE_CLIENT / "test" / "e2e" / "drive.mjs"
DRIVER_TIMEOUT_S = 420

DRAFT_EDIT = "# refined in VS Code"
"""Typed into the refined draft and saved: the accepted file has it."""

USER_SETTINGS = {
    # Workspace trust as a person has it: the demo opens in Restricted Mode until it is trusted.
    "security.workspace.trust.enabled": True,
    "workbench.startupEditor": "none",
    "workbench.tips.enabled": False,
    "telemetry.telemetryLevel": "off",
    "update.mode": "none",
    "extensions.autoCheckUpdates": False,
    "extensions.autoUpdate": False,
    "workbench.enableExperiments": False,
    "editor.minimap.enabled": False,
    "window.restoreWindows": "none",
    "files.hotExit": "off",
    "files.autoSave": "off",  # desktop VS Code's default (the web's is afterDelay): a save is a person's act
}


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def tree(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): sha(p) for p in sorted(folder.rglob("*"))
            if p.is_file() and ".artifacts" not in p.parts}


def wait_http(url: str, proc: subprocess.Popen, log: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"code-server exited {proc.returncode}:\n{log.read_text()[-4000:]}", pytrace=False)
        try:
            with urllib.request.urlopen(url, timeout=2) as answer:
                if answer.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    pytest.fail(f"code-server did not answer {url} in {timeout:.0f} s:\n{log.read_text()[-4000:]}", pytrace=False)


def output_logs(user_data: Path) -> list[Path]:
    """The kitsoki-miner output channel as VS Code writes it to disk."""
    return sorted(user_data.glob("logs/**/*kitsoki-miner*.log"))


@pytest.fixture(scope="module")
def code_server() -> Path:
    if not CHROMIUM.is_file():
        pytest.fail(f"{CHROMIUM} is missing: `apt-get install chromium` (.ci/run installs it)", pytrace=False)
    try:
        return entry_point(ensure_code_server())
    except InstallError as exc:
        pytest.fail(f"code-server could not be installed: {exc}", pytrace=False)


def test_the_extension_in_a_real_vscode(code_server, tmp_path):
    vsix = build_vsix()
    home = tmp_path / "home"
    home.mkdir()  # the server never looks at this machine's own agent histories
    demo = lay_out_pending(tmp_path / "demo")
    questions = lay_out_pending(tmp_path / "fresh", staged=False)
    both = tmp_path / "both.code-workspace"  # the two folders in one window (same name, two parents)
    both.write_text(json.dumps({"folders": [{"path": str(demo.workspace)}, {"path": str(questions.workspace)}],
                                # a multi-root window reads window settings from the workspace file only
                                "settings": {"files.exclude": {"**/.artifacts": True},
                                             "kitsoki.serverCommand": demo.server_command}}))
    before = tree(demo.workspace)
    config_before = (demo.workspace / ".kitsoki.yaml").read_text()
    story = demo.workspace / "stories" / "release-desk" / "app.yaml"
    config = demo.workspace / ".kitsoki.yaml"

    user_data, extensions = tmp_path / "user-data", tmp_path / "extensions"
    (user_data / "User").mkdir(parents=True)
    (user_data / "User" / "settings.json").write_text(json.dumps(USER_SETTINGS, indent=2))
    env = {**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(tmp_path / "xdg-config"),
           "XDG_DATA_HOME": str(tmp_path / "xdg-data"), "XDG_CACHE_HOME": str(tmp_path / "xdg-cache")}
    node = shutil.which("node") or "node"
    base = [node, str(code_server), "--user-data-dir", str(user_data), "--extensions-dir", str(extensions)]
    run([*base, "--install-extension", str(vsix)], tmp_path, timeout=120, env=env)

    port = free_port()
    log = tmp_path / "code-server.log"
    with open(log, "w") as out:
        proc = subprocess.Popen([*base, "--bind-addr", f"127.0.0.1:{port}", "--auth", "none", "--disable-telemetry",
                                 "--disable-update-check", "--disable-getting-started-override"],
                                cwd=tmp_path, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
    shots = tmp_path / "screenshots"
    results = tmp_path / "results.json"
    try:
        wait_http(f"http://127.0.0.1:{port}/healthz", proc, log)
        settings = {"url": f"http://127.0.0.1:{port}", "workspace": str(demo.workspace),
                    "questionsWorkspace": str(questions.workspace), "bothWorkspaces": str(both),
                    "draftFolder": str(demo.workspace / ".artifacts" / "mining" /
                                       next(p.recipe_id for p in demo.proposals if p.kind == "world")),
                    "shots": str(shots), "results": str(results),
                    "chromium": str(CHROMIUM), "browserProfile": str(tmp_path / "chromium-profile"),
                    "draftEdit": DRAFT_EDIT}
        (tmp_path / "drive.json").write_text(json.dumps(settings))
        started = time.monotonic()
        try:
            driven = subprocess.run([node, str(DRIVER), str(tmp_path / "drive.json")], cwd=VSCODE_CLIENT, env=env,
                                    capture_output=True, text=True, timeout=DRIVER_TIMEOUT_S, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the VS Code driver took over {DRIVER_TIMEOUT_S} s; screenshots in {shots}", pytrace=False)
        report = json.loads(results.read_text()) if results.is_file() else {}
        print(f"VS Code steps ({time.monotonic() - started:.0f} s):")
        trusted = next((item for item in report.get("steps", []) if item["name"] == "workbench-with-status"), None)
        if trusted:
            print(f"  first proposals on screen {trusted['seconds']:.1f} s after the folder was trusted")
        for item in report.get("steps", []):
            print(f"  {item['seconds']:5.1f} s  {item['name']}")
        assert driven.returncode == 0, (
            f"the VS Code driver failed at {report.get('failure', {}).get('step')}:\n{driven.stderr[-4000:]}\n"
            f"on top of the page: {report.get('failure', {}).get('overlays')}\n"
            f"screenshots: {shots}\nkitsoki-miner output:\n"
            + "\n".join(p.read_text()[-3000:] for p in output_logs(user_data)))
    finally:
        os.killpg(proc.pid, 15)
        proc.wait(timeout=20)
    published = publish_screenshots(shots, "vscode")
    if published:
        print(f"screenshots copied to {published}")

    steps = {item["name"]: item for item in report["steps"]}
    # The kept accept is on disk, byte for byte what the diff showed; the reverted one left nothing.
    after = tree(demo.workspace)
    assert config.read_text() == config_before.replace(
        "# we release from main\n",
        f"# we release from main\n      test_cmd: pytest\n    bindings:\n      ticket: host.gh.ticket  {DRAFT_EDIT}\n")
    assert after[story.relative_to(demo.workspace).as_posix()] == before[story.relative_to(demo.workspace).as_posix()]
    assert {k: v for k, v in after.items() if k != ".kitsoki.yaml"} == \
        {k: v for k, v in before.items() if k != ".kitsoki.yaml"}
    kept_question = steps["accept-kept"]["detail"]["confirmation"]["detail"]
    assert "no flow exercises this change: kept after the structural checks" in kept_question
    assert len(kept_question) < 160, f"the confirmation reads long: {kept_question!r}"
    assert "warning" in steps["accept-reverted"]["detail"]["toast"]["severity"]
    assert not any("proposals: 0" in seen for seen in steps["workbench-with-status"]["detail"]["seen"])
    assert "Save and accept" in steps["save-and-accept-the-draft"]["detail"]["modal"]["buttons"]
    # Nothing went to the output that a person would read as a crash.
    logs = "\n".join(p.read_text() for p in output_logs(user_data))
    assert logs, f"no kitsoki-miner output log under {user_data}/logs"
    assert "is not trusted (Restricted Mode): the server starts once you trust it" in logs, logs[-4000:]
    assert not steps["restricted-mode-waits-for-trust"]["detail"]["servers"]
    for bad in ("Traceback", "JsonRpcInvalidParams", "unrecognized arguments"):
        assert bad not in logs, f"{bad!r} in the kitsoki-miner output:\n{logs[-4000:]}"
    # The server was down exactly twice: killed by the test, and restarted when asked; back both times.
    downs = [line for line in logs.splitlines() if "the server is down" in line]
    assert downs == ["the server is down: it stopped unexpectedly; the kitsoki-miner output may say why",
                     "the server is down: you asked for a restart"], downs
    assert logs.count("the server is running again") == 2, logs[-4000:]
