#!/usr/bin/env python3
"""Generate a deterministic, realistic Claude Code transcript corpus for the ingestion benchmark.

    python tests/bench/gen_corpus.py OUT_DIR --size-mb 1024 [--big-file-mb 300] [--seed 1]

The layout is the one Claude Code writes under ``~/.claude``, so ``CLAUDE_CONFIG_DIR=OUT_DIR`` works
for ccusage and ``OUT_DIR/projects`` is what our CLI reads::

    OUT_DIR/projects/<slug>/<sessionId>.jsonl
    OUT_DIR/projects/<slug>/<sessionId>/subagents/agent-<7 hex>.jsonl          (Task subagents)
    OUT_DIR/projects/<slug>/<sessionId>/subagents/agent-acompact-<6 hex>.jsonl (compaction agents)
    OUT_DIR/corpus-manifest.json   parameters and achieved statistics, written last

Records copy the shapes of the real 2.1.38/2.1.39 files in shared/corpus/claude-code (key order
included): compact JSON, raw UTF-8, the envelope (parentUuid/uuid chain, sessionId, cwd, version,
gitBranch, slug, userType, isSidechain, agentId in subagents), hook/bash/agent progress lines (the
most numerous), prompts, tool_result lines with ``toolUseResult`` (none in subagent files, as in
the real ones), assistant messages split one content block per line sharing ``message.id`` and
``requestId`` and repeating ``usage``, thinking blocks with signatures, file-history-snapshot,
system subtypes, queue-operation and compaction.

File sizes follow a log-normal fitted to a heavy user (median ~105 KB, p95 ~1.5 MB, p99 ~5.4 MB)
sampled by stratified quantiles so small corpora hit the shape too; plus one very large session.
Everything is derived from ``--seed``: the same arguments give byte-identical output. Writes are
streamed (memory stays at a few tens of MB whatever the size); the output goes to a temporary
sibling directory that is renamed into place only when complete.
"""

from __future__ import annotations

import argparse
import base64
import json
import math
import random
import shutil
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

MB = 1024 * 1024
KB = 1024
GENERATOR_VERSION = 1
"""Bump when the output for given arguments changes, so cached corpora are regenerated."""

# ---- size model -----------------------------------------------------------------------------

MEDIAN_BYTES = 96 * KB  # planned; written files come out ~8% larger (opening and closing records)
SIGMA = 1.66  # ln(p95/median)/1.645 = 1.62, ln(p99/median)/2.326 = 1.69
MIN_FILE = 3 * KB
MAX_FILE = 16 * MB
HUGE_LINE = (1 * MB, 5 * MB)  # "occasional very long lines"

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), check_circular=False).encode


def lognormal_quantile(p: float, median: float = MEDIAN_BYTES, sigma: float = SIGMA) -> float:
    return median * math.exp(sigma * statistics.NormalDist().inv_cdf(p))


def plan_sizes(budget: int, rng: random.Random) -> list[int]:
    """Stratified log-normal file sizes summing to ~budget, shuffled deterministically."""
    if budget <= 0:
        return []
    # Mean of the clipped distribution, numerically.
    probe = [min(MAX_FILE, max(MIN_FILE, lognormal_quantile((i + 0.5) / 4000))) for i in range(4000)]
    mean = sum(probe) / len(probe)
    n = max(1, round(budget / mean))
    sizes = [min(MAX_FILE, max(MIN_FILE, lognormal_quantile((i + 0.5) / n))) for i in range(n)]
    scale = budget / sum(sizes)
    sizes = [max(MIN_FILE, int(s * scale)) for s in sizes]
    rng.shuffle(sizes)
    return sizes


# ---- text material --------------------------------------------------------------------------

_WORDS = (
    "the a to of and in for is that on with this it be as are we can not by from at or our an "
    "should will need function file test tests error value return config session record line "
    "parser module update change check run build handle request response state data type list "
    "map key index path directory output input stream buffer reader writer cache token usage "
    "model message tool result event hook agent project branch commit merge review fix bug issue "
    "step next first then after before because so but also only each every all some any none "
    "implement refactor rename extract inline move delete add remove keep replace apply revert "
    "green red flaky timeout retry limit bound memory chunk batch worker pool queue lock snapshot"
).split()

_IDENTS = (
    "session record parser reader writer handler config state cache index line chunk buffer item "
    "entry user agent tool result event hook request response payload client server store repo "
    "path node tree graph edge visitor builder factory manager service worker pool queue lock "
    "snapshot journal trace span metric counter total count size offset limit cursor token"
).split()

_FILES = (
    "lib/app/session.ex lib/app_web/live/session_live.ex src/parser.ts src/index.ts src/cli.ts "
    "core/transcripts/lines.py core/mining/episodes.py server/cli.py tests/test_lines.py "
    "internal/engine/story.go cmd/kitsoki/main.go pkg/flows/runner.go README.md Makefile "
    "package.json pyproject.toml config/config.exs assets/js/app.js src/components/Table.tsx "
    "docs/design.md scripts/release.sh .github/workflows/ci.yml stories/onboarding/app.yaml"
).split()


def _code_line(rng: random.Random) -> str:
    a, b, c = rng.choice(_IDENTS), rng.choice(_IDENTS), rng.choice(_IDENTS)
    ind = " " * rng.choice((0, 2, 4, 4, 4, 8, 8, 12, 16))
    k = rng.randrange(24)
    if k == 0:
        return f"{ind}def {a}_{b}(self, {c}: dict[str, Any]) -> {b.title()}{c.title()}:"
    if k == 1:
        return f'{ind}"""Return the {a} for {b} — bounded by {c}."""'
    if k == 2:
        return f"{ind}func ({a[0]} *{a.title()}) {b.title()}{c.title()}(ctx context.Context) error {{"
    if k == 3:
        return f"{ind}const {a}{b.title()} = await this.{c}.get(`${{{a}}}/{b}`);"
    if k == 4:
        return f"{ind}if err := {a}.{b.title()}(); err != nil {{ return fmt.Errorf(\"{c}: %w\", err) }}"
    if k == 5:
        return f"{ind}{a}_{b} = {{\"{c}\": {rng.randrange(10000)}, \"{a}\": [\"{b}\", \"{c}\"]}}"
    if k == 6:
        return f"{ind}# {rng.choice(_WORDS)} {a} {rng.choice(_WORDS)} {b} → {c} (see {rng.choice(_FILES)})"
    if k == 7:
        return f"{ind}  def handle_event(\"{a}_{b}\", %{{\"{c}\" => {c}}}, socket) do"
    if k == 8:
        return f"{ind}{a}.{b}({c}, {{ {a}: {rng.randrange(100)}, {b}: '{c}' }});"
    if k == 9:
        return f"{ind}return {a}.{b}.filter(({c}) => {c}.{a} !== null && {c}.{b} > {rng.randrange(50)});"
    if k == 10:
        return f"{ind}assert {a}.{b} == {rng.randrange(1000)}, f\"unexpected {{{a}.{b}!r}} for {c}\""
    if k == 11:
        return f"{ind}for {a} in {b}s:"
    if k == 12:
        return f"{ind}raise ValueError(f\"{a} {b} café naïve: {{{c}}}\")"
    if k == 13:
        return f"{ind}<div class=\"flex items-center gap-2 {a}-{b}\" phx-click=\"{c}\">"
    if k == 14:
        return ""
    if k == 15:
        return f"{ind}}}"
    if k == 16:
        return f"{ind}end"
    if k == 17:
        return f"{ind}import {{ {a.title()}, {b.title()} }} from './{c}';"
    if k == 18:
        return f"{ind}{a}: {b}  # {' '.join(rng.choice(_WORDS) for _ in range(6))}"
    if k == 19:
        return f"{ind}log.debug(\"{a} {b}\", \"{c}\", len({a}), \"\\t\", {b}.tab)"
    return f"{ind}{a}_{b} = {c}.{rng.choice(_IDENTS)}({a}, {b}={rng.randrange(256)})"


