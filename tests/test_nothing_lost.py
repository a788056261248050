"""Nothing lost: the readers and the miner give, byte for byte, what they gave before they were made fast.

The expected files (tests/fixtures/nothing_lost/) were recorded by `python tests/nothing_lost.py --record`
from the code on main before issue 17's changes; see tests/nothing_lost.py for what is in them.
"""

from __future__ import annotations

import orjson
import pytest

import nothing_lost

pytestmark = pytest.mark.corpus


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory):
    return nothing_lost.snapshot(tmp_path_factory.mktemp("nothing-lost"))


def _first_difference(old, new, where="") -> str:
    if type(old) is not type(new):
        return f"{where or '(top)'}: {old!r:.200} != {new!r:.200}"
    if isinstance(old, dict):
        for key in sorted(set(old) | set(new)):
            if key not in old or key not in new:
                return f"{where}/{key}: only in {'the recording' if key in old else 'this run'}"
            if old[key] != new[key]:
                return _first_difference(old[key], new[key], f"{where}/{key}")
    if isinstance(old, list):
        if len(old) != len(new):
            return f"{where}: {len(old)} items recorded, {len(new)} now"
        for i, (a, b) in enumerate(zip(old, new)):
            if a != b:
                return _first_difference(a, b, f"{where}[{i}]")
    if isinstance(old, str) and old.startswith("{") and new.startswith("{"):
        try:
            return _first_difference(orjson.loads(old), orjson.loads(new), where)
        except orjson.JSONDecodeError:
            pass
    return f"{where or '(top)'}: {old!r:.300} != {new!r:.300}"


@pytest.mark.parametrize("name", ["shared-corpus.json", "fixtures.json", "demo.json", "bad-inputs.json",
                                  "generated.json"])
def test_same_sessions_accounting_problems_and_recipes_as_recorded(snapshot, name):
    recorded = (nothing_lost.EXPECTED / name).read_bytes()
    now = snapshot[name]
    if now != recorded:
        pytest.fail(f"{name} differs from the recording: {_first_difference(orjson.loads(recorded), orjson.loads(now))}")
