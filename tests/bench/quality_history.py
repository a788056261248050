"""Histories with known answers for the proposal-quality benchmark (tests/bench/quality.py) and its tests.

A month of one project's sessions, written as Claude Code (terminal, VS Code, Desktop, SDK), Codex CLI
(interactive and `exec`) and Pi write them, beside two other projects in the same history root. What each
prompt asks and what each action is for is recorded as it is written (file, line -> label), so the cards the
miner raises can be scored: which recurring ask a card's evidence shows, and how much of it is that ask.

Everything comes from the seed: the asks a history repeats, their wording (English polite and terse forms,
typos, Japanese, Chinese, mixed scripts), the clients they are typed in, the noise around them. The answers
are ours; the miner is never told them.
"""

from __future__ import annotations

import json
import random
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


# -- what people ask ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Ask:
    id: str
    en_verbs: tuple[str, ...]
    en_objects: tuple[str, ...]
    ja: tuple[str, ...]
    """Japanese (verb-stem) phrasings: '{object}を{verb}' already joined, te-form endings added later."""
    zh: tuple[str, ...]
    actions: tuple[tuple[str, str], ...]
    """(kind, argument): sh <command>, edit <path>, write <path>, read <path>."""


# The project's own recurring asks (a pool: each history draws four). Each is answered the same way every
# time it is asked; the words vary.
RECURRING: tuple[Ask, ...] = (
    Ask("regen_client", ("regenerate", "regen", "re-generate"),
        ("the API client", "the api client from the openapi spec", "the generated API client", "the client code"),
        ("APIクライアントを再生成し", "APIクライアントを作り直し", "openapiからクライアントを再生成し"),
        ("重新生成API客户端", "再生成一下API客户端", "根据openapi重新生成客户端"),
        (("sh", "make generate"), ("edit", "src/shop/api_client.py"), ("sh", "pytest -q tests/test_client.py"))),
    Ask("changelog", ("update", "fill in", "add the new entries to"),
        ("the changelog", "CHANGELOG.md", "the changelog for this release"),
        ("CHANGELOGを更新し", "変更履歴を更新し", "CHANGELOG.mdに今回の変更を追記し"),
        ("更新CHANGELOG", "更新一下更新日志", "把这次的改动写进CHANGELOG"),
        (("sh", "git log --oneline v1.4.0..HEAD"), ("edit", "CHANGELOG.md"))),
    Ask("bump_version", ("bump", "increase", "bump up"),
        ("the version", "the patch version", "the version number"),
        ("バージョンを上げ", "パッチバージョンを上げ", "バージョン番号を上げ"),
        ("升级版本号", "把版本号加一", "提升一下版本号"),
        (("edit", "pyproject.toml"), ("edit", "src/shop/__init__.py"), ("sh", "git tag v1.4.3"))),
    Ask("migration", ("add", "create", "write"),
        ("a migration for the new column", "a db migration", "an alembic migration for it"),
        ("新しいカラムのマイグレーションを作成し", "DBマイグレーションを作っ", "alembicのマイグレーションを追加し"),
        ("添加数据库迁移", "给新字段写一个迁移", "创建alembic迁移"),
        (("sh", "alembic revision --autogenerate -m add_column"), ("edit", "migrations/versions/0042_add_column.py"),
         ("sh", "alembic upgrade head"))),
    Ask("screenshots", ("refresh", "retake", "update"),
        ("the screenshots", "the docs screenshots", "the UI screenshots in the docs"),
        ("スクリーンショットを撮り直し", "ドキュメントのスクショを更新し", "画面のスクリーンショットを更新し"),
        ("重新截图", "更新文档里的截图", "把界面截图更新一下"),
        (("sh", "python scripts/screenshots.py"), ("sh", "git add docs/img"))),
    Ask("translations", ("sync", "update", "resync"),
        ("the translations", "the i18n files", "the locale files"),
        ("翻訳ファイルを同期し", "i18nファイルを更新し", "ロケールファイルを同期し"),
        ("同步翻译文件", "更新一下i18n文件", "同步多语言文件"),
        (("sh", "python scripts/sync_i18n.py"), ("edit", "locales/ja.json"))),
    Ask("deps", ("upgrade", "update", "bump"),
        ("the dependencies", "deps", "all the packages"),
        ("依存関係をアップデートし", "依存パッケージを更新し", "ライブラリのバージョンを上げ"),
        ("升级依赖", "更新依赖包", "把所有依赖升级一下"),
        (("sh", "uv lock --upgrade"), ("sh", "uv sync"), ("sh", "pytest -q"))),
    Ask("lint", ("fix", "clean up", "sort out"),
        ("the lint errors", "the ruff warnings", "lint"),
        ("lintエラーを直し", "リントのエラーを修正し", "ruffの警告を直し"),
        ("修复lint错误", "把ruff的警告修一下", "修一下代码风格检查的错误"),
        (("sh", "ruff check --fix ."), ("edit", "src/shop/orders.py"), ("sh", "ruff check ."))),
    Ask("seed_db", ("reseed", "reset and seed", "seed"),
        ("the dev database", "the local db", "the database with fixtures"),
        ("開発用データベースに初期データを投入し", "ローカルDBをシードし直し", "開発DBをリセットしてシードし"),
        ("重新填充开发数据库", "重置本地数据库并导入种子数据", "给开发库灌一下测试数据"),
        (("sh", "python scripts/seed_db.py --reset"),)),
    Ask("release_notes", ("write", "draft", "put together"),
        ("the release notes", "release notes for the next version", "the release announcement"),
        ("リリースノートを書い", "次のバージョンのリリースノートを作成し", "リリースノートの下書きを作っ"),
        ("写发布说明", "起草下个版本的发布说明", "帮我写一下release notes"),
        (("sh", "git log --oneline v1.4.0..HEAD"), ("write", "docs/releases/next.md"))),
)

