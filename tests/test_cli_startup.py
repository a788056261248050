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
