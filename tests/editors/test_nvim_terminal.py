"""The Neovim plugin in a real terminal, as the README's walkthrough runs it: `kitsoki-miner demo
--into DIR --pending`, then the very `nvim` command it prints, typed in the clone (where a person
is when they run it), inside tmux. The screen is read with capture-pane, as a person reads it.

- The walkthrough: a question card first (each proposal is asked about once), the previews under
  their line, an accept that asks (saying what the gate will do) and is kept; an undo by hand
  (`u`, `:w`) noticed and offered again, and an explicit `:KitsokiMine undo`; the story opened by
  the relative path the README gives; an accept reverted with its failing flows; the diff split;
  `:KitsokiMine status` twice in a row, never blank.
- Trust with files: refine opens the staged draft in the same server (no second one inside
  `.artifacts/`), "save and accept" offered up front for an unsaved draft; a dismissal asks and is
  restored from `:KitsokiMine rejected`; a story saved as invalid YAML shows where and why its
  proposal waits; a server killed is said, restarted, and said again.
- Two workspaces told apart; at most one question on screen.

Screenshots (the terminal rendered with its colours) land in the test's folder, and in
docs/screenshots with `make screenshots`.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import signal
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
    agent histories, and signing with the key `demo --pending` signed with (one person, one key: the
    staged proposals are the ones the editor shows)."""
    home = tmp / "home"
    home.mkdir(exist_ok=True)
    env = {"HOME": str(home), "XDG_CONFIG_HOME": str(tmp / "xdg-config"), "XDG_DATA_HOME": str(tmp / "xdg-data"),
           "XDG_STATE_HOME": str(tmp / "xdg-state"), "XDG_CACHE_HOME": str(tmp / "xdg-cache"),
           "TERM": "xterm-256color", "PATH": os.environ.get("PATH", "")}
    if os.environ.get("KITSOKI_MINER_KEY_DIR"):
        env["KITSOKI_MINER_KEY_DIR"] = os.environ["KITSOKI_MINER_KEY_DIR"]
    return env


def never_press_enter(tmux: Tmux, until: str, timeout: float = 60) -> str:
    """Watch the screen until `until` shows, failing the moment a `Press ENTER` prompt does."""
    deadline = time.monotonic() + timeout
    regex = re.compile(until, re.MULTILINE)
    while time.monotonic() < deadline:
        text = tmux.screen()
        assert "Press ENTER" not in text, f"a Press ENTER prompt:\n{text}"
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


def walkthrough_line(demo) -> str:
    nvim = Path(sys.executable).parent / "nvim"
    return f"{shlex.quote(str(nvim))} -u {shlex.quote(str(demo.nvim_init))} {shlex.quote(str(demo.workspace / '.kitsoki.yaml'))}"


def command(tmux: Tmux, text: str) -> None:
    tmux.type(text)
    tmux.keys("Enter")


def pick(tmux: Tmux, number: int) -> None:
    tmux.type(str(number))
    tmux.keys("Enter")


def later(tmux: Tmux, question: str) -> str:
    """A question card shows (about the file in view): leave it for later."""
    screen = tmux.wait_for(rf"^Capture as structure\? {question}(.|\n)*{PROMPT}", 20, f"the question about {question}")
    assert screen.count(PROMPT) == 1, "one question on screen:\n" + screen
    tmux.keys("Enter")
    tmux.wait_for(r"kitsoki: \d+ proposals?", 10, "the question gone")
    return screen


def server_pids(tmux: Tmux) -> list[int]:
    """The kitsoki-miner servers Neovim started (the pane's descendants that serve)."""
    pane = int(subprocess.run(["tmux", "list-panes", "-t", tmux.name, "-F", "#{pane_pid}"], capture_output=True,
                              text=True, check=True).stdout.split()[0])
    found, todo = [], [pane]
    while todo:
        pid = todo.pop()
        try:
            if pid != pane and b"serve" in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0"):
                found.append(pid)
                continue
            for task in Path(f"/proc/{pid}/task").iterdir():
                todo += [int(child) for child in (task / "children").read_text().split()]
        except OSError:
            continue  # gone meanwhile
    return found