# Asks a kitsoki workspace already models (dev-story's intents): routed, so never proposed.
MODELED: tuple[tuple[str, tuple[str, ...], tuple[tuple[str, str], ...]], ...] = (
    ("cleanup_branches", ("clean up merged branches", "please clean up merged branches", "clean up merged branches pls",
                          "Clean up merged branches."),
     (("sh", "git branch --merged main"), ("sh", "git branch -d feature/old-checkout"))),
    ("standup", ("prep standup", "prep standup please", "prep standup for me", "Prep standup."),
     (("sh", "git log --since=yesterday --author=me --oneline"), ("sh", "gh pr list --author @me"))),
    ("error_rate", ("check the error rate", "check the error rate please", "can you check the error rate",
                    "Check the error rate."),
     (("sh", "python scripts/metrics.py error_rate --since 1h"),)),
    ("model_eval", ("compare models", "compare models please", "compare models again", "Compare models."),
     (("sh", "python scripts/eval_models.py --report"),)),
)

# Asked once each: never a card. Several share a word or an identifier with a recurring ask on purpose.
ONE_OFFS: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = (
    ("why is the checkout endpoint so slow?", (("read", "src/shop/checkout.py"), ("sh", "pytest -q tests/test_checkout.py"))),
    ("explain how src/shop/cache.py works", (("read", "src/shop/cache.py"),)),
    ("rename get_user to fetch_user everywhere", (("sh", "rg get_user"), ("edit", "src/shop/users.py"))),
    ("add a test for the discount calculation", (("edit", "tests/test_discount.py"), ("sh", "pytest -q tests/test_discount.py"))),
    ("update the README install section for uv", (("edit", "README.md"),)),
    ("regenerate the favicon from the new logo", (("sh", "python scripts/favicon.py"),)),
    ("bump the timeout in the http client to 30s", (("edit", "src/shop/http.py"),)),
    ("ログイン画面のCSSが崩れているので直して", (("edit", "src/shop/static/login.css"),)),
    ("为什么订单接口这么慢", (("read", "src/shop/orders.py"),)),
    ("write a docstring for OrderService", (("edit", "src/shop/orders.py"),)),
    ("the nightly job failed, can you look at the logs", (("sh", "gh run view 812 --log-failed"),)),
    ("add a note about migrations to the contributing guide", (("edit", "CONTRIBUTING.md"),)),
    ("APIクライアントのタイムアウトの扱いを説明して", (("read", "src/shop/api_client.py"),)),
    ("what does the changelog say about 1.3?", (("read", "CHANGELOG.md"),)),
    ("switch the payments module to the new SDK", (("edit", "src/shop/payments.py"), ("sh", "pytest -q tests/test_payments.py"))),
    ("delete the unused feature flags", (("sh", "rg FEATURE_"), ("edit", "src/shop/flags.py"))),
    ("how do we handle refunds for partial orders?", (("read", "src/shop/refunds.py"),)),
    ("make the order list paginate by 50", (("edit", "src/shop/views/orders.py"),)),
    ("Dockerfileのベースイメージをpython3.13に変えて", (("edit", "Dockerfile"),)),
    ("把日志级别改成debug", (("edit", "src/shop/settings.py"),)),
    ("is there a race in the inventory reservation code?", (("read", "src/shop/inventory.py"),)),
    ("set up a github action that runs mypy", (("write", ".github/workflows/mypy.yml"),)),
    ("add type hints to the pricing module", (("edit", "src/shop/pricing.py"), ("sh", "mypy src/shop/pricing.py"))),
    ("the email template has a typo in the footer", (("edit", "templates/email/base.html"),)),
    ("port the CSV export to use the streaming writer", (("edit", "src/shop/export.py"),)),
    ("what's left to do on the coupon feature?", (("sh", "rg TODO src/shop/coupons.py"),)),
    ("remove the deprecated v1 endpoints", (("edit", "src/shop/api/v1.py"),)),
    ("セッションの有効期限を7日に延ばして", (("edit", "src/shop/auth.py"),)),
    ("给结账页面加一个加载动画", (("edit", "src/shop/static/checkout.js"),)),
    ("profile the nightly report query", (("sh", "python -m cProfile scripts/report.py"),)),
    ("split orders.py into smaller modules", (("edit", "src/shop/orders.py"), ("write", "src/shop/order_items.py"))),
    ("add rate limiting to the login endpoint", (("edit", "src/shop/auth.py"),)),
    ("why does the cart badge show a stale count?", (("read", "src/shop/static/cart.js"),)),
    ("write a script that archives old orders", (("write", "scripts/archive_orders.py"),)),
)

