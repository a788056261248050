"""Language-server benchmark: start-up, and proposals / code lens latency with 500 pending
proposals in one file, over the real server on stdio.

    .venv/bin/python tests/bench/server.py [--proposals 500] [--runs 200] [--json]

The workspace is the embedded demo, mined and proposed for real; its `.kitsoki.yaml` proposal is
then staged 500 times under new ids (with a `mining.proposal_raised` each), so the server serves
500 pending proposals on one file. Targets: `kitsoki/proposals` and `textDocument/codeLens` p95
< 20 ms; process start to `initialize` answered < 1 s. `kitsoki/mineStatus` (no proposal work)
is timed in the same run as the baseline of a round trip on this machine.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from core.demo.walkthrough import lay_out, seed_pass  # noqa: E402
from core.mining.service import trace_path  # noqa: E402
from core.proposals.inbox import inbox  # noqa: E402
from core.proposals.model import Proposal  # noqa: E402
from core.proposals.proposer import run_proposer  # noqa: E402
from core.proposals.staging import PROPOSAL_FILE, stage_dir  # noqa: E402
from core.trace import Trace  # noqa: E402


def make_workspace(root: Path, count: int) -> Path:
    _, ws, transcripts = lay_out(root / "demo")
    _, recipes = seed_pass(ws, transcripts)
    run_proposer(ws, recipes)
    template = next(p for p in inbox(ws) if p.files and p.files[0].path == ".kitsoki.yaml")
    source = stage_dir(ws, template.recipe_id)
    trace = Trace(trace_path(ws))
    for n in range(count):
        rid = f"bench{n:011d}"
        target = stage_dir(ws, rid)
        shutil.copytree(source, target)
        card = Proposal.model_validate_json((source / PROPOSAL_FILE).read_bytes())
        card.recipe_id, card.title = rid, f"{template.title} #{n}"
        (target / PROPOSAL_FILE).write_text(card.model_dump_json())
        trace.proposal_raised(recipe_id=rid, kind=card.kind, target=card.target, priority=card.priority,
                              rung=card.rung, draft_path=f".artifacts/mining/{rid}")
    return ws


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


class RawClient:
    """A bare JSON-RPC client over the server's stdio, as an editor is: frames and json.loads, no
    typed structuring, so the figures are the server's (pygls' own client builds a namedtuple
    class per JSON object, which costs more than the server does)."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.next_id = 0
        self.waiting: dict[int, asyncio.Future] = {}
        self.reader = asyncio.get_running_loop().create_task(self._read())

    @classmethod
    async def start(cls) -> RawClient:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "server.cli", "serve", cwd=ROOT,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL)
        return cls(process)

    async def _read(self) -> None:
        stdout = self.process.stdout
        while True:
            length = 0
            while True:
                line = await stdout.readline()
                if not line:
                    return
                if line in (b"\r\n", b"\n"):
                    break
                name, _, value = line.decode().partition(":")
                if name.lower() == "content-length":
                    length = int(value)
            message = json.loads(await stdout.readexactly(length))
            if "id" in message and "method" in message:  # a request from the server: answer null
                self._send({"jsonrpc": "2.0", "id": message["id"], "result": None})
            elif "id" in message and message["id"] in self.waiting:
                self.waiting.pop(message["id"]).set_result(message)
            elif "method" in message:
                self.on_notification(message)

    def on_notification(self, message: dict) -> None:
        """A notification from the server (ignored here; tests/bench/server_busy.py counts them)."""

    def _send(self, message: dict) -> None:
        body = json.dumps(message).encode()
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    async def request(self, method: str, params) -> dict:
        self.next_id += 1
        future = asyncio.get_running_loop().create_future()
        self.waiting[self.next_id] = future
        self._send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        message = await future
        if "error" in message:
            raise RuntimeError(f"{method}: {message['error']}")
        return message["result"]

    def notify(self, method: str, params) -> None:
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    async def close(self) -> None:
        await self.request("shutdown", None)
        self.notify("exit", None)
        await self.process.wait()
        self.reader.cancel()


async def measure(ws: Path, runs: int) -> dict:
    started = time.perf_counter()
    client = await RawClient.start()
    await client.request("initialize", {"processId": None, "rootUri": ws.as_uri(), "capabilities": {},
                                        "workspaceFolders": [{"uri": ws.as_uri(), "name": "ws"}],
                                        "initializationOptions": {"mining": False, "watch": False}})
    to_initialize = time.perf_counter() - started
    client.notify("initialized", {})
    while True:  # the inbox is loaded off the event loop after initialized
        status = await client.request("kitsoki/mineStatus", {})
        if status["workspaces"] and status["workspaces"][0]["pending"]:
            break
        await asyncio.sleep(0.005)
    to_ready = time.perf_counter() - started
    pending = status["workspaces"][0]["pending"]
    config_uri = (ws / ".kitsoki.yaml").as_uri()

    async def timed(call) -> list[float]:
        out = []
        gc.disable()  # the client's own collector pausing on big answers is not the server's latency
        try:
            for _ in range(runs):
                t0 = time.perf_counter()
                await call()
                out.append((time.perf_counter() - t0) * 1000)
        finally:
            gc.enable()
        return out

    baseline = await timed(lambda: client.request("kitsoki/mineStatus", {}))
    proposals = await timed(lambda: client.request("kitsoki/proposals", {"uri": config_uri}))
    lenses = await timed(lambda: client.request("textDocument/codeLens", {"textDocument": {"uri": config_uri}}))
    count = len((await client.request("kitsoki/proposals", {"uri": config_uri}))["proposals"])
    lens_count = len(await client.request("textDocument/codeLens", {"textDocument": {"uri": config_uri}}))
    await client.close()

    def stats(values):
        return {"p50_ms": round(statistics.median(values), 2), "p95_ms": round(percentile(values, 0.95), 2),
                "max_ms": round(max(values), 2)}

    return {"pending": pending, "proposals_on_file": count, "lenses_on_file": lens_count,
            "start_to_initialize_s": round(to_initialize, 3),
            "start_to_inbox_ready_s": round(to_ready, 3), "mineStatus (baseline)": stats(baseline),
            "kitsoki/proposals": stats(proposals), "textDocument/codeLens": stats(lenses),
            "proposals_vs_baseline_p95": round(percentile(proposals, 0.95) / percentile(baseline, 0.95), 2),
            "codeLens_vs_baseline_p95": round(percentile(lenses, 0.95) / percentile(baseline, 0.95), 2)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--proposals", type=int, default=500)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kitsoki-bench-server-") as tmp:
        ws = make_workspace(Path(tmp), args.proposals)
        figures = asyncio.run(measure(ws, args.runs))
    if args.json:
        print(json.dumps(figures, indent=2))
        return 0
    print(f"pending proposals: {figures['pending']} ({figures['proposals_on_file']} on .kitsoki.yaml, "
          f"{figures['lenses_on_file']} lenses)")
    print(f"start -> initialize answered: {figures['start_to_initialize_s']:.3f} s (target < 1 s)")
    print(f"start -> inbox ready:         {figures['start_to_inbox_ready_s']:.3f} s")
    for name in ("mineStatus (baseline)", "kitsoki/proposals", "textDocument/codeLens"):
        s = figures[name]
        print(f"{name:<24} p50 {s['p50_ms']:7.2f} ms   p95 {s['p95_ms']:7.2f} ms   max {s['max_ms']:7.2f} ms")
    print(f"p95 vs baseline: proposals x{figures['proposals_vs_baseline_p95']}, "
          f"codeLens x{figures['codeLens_vs_baseline_p95']} (target p95 < 20 ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
