#!/usr/bin/env python3
""""Nothing lost": what the readers and the miner make of a fixed set of transcripts, as text.

    python tests/nothing_lost.py --record     # write tests/fixtures/nothing_lost/*.json

The expected files were recorded from the code as it was on main before the readers were rewritten
for speed (issue 17); tests/test_nothing_lost.py makes the same snapshot with the code as it is and
compares it byte for byte. What is compared, per source (the shared corpus, every transcript fixture,
the demo's transcripts, a set of damaged files in every format, a small generated corpus):

- every session as the full reader returns it (line accounting, problems, turns, tool calls: all of it);
- the `sessions --json` report (what the counts-only path must give the same);
- the recipes file of a seed pass and of the live pass after the files grew (generated corpus: a
  digest of each full session, the whole report and the recipes).

Paths are written relative to the folder they were read from, so the snapshot does not depend on
where the repository or the temp folder is.
"""

from __future__ import annotations

import hashlib
import shutil
import sys
import tempfile
from pathlib import Path

import orjson

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
EXPECTED = HERE / "fixtures" / "nothing_lost"
SHARED_CORPUS = REPO.parent / "shared" / "corpus"
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))
for extra in (HERE / "bench", HERE / "adversarial"):  # last: tests/bench/server.py must not hide `server`
    if str(extra) not in sys.path:
        sys.path.append(str(extra))

from core.transcripts.discover import discover  # noqa: E402
from core.transcripts.ingest import read_session, scan  # noqa: E402
from core.transcripts.model import session_to_json  # noqa: E402

GENERATED_MB = 40
GENERATED_SEED = 3
GENERATED_BIG_MB = 4


# -- the damaged files ---------------------------------------------------------------------------

def _bad_lines() -> dict[str, bytes]:
    """Lines every reader must account for exactly as before: each is inserted into a good file."""
    deep_ok = b'{"a":' * 1000 + b"1" + b"}" * 1000
    return {
        "blank": b"",
        "spaces": b"   \t ",
        "not-json": b"{not json",
        "array": b"[1, 2]",
        "number": b"42",
        "string": b'"just a string"',
        "garbage": bytes(range(256)).replace(b"\n", b""),
        "invalid-utf8-in-skipped-field": b'{"type":"user","zz":"caf\xff\xfe","uuid":"bad-utf8-1"}',
        "invalid-utf8-in-key": b'{"type":"progress","\xff":1}',
        "invalid-utf8-in-prompt": (b'{"type":"user","uuid":"u-utf8","sessionId":"s","message":{"role":"user",'
                                   b'"content":"caf\xc3\xa9 \xff done"}}'),
        "lone-surrogate-value": b'{"type":"user","text":"deploy \\ud800 now"}',
        "lone-surrogate-key": b'{"\\udc00":1,"type":"user"}',
        "surrogate-pair": b'{"type":"unknown-kind","ok":"\\ud83d\\ude00"}',
        "glued": b'{"type":"last-prompt","lastPrompt":"a"}{"type":"permission-mode","permissionMode":"x"}',
        "glued-bad": b'{"type":"last-prompt"}{"t":"\\ud800"}',
        "array-5000-deep": b"[" * 5000 + b"]" * 5000,
        "object-1100-deep": b'{"a":' * 1100 + b"1" + b"}" * 1100,
        "record-1000-deep-value": b'{"type":"summary","x":' + deep_ok + b"}",
        "record-1023-deep-value": b'{"type":"summary","x":' + b"[" * 1022 + b"]" * 1022 + b"}",
        "record-1024-deep-value": b'{"type":"summary","x":' + b"[" * 1023 + b"]" * 1023 + b"}",
        "big-int": b'{"type":"summary","summary":"big","n":200000000000000000000}',
        "big-int-typed": b'{"type":"session","version":200000000000000000000,"id":"x"}',
        "huge-float": b'{"type":"summary","n":1e400}',
        "nan": b'{"type":"summary","n":NaN}',
        "control-char": b'{"type":"summary","summary":"a\x01b"}',
        "bom": b'\xef\xbb\xbf{"type":"summary","summary":"bom"}',
        "carriage-return": b'{"type":"summary","summary":"cr"}\r',
        "duplicate-key": b'{"type":"summary","type":"progress","uuid":"dup-key-1"}',
        "type-not-a-string": b'{"type":5,"uuid":"t5"}',
        "no-type": b'{"uuid":"nt","message":{"role":"user","content":"hi"}}',
        "wrong-shapes": (b'{"type":"user","uuid":7,"parentUuid":[1],"sessionId":3,"timestamp":9,"cwd":{},'
                         b'"message":"not an object","isMeta":"yes"}'),
        "wrong-content": (b'{"type":"assistant","uuid":"wc1","message":{"id":5,"model":7,"content":'
                          b'[1,"x",{"type":"tool_use","id":9,"name":["Bash"],"input":[1,2]},{"type":"text","text":5}]}}'),
        "wrong-result": (b'{"type":"user","uuid":"wr1","toolUseResult":[1],"message":{"content":'
                         b'[{"type":"tool_result","tool_use_id":5,"content":{"a":1}},{"type":"tool_result",'
                         b'"content":[{"type":"text","text":["x"]},7]}]}}'),
        "escaped-rejection": (b'{"type":"user","uuid":"er1","toolUseResult":"User rejected tool use","message":'
                              b'{"content":[{"type":"tool_result","tool_use_id":"toolu_x","content":'
                              b'"\\u0055ser rejected tool use"}]}}'),
        "secret-title": b'{"type":"ai-title","aiTitle":"deploy with AKIAIOSFODNN7EXAMPLE password=hunter2hunter2"}',
        "secret-summary": b'{"type":"summary","summary":"token ghp_abcdefghijklmnopqrstuvwxyz0123456789"}',
        "secret-id": (b'{"type":"user","uuid":"password=s3cr3tvalue99","sessionId":"api_key=abcdefghijkl12345",'
                      b'"message":{"role":"user","content":"export AWS_SECRET=abc"}}'),
        "pi-title": b'{"type":"title","title":"secret sk-ant-api03-abcdefghijklmnopqrstuvwxyz"}',
        "codex-odd": b'{"timestamp":"2026-01-01T00:00:00Z","type":"event_msg","payload":[1]}',
    }