@pytest.fixture
def shots(tmp_path) -> Path:
    if not CHROMIUM.is_file():
        pytest.fail(f"{CHROMIUM} is missing: `apt-get install chromium` (.ci/run installs it)", pytrace=False)
    folder = tmp_path / "screenshots"
    folder.mkdir()
    return folder


@pytest.fixture
def tmux(request):
    session = Tmux(f"kitsoki-{request.node.name[:20]}-{os.getpid()}")
    yield session
    session.stop()


def test_the_walkthrough_in_neovim(tmp_path, shots, tmux):
    command_line = walkthrough_command(tmp_path / "demo")
    ws = tmp_path / "demo" / "release-desk"
    config, story = ws / ".kitsoki.yaml", ws / "stories" / "release-desk" / "app.yaml"
    config_before, story_before = config.read_text(), sha(story)
    started = time.monotonic()
    tmux.start(command_line, isolated_env(tmp_path), REPO)  # typed in the clone, as the README has it

    # Each proposal is asked about once: the one about the line in view comes first, saying what
    # an accept does (from the gate's own preview: no flow reads the demo's root overrides).
    screen = tmux.wait_for(rf"^Capture as structure\? Set world\.test_cmd to 'pytest'(.|\n)*{PROMPT}", 30,
                           "the first question")
    print(f"first proposal on screen {time.monotonic() - started:.1f} s after nvim started")
    assert "1: accept: apply to .kitsoki.yaml; no flow runs: kept after checks" in screen, screen
    assert "(restore it from the rejected list)" in screen, screen
    screenshot(tmux, shots / "01-question.png", CHROMIUM, "Neovim: a question, once")
    tmux.keys("Enter")  # later
    screen = tmux.wait_for(r"kitsoki 2/2: Bind ticket", 10, "the previews of .kitsoki.yaml")
    lines = screen.splitlines()
    at = next(i for i, ln in enumerate(lines) if "base_branch: main" in ln)
    assert [ln.strip() for ln in lines[at + 1:at + 7]] == [
        "┌ kitsoki 1/2: Set world.test_cmd to 'pytest'",
        "+       test_cmd: pytest",
        "├ kitsoki 2/2: Bind ticket to host.gh.ticket",
        "+     bindings:",
        "+       ticket: host.gh.ticket",
        "└ :KitsokiMine accept | refine | diff | dismiss (asks which of 2)",
    ], "each proposal under its own header, right below the line its lines follow:\n" + screen
    screen = tmux.wait_for(r"kitsoki: 3 proposals \[\?3\]", 10, "the statusline's count and the questions waiting")
    screenshot(tmux, shots / "02-previews.png", CHROMIUM, "Neovim: proposals")

    # An accept that is kept: which proposal (two share the line), then the confirmation.
    anchor = next(i for i, ln in enumerate(config_before.splitlines(), 1) if "base_branch: main" in ln)
    tmux.type(f"{anchor}G")
    command(tmux, ":KitsokiMine accept")
    screen = tmux.wait_for(rf"^Which proposal\?(.|\n)*{PROMPT}", 10)
    pick(tmux, 1)
    screen = tmux.wait_for(rf"^Accept \"Set world\.test_cmd to 'pytest'\"\?(.|\n)*{PROMPT}", 10)
    assert "1: accept: This changes .kitsoki.yaml; no flow exercises this change: kept after the structural checks" \
        in screen, screen
    assert screen.count(PROMPT) == 1, "one question on screen:\n" + screen
    screenshot(tmux, shots / "03-confirm-accept.png", CHROMIUM, "Neovim: accept asks first")
    pick(tmux, 1)
    screen = never_press_enter(tmux, r"kept \"Set world\.test_cmd to 'pytest'\" \(:KitsokiMine undo takes it back\)")
    tmux.wait_for(r"^K\+\s+test_cmd: pytest", 10, "the buffer shows the kept line")
    assert "test_cmd: pytest" in config.read_text()
    later(tmux, "Bind ticket to host.gh.ticket")  # re-drafted after the accept, never asked yet
    screenshot(tmux, shots / "04-kept.png", CHROMIUM, "Neovim: kept")

    # Undo by reflex, then save: the accept is recorded as undone and offered again.
    tmux.type("u")
    command(tmux, ":w")
    screen = never_press_enter(tmux, r"the saved file no longer holds the accepted \"Set world\.test_cmd", 20)
    tmux.wait_for(r"┌ kitsoki 1/2: Set world\.test_cmd to 'pytest'", 20, "the proposal offered again")
    assert config.read_text() == config_before
    screenshot(tmux, shots / "05-undone-by-save.png", CHROMIUM, "Neovim: an undo noticed")

    # An explicit undo: the bytes from before the accept, through the apply journal.
    tmux.type(f"{anchor}G")
    command(tmux, ":KitsokiMine accept")
    tmux.wait_for(rf"^Which proposal\?(.|\n)*{PROMPT}", 10)
    pick(tmux, 1)
    tmux.wait_for(rf"^Accept \"Set world\.test_cmd(.|\n)*{PROMPT}", 10)
    pick(tmux, 1)
    never_press_enter(tmux, r"kept \"Set world\.test_cmd to 'pytest'\"")
    assert "test_cmd: pytest" in config.read_text()
    command(tmux, ":KitsokiMine undo")
    screen = tmux.wait_for(rf"^Undo which accept\?(.|\n)*1: accepted Set world\.test_cmd to 'pytest'(.|\n)*{PROMPT}", 10)
    screenshot(tmux, shots / "06-undo.png", CHROMIUM, "Neovim: undo an accept")
    pick(tmux, 1)
    never_press_enter(tmux, r"undid the accept of \"Set world\.test_cmd to 'pytest'\"", 20)
    assert config.read_text() == config_before

    # The story, by the README's relative path (the walkthrough's Neovim runs in the workspace).
    command(tmux, ":e stories/release-desk/app.yaml")
    later(tmux, "Add 1 synonym to release-desk's deploy")
    tmux.wait_for(r"kitsoki: Add 1 synonym to release-desk's deploy", 10)
    tmux.type("14G")
    command(tmux, ":KitsokiMine accept")
    screen = tmux.wait_for(rf"^Accept \"Add 1 synonym to release-desk's deploy\"\?(.|\n)*{PROMPT}", 10)
    assert "then runs the flows in 2 flow files (stories/release-desk/flows/preview.yaml, stories/release-desk/flows/" \
        "release.yaml). The change is kept only if they all pass" in screen.replace("\n", ""), screen
    pick(tmux, 1)
    never_press_enter(tmux, r"Failing:")
    screen = tmux.wait_for(r'expect_world\["last_target"\]: got "" \(string\)', 10, "the failing flow")
    assert "reverted \"Add 1 synonym to release-desk's deploy\"" in screen, screen
    assert sha(story) == story_before, "the reverted accept left app.yaml as it was"
    screenshot(tmux, shots / "07-reverted.png", CHROMIUM, "Neovim: reverted")

    # The diff split: the draft beside the live file, no previews clashing with the filler lines.
    tmux.keys("Escape")
    tmux.type("14G")
    command(tmux, ":KitsokiMine diff")
    screen = tmux.wait_for(r"│\s+synonyms:", 10, "the draft's added lines in the right-hand window")
    assert "┌ kitsoki" not in screen, "the previews are hidden while the diff is open:\n" + screen
    screenshot(tmux, shots / "08-diff.png", CHROMIUM, "Neovim: diff")
    command(tmux, ":only")

    # :KitsokiMine status twice, without moving: the float both times, never blank.
    for _ in range(2):
        command(tmux, ":KitsokiMine status")
        screen = tmux.wait_for(r"│kitsoki release-desk: mining on, 3 pending", 10, "the status float")
        assert "last pass" in screen
    command(tmux, ":qa!")
    publish_screenshots(shots, "nvim")  # the first of the three: it clears the folder