# Other projects under the same history root, with their own habits (test command, ticket tool) and asks.
OTHERS = (
    {"name": "storefront-web", "test": "npm test", "build": "npm run build", "ticket": "jira issue list --plain",
     "asks": (("regenerate the api client", (("sh", "npm run generate"), ("edit", "src/api/client.ts"))),
              ("update the storybook snapshots", (("sh", "npm run storybook:snapshots"),)),
              ("bump the version", (("sh", "npm version patch"),)))},
    {"name": "{ws_dash}", "test": "go test ./...", "build": "go build ./...", "ticket": "glab issue list",
     "asks": (("update the changelog", (("edit", "CHANGELOG.md"),)),
              ("regenerate the protobuf stubs", (("sh", "buf generate"),)),
              ("fix the lint errors", (("sh", "golangci-lint run --fix"),)))},
)

# Prompts programs send (SDK, codex exec): agent sessions, never a person's ask.
AGENT_PROMPTS = (
    ("Summarize the changes on this branch as a PR description.", (("sh", "git diff main...HEAD --stat"),)),
    ("Run the test suite and report failures as JSON.", (("sh", "pytest -q --json-report"),)),
)

PROJECT_TEST = "pytest -q"
PROJECT_TICKETS = {
    "gh": ("gh issue view {n}", "gh issue list --label bug", "gh issue comment {n} --body done"),
    "beads": ("bd show shop-{n}", "bd list --status open", "bd update shop-{n} --status in_progress"),
}

# -- wording ---------------------------------------------------------------------------------------

EN_FRAMES = (
    "{v} {o}", "can you {v} {o}?", "please {v} {o}", "could you {v} {o} when you get a chance", "{v} {o} pls",
    "ok, now {v} {o}", "hey, {v} {o} again", "we need to {v} {o}", "I'd like you to {v} {o}, thanks",
    "{V} {o}.", "time to {v} {o}", "would you mind to {v} {o}", "{v} {o} before I push",
)
JA_ENDINGS = ("て", "てください", "てもらえますか？", "ておいて", "てほしい")
JA_LEADS = ("", "", "すみません、", "お願いします。", "")
ZH_FRAMES = ("请{p}", "帮我{p}", "{p}", "麻烦{p}一下", "{p}，谢谢", "现在{p}")
MIXED_JA = ("{o}を{vja}", "{o}の件、{vja}")
CONTEXT_TAILS = (
    "", "", "", " The spec changed yesterday.", " Thanks!", " We release on Friday.",
    "\n\nhere is what I see:\n```\nTraceback (most recent call last):\n  File \"/app/src/shop/api.py\", line 88, in handler\n"
    "    return client.get(order_id)\nKeyError: 'order_id'\n```",
    "\n\nlog:\n2026-05-11T10:02:11Z ERROR worker-3 order sync failed: connection reset by peer\n"
    "2026-05-11T10:02:12Z WARN retrying in 5s (attempt 2/5)\n2026-05-11T10:02:17Z ERROR order sync failed again",
)


def typo(word: str, rng: random.Random) -> str:
    if len(word) < 5 or not word.isalpha():
        return word
    i = rng.randrange(1, len(word) - 2)
    how = rng.randrange(3)
    if how == 0:
        return word[:i] + word[i + 1] + word[i] + word[i + 2:]  # swapped letters
    if how == 1:
        return word[:i] + word[i + 1:]  # a letter dropped
    return word[:i] + word[i] + word[i:]  # a letter doubled


def phrase(ask: Ask, lang: str, rng: random.Random) -> str:
    if lang == "ja":
        return rng.choice(JA_LEADS) + rng.choice(ask.ja) + rng.choice(JA_ENDINGS)
    if lang == "zh":
        return rng.choice(ZH_FRAMES).format(p=rng.choice(ask.zh))
    if lang == "mixed":
        if rng.random() < 0.5:
            stem = rng.choice(ask.ja)
            verb = stem.split("を", 1)[1] if "を" in stem else stem
            return rng.choice(MIXED_JA).format(o=rng.choice(ask.en_objects), vja=verb) + rng.choice(JA_ENDINGS)
        return f"帮我{rng.choice(ask.en_verbs)}一下{rng.choice(ask.en_objects)}"
    verb, obj = rng.choice(ask.en_verbs), rng.choice(ask.en_objects)
    text = rng.choice(EN_FRAMES).format(v=verb, V=verb[:1].upper() + verb[1:], o=obj)
    if rng.random() < 0.3:
        words = text.split(" ")
        j = rng.randrange(len(words))
        words[j] = typo(words[j], rng)
        text = " ".join(words)
    return text + rng.choice(CONTEXT_TAILS)


# -- the records the tools write ---------------------------------------------------------------------

