#!/usr/bin/env python3
"""Nothing lost on the big generated corpus: digests of what `sessions --json` and a cold seed pass give.

    python tests/bench/same_output.py [--corpus DIR] [--record]

With --record, writes tests/bench/expected/<corpus name>.json; without, compares against it and
exits 1 on a difference. The recording in the repository was made from the code on main before
issue 17's changes. Paths are relative to the corpus root, so the digests do not depend on where it is.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(HERE))

import orjson  # noqa: E402

from ingest import corpus_root, ensure_corpus  # noqa: E402

EXPECTED = HERE / "expected"


def digests(root: Path, workers: int | None = None) -> dict:
    from core.mining.passes import run_pass
    from core.transcripts.discover import discover
    from core.transcripts.ingest import scan

    projects = root / "projects"
    report = scan(discover(None, [projects]), workers=workers).model_dump(mode="json")
    body = orjson.dumps(report, option=orjson.OPT_INDENT_2).replace(str(root).encode(), b"<root>")
    with tempfile.TemporaryDirectory(prefix="same-output-") as tmp:
        ws = Path(tmp) / "ws"
        ws.mkdir()
        run_pass(ws, dirs=[projects], trigger="seed", first_pass_sample=10**9, workers=workers,
                 home=Path("/nonexistent"), env={}, project_paths=["/home/dev"])  # where gen_corpus's sessions ran
        recipes = (ws / ".artifacts" / "mining" / "recipes.json").read_bytes().replace(str(root).encode(), b"<root>")
        shutil.rmtree(ws)
    return {"sessions_sha256": hashlib.sha256(body).hexdigest(), "totals": report["totals"],
            "recipes_sha256": hashlib.sha256(recipes).hexdigest(), "recipes": len(orjson.loads(recipes)["recipes"])}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path)
    ap.add_argument("--record", action="store_true")
    a = ap.parse_args(argv)
    root = corpus_root(a.corpus) if a.corpus else ensure_corpus(1024, None, 1)
    now = digests(root)
    path = EXPECTED / f"{root.name}.json"
    if a.record:
        EXPECTED.mkdir(exist_ok=True)
        path.write_text(json.dumps(now, indent=2, sort_keys=True) + "\n")
        print(f"recorded {path}: {now}")
        return 0
    recorded = json.loads(path.read_text())
    same = recorded == now
    print(json.dumps({"same": same, "recorded": recorded, "now": now}, indent=2))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