def test_neovim_with_a_person_s_files(tmp_path, shots, tmux):
    demo = lay_out_pending(tmp_path / "demo")
    ws = demo.workspace
    config, story = ws / ".kitsoki.yaml", ws / "stories" / "release-desk" / "app.yaml"
    tmux.start(shlex.split(walkthrough_line(demo)), isolated_env(tmp_path), ws)
    later(tmux, "Set world.test_cmd to 'pytest'")
    anchor = next(i for i, ln in enumerate(config.read_text().splitlines(), 1) if "base_branch: main" in ln)

    # Refine opens the staged draft, served by the same server: a draft is never a workspace.
    tmux.type(f"{anchor}G")
    command(tmux, ":KitsokiMine refine")
    tmux.wait_for(rf"^Which proposal\?(.|\n)*{PROMPT}", 10)
    pick(tmux, 1)
    tmux.wait_for(r"refining \"Set world\.test_cmd", 15, "the draft opened")
    screen = tmux.wait_for(r"kitsoki: DRAFT of \.kitsoki\.yaml for \"Set world\.test_cmd to 'pytest'\": not the live file",
                           10, "the draft's banner")
    command(tmux, ":lua print('servers: ' .. #vim.lsp.get_clients({ name = 'kitsoki' }) .. ' root: ' .. "
                  "vim.lsp.get_clients({ bufnr = 0 })[1].root_dir)")
    screen = tmux.wait_for(r"servers: \d+ root: \S+", 10)
    assert f"servers: 1 root: {ws}" in screen, screen
    assert len(server_pids(tmux)) == 1
    # An unsaved edit of the draft: "save and accept" is offered up front.
    command(tmux, ":/test_cmd: pytest/")
    tmux.type("A")
    tmux.type("  # refined in Neovim")
    tmux.keys("Escape")
    command(tmux, ":KitsokiMine accept")
    screen = tmux.wait_for(rf"^Accept \"Set world\.test_cmd to 'pytest'\"\?(.|\n)*{PROMPT}", 10)
    assert "1: save and accept: the draft of .kitsoki.yaml has unsaved edits: saved first." in screen, screen
    screenshot(tmux, shots / "09-save-and-accept.png", CHROMIUM, "Neovim: save and accept")
    pick(tmux, 1)
    never_press_enter(tmux, r"kept \"Set world\.test_cmd to 'pytest'\"")
    assert "test_cmd: pytest  # refined in Neovim" in config.read_text()

    # A dismissal asks first, and is restored from the rejected list.
    command(tmux, f":e {config}")
    tmux.wait_for(r"kitsoki: Bind ticket to host\.gh\.ticket", 20, "the binding, re-drafted")
    later(tmux, "Bind ticket to host.gh.ticket")
    command(tmux, ":/test_cmd: pytest/")  # the line the binding's lines follow now
    command(tmux, ":KitsokiMine dismiss")
    screen = tmux.wait_for(rf"Dismiss \"Bind ticket to host\.gh\.ticket\"\?(.|\n)*{PROMPT}", 10)
    assert "1: dismiss: reject it; not raised again (:KitsokiMine rejected restores it)" in screen, screen
    pick(tmux, 1)
    never_press_enter(tmux, r"dismissed \"Bind ticket to host\.gh\.ticket\"")
    command(tmux, ":KitsokiMine rejected")
    screen = tmux.wait_for(rf"^Restore which rejected proposal\?(.|\n)*1: rejected Bind ticket(.|\n)*{PROMPT}", 10)
    screenshot(tmux, shots / "10-rejected.png", CHROMIUM, "Neovim: the rejected list")
    pick(tmux, 1)
    never_press_enter(tmux, r"restored \"Bind ticket to host\.gh\.ticket\"; it is offered again")
    tmux.wait_for(r"┌ kitsoki: Bind ticket to host\.gh\.ticket", 10, "the restored proposal drawn again")

    # A story saved as invalid YAML: where (a sign on the line) and why the proposal waits.
    command(tmux, f":e {story}")
    later(tmux, "Add 1 synonym to release-desk's deploy")
    line = next(i for i, ln in enumerate(story.read_text().splitlines(), 1) if ln.startswith("intents:"))
    command(tmux, f":{line}s/intents:/intents: [/")
    command(tmux, ":w")
    screen = tmux.wait_for(r"waiting: stories/release-desk/app\.yaml:\d+:\d+ does not load", 20, "why it waits")
    assert re.search(r"^E\s", screen, re.MULTILINE), "an error sign on the offending line:\n" + screen
    screenshot(tmux, shots / "11-invalid-yaml.png", CHROMIUM, "Neovim: a story that does not load")
    command(tmux, ":lua vim.diagnostic.open_float({ scope = 'buffer' })")
    screen = tmux.wait_for(r"YAML syntax error", 10, "the diagnostic's message")
    tmux.keys("Escape")
    tmux.type("u")
    command(tmux, ":w")
    tmux.wait_for(r"┌ kitsoki: Add 1 synonym to release-desk's deploy\s*$", 20, "the proposal open again once it loads")

    # The server dies: said, restarted with a back-off, said again; the previews come back.
    [pid] = server_pids(tmux)
    os.kill(pid, signal.SIGKILL)
    screen = never_press_enter(tmux, r"the server stopped \(killed by signal 9\); restarting it in 1 s", 15)
    assert "kitsoki: server stopped" in screen, screen
    screenshot(tmux, shots / "12-server-stopped.png", CHROMIUM, "Neovim: the server stopped")
    never_press_enter(tmux, r"the server was restarted \(it had stopped: killed by signal 9\)", 30)
    tmux.wait_for(r"┌ kitsoki: Add 1 synonym to release-desk's deploy", 20, "the previews back")
    assert len(server_pids(tmux)) == 1 and server_pids(tmux) != [pid]
    command(tmux, ":KitsokiMine restart")
    never_press_enter(tmux, r"the server was restarted \(it had stopped: asked for with :KitsokiMine restart\)", 30)
    command(tmux, ":qa!")
    publish_screenshots(shots, "nvim", clear=False)


