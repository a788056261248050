"""What naming a transcript by its display path costs (core/transcripts/display.py): per new path (each
process computes a file's display path once) and per path again (memoized), on the corpus's paths and
on synthetic Claude Code paths (a project folder, a session UUID), with a history in a secret folder
beside them.

    .venv/bin/python tests/bench/display_paths.py [--files N]
"""

from __future__ import annotations

import argparse
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=20000, help="synthetic paths (default 20000)")
    args = parser.parse_args()
    from core.transcripts import display

    corpus = ROOT.parent / "shared" / "corpus"
    paths = [str(p) for p in corpus.rglob("*.jsonl")] if corpus.is_dir() else []
    paths += [f"/home/u/.claude/projects/-home-u-src-app{i % 50}/{uuid.uuid4()}.jsonl" for i in range(args.files)]
    secret = [f"/home/u/ghp_Kq7vR2mXw9Lp4TzN8bYc3HdF6sJ0gUaE1oVi/.codex/sessions/2026/11/02/"
              f"rollout-2026-11-02T12-00-00-{uuid.uuid4()}.jsonl" for _ in range(max(1, args.files // 20))]
    for label, batch in (("clean", paths), ("in a secret folder", secret)):
        t = time.perf_counter()
        for p in batch:
            display.display_path(p)
        first = time.perf_counter() - t
        t = time.perf_counter()
        for p in batch:
            display.display_path(p)
        again = time.perf_counter() - t
        print(f"{label:<20} {len(batch):>6} paths: {first * 1e6 / len(batch):6.1f} us a new path, "
              f"{again * 1e6 / len(batch):5.2f} us again")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