AT_END = frozenset({"secret-title", "secret-summary"})


def _bad_files(root: Path) -> Path:
    """Every damaged line inserted (as line 4) into a good session of each format; plus a torn tail."""
    import transcript_world as W  # tests/adversarial: one good history per format

    out = root / "bad-inputs"
    for fmt in W.FORMATS:
        base = W.world(fmt)
        for name, line in _bad_lines().items():
            files = {k: (list(v) if isinstance(v, list) else v) for k, v in base.items()}
            trunk = next(k for k in files if k.endswith(".jsonl") and "subagents" not in k)
            # a title counts when it is the last one: those go at the end, the rest as line 4
            files[trunk].insert(len(files[trunk]) if name in AT_END else 3, line)
            W.write_world(files, out / fmt / name)
        files = {k: (list(v) if isinstance(v, list) else v) for k, v in base.items()}
        trunk = next(k for k in files if k.endswith(".jsonl") and "subagents" not in k)
        W.write_world(files, out / fmt / "torn-tail")
        path = out / fmt / "torn-tail" / trunk
        path.write_bytes(path.read_bytes() + b'{"type":"user","uuid":"tor')
    return out


# -- the snapshot --------------------------------------------------------------------------------

def _rel(data: bytes, root: Path) -> bytes:
    return data.replace(str(root).encode(), b"<root>")


def _dump(value) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS)


def _sessions(folder: Path, root: Path, digest: bool = False) -> dict:
    units = discover(None, [folder])
    out = {}
    for unit in sorted(units, key=lambda u: [str(p) for p in u.paths]):
        key = _rel(str(unit.paths[0]).encode(), root).decode()
        body = _rel(orjson.dumps(session_to_json(read_session(unit)), option=orjson.OPT_SORT_KEYS), root)
        out[key] = hashlib.sha256(body).hexdigest() if digest else orjson.loads(body)
    report = {}
    for redact in (True, False):
        for workers in (1, 2):
            data = scan(units, redact=redact, workers=workers).model_dump(mode="json")
            text = _rel(orjson.dumps(data, option=orjson.OPT_SORT_KEYS), root)
            report[f"redact={redact},workers={workers}"] = orjson.loads(text)
    return {"sessions": out, "scan": report}