def _log_line(rng: random.Random) -> str:
    a, b = rng.choice(_IDENTS), rng.choice(_IDENTS)
    k = rng.randrange(14)
    if k == 0:
        return f"tests/test_{a}.py::test_{b}_{rng.choice(_IDENTS)} PASSED{' ' * rng.randrange(1, 30)}[{rng.randrange(100):3d}%]"
    if k == 1:
        return f"\x1b[32m✓\x1b[39m {a} {b} \x1b[2m({rng.randrange(900)} ms)\x1b[22m"
    if k == 2:
        return f"-rw-r--r--  1 dev dev {rng.randrange(100, 900000):>8} Feb 12 14:{rng.randrange(60):02d} {a}_{b}.py"
    if k == 3:
        return f"{rng.getrandbits(28):07x} {rng.choice(('fix', 'feat', 'chore', 'refactor'))}({a}): {b} {rng.choice(_WORDS)} {rng.choice(_WORDS)}"
    if k == 4:
        return f"warning: unused variable `{a}_{b}` at {rng.choice(_FILES)}:{rng.randrange(1, 900)}:{rng.randrange(1, 80)}"
    if k == 5:
        return f"  {rng.choice(_FILES)}:{rng.randrange(1, 999)}: {_code_line(rng).strip()}"
    if k == 6:
        return f"{time.strftime('%H:%M:%S', time.gmtime(rng.randrange(86400)))}.{rng.randrange(1000):03d} [info] {a} {b} done in {rng.randrange(1, 5000)}ms"
    if k == 7:
        return f"Compiling {rng.randrange(1, 40)} files (.ex)"
    if k == 8:
        return f"FAILED tests/test_{a}.py::test_{b} - AssertionError: assert {rng.randrange(99)} == {rng.randrange(99)}"
    if k == 9:
        return f"  at {a.title()}.{b} ({rng.choice(_FILES)}:{rng.randrange(1, 500)}:{rng.randrange(1, 60)})"
    if k == 10:
        return f"M  {rng.choice(_FILES)}"
    if k == 11:
        return f"{a}…{b}: {rng.random():.6f}"
    return f"{rng.choice(_FILES)}:{rng.randrange(1, 999)}:{_code_line(rng)}"


def _sentence(rng: random.Random) -> str:
    n = rng.randrange(6, 22)
    words = [rng.choice(_WORDS) for _ in range(n)]
    if rng.random() < 0.3:
        words.insert(rng.randrange(n), f"`{rng.choice(_FILES)}`")
    if rng.random() < 0.15:
        words.insert(rng.randrange(n), f"`{rng.choice(_IDENTS)}_{rng.choice(_IDENTS)}()`")
    return " ".join(words).capitalize() + rng.choice((".", ".", ".", ":", "?"))


