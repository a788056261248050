"""The Neovim plugin in a real terminal, as the README's walkthrough runs it: `kitsoki-miner demo
--into DIR --pending`, then the very `nvim` command it prints, inside tmux. The screen is read
with capture-pane, as a person reads it:

- the previews: each proposal under its own header, right below the line its lines follow;
- an accept asks (with the flows it runs), then runs with no `Press ENTER` prompt, and is kept;
- an accept that is reverted shows the failing flows (an empty value reads `""`), bytes unchanged;
- the diff split shows the draft beside the live file, without the previews in the way;
- on a fresh workspace whose proposals the server raises itself, at most one question is on
  screen, and cancelling it brings up no other.

Screenshots (the terminal rendered with its colours) land in the test's folder, and in
docs/screenshots with `make screenshots`.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

from editor_support import REPO, publish_screenshots
from terminal import Tmux, screenshot

from core.demo.pending import lay_out_pending

CHROMIUM = Path(os.environ.get("KITSOKI_CHROMIUM", "/usr/bin/chromium"))
PROMPT = "Type number and <Enter>"


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def isolated_env(tmp: Path) -> dict[str, str]:
    """Neovim away from the developer's config and plugins; the server away from this machine's
    agent histories."""
    home = tmp / "home"
    home.mkdir(exist_ok=True)
    return {"HOME": str(home), "XDG_CONFIG_HOME": str(tmp / "xdg-config"), "XDG_DATA_HOME": str(tmp / "xdg-data"),
            "XDG_STATE_HOME": str(tmp / "xdg-state"), "XDG_CACHE_HOME": str(tmp / "xdg-cache"),
            "TERM": "xterm-256color", "PATH": os.environ.get("PATH", "")}


def never_press_enter(tmux: Tmux, until: str, timeout: float = 60) -> str:
    """Watch the screen until `until` shows, failing the moment a `Press ENTER` prompt does."""
    deadline = time.monotonic() + timeout
    regex = re.compile(until, re.MULTILINE)
    while time.monotonic() < deadline:
        text = tmux.screen()
        assert "Press ENTER" not in text, f"a Press ENTER prompt during the accept:\n{text}"
        if regex.search(text):
            return text
        time.sleep(0.05)
    raise AssertionError(f"{until!r} never showed; the screen:\n{tmux.screen()}")


def walkthrough_command(into: Path) -> list[str]:
    """What the README says to run: the demo, then the Neovim line it prints."""
    done = subprocess.run([str(Path(sys.executable).parent / "kitsoki-miner"), "demo", "--into", str(into),
                           "--pending"], capture_output=True, text=True, timeout=120, check=True)
    line = next((ln.strip() for ln in done.stdout.splitlines() if " -u " in ln and "nvim" in ln), None)
    assert line, f"`demo --pending` printed no Neovim command:\n{done.stdout}"
    return shlex.split(line)


@pytest.fixture
def shots(tmp_path) -> Path:
    if not CHROMIUM.is_file():
        pytest.fail(f"{CHROMIUM} is missing: `apt-get install chromium` (.ci/run installs it)", pytrace=False)
    folder = tmp_path / "screenshots"
    folder.mkdir()
    return folder


def test_neovim_in_a_real_terminal(tmp_path, shots):
    command = walkthrough_command(tmp_path / "demo")
    ws = tmp_path / "demo" / "release-desk"
    config, story = ws / ".kitsoki.yaml", ws / "stories" / "release-desk" / "app.yaml"
    story_before = sha(story)
    tmux = Tmux(f"kitsoki-test-{os.getpid()}")
    tmux.start(command, isolated_env(tmp_path), ws)
    try:
        screen = tmux.wait_for(r"kitsoki 2/2: Bind ticket", 30, "the previews of .kitsoki.yaml")
        lines = screen.splitlines()
        at = next(i for i, ln in enumerate(lines) if "base_branch: main" in ln)
        assert [ln.strip() for ln in lines[at + 1:at + 7]] == [
            "┌ kitsoki 1/2: Set world.test_cmd to 'pytest'",
            "+       test_cmd: pytest",
            "├ kitsoki 2/2: Bind ticket to host.gh.ticket",
            "+     bindings:",
            "+       ticket: host.gh.ticket",
            "└ :KitsokiMine accept | refine | dismiss | diff (asks which of 2)",
        ], "each proposal under its own header, right below the line its lines follow:\n" + screen
        screen = tmux.wait_for(r"kitsoki: 3 proposals", 10, "the statusline's count")  # redrawn a moment later
        assert PROMPT not in screen and "Capture as structure?" not in screen, "nothing asked at start:\n" + screen
        screenshot(tmux, shots / "01-previews.png", CHROMIUM, "Neovim: proposals")

        # An accept that is kept: which proposal (two share the line), then the confirmation.
        anchor = next(i for i, ln in enumerate(config.read_text().splitlines(), 1) if "base_branch: main" in ln)
        tmux.type(f"{anchor}G")
        tmux.type(":KitsokiMine accept")
        tmux.keys("Enter")
        screen = tmux.wait_for(r"^Which proposal\?(.|\n)*Type number and <Enter>", 10)
        assert screen.count(PROMPT) == 1, screen
        tmux.type("1")
        tmux.keys("Enter")
        screen = tmux.wait_for(r"^Accept \"Set world\.test_cmd to 'pytest'\"\?(.|\n)*Type number and <Enter>", 10)
        assert "no flow exercises this change" in screen, screen  # no flow reads the demo's root overrides
        assert screen.count(PROMPT) == 1, "one question on screen:\n" + screen
        screenshot(tmux, shots / "02-confirm-accept.png", CHROMIUM, "Neovim: accept asks first")
        tmux.type("1")
        tmux.keys("Enter")
        screen = never_press_enter(tmux, r"kept \"Set world\.test_cmd to 'pytest'\" \(structural checks passed, no flow exercises it\)")
        screen = tmux.wait_for(r"^K\+\s+test_cmd: pytest", 10, "the buffer shows the kept line")
        assert "test_cmd: pytest" in config.read_text()
        screenshot(tmux, shots / "03-kept.png", CHROMIUM, "Neovim: kept")

        # An accept that is reverted: the failing flows in a float, every byte as it was.
        tmux.type(f":e {story}")
        tmux.keys("Enter")
        tmux.wait_for(r"kitsoki: Add 1 synonym to release-desk's deploy", 10)
        tmux.type("14G")
        tmux.type(":KitsokiMine accept")
        tmux.keys("Enter")
        tmux.wait_for(r"^Accept \"Add 1 synonym to release-desk's deploy\"\?(.|\n)*Type number and <Enter>", 10)
        tmux.type("1")
        tmux.keys("Enter")
        screen = never_press_enter(tmux, r"Failing:")
        screen = tmux.wait_for(r'expect_world\["last_target"\]: got "" \(string\)', 10, "the failing flow")
        assert "reverted \"Add 1 synonym to release-desk's deploy\"" in screen, screen
        assert sha(story) == story_before, "the reverted accept left app.yaml as it was"
        screenshot(tmux, shots / "04-reverted.png", CHROMIUM, "Neovim: reverted")

        # The diff split: the draft beside the live file, no previews clashing with the filler lines.
        tmux.keys("Escape")
        tmux.type("14G")
        tmux.type(":KitsokiMine diff")
        tmux.keys("Enter")
        screen = tmux.wait_for(r"│\s+synonyms:", 10, "the draft's added lines in the right-hand window")
        assert "┌ kitsoki" not in screen, "the previews are hidden while the diff is open:\n" + screen
        screenshot(tmux, shots / "05-diff.png", CHROMIUM, "Neovim: diff")
        tmux.type(":qa!")
        tmux.keys("Enter")
    finally:
        tmux.stop()

    # A workspace whose proposals the server raises itself: one question on screen at a time.
    fresh = lay_out_pending(tmp_path / "fresh", staged=False)
    tmux = Tmux(f"kitsoki-test-q-{os.getpid()}")
    tmux.start(shlex.split(walkthrough_line(fresh)), isolated_env(tmp_path), fresh.workspace)
    try:
        screen = tmux.wait_for(r"^Capture as structure\? Set world\.test_cmd to 'pytest'(.|\n)*Type number and <Enter>", 40,
                               "the first question")
        assert screen.count("Capture as structure?") == 1 and screen.count(PROMPT) == 1, screen
        screenshot(tmux, shots / "06-one-question.png", CHROMIUM, "Neovim: one question")
        tmux.keys("Enter")  # later
        time.sleep(2.5)
        screen = tmux.screen()
        assert "Capture as structure?" not in screen and PROMPT not in screen, "no other question followed:\n" + screen
        assert "kitsoki: 3 proposals [?3]" in screen, screen
        tmux.type(":qa!")
        tmux.keys("Enter")
    finally:
        tmux.stop()
    published = publish_screenshots(shots, "nvim")
    if published:
        print(f"screenshots copied to {published}")


def walkthrough_line(demo) -> str:
    nvim = Path(sys.executable).parent / "nvim"
    return f"{shlex.quote(str(nvim))} -u {shlex.quote(str(demo.nvim_init))} {shlex.quote(str(demo.workspace / '.kitsoki.yaml'))}"