def _recipes(folder: Path, root: Path, scratch: Path, grow: Path | None = None) -> dict:
    """recipes.json of a seed pass over everything in `folder`; with `grow`, the file whose second
    half is held back for the seed and appended (plus a torn tail, then its end) for live passes."""
    from core.mining.passes import run_pass

    ws = scratch / "ws"
    shutil.rmtree(ws, ignore_errors=True)
    ws.mkdir(parents=True)
    # Everything in the folder, as the recording was made before sessions were sorted by project:
    # every folder a session records is named this workspace's.
    no_home = {"home": Path("/nonexistent"), "env": {}, "project_paths": ["/", "C:\\", "c:\\"]}
    out = {}
    full = None
    if grow is not None:
        full = grow.read_bytes()
        lines = full.splitlines(keepends=True)
        half = len(lines) // 2
        grow.write_bytes(b"".join(lines[:half]) + lines[half][: len(lines[half]) // 2])
    try:
        run_pass(ws, dirs=[folder], trigger="seed", first_pass_sample=10**6, **no_home)
        recipes = ws / ".artifacts" / "mining" / "recipes.json"
        out["seed"] = _rel(recipes.read_bytes(), root).decode()
        if grow is not None:
            grow.write_bytes(b"".join(lines[: half + len(lines) // 4]))
            run_pass(ws, dirs=[folder], trigger="live", **no_home)
            out["live-1"] = _rel(recipes.read_bytes(), root).decode()
            grow.write_bytes(full)
            run_pass(ws, dirs=[folder], trigger="live", **no_home)
            out["live-2"] = _rel(recipes.read_bytes(), root).decode()
    finally:
        if full is not None:
            grow.write_bytes(full)
    return out


def snapshot(scratch: Path) -> dict[str, bytes]:
    """name -> file body, for every expected file."""
    scratch = Path(scratch)
    out: dict[str, bytes] = {}
    # Copied, so that paths are short and the same wherever the repository is.
    sources = {
        "shared-corpus": SHARED_CORPUS,
        "fixtures": HERE / "fixtures" / "transcripts",
        "demo": REPO / "core" / "demo",
    }
    for name, src in sources.items():
        dst = scratch / name
        shutil.copytree(src, dst, ignore=shutil.ignore_patterns("workspace"))
        data = _sessions(dst, dst)
        if name != "fixtures":
            data["recipes"] = _recipes(dst, dst, scratch / f"{name}-mine")
        out[f"{name}.json"] = _dump(data)
    bad = _bad_files(scratch)
    data = {}
    for fmt_dir in sorted(bad.iterdir()):
        for case in sorted(fmt_dir.iterdir()):
            data[f"{fmt_dir.name}/{case.name}"] = _sessions(case, case)
    out["bad-inputs.json"] = _dump(data)

    import gen_corpus

    gen = scratch / "generated"
    gen_corpus.generate(gen, GENERATED_MB, GENERATED_BIG_MB, GENERATED_SEED, quiet=True)
    projects = gen / "projects"
    data = _sessions(projects, gen, digest=True)
    trunks = sorted(p for p in projects.glob("*/*.jsonl"))
    grow = sorted(trunks, key=lambda p: (p.stat().st_size, str(p)))[len(trunks) // 2]
    data["recipes"] = _recipes(projects, gen, scratch / "generated-mine", grow=grow)
    data["generator"] = {"version": gen_corpus.GENERATOR_VERSION, "size_mb": GENERATED_MB, "seed": GENERATED_SEED}
    out["generated.json"] = _dump(data)
    return out


def main(argv: list[str]) -> int:
    if argv != ["--record"]:
        print(__doc__)
        return 2
    with tempfile.TemporaryDirectory(prefix="nothing-lost-") as tmp:
        files = snapshot(Path(tmp))
    EXPECTED.mkdir(parents=True, exist_ok=True)
    for name, body in files.items():
        (EXPECTED / name).write_bytes(body)
        print(f"{EXPECTED / name}: {len(body)} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