class Pool:
    """Large seeded text pools; content is taken as line-aligned slices (fast, realistic escapes)."""

    def __init__(self, rng: random.Random):
        code_tpl = [_code_line(rng) for _ in range(6000)]
        log_tpl = [_log_line(rng) for _ in range(4000)]
        prose_tpl = [_sentence(rng) for _ in range(3000)]
        self.code = "\n".join(rng.choices(code_tpl, k=110_000)) + "\n"
        self.log = "\n".join(rng.choices(log_tpl, k=70_000)) + "\n"
        paras = []
        for _ in range(9000):
            paras.append(" ".join(rng.choices(prose_tpl, k=rng.randrange(1, 6))))
            if rng.random() < 0.25:
                paras.append("\n".join(f"- {s}" for s in rng.choices(prose_tpl, k=rng.randrange(2, 6))))
            if rng.random() < 0.08:
                paras.append("```python\n" + "\n".join(rng.choices(code_tpl, k=rng.randrange(3, 15))) + "\n```")
        self.prose = "\n\n".join(paras) + "\n"
        self.b64 = base64.b64encode(rng.randbytes(3 * MB)).decode()

    @staticmethod
    def _take(src: str, n: int, rng: random.Random, align: bool = True) -> str:
        n = max(1, int(n))
        out = []
        while n > 0:
            off = rng.randrange(len(src) - 1)
            if align:
                nl = src.find("\n", off)
                off = 0 if nl < 0 or nl + 1 >= len(src) else nl + 1
            piece = src[off : off + n]
            out.append(piece)
            n -= len(piece)
        s = "".join(out)
        return s[:-1] if align and s.endswith("\n") else s

    def code_text(self, n, rng):
        return self._take(self.code, n, rng)

    def log_text(self, n, rng):
        return self._take(self.log, n, rng)

    def prose_text(self, n, rng):
        return self._take(self.prose, n, rng).strip() or "Done."

    def b64_text(self, n, rng):
        n = max(4, int(n) // 4 * 4)
        return self._take(self.b64, n, rng, align=False)[: n]


# ---- ids, clocks ----------------------------------------------------------------------------

_B62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def uuid4(rng: random.Random) -> str:
    h = "%032x" % rng.getrandbits(128)
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{'89ab'[int(h[16], 16) & 3]}{h[17:20]}-{h[20:32]}"


def b62(rng: random.Random, n: int) -> str:
    return "".join(rng.choices(_B62, k=n))


def iso(ms: int) -> str:
    s, m = divmod(ms, 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(s)) + f".{m:03d}Z"


# ---- the user's world -----------------------------------------------------------------------

VERSIONS = ["2.1.14", "2.1.17", "2.1.19", "2.1.22", "2.1.25", "2.1.27", "2.1.29", "2.1.31",
            "2.1.32", "2.1.34", "2.1.36", "2.1.37", "2.1.38", "2.1.39"]
MAIN_MODELS = ["claude-opus-4-6"] * 6 + ["claude-sonnet-4-5-20250929"] * 3 + ["claude-opus-4-5-20251101"]
SUB_MODELS = ["claude-sonnet-4-5-20250929", "claude-haiku-4-5-20251001", "claude-opus-4-6"]
BASE_MS = 1_770_000_000_000  # 2026-02-02T02:40Z; the corpus spans ~120 days before this

HOOK_PROFILES = {
    # (pre hooks per tool, post hooks per tool); counts follow the real heavy-hook files
    "heavy": ({"Bash": 4, "Edit": 2, "Write": 2, "Task": 0}, {"Bash": 2, "Edit": 7, "Write": 7, "Read": 2,
              "Grep": 2, "Glob": 2, "WebFetch": 1, "Task": 1}),
    "light": ({"Bash": 2, "Edit": 1, "Write": 1}, {"Edit": 3, "Write": 3, "Read": 2, "Grep": 1, "Glob": 1,
              "Bash": 2, "WebFetch": 1, "Task": 1}),
    "none": ({}, {"Edit": 1, "Write": 1, "Read": 1}),
}
HOOK_CMDS = ["${CLAUDE_PLUGIN_ROOT}/scripts/tool-call-capture.sh", "callback",
             "${CLAUDE_PLUGIN_ROOT}/scripts/post-tool-capture.sh", "cd ${CLAUDE_PLUGIN_ROOT}/hooks && bun run ./guardian.ts",
             "${CLAUDE_PLUGIN_ROOT}/scripts/pre-commit-check.sh", "${CLAUDE_PLUGIN_ROOT}/scripts/post-edit.sh",
             "cd ${CLAUDE_PLUGIN_ROOT}/hooks && bun run ./dist/post-edit-check.js",
             "cd ${CLAUDE_PLUGIN_ROOT}/hooks && bun run ./dist/post-write-format.js"]
START_HOOKS = ["/home/dev/.claude/hooks/tmux-waiting.sh clear", "bd prime",
               "${CLAUDE_PLUGIN_ROOT}/scripts/notify-session.sh"]
STOP_HOOKS = ["/home/dev/.claude/hooks/tmux-waiting.sh mark", "${CLAUDE_PLUGIN_ROOT}/hooks/stop-hook.sh"]

TOOLS = ["Bash", "Edit", "Read", "Write", "Grep", "Glob", "WebFetch"]
TOOL_W = [40, 21, 20, 4, 7, 4, 2]
# raw payload size model per tool: (median bytes, sigma)
TOOL_SIZE = {"Bash": (250, 1.6), "Read": (2100, 1.4), "Edit": (5000, 1.0), "Write": (1500, 1.3),
             "Grep": (300, 1.3), "Glob": (400, 1.0), "WebFetch": (1200, 0.5), "Task": (2500, 0.8)}
# (calibrated on the real files: tool_result line medians Bash 1.2 KB, Read 5.5 KB, Edit 7.9 KB)

COMPACT_PROMPT_HEAD = (
    "Your task is to create a detailed summary of the conversation so far, paying close attention to "
    "the user's explicit requests and your previous actions.\nThis summary should be thorough in capturing "
    "technical details, code patterns, and architectural decisions that would be essential for continuing "
    "development work without losing context.\n\n")


def make_projects(rng: random.Random, n: int) -> list[dict]:
    names = ["kitsoki", "api-gateway", "web_app", "infra", "dotfiles", "billing.service", "ml-pipeline",
             "docs-site", "mobile-app", "data_tools", "cli", "spotter", "auth-server", "etl.jobs",
             "design-system", "chat-bot", "search", "payments", "notebooks", "monorepo", "scratch",
             "blog", "k8s-manifests", "game_engine", "compiler", "scheduler", "reports", "crm", "sdk-js",
             "sdk_py"]
    out = []
    for i in range(n):
        name = names[i % len(names)] + ("" if i < len(names) else f"-{i}")
        k = rng.random()
        if k < 0.55:
            cwd = f"/home/dev/src/{name}"
        elif k < 0.75:
            cwd = f"/home/dev/work/acme/{name}"
        elif k < 0.9:
            cwd = f"/home/dev/src/{name}-worktrees/{name}-{b62(rng, 3).lower()}"
        else:
            cwd = f"/home/dev/Projects/My Stuff/{name}"
        slug = "".join(c if c.isascii() and c.isalnum() else "-" for c in cwd)
        branches = ["main"] * 4 + ["master", "", f"feature/{rng.choice(_IDENTS)}-{rng.choice(_IDENTS)}",
                                   f"fix-{rng.randrange(100, 999)}", "HEAD"]
        out.append({"cwd": cwd, "slug": slug, "branches": branches,
                    "hooks": rng.choices(["heavy", "light", "none"], [6, 4, 1])[0]})
    return out


# ---- writers --------------------------------------------------------------------------------


class Out:
    """One streamed JSONL file."""

    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.fh = open(path, "wb", buffering=1 << 20)
        self.n = 0
        self.lines = 0
        self.max_line = 0

    def put(self, obj) -> None:
        b = _dumps(obj).encode()
        self.fh.write(b)
        self.fh.write(b"\n")
        self.n += len(b) + 1
        self.lines += 1
        if len(b) > self.max_line:
            self.max_line = len(b)

    def close(self) -> tuple[int, int, int]:
        self.fh.close()
        return self.n, self.lines, self.max_line


@dataclass
class Ctx:
    """State of one transcript file (main session or one subagent)."""

    out: Out
    rng: random.Random
    pool: Pool
    sid: str
    cwd: str
    version: str
    branch: str
    model: str
    hooks: str
    clock: int
    target: int
    side: bool = False
    agent_id: str | None = None
    slug: str | None = None
    parent: str | None = None
    ctx_tokens: int = 12000
    tracked: dict = field(default_factory=dict)
    progress_sink: object = None  # for subagents: callback(message dict, uuid, ts) into the main file

    def tick(self, lo=50, hi=2500) -> int:
        self.clock += self.rng.randrange(lo, hi)
        return self.clock

    def env(self, parent) -> dict:
        d = {"parentUuid": parent, "isSidechain": self.side, "userType": "external", "cwd": self.cwd,
             "sessionId": self.sid, "version": self.version, "gitBranch": self.branch}
        if self.agent_id:
            d["agentId"] = self.agent_id
        if self.slug:
            d["slug"] = self.slug
        return d

    @property
    def left(self) -> int:
        return self.target - self.out.n


def _usage(c: Ctx, out_tokens: int) -> dict:
    r = c.rng
    cc = r.randrange(0, 6000) if r.random() < 0.7 else r.randrange(6000, 40000)
    c.ctx_tokens = min(c.ctx_tokens + cc // 3 + r.randrange(100, 2000), 180_000)
    return {"input_tokens": r.randrange(1, 12), "cache_creation_input_tokens": cc,
            "cache_read_input_tokens": c.ctx_tokens,
            "cache_creation": {"ephemeral_5m_input_tokens": cc, "ephemeral_1h_input_tokens": 0},
            "output_tokens": out_tokens, "service_tier": "standard",
            "inference_geo": "not_available" if c.side else "global"}


def put_assistant(c: Ctx, blocks: list[dict]) -> list[str]:
    """One API response: one line per content block, shared message.id/requestId/usage."""
    r = c.rng
    mid = "msg_01" + b62(r, 22)
    rid = "req_011C" + b62(r, 20)
    usage = _usage(c, r.randrange(1, 30))
    uuids = []
    for i, block in enumerate(blocks):
        if i == len(blocks) - 1:
            usage = dict(usage, output_tokens=usage["output_tokens"] + r.randrange(20, 1500))
        u = uuid4(r)
        msg = {"model": c.model, "id": mid, "type": "message", "role": "assistant", "content": [block],
               "stop_reason": None, "stop_sequence": None, "usage": usage}
        d = c.env(c.parent)
        d["message"] = msg
        d["requestId"] = rid
        d["type"] = "assistant"
        d["uuid"] = u
        d["timestamp"] = iso(c.tick(150, 1800))
        c.out.put(d)
        if c.progress_sink and block["type"] == "tool_use":
            c.progress_sink({"type": "assistant", "timestamp": d["timestamp"],
                             "message": dict(msg, context_management=None), "requestId": rid, "uuid": u})
        c.parent = u
        uuids.append(u)
    return uuids


def put_user_text(c: Ctx, content, *, prompt=False, meta=False, extra=None) -> str:
    u = uuid4(c.rng)
    d = c.env(c.parent)
    d["type"] = "user"
    d["message"] = {"role": "user", "content": content}
    if meta:
        d["isMeta"] = True
    if extra:
        d.update(extra)
    d["uuid"] = u
    d["timestamp"] = iso(c.tick(2000, 90000) if prompt else c.tick(5, 50))
    if prompt and not c.side:
        d["thinkingMetadata"] = {"maxThinkingTokens": 31999}
        d["todos"] = []
        d["permissionMode"] = c.rng.choice(("bypassPermissions", "default", "acceptEdits", "default"))
    c.out.put(d)
    c.parent = u
    return u


def put_progress(c: Ctx, data: dict, tool_id: str, parent_tool: str, parent: str | None,
                 pre_order: bool = True) -> str:
    u = uuid4(c.rng)
    d = c.env(parent)
    d["type"] = "progress"
    d["data"] = data
    ts = iso(c.tick(1, 40))
    if pre_order:
        d["toolUseID"] = tool_id
        d["parentToolUseID"] = parent_tool
        d["uuid"] = u
        d["timestamp"] = ts
    else:
        d["parentToolUseID"] = parent_tool
        d["toolUseID"] = tool_id
        d["timestamp"] = ts
        d["uuid"] = u
    c.out.put(d)
    return u


def put_hooks(c: Ctx, event: str, tool: str, tool_id: str, parent: str | None) -> None:
    pre, post = HOOK_PROFILES[c.hooks]
    n = (pre if event == "PreToolUse" else post).get(tool, 0)
    for i in range(n):
        put_progress(c, {"type": "hook_progress", "hookEvent": event, "hookName": f"{event}:{tool}",
                         "command": HOOK_CMDS[(i * 3 + len(tool)) % len(HOOK_CMDS)]},
                     tool_id, tool_id, parent, pre_order=(event == "PreToolUse"))


def put_snapshot(c: Ctx, message_id: str, update: bool) -> None:
    ts = iso(c.clock)
    c.out.put({"type": "file-history-snapshot", "messageId": message_id,
               "snapshot": {"messageId": message_id, "trackedFileBackups": dict(c.tracked), "timestamp": ts},
               "isSnapshotUpdate": update})


HUGE_FACTOR = {"Read": 2.3, "Bash": 2.0, "Edit": 1.1, "Write": 2.0}  # line bytes per payload byte


def _size(c: Ctx, tool: str, huge: int = 0) -> int:
    if huge:
        return int(huge / HUGE_FACTOR[tool])
    med, sig = TOOL_SIZE[tool]
    s = int(c.rng.lognormvariate(math.log(med), sig))
    return max(20, min(s, int(max(c.left, 0) * 0.5) + 200, 900 * KB))


def _path(c: Ctx) -> str:
    return f"{c.cwd}/{c.rng.choice(_FILES)}"


def _numbered(text: str, start: int) -> str:
    return "\n".join(f"{i:>6}\u2192{ln}" for i, ln in enumerate(text.split("\n"), start))


def tool_call(c: Ctx, tool: str, huge: int = 0) -> tuple[dict, object, object, bool]:
    """Returns (tool_use input, tool_result content, toolUseResult, is_error-or-None)."""
    r, p = c.rng, c.pool
    n = _size(c, tool, huge)
    if tool == "Bash":
        cmd = r.choice(("pytest -q", "npm test", "git status", "git log --oneline -20", "mix test",
                        "go test ./...", "ls -la", "make build", "cargo check", "rg -n TODO"))
        inp = {"command": f"{cmd} {r.choice(_IDENTS)}".strip(), "description": p.prose_text(60, r)[:60]}
        if r.random() < 0.1:
            inp["timeout"] = 600000
        if r.random() < 0.07:  # failure
            out = p.log_text(n, r)
            text = f"Exit code {r.choice((1, 2, 127))}\n{out}"
            return inp, text, "Error: " + text, True
        out = p.log_text(n, r) if n > 40 else ""
        tur = {"stdout": out, "stderr": "", "interrupted": False, "isImage": False, "noOutputExpected": False}
        if not out and r.random() < 0.5:
            tur["returnCodeInterpretation"] = "No matches found"
        return inp, out, tur, False
    if tool == "Read":
        fp = _path(c)
        raw = p.code_text(n, r)
        start = 1 if r.random() < 0.8 else r.randrange(2, 400)
        nl = raw.count("\n") + 1
        inp = {"file_path": fp} if start == 1 else {"file_path": fp, "offset": start, "limit": nl}
        tur = {"type": "text", "file": {"filePath": fp, "content": raw, "numLines": nl, "startLine": start,
                                        "totalLines": nl + start - 1 + (0 if start == 1 else r.randrange(0, 200))}}
        return inp, _numbered(raw, start), tur, None
    if tool == "Edit":
        fp = _path(c)
        orig = p.code_text(n, r)
        old = p.code_text(r.randrange(40, 600), r)
        new = p.code_text(r.randrange(40, 900), r)
        inp = {"file_path": fp, "old_string": old, "new_string": new, "replace_all": False}
        ol, nl_ = old.count("\n") + 1, new.count("\n") + 1
        s = r.randrange(1, 500)
        patch = [{"oldStart": s, "oldLines": ol + 6, "newStart": s, "newLines": nl_ + 6,
                  "lines": [" " + x for x in orig.split("\n")[:3]] + ["-" + x for x in old.split("\n")]
                  + ["+" + x for x in new.split("\n")] + [" " + x for x in orig.split("\n")[3:6]]}]
        c.tracked[fp[len(c.cwd) + 1:]] = {"backupFileName": f"{r.getrandbits(64):016x}@v{r.randrange(1, 5)}",
                                         "version": r.randrange(1, 5), "backupTime": iso(c.clock)}
        if r.random() < 0.06:
            text = f"<tool_use_error>String to replace not found in file.\nString: {old}</tool_use_error>"
            return inp, text, f"Error: String to replace not found in file.\nString: {old}", True
        tur = {"filePath": fp, "oldString": old, "newString": new, "originalFile": orig,
               "structuredPatch": patch, "userModified": False, "replaceAll": False}
        return inp, f"The file {fp} has been updated successfully.", tur, None
    if tool == "Write":
        fp = _path(c)
        content = p.code_text(n, r)
        c.tracked[fp[len(c.cwd) + 1:]] = {"backupFileName": None, "version": 1, "backupTime": iso(c.clock)}
        tur = {"type": "create", "filePath": fp, "content": content, "structuredPatch": [], "originalFile": None}
        return {"file_path": fp, "content": content}, f"File created successfully at: {fp}", tur, None
    if tool == "Grep":
        pat = f"{r.choice(_IDENTS)}_{r.choice(_IDENTS)}"
        if r.random() < 0.5:
            body = "\n".join(f"{i}:{ln}" for i, ln in enumerate(p.code_text(n, r).split("\n"), r.randrange(1, 300)))
            tur = {"mode": "content", "numFiles": 0, "filenames": [], "content": body, "numLines": body.count("\n") + 1}
            return {"pattern": pat, "path": c.cwd, "output_mode": "content", "-n": True}, body, tur, None
        files = [_path(c) for _ in range(max(1, n // 60))]
        tur = {"mode": "files_with_matches", "filenames": files, "numFiles": len(files)}
        return {"pattern": pat, "output_mode": "files_with_matches"}, f"Found {len(files)} files\n" + "\n".join(files), tur, None
    if tool == "Glob":
        files = [_path(c) for _ in range(max(1, n // 60))]
        tur = {"filenames": files, "durationMs": r.randrange(5, 900), "numFiles": len(files), "truncated": False}
        return {"pattern": f"**/*{r.choice(('.py', '.ts', '.ex', '.go', '.md'))}"}, "\n".join(files), tur, None
    if tool == "WebFetch":
        url = f"https://docs.example.org/{r.choice(_IDENTS)}/{r.choice(_IDENTS)}.html"
        res = p.prose_text(n, r)
        tur = {"bytes": n * 6, "code": 200, "codeText": "OK", "result": res, "durationMs": r.randrange(300, 9000), "url": url}
        return {"url": url, "prompt": p.prose_text(120, r)}, res, tur, None
    raise ValueError(tool)


def put_tool_result(c: Ctx, tool_id: str, content, tur, is_error, source_uuid: str) -> str:
    u = uuid4(c.rng)
    d = c.env(c.parent)
    d["type"] = "user"
    block = {"tool_use_id": tool_id, "type": "tool_result", "content": content}
    if is_error is not None:
        block["is_error"] = is_error
    d["message"] = {"role": "user", "content": [block]}
    d["uuid"] = u
    d["timestamp"] = iso(c.tick(80, 8000))
    if not c.side:  # real subagent tool_result lines carry no toolUseResult
        d["toolUseResult"] = tur
    d["sourceToolAssistantUUID"] = source_uuid
    c.out.put(d)
    if c.progress_sink:
        c.progress_sink({"type": "user", "message": d["message"], "uuid": u, "timestamp": d["timestamp"]})
    c.parent = u
    return u


def put_system(c: Ctx, subtype: str, extra: dict) -> str:
    u = uuid4(c.rng)
    d = c.env(c.parent)
    d["type"] = "system"
    d["subtype"] = subtype
    d.update(extra)
    ts = iso(c.tick(5, 60))
    if subtype in ("turn_duration",):
        d["timestamp"] = ts
        d["uuid"] = u
        d["isMeta"] = False
    elif subtype == "stop_hook_summary":
        d["level"] = "suggestion"
        d["timestamp"] = ts
        d["uuid"] = u
        d["toolUseID"] = uuid4(c.rng)
    else:
        d["level"] = "info"
        d["timestamp"] = ts
        d["uuid"] = u
        d["isMeta"] = False
    c.out.put(d)
    c.parent = u
    return u


# ---- sessions -------------------------------------------------------------------------------


@dataclass
class Sub:
    kind: str  # "task" | "compact"
    size: int


def run_tools(c: Ctx, tools: list[tuple[str, int]]) -> None:
    """One API response that calls tools, then each tool's hooks/progress/result."""
    r = c.rng
    blocks = []
    if r.random() < 0.05:
        blocks.append({"type": "thinking", "thinking": c.pool.prose_text(r.randrange(80, 1500), r),
                       "signature": c.pool.b64_text(r.randrange(300, 1600), r)})
    if r.random() < 0.5:
        blocks.append({"type": "text", "text": c.pool.prose_text(r.randrange(40, 500), r)})
    calls = []
    for tool, huge in tools:
        tid = "toolu_01" + b62(r, 22)
        inp, content, tur, err = tool_call(c, tool, huge)
        blocks.append({"type": "tool_use", "id": tid, "name": tool, "input": inp, "caller": {"type": "direct"}})
        calls.append((tool, tid, content, tur, err))
    uuids = put_assistant(c, blocks)
    first_tool_line = len(blocks) - len(calls)
    for j, (tool, tid, content, tur, err) in enumerate(calls):
        src = uuids[first_tool_line + j]
        put_hooks(c, "PreToolUse", tool, tid, src)
        if tool == "Bash" and r.random() < 0.3:
            full = ""
            for k in range(r.randrange(1, 12)):
                chunk = c.pool.log_text(r.randrange(30, 300), r)
                full = (full + "\n" + chunk)[-4000:] if full else chunk
                put_progress(c, {"type": "bash_progress", "output": chunk, "fullOutput": full,
                                 "elapsedTimeSeconds": k + 2, "totalLines": full.count("\n") + 1,
                                 "timeoutMs": 120000}, f"bash-progress-{k}", tid, src, pre_order=True)
                c.tick(900, 1100)
        put_tool_result(c, tid, content, tur, err, src)
        put_hooks(c, "PostToolUse" if not err else "PostToolUseFailure", tool, tid, src)
        if tool in ("Edit", "Write") and not c.side and r.random() < 0.3:
            put_snapshot(c, uuid4(r), True)


def run_task(c: Ctx, sub: Sub, subdir: Path, world: dict) -> None:
    """A Task tool call in the main file, its subagent file, and agent_progress replays."""
    r = c.rng
    tid = "toolu_01" + b62(r, 22)
    aid = f"{r.getrandbits(28):07x}"
    prompt = c.pool.prose_text(r.randrange(200, 1500), r)
    stype = r.choice(("general-purpose", "Explore", "Explore", "Plan"))
    src = put_assistant(c, [{"type": "tool_use", "id": tid, "name": "Task",
                             "input": {"description": c.pool.prose_text(40, r)[:40], "prompt": prompt,
                                       "subagent_type": stype}, "caller": {"type": "direct"}}])[0]
    state = {"parent": c.parent, "agent_msg": "agent_msg_01" + b62(r, 22)}
    budget = max(0, c.left - 4 * KB)

    def sink(message: dict) -> None:  # replay into the main file while its budget allows
        nonlocal budget
        if budget <= 0:
            return
        before = c.out.n
        state["parent"] = put_progress(
            c, {"message": message, "normalizedMessages": [], "type": "agent_progress", "prompt": prompt,
                "agentId": aid}, state["agent_msg"], tid, state["parent"], pre_order=True)
        budget -= c.out.n - before

    sc = Ctx(out=Out(subdir / f"agent-{aid}.jsonl"), rng=random.Random(f"{r.random()}"), pool=c.pool, sid=c.sid,
             cwd=c.cwd, version=c.version, branch=c.branch, model=r.choice(SUB_MODELS), hooks=c.hooks,
             clock=c.clock, target=sub.size, side=True, agent_id=aid, slug=c.slug, parent=None,
             progress_sink=sink)
    put_user_text(sc, prompt)
    sink({"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": prompt}]},
          "uuid": sc.parent, "timestamp": iso(sc.clock)})
    n_tools = 0
    while sc.left > 0:
        k = 1 if r.random() < 0.8 else r.randrange(2, 4)
        run_tools(sc, [(r.choices(TOOLS, [30, 0, 35, 0, 20, 15, 0])[0], 0) for _ in range(k)])
        n_tools += k
    final = c.pool.prose_text(r.randrange(400, 3000), r)
    put_assistant(sc, [{"type": "text", "text": final}])
    world["files"].append(sc.out.close())
    c.clock = max(c.clock, sc.clock) + r.randrange(100, 900)
    usage = {"input_tokens": r.randrange(20, 300), "cache_creation_input_tokens": r.randrange(1000, 9000),
             "cache_read_input_tokens": r.randrange(10000, 90000), "output_tokens": r.randrange(200, 3000),
             "server_tool_use": {"web_search_requests": 0, "web_fetch_requests": 0}, "service_tier": "standard",
             "cache_creation": {"ephemeral_1h_input_tokens": 0, "ephemeral_5m_input_tokens": 3378},
             "inference_geo": "", "iterations": []}
    tail = (f"agentId: {aid} (for resuming to continue this agent's work if needed)\n<usage>total_tokens: "
            f"{r.randrange(5000, 90000)}\ntool_uses: {n_tools}\nduration_ms: {r.randrange(5000, 400000)}</usage>")
    content = [{"type": "text", "text": final}, {"type": "text", "text": tail}]
    tur = {"status": "completed", "prompt": prompt, "agentId": aid, "content": content[:1],
           "totalDurationMs": r.randrange(5000, 400000), "totalTokens": r.randrange(5000, 90000),
           "totalToolUseCount": n_tools, "usage": usage}
    put_tool_result(c, tid, content, tur, None, src)
    put_hooks(c, "PostToolUse", "Task", tid, src)


def run_compaction(c: Ctx, sub: Sub | None, subdir: Path, world: dict) -> None:
    r = c.rng
    trunk_leaf = c.parent
    manual = r.random() < 0.4
    if manual:
        put_user_text(c, "<local-command-caveat>Caveat: The messages below were generated by the user while "
                         "running local commands. DO NOT respond to these messages or otherwise consider them "
                         "in your response unless the user explicitly asks you to.</local-command-caveat>", meta=True)
        put_user_text(c, "<command-name>/compact</command-name>\n            <command-message>compact</command-message>"
                         "\n            <command-args></command-args>")
    summary = c.pool.prose_text(r.randrange(6000, 16000), r)
    if sub is not None:
        aid = f"acompact-{r.getrandbits(24):06x}"
        sc = Ctx(out=Out(subdir / f"agent-{aid}.jsonl"), rng=random.Random(f"{r.random()}"), pool=c.pool,
                 sid=c.sid, cwd=c.cwd, version=c.version, branch=c.branch, model=c.model, hooks=c.hooks,
                 clock=c.clock, target=sub.size, side=True, agent_id=aid, slug=c.slug, parent=trunk_leaf)
        reminder_budget = max(0, sub.size - len(summary) - 10 * KB)
        while reminder_budget > 0:
            t = c.pool.log_text(min(reminder_budget, r.randrange(300, 9000)), r)
            put_user_text(sc, f"<system-reminder>\nPostToolUse:Edit hook additional context: {t}\n</system-reminder>",
                          meta=True)
            reminder_budget -= len(t) + 600
        put_user_text(sc, COMPACT_PROMPT_HEAD + c.pool.prose_text(r.randrange(3000, 8000), r))
        put_assistant(sc, [{"type": "text", "text": "\n\n<analysis>\n" + summary + "\n</analysis>"}])
        world["files"].append(sc.out.close())
        c.clock = sc.clock
    u = uuid4(r)
    d = {"parentUuid": None, "logicalParentUuid": c.parent}
    d.update({k: v for k, v in c.env(None).items() if k != "parentUuid"})
    d.update({"type": "system", "subtype": "compact_boundary", "content": "Conversation compacted", "isMeta": False,
              "timestamp": iso(c.tick(20000, 90000)), "uuid": u, "level": "info",
              "compactMetadata": {"trigger": "manual" if manual else "auto", "preTokens": c.ctx_tokens}})
    c.out.put(d)
    c.parent = u
    c.ctx_tokens = r.randrange(15000, 30000)
    put_user_text(c, "This session is being continued from a previous conversation that ran out of context. "
                     "The summary below covers the earlier portion of the conversation.\n\nAnalysis:\n" + summary,
                  extra={"isVisibleInTranscriptOnly": True, "isCompactSummary": True})
    if manual:
        put_user_text(c, "<local-command-stdout>\x1b[2mCompacted (ctrl+o to see full summary)\x1b[22m</local-command-stdout>")
    for cmd in START_HOOKS:
        put_progress(c, {"type": "hook_progress", "hookEvent": "SessionStart", "hookName": "SessionStart:compact",
                         "command": cmd}, uuid4(r), uuid4(r), c.parent)
    put_snapshot(c, c.parent, False)


def run_session(path: Path, target: int, subs: list[Sub], proj: dict, rng: random.Random, pool: Pool,
                world: dict, huge_lines: int) -> None:
    sid = path.stem
    subdir = path.parent / sid / "subagents"
    c = Ctx(out=Out(path), rng=rng, pool=pool, sid=sid, cwd=proj["cwd"], version=world["version"](rng),
            branch=rng.choice(proj["branches"]), model=rng.choice(MAIN_MODELS), hooks=proj["hooks"],
            clock=BASE_MS - rng.randrange(0, 120 * 86400_000), target=target)
    # events placed at byte positions of the main file
    events = []
    for s in subs:
        events.append((rng.uniform(0.15, 0.9) * target, s))
    for _ in range(huge_lines):
        events.append((rng.uniform(0.05, 0.8) * target, "huge"))
    if target > 2 * MB and not any(s.kind == "compact" for s in subs) and rng.random() < 0.5:
        events.append((rng.uniform(0.4, 0.9) * target, Sub("compact", 0)))  # auto-compaction, no agent file
    for k in range(int(target // (60 * MB))):  # very long sessions compact repeatedly
        events.append((rng.uniform(0.1, 0.95) * target, Sub("compact", 0)))
    events.sort(key=lambda e: e[0])

    first = uuid4(rng)
    put_snapshot(c, first, False)
    parent = None
    for cmd in START_HOOKS[: rng.randrange(1, 4)]:
        hid = uuid4(rng)  # SessionStart hooks chain, and the first prompt hangs off the last one
        parent = put_progress(c, {"type": "hook_progress", "hookEvent": "SessionStart",
                                  "hookName": "SessionStart:startup", "command": cmd}, hid, hid, parent)
    c.parent = parent
    turn = 0
    while True:
        turn += 1
        t0 = c.clock
        # --- a human prompt (sometimes a slash command, a pasted screenshot, a queued message)
        k = rng.random()
        if turn > 1 and k < 0.05:
            put_system(c, "local_command", {"content": "<command-name>/model</command-name>\n            "
                                            "<command-message>model</command-message>\n            <command-args></command-args>"})
        if k < 0.03 and c.left > 400 * KB:
            put_user_text(c, [{"type": "text", "text": pool.prose_text(rng.randrange(50, 600), rng)},
                              {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                                           "data": pool.b64_text(rng.randrange(60 * KB, 400 * KB), rng)}}],
                          prompt=True)
        else:
            put_user_text(c, pool.prose_text(rng.lognormvariate(math.log(220), 1.1), rng), prompt=True)
        if c.slug is None:
            c.slug = world["slug"](rng)
        if turn > 1 or rng.random() < 0.3:
            put_snapshot(c, c.parent, False)
        # --- the agent works: API calls with tools until done
        n_calls = max(1, int(rng.expovariate(1 / 9)))
        for _ in range(n_calls):
            if events and c.out.n >= events[0][0]:
                _, ev = events.pop(0)
                if ev == "huge":
                    line = min(rng.randrange(*HUGE_LINE), max(HUGE_LINE[0], int(target * 0.45)))
                    run_tools(c, [(rng.choice(("Read", "Read", "Bash", "Edit")), line)])
                elif ev.kind == "task":
                    run_task(c, ev, subdir, world)
                else:
                    run_compaction(c, ev if ev.size else None, subdir, world)
                continue
            if c.out.n >= target:
                break
            k = 1 if rng.random() < 0.82 else rng.randrange(2, 4)
            run_tools(c, [(rng.choices(TOOLS, TOOL_W)[0], 0) for _ in range(k)])
            if rng.random() < 0.015:
                c.out.put({"type": "queue-operation", "operation": "enqueue", "timestamp": iso(c.tick(5, 50)),
                           "sessionId": sid, "content": pool.prose_text(rng.randrange(20, 200), rng)})
                c.out.put({"type": "queue-operation", "operation": rng.choice(("dequeue", "remove")),
                           "timestamp": iso(c.tick(500, 9000)), "sessionId": sid})
        if rng.random() < 0.04:
            put_user_text(c, [{"type": "text", "text": "[Request interrupted by user for tool use]"}])
        else:
            put_assistant(c, [{"type": "text", "text": pool.prose_text(rng.lognormvariate(math.log(700), 0.9), rng)}])
        # --- stop hooks, summaries
        stop_parent = c.parent
        for cmd in STOP_HOOKS:
            put_progress(c, {"type": "hook_progress", "hookEvent": "Stop", "hookName": "Stop", "command": cmd},
                         uuid4(rng), uuid4(rng), stop_parent)
        put_system(c, "stop_hook_summary", {"hookCount": len(STOP_HOOKS),
                                            "hookInfos": [{"command": x} for x in STOP_HOOKS], "hookErrors": [],
                                            "preventedContinuation": False, "stopReason": "", "hasOutput": True})
        put_system(c, "turn_duration", {"durationMs": c.clock - t0})
        if c.out.n >= target and not any(isinstance(e[1], Sub) for e in events):
            break
        if c.out.n >= target * 1.5:  # safety net: never run far past the target
            break
    world["files"].append(c.out.close())


# ---- corpus ---------------------------------------------------------------------------------

_ADJ = "lexical radiant quiet brave gentle rapid silent vivid curious humble bright calm".split()
_NOUN = "painting floating river meadow lantern harbor falcon thistle comet ember willow".split()
_VERB = "whisper music dance wander shimmer drift echo bloom glow spark".split()


def percentile(sorted_vals: list[int], p: float) -> int:
    if not sorted_vals:
        return 0
    i = min(len(sorted_vals) - 1, max(0, math.ceil(p / 100 * len(sorted_vals)) - 1))
    return sorted_vals[i]


def generate(out_dir: Path, size_mb: float, big_file_mb: float, seed: int, quiet: bool = False) -> dict:
    t0 = time.monotonic()
    out_dir = Path(out_dir)
    if out_dir.exists() and any(out_dir.iterdir()):
        raise SystemExit(f"{out_dir} exists and is not empty; choose a new directory")
    tmp = out_dir.with_name(out_dir.name + ".partial")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    root_rng = random.Random(f"kitsoki-bench:{seed}")
    pool = Pool(random.Random(f"pool:{seed}"))
    total = int(size_mb * MB)
    big = int(big_file_mb * MB)
    big = min(big, total)
    projects = make_projects(root_rng, 12 + int(min(size_mb, 4096) // 64))
    weights = [1 / (i + 1) ** 0.9 for i in range(len(projects))]
    sizes = plan_sizes(total - big, random.Random(f"sizes:{seed}"))

    # group sizes into sessions: the largest draw of a group is the main file
    groups: list[tuple[int, list[Sub], bool]] = []
    i = 0
    while i < len(sizes):
        k = root_rng.choices([0, 1, 2, 3, 4, 6], [62, 18, 10, 5, 3, 2])[0]
        grp = sorted(sizes[i : i + 1 + k], reverse=True)
        i += 1 + k
        subs = []
        rest = grp[1:]
        if rest and grp[0] > 600 * KB and rest[-1] <= 120 * KB and root_rng.random() < 0.5:
            subs.append(Sub("compact", rest.pop()))
        subs += [Sub("task", s) for s in rest]
        groups.append((grp[0], subs, False))
    if big:
        extra = [Sub("task", int(s)) for s in sorted(plan_sizes(min(4 * MB, big // 20), root_rng))[:4]]
        extra.append(Sub("compact", 40 * KB))
        # first, so that stopping at the budget (below) never drops it
        groups.insert(0, (big - sum(s.size for s in extra), extra, True))

    world = {"files": [],
             "version": lambda r: r.choices(VERSIONS, range(1, len(VERSIONS) + 1))[0],
             "slug": lambda r: f"{r.choice(_ADJ)}-{r.choice(_NOUN)}-{r.choice(_VERB)}"}
    largest = (0, "")
    for gi, (main_size, subs, is_big) in enumerate(groups):
        if sum(f[0] for f in world["files"]) >= total:
            break  # records overshoot their targets a little; groups are shuffled, so drop the tail
        rng = random.Random(f"session:{seed}:{gi}")
        proj = projects[rng.choices(range(len(projects)), weights)[0]]
        sid = uuid4(rng)
        path = tmp / "projects" / proj["slug"] / f"{sid}.jsonl"
        if is_big and main_size >= 3 * MB:
            huge = max(1, main_size // (30 * MB))
        elif main_size >= 3 * MB:
            huge = 1 if rng.random() < 0.6 else 0
        else:
            huge = 0
        run_session(path, main_size, subs, proj, rng, pool, world, huge)
        if not quiet and gi % 200 == 0 and gi:
            print(f"  {gi}/{len(groups)} sessions, {sum(f[0] for f in world['files']) / MB:.0f} MB", file=sys.stderr)

    all_files = sorted(tmp.glob("projects/**/*.jsonl"))
    sizes_done = []
    for f in all_files:
        s = f.stat().st_size
        sizes_done.append(s)
        if s > largest[0]:
            largest = (s, str(f.relative_to(tmp)))
    sizes_done.sort()
    stats = {
        "params": {"size_mb": size_mb, "big_file_mb": big_file_mb, "seed": seed, "generator": GENERATOR_VERSION},
        "files": len(sizes_done),
        "sessions": sum(1 for f in all_files if f.parent.parent.name == "projects"),
        "subagent_files": sum(1 for f in all_files if f.parent.name == "subagents"),
        "acompact_files": sum(1 for f in all_files if f.name.startswith("agent-acompact-")),
        "projects": len({f.relative_to(tmp / "projects").parts[0] for f in all_files}),
        "total_bytes": sum(sizes_done),
        "largest_file": {"path": largest[1], "bytes": largest[0]},
        "percentiles_bytes": {f"p{p}": percentile(sizes_done, p) for p in (50, 90, 95, 99)},
        "lines": sum(f[1] for f in world["files"]),
        "max_line_bytes": max((f[2] for f in world["files"]), default=0),
        "gen_seconds": round(time.monotonic() - t0, 1),
    }
    (tmp / "corpus-manifest.json").write_text(json.dumps(stats, indent=2) + "\n")
    if out_dir.exists():
        out_dir.rmdir()
    tmp.rename(out_dir)
    return stats


def _fmt(n: int) -> str:
    return f"{n / MB:.2f} MB" if n >= MB else f"{n / KB:.1f} KB"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out_dir", type=Path)
    ap.add_argument("--size-mb", type=float, default=1024, help="total corpus size in MiB (default 1024)")
    ap.add_argument("--big-file-mb", type=float, default=None,
                    help="size of the one very large session in MiB (default: 300 for >=1 GiB, else "
                         "size*300/1024; 0 for none)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", action="store_true", help="print the statistics as JSON")
    a = ap.parse_args(argv)
    big = a.big_file_mb if a.big_file_mb is not None else default_big_file_mb(a.size_mb)
    st = generate(a.out_dir, a.size_mb, big, a.seed)
    if a.json:
        print(json.dumps(st, indent=2))
        return 0
    pc = st["percentiles_bytes"]
    print(f"wrote {a.out_dir} in {st['gen_seconds']} s")
    print(f"  files: {st['files']} ({st['sessions']} sessions, {st['subagent_files']} subagent files of which "
          f"{st['acompact_files']} acompact, {st['projects']} projects)")
    print(f"  total: {st['total_bytes']} bytes ({_fmt(st['total_bytes'])})")
    print(f"  file size p50 {_fmt(pc['p50'])}  p90 {_fmt(pc['p90'])}  p95 {_fmt(pc['p95'])}  p99 {_fmt(pc['p99'])}"
          f"  max {_fmt(st['largest_file']['bytes'])} ({st['largest_file']['path']})")
    print(f"  (targets: p50 ~105 KB, p95 ~1.5 MB, p99 ~5.4 MB, plus one file of {big:g} MB)")
    return 0


def default_big_file_mb(size_mb: float) -> float:
    return 300.0 if size_mb >= 1024 else round(size_mb * 300 / 1024, 1)


if __name__ == "__main__":
    sys.exit(main())
