"""The command line imports only what the command it runs needs (start-up is most of a small run)."""

import subprocess
import sys

from conftest import CLI

PROBE = """
import sys
from server.cli import main
code = main({argv!r})
heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('rich', 'pygls', 'lsprotocol', 'mcp', 'ruamel')
               or m.startswith(('core.learnings', 'core.runs', 'core.proposals', 'core.flows', 'core.kitsoki')))
print('HEAVY', heavy)
"""


def _imports(argv, tmp_path):
    out = subprocess.run([sys.executable, "-c", PROBE.format(argv=argv)], capture_output=True, text=True,
                         cwd=tmp_path, check=True).stdout
    return [line for line in out.splitlines() if line.startswith("HEAVY")][0]


def test_version_is_printed_without_building_the_parser():
    run = subprocess.run([*CLI, "--version"], capture_output=True, text=True)
    assert run.returncode == 0 and run.stdout.startswith("kitsoki-miner ")


def test_sessions_imports_no_other_command(tmp_path):
    (tmp_path / "empty").mkdir()
    assert _imports(["sessions", "--dir", str(tmp_path / "empty"), "--json"], tmp_path) == "HEAVY []"


def test_help_still_lists_every_command():
    run = subprocess.run([*CLI, "--help"], capture_output=True, text=True)
    assert run.returncode == 0
    for command in ("sessions", "mine", "evolve", "runs", "serve", "accept"):
        assert command in run.stdout


DRAFTING = ("core.proposals.drafter", "core.proposals.mapper", "core.proposals.validate", "core.proposals.proofs",
            "core.kitsoki.inventory", "core.kitsoki.routing", "core.flows", "core.apply.applier", "core.mining.asks",
            "core.transcripts.steps", "jsonschema", "rapidfuzz", "snowballstemmer", "lark", "rich")


def test_a_propose_with_nothing_changed_imports_no_drafting(tmp_path):
    """The proposer's memo answers it: nothing is mapped, drafted or validated, so none of that is imported."""
    import os
    import time

    from core.mining.recipes import RecipesFile
    from test_proposals import recipe, workspace

    ws = workspace(tmp_path)
    state = ws / ".artifacts" / "mining"
    state.mkdir(parents=True)
    recipes = [recipe("binding", "ticket via gh", iface="ticket", value="gh"),
               recipe("world", "release from trunk", iface="base_branch", value="trunk")]
    (state / "recipes.json").write_text(RecipesFile(recipes=recipes).model_dump_json())
    then = time.time() - 60  # older than the racy window, as a real checkout's files are
    for path in [ws, *ws.rglob("*")]:
        os.utime(path, (then, then))
    first = subprocess.run([*CLI, "propose", "--repo", str(ws), "--json"], capture_output=True, text=True)
    assert first.returncode == 0, first.stderr
    probe = PROBE.replace("heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('rich', 'pygls', 'lsprotocol', "
                          "'mcp', 'ruamel')\n               or m.startswith(('core.learnings', 'core.runs', "
                          "'core.proposals', 'core.flows', 'core.kitsoki')))",
                          f"heavy = sorted(m for m in sys.modules if m.startswith({DRAFTING!r}))")
    assert probe != PROBE
    out = subprocess.run([sys.executable, "-c", probe.format(argv=["propose", "--repo", str(ws), "--json"])],
                         capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert '"already-modeled"' in out.stdout or '"open"' in out.stdout
    heavy = [line for line in out.stdout.splitlines() if line.startswith("HEAVY")]
    assert heavy == ["HEAVY []"]