def test_two_workspaces_and_one_question_at_a_time(tmp_path, shots, tmux):
    # A workspace whose proposals the server raises itself: one question on screen at a time.
    fresh = lay_out_pending(tmp_path / "fresh", staged=False)
    other = lay_out_pending(tmp_path / "demo")
    tmux.start(shlex.split(walkthrough_line(fresh)), isolated_env(tmp_path), fresh.workspace)
    screen = tmux.wait_for(rf"^Capture as structure\? Set world\.test_cmd to 'pytest'(.|\n)*{PROMPT}", 40,
                           "the first question")
    assert screen.count("Capture as structure?") == 1 and screen.count(PROMPT) == 1, screen
    screenshot(tmux, shots / "13-one-question.png", CHROMIUM, "Neovim: one question")
    tmux.keys("Enter")  # later
    time.sleep(2.5)
    screen = tmux.screen()
    assert "Capture as structure?" not in screen and PROMPT not in screen, "no other question followed:\n" + screen
    assert "kitsoki: 3 proposals [?3]" in screen, screen

    # A second workspace (the same name, another folder): each is named, never added up.
    command(tmux, f":e {other.workspace / '.kitsoki.yaml'}")
    screen = tmux.wait_for(rf"^Capture as structure\? \(demo/release-desk\) Set world\.test_cmd(.|\n)*{PROMPT}", 30,
                           "the second workspace's question, naming it")
    tmux.keys("Enter")
    screen = tmux.wait_for(r"kitsoki demo/release-desk: 3 proposals, fresh/release-desk: 3", 15, "both counts, named")
    command(tmux, ":KitsokiMine queue")
    screen = tmux.wait_for(rf"kitsoki: 6 open proposals(.|\n)*{PROMPT}", 10)
    rows = [ln for ln in screen.splitlines() if "Set world.test_cmd" in ln]
    assert len(rows) == 2 and any("demo/release-desk/.kitsoki.yaml" in r for r in rows) and \
        any("fresh/release-desk/.kitsoki.yaml" in r for r in rows), screen
    screenshot(tmux, shots / "14-two-workspaces.png", CHROMIUM, "Neovim: two workspaces")
    tmux.keys("Enter")
    command(tmux, ":qa!")
    publish_screenshots(shots, "nvim", clear=False)