def _iso(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


@dataclass
class Labels:
    """(resolved file path, line) -> (project, label) for every prompt and every action written."""

    prompts: dict[tuple[str, int], tuple[str, str]] = field(default_factory=dict)
    actions: dict[tuple[str, int], tuple[str, str]] = field(default_factory=dict)

    def merge(self, other: Labels) -> None:
        self.prompts.update(other.prompts)
        self.actions.update(other.actions)


class _Writer:
    def __init__(self, path: Path, project: str, start: datetime, rng: random.Random, labels: Labels) -> None:
        self.path, self.project, self.t, self.rng, self.labels = path, project, start, rng, labels
        self.lines: list[str] = []

    def tick(self, seconds: float = 7.0) -> str:
        self.t += timedelta(seconds=seconds * (0.5 + self.rng.random()))
        return _iso(self.t)

    def put(self, record: dict) -> int:
        self.lines.append(_dumps(record))
        return len(self.lines)

    def label_prompt(self, line: int, label: str) -> None:
        self.labels.prompts[(str(self.path.resolve()), line)] = (self.project, label)

    def label_action(self, line: int, label: str) -> None:
        self.labels.actions[(str(self.path.resolve()), line)] = (self.project, label)

    def write(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text("\n".join(self.lines) + "\n", encoding="utf-8")
        stamp = self.t.timestamp()
        import os
        os.utime(self.path, (stamp, stamp))


def _output_for(kind: str, arg: str) -> str:
    if arg.startswith("pytest"):
        return "........................................ [100%]\n40 passed in 2.91s"
    if kind == "sh":
        return f"{arg.split()[0]}: done"
    return f"The file {arg} has been updated successfully."


class ClaudeWriter(_Writer):
    """Claude Code 2.x: envelope per line, assistant content one block per line, tool results with toolUseResult."""

    def __init__(self, path, project, start, rng, labels, *, session_id: str, entrypoint: str | None,
                 version: str = "2.1.38", prompt_source: str | None = None) -> None:
        super().__init__(path, project, start, rng, labels)
        self.sid, self.entrypoint, self.version, self.prompt_source = session_id, entrypoint, version, prompt_source
        self.parent: str | None = None

    def _env(self, kind: str, **extra) -> dict:
        me = str(uuid.UUID(int=self.rng.getrandbits(128), version=4))
        rec = {"parentUuid": self.parent, "isSidechain": False, "userType": "external", "cwd": self.project,
               "sessionId": self.sid, "version": self.version, "gitBranch": "main"}
        if self.entrypoint is not None:
            rec["entrypoint"] = self.entrypoint
        rec.update({"type": kind, **extra, "uuid": me, "timestamp": self.tick()})
        self.parent = me
        return rec

    def prompt(self, text: str, label: str, *, blocks: list[dict] | None = None, compact: bool | None = None) -> int:
        content = blocks + [{"type": "text", "text": text}] if blocks else text
        extra = {}
        if self.prompt_source is not None:
            extra["promptSource"] = self.prompt_source
        if compact is not None:
            extra["isCompactSummary"] = compact
            extra["isVisibleInTranscriptOnly"] = True
        line = self.put(self._env("user", message={"role": "user", "content": content}, **extra))
        self.label_prompt(line, label)
        return line

    def _assistant(self, block: dict) -> int:
        msg_id = "msg_01" + "".join(self.rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz0123456789")
                                    for _ in range(22))
        return self.put(self._env("assistant", requestId="req_011" + msg_id[6:20], message={
            "model": "claude-opus-4-6", "id": msg_id, "type": "message", "role": "assistant", "content": [block],
            "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": 3, "cache_creation_input_tokens": 120, "cache_read_input_tokens": 18000,
                      "output_tokens": 40, "service_tier": "standard"}}))

    def say(self, text: str) -> None:
        self._assistant({"type": "text", "text": text})

    def call(self, name: str, inp: dict, result: str, label: str, *, is_error: bool = False,
             rejected: bool = False, tur=None) -> int:
        call_id = "toolu_01" + uuid.UUID(int=self.rng.getrandbits(128)).hex[:22]
        line = self._assistant({"type": "tool_use", "id": call_id, "name": name, "input": inp})
        self.label_action(line, label)
        if rejected:
            result = ("The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was "
                      "a file edit, the new_string was NOT written to the file). STOP what you are doing and wait "
                      "for the user to tell you how to proceed.")
            tur, is_error = "User rejected tool use", True
        rec = self._env("user", message={"role": "user", "content": [
            {"tool_use_id": call_id, "type": "tool_result", "content": result, "is_error": is_error}]},
            toolUseResult=tur if tur is not None else {"stdout": result, "stderr": "", "interrupted": False,
                                                       "isImage": False})
        self.put(rec)
        return line

    def action(self, kind: str, arg: str, label: str) -> int:
        out = _output_for(kind, arg)
        if kind == "sh":
            return self.call("Bash", {"command": arg, "description": "Run " + arg.split()[0]}, out, label)
        if kind == "read":
            return self.call("Read", {"file_path": f"{self.project}/{arg}"}, "     1\t# source\n", label)
        name = "Write" if kind == "write" else "Edit"
        inp = ({"file_path": f"{self.project}/{arg}", "content": "# notes\n"} if kind == "write" else
               {"file_path": f"{self.project}/{arg}", "old_string": "x = 1", "new_string": "x = 2", "replace_all": False})
        return self.call(name, inp, out, label, tur={"filePath": f"{self.project}/{arg}", "oldString": "x = 1",
                                                     "newString": "x = 2", "structuredPatch": [], "userModified": False})

    def interrupt(self) -> None:
        self.put(self._env("user", message={"role": "user", "content": [
            {"type": "text", "text": "[Request interrupted by user for tool use]"}]}))


class CodexWriter(_Writer):
    """Codex CLI rollout: session_meta, turn_context, response_item and event_msg lines."""

    def __init__(self, path, project, start, rng, labels, *, session_id: str, originator: str = "codex_cli_rs",
                 source: str = "cli") -> None:
        super().__init__(path, project, start, rng, labels)
        self.put({"timestamp": _iso(start), "type": "session_meta", "payload": {
            "id": session_id, "timestamp": _iso(start), "cwd": project, "originator": originator,
            "cli_version": "0.120.0", "source": source, "model_provider": "openai",
            "git": {"commit_hash": "4b1d0c2", "branch": "main", "repository_url": "git@example.invalid:team/x.git"}}})
        self.first = True

    def _line(self, kind: str, payload: dict) -> int:
        return self.put({"timestamp": self.tick(), "type": kind, "payload": payload})

    def prompt(self, text: str, label: str) -> int:
        self._line("turn_context", {"cwd": self.project, "approval_policy": "on-request",
                                    "sandbox_policy": {"type": "workspace-write"}, "model": "gpt-5-codex",
                                    "effort": "medium", "summary": "auto"})
        if self.first:
            self._line("response_item", {"type": "message", "role": "user", "content": [
                {"type": "input_text", "text": f"<environment_context>\n  <cwd>{self.project}</cwd>\n  "
                                               "<approval_policy>on-request</approval_policy>\n</environment_context>"}]})
            self.first = False
        line = self._line("response_item", {"type": "message", "role": "user",
                                            "content": [{"type": "input_text", "text": text}]})
        self.label_prompt(line, label)
        line2 = self._line("event_msg", {"type": "user_message", "message": text, "images": []})
        self.label_prompt(line2, label)
        return line2

    def call(self, name: str, args: dict, output: str, label: str) -> int:
        call_id = "call_" + uuid.UUID(int=self.rng.getrandbits(128)).hex[:24]
        line = self._line("response_item", {"type": "function_call", "name": name,
                                            "arguments": _dumps(args), "call_id": call_id})
        self.label_action(line, label)
        self._line("response_item", {"type": "function_call_output", "call_id": call_id, "output": output})
        return line

    def action(self, kind: str, arg: str, label: str) -> int:
        if kind == "sh":
            out = _dumps({"output": _output_for(kind, arg), "metadata": {"exit_code": 0, "duration_seconds": 1.4}})
            return self.call("shell", {"command": ["bash", "-lc", arg], "workdir": self.project}, out, label)
        if kind == "read":
            out = _dumps({"output": "# source\n", "metadata": {"exit_code": 0, "duration_seconds": 0.1}})
            return self.call("shell", {"command": ["bash", "-lc", f"sed -n 1,80p {arg}"], "workdir": self.project},
                             out, label)
        call_id = "call_" + uuid.UUID(int=self.rng.getrandbits(128)).hex[:24]
        verb = "Add" if kind == "write" else "Update"
        line = self._line("response_item", {"type": "custom_tool_call", "status": "completed", "call_id": call_id,
                                            "name": "apply_patch",
                                            "input": f"*** Begin Patch\n*** {verb} File: {arg}\n@@\n-x = 1\n+x = 2\n"
                                                     "*** End Patch\n"})
        self.label_action(line, label)
        self._line("response_item", {"type": "custom_tool_call_output", "call_id": call_id,
                                     "output": _dumps({"output": f"Success. Updated the following files:\nM {arg}\n",
                                                       "metadata": {"exit_code": 0, "duration_seconds": 0.0}})})
        return line

    def say(self, text: str) -> None:
        self._line("response_item", {"type": "message", "role": "assistant",
                                     "content": [{"type": "output_text", "text": text}]})
        self._line("event_msg", {"type": "agent_message", "message": text})


class PiWriter(_Writer):
    """Pi session v3: a header line, then entries with id/parentId."""

    def __init__(self, path, project, start, rng, labels, *, session_id: str) -> None:
        super().__init__(path, project, start, rng, labels)
        self.put({"type": "session", "version": 3, "id": session_id, "timestamp": _iso(start), "cwd": project})
        self.parent: str | None = None

    def _entry(self, message: dict) -> int:
        me = uuid.UUID(int=self.rng.getrandbits(128)).hex[:8]
        line = self.put({"type": "message", "id": me, "parentId": self.parent, "timestamp": self.tick(),
                         "message": message})
        self.parent = me
        return line

    def _ms(self) -> int:
        return int(self.t.timestamp() * 1000)

    def prompt(self, text: str, label: str) -> int:
        line = self._entry({"role": "user", "content": [{"type": "text", "text": text}], "timestamp": self._ms()})
        self.label_prompt(line, label)
        return line

    def action(self, kind: str, arg: str, label: str) -> int:
        call_id = "toolu_" + uuid.UUID(int=self.rng.getrandbits(128)).hex[:20]
        if kind == "sh":
            name, args = "bash", {"command": arg}
        elif kind == "read":
            name, args = "read", {"path": arg}
        elif kind == "write":
            name, args = "write", {"path": arg, "content": "# notes\n"}
        else:
            name, args = "edit", {"path": arg, "oldText": "x = 1", "newText": "x = 2"}
        line = self._entry({"role": "assistant", "content": [{"type": "toolCall", "id": call_id, "name": name,
                                                              "arguments": args}],
                            "api": "anthropic-messages", "provider": "anthropic", "model": "claude-sonnet-4-5",
                            "usage": {"input": 10, "output": 20, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 30},
                            "stopReason": "toolUse", "timestamp": self._ms()})
        self.label_action(line, label)
        self._entry({"role": "toolResult", "toolCallId": call_id, "toolName": name,
                     "content": [{"type": "text", "text": _output_for(kind, arg)}], "isError": False,
                     "timestamp": self._ms()})
        return line

    def say(self, text: str) -> None:
        self._entry({"role": "assistant", "content": [{"type": "text", "text": text}], "api": "anthropic-messages",
                     "provider": "anthropic", "model": "claude-sonnet-4-5", "usage": {"input": 1, "output": 1},
                     "stopReason": "stop", "timestamp": self._ms()})


# -- a history --------------------------------------------------------------------------------------

def claude_slug(path: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in path)


def pi_dirname(path: str) -> str:
    """Pi's session folder for a cwd: the leading slash dropped, the others and colons made dashes."""
    return "--" + path.lstrip("/").replace("/", "-").replace(":", "-") + "--"


@dataclass
class History:
    root: Path
    """Holds .claude/projects, .codex/sessions and .pi/agent/sessions (a HOME, or a folder of its own)."""
    project: str
    recurring: dict[str, str]
    """The project's recurring asks: label -> the kind of card that is right for it."""
    modeled: list[str]
    ide_only: str
    """The recurring ask asked mostly in VS Code and Desktop sessions."""
    labels: Labels
    sessions: dict[str, int]
    """How many sessions of each kind were written."""

    @property
    def dirs(self) -> list[Path]:
        return [self.root / ".claude" / "projects", self.root / ".codex" / "sessions",
                self.root / ".pi" / "agent" / "sessions"]


_MACHINERY_NOISE = ("todo", "plan_ok", "plan_rejected", "question", "task", "skill", "mcp")


def _claude_noise(w: ClaudeWriter, kind: str) -> None:
    label = "noise:" + kind
    if kind == "todo":
        w.call("TodoWrite", {"todos": [{"content": "Look at the code", "status": "in_progress",
                                        "activeForm": "Looking at the code"}]},
               "Todos have been modified successfully.", label)
    elif kind in ("plan_ok", "plan_rejected"):
        w.call("ExitPlanMode", {"plan": "1. Read the code\n2. Change it\n3. Run the tests"},
               "User has approved your plan. You can now start coding.", label, rejected=kind == "plan_rejected")
    elif kind == "question":
        w.call("AskUserQuestion", {"questions": [{"question": "Which approach do you prefer?", "header": "Approach",
                                                  "options": [{"label": "Minimal", "description": "Smallest change"},
                                                              {"label": "Thorough", "description": "Refactor too"}],
                                                  "multiSelect": False}]},
               'User has answered your questions: "Which approach do you prefer?"="Minimal".', label)
    elif kind == "task":
        w.call("Task", {"description": "Explore the codebase", "prompt": "Find where orders are priced",
                        "subagent_type": "Explore"}, "Orders are priced in src/shop/pricing.py.", label)
    elif kind == "skill":
        w.call("Skill", {"skill": "code-review"}, "Launching skill: code-review", label)
    elif kind == "mcp":
        w.call("ListMcpResourcesTool", {}, "[]", label)
        w.call("ReadMcpResourceTool", {"server": "docs", "uri": "docs://index"}, "{}", label)


def _codex_noise(w: CodexWriter, kind: str) -> None:
    if kind == "question":
        w.call("request_user_input", {"questions": [{"id": "approach", "question": "Minimal or thorough?",
                                                     "options": ["minimal", "thorough"]}]},
               '{"answers":{"approach":"minimal"}}', "noise:question")
    else:
        w.call("update_plan", {"plan": [{"step": "Read the code", "status": "completed"},
                                        {"step": "Change it", "status": "in_progress"}]}, "Plan updated", "noise:plan")


def make_history(root: Path, project: str, seed: int, *, days: int = 30, sessions: int = 34,
                 tickets: str = "gh") -> History:
    """Write a month of `project`'s sessions and two other projects' under `root`; return the answers.
    `tickets`: the project's ticket tool (gh, or beads where the workspace already binds tickets to gh)."""
    rng = random.Random(seed)
    labels = Labels()
    picks = rng.sample(RECURRING, 4)
    modeled = rng.sample(MODELED, 2)
    ide_only = picks[-1].id
    start = datetime(2026, 5, 1, 8, 30, tzinfo=timezone.utc)
    counts: dict[str, int] = {}

    # Which session asks what: each recurring ask in 3-6 distinct sessions, each modeled ask in 3-4.
    plan: list[list[tuple[str, object]]] = [[] for _ in range(sessions)]
    for ask in picks:
        for s in rng.sample(range(sessions), rng.randint(3, 6)):
            plan[s].append(("recurring", ask))
    for entry in modeled:
        for s in rng.sample(range(sessions), rng.randint(3, 4)):
            plan[s].append(("modeled", entry))
    one_offs = rng.sample(ONE_OFFS, len(ONE_OFFS))
    for text, acts in one_offs[:12]:
        plan[rng.randrange(sessions)].append(("oneoff", (text, acts)))
    spare = iter(one_offs[12:])
    for s in range(sessions):
        if not plan[s]:
            # Each one-off is asked once.
            text, acts = next(spare)
            plan[s].append(("oneoff", (text, acts)))
        rng.shuffle(plan[s])

    # Clients: most sessions in the terminal; some in VS Code and Desktop (people), Codex and Pi. The
    # IDE-heavy ask's sessions are VS Code / Desktop sessions but one.
    clients = []
    ide_sessions = [s for s in range(sessions) if any(k == "recurring" and a.id == ide_only for k, a in plan[s])]
    for s in range(sessions):
        roll = rng.random()
        if s in ide_sessions[1:]:
            clients.append(rng.choice(("vscode", "desktop")))
        elif roll < 0.55:
            clients.append("cli")
        elif roll < 0.65:
            clients.append(rng.choice(("vscode", "desktop")))
        elif roll < 0.85:
            clients.append("codex")
        else:
            clients.append("pi")

    ticket_n = iter(range(101, 999))
    for s in range(sessions):
        when = start + timedelta(days=days * s / sessions, minutes=rng.randrange(0, 300))
        client = clients[s]
        w = _writer(root, project, when, rng, labels, client, old=(s == 3))
        counts[client] = counts.get(client, 0) + 1
        if client == "desktop":
            counts["desktop"] = counts.get("desktop", 0)
        for i, (kind, item) in enumerate(plan[s]):
            if kind == "recurring":
                lang = rng.choices(("en", "ja", "zh", "mixed"), weights=(6, 2, 1, 1))[0]
                text, label, acts = phrase(item, lang, rng), "ask:" + item.id, item.actions
            elif kind == "modeled":
                text, label, acts = rng.choice(item[1]), "modeled:" + item[0], item[2]
            else:
                text, label, acts = item[0], "oneoff:" + item[0][:24], item[1]
            _prompt(w, client, text, label, rng, first=i == 0)
            for act_kind, arg in acts:
                # An action is evidence of what it is: the project's test command is world:test_cmd whatever
                # the ask it answers (an intent's evidence is its prompts, not its actions).
                w.action(act_kind, arg, "world:test_cmd" if arg.startswith("pytest") else label)
            # The project's habits: its test command and its ticket tool, whatever the ask.
            if rng.random() < 0.7:
                w.action("sh", PROJECT_TEST, "world:test_cmd")
            if rng.random() < 0.45:
                w.action("sh", rng.choice(PROJECT_TICKETS[tickets]).format(n=next(ticket_n)), "binding:ticket")
            if client in ("cli", "vscode", "desktop") and rng.random() < 0.55:
                _claude_noise(w, rng.choice(_MACHINERY_NOISE))
            elif client == "codex" and rng.random() < 0.5:
                _codex_noise(w, rng.choice(("plan", "question")))
            if client in ("cli", "vscode") and rng.random() < 0.08:
                w.interrupt()
            w.say("Done.")
        if client == "cli" and s % 9 == 4:
            _compaction(w, picks, rng)
        w.write()

    _agent_sessions(root, project, start, rng, labels, counts)
    _other_projects(root, project, start, rng, labels, counts)
    recurring = {"ask:" + a.id: "intent" for a in picks}
    recurring["world:test_cmd"] = "world"
    recurring["binding:ticket"] = "binding"
    return History(root=root, project=project, recurring=recurring, modeled=["modeled:" + m[0] for m in modeled],
                   ide_only="ask:" + ide_only, labels=labels, sessions=counts)


def _writer(root: Path, project: str, when: datetime, rng: random.Random, labels: Labels, client: str,
            old: bool = False):
    sid = str(uuid.UUID(int=rng.getrandbits(128), version=4))
    if client == "codex":
        day = root / ".codex" / "sessions" / when.strftime("%Y/%m/%d")
        return CodexWriter(day / f"rollout-{when.strftime('%Y-%m-%dT%H-%M-%S')}-{sid}.jsonl", project, when, rng,
                           labels, session_id=sid)
    if client == "pi":
        folder = root / ".pi" / "agent" / "sessions" / pi_dirname(project)
        return PiWriter(folder / f"{when.strftime('%Y-%m-%dT%H-%M-%S-000Z')}_{sid}.jsonl", project, when, rng,
                        labels, session_id=sid)
    folder = root / ".claude" / "projects" / claude_slug(project)
    entry = {"cli": "cli", "vscode": "claude-vscode", "desktop": "claude-desktop", "sdk": "sdk-ts"}[client]
    return ClaudeWriter(folder / f"{sid}.jsonl", project, when, rng, labels, session_id=sid,
                        entrypoint=None if old else entry, version="2.0.14" if old else "2.1.38",
                        prompt_source="sdk" if client == "desktop" else None)


def _prompt(w, client: str, text: str, label: str, rng: random.Random, first: bool) -> None:
    if client == "vscode":
        blocks = [{"type": "text", "text": f"<ide_opened_file>The user opened the file {w.project}/src/shop/"
                                           f"{rng.choice(('orders', 'api', 'cache'))}.py in the IDE. This may or may "
                                           "not be related to the current task.</ide_opened_file>"}]
        if rng.random() < 0.4:
            blocks.append({"type": "text", "text": f"<ide_selection>The user selected the lines 10 to 14 from "
                                                   f"{w.project}/src/shop/orders.py:\ndef total(order):\n    return "
                                                   "sum(i.price for i in order.items)\n\nThis may or may not be "
                                                   "related to the current task.</ide_selection>"})
        w.prompt(text, label, blocks=blocks)
    elif client in ("cli", "desktop") and rng.random() < 0.15:
        skill = (f'<skill name="house-style" path="~/.claude/skills/house-style/SKILL.md">\n# House style\nPrefer '
                 "small commits. Run the tests before you finish. Update the changelog and the migration notes when "
                 "needed.\n</skill>\n")
        w.prompt(skill + text, label)
    else:
        w.prompt(text, label)


def _compaction(w: ClaudeWriter, picks, rng: random.Random) -> None:
    """A compaction summary quoting earlier prompts (flagged as Claude 2.1 writes it, unflagged in 2.0)."""
    quoted = "; ".join(f'"{rng.choice(a.en_verbs)} {rng.choice(a.en_objects)}"' for a in picks[:2])
    text = ("This session is being continued from a previous conversation that ran out of context. The "
            "conversation is summarized below:\nAnalysis:\nThe user asked several things.\n\nSummary:\n"
            f"1. Primary Request and Intent:\n   The user asked: {quoted}.\n2. Key Technical Concepts:\n   - alembic, "
            "openapi\n3. Pending Tasks:\n   - none")
    w.prompt(text, "noise:compaction", compact=None if w.version.startswith("2.0") else True)
    w.say("Continuing.")


def _agent_sessions(root: Path, project: str, start: datetime, rng: random.Random, labels: Labels,
                    counts: dict[str, int]) -> None:
    for n in range(4):
        text, acts = AGENT_PROMPTS[n % 2]
        when = start + timedelta(days=5 + 6 * n, hours=2)
        if n % 2 == 0:
            w = _writer(root, project, when, rng, labels, "sdk")
            counts["sdk"] = counts.get("sdk", 0) + 1
        else:
            sid = str(uuid.UUID(int=rng.getrandbits(128), version=4))
            day = root / ".codex" / "sessions" / when.strftime("%Y/%m/%d")
            w = CodexWriter(day / f"rollout-{when.strftime('%Y-%m-%dT%H-%M-%S')}-{sid}.jsonl", project, when, rng,
                            labels, session_id=sid, originator="codex_exec", source="exec")
            counts["codex-exec"] = counts.get("codex-exec", 0) + 1
        for i in range(2):
            t, a = AGENT_PROMPTS[(n + i) % 2]
            w.prompt(t, "agent:" + t[:20])
            for kind, arg in a:
                w.action(kind, arg, "agent:" + t[:20])
            w.say("Done.")
        w.write()


def _other_projects(root: Path, project: str, start: datetime, rng: random.Random, labels: Labels,
                    counts: dict[str, int]) -> None:
    base = project.rstrip("/").rsplit("/", 1)[0]
    name = project.rstrip("/").rsplit("/", 1)[1]
    for other in OTHERS:
        oname = other["name"].format(ws_dash=name.replace("_", "-") if "_" in name else name + "-go")
        opath = f"{base}/{oname}"
        for s in range(9):
            when = start + timedelta(days=3 * s + 1, hours=rng.randrange(1, 9))
            w = _writer(root, opath, when, rng, labels, rng.choice(("cli", "cli", "codex", "pi")))
            counts["other-project"] = counts.get("other-project", 0) + 1
            asks = rng.sample(other["asks"], 2)
            for text, acts in asks:
                label = "other:" + text[:24]
                w.prompt(text, label) if not isinstance(w, ClaudeWriter) else w.prompt(text, label)
                for kind, arg in acts:
                    w.action(kind, arg, label)
                for _ in range(2):
                    w.action("sh", other["test"], "other:test_cmd")
                w.action("sh", other["build"], "other:build_cmd")
                w.action("sh", other["ticket"], "other:ticket")
                w.say("Done.")
            w.write()
