"""`kitsoki-miner mcp`: the runs operations as MCP tools, driven over real stdio with the SDK's client.

The server runs as a subprocess with a fake HOME holding a small Claude Code and Pi history (built as
tests/test_runs.py builds it); the run lives in tmp_path. LLM workers are simulated: `simulated_worker`
(from tests/test_runs.py) reads a task packet and its snippet and writes an analysis.
"""

from __future__ import annotations

import os
import sys
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import orjson
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.test_runs import OTHER, PROJECT, claude_session, pi_session, simulated_worker

ROOT = Path(__file__).resolve().parent.parent
TOOLS = {"runs_projects", "runs_coverage", "runs_confirm", "runs_prepare", "runs_list", "runs_status", "runs_reuse",
         "runs_resume", "runs_finish", "runs_cancel", "runs_delete", "runs_groups", "runs_workdir"}
TIMEOUT = 90


@pytest.fixture
def home(tmp_path) -> Path:
    home = tmp_path / "home"
    claude_session(home, "c-one", PROJECT, ["2026-03-01T10:00:00Z", "2026-03-01T10:05:00Z"],
                   ["first: please fix the build", "alpha reply"])
    claude_session(home, "c-two", PROJECT, ["2026-03-05T09:00:00Z", "2026-03-05T09:01:00Z"],
                   ["second: deploy the preview", "beta reply"])
    pi_session(home, "p-three", PROJECT, "2026-03-03T12:00:00Z", ["third: run the tests", "gamma reply ✓"])
    claude_session(home, "c-other", OTHER, ["2026-03-02T10:00:00Z"], ["other project"])
    return home


@asynccontextmanager
async def connect(home: Path, *args: str):
    """A ClientSession on a freshly spawned server (`python -m server.mcp_runs` unless args say otherwise)."""
    env = {k: v for k, v in os.environ.items() if k not in ("XDG_CONFIG_HOME", "PYTHONPATH")}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), PYTHONPATH=str(ROOT))
    params = StdioServerParameters(command=sys.executable, args=list(args) or ["-m", "server.mcp_runs"],
                                   env=env, cwd=str(ROOT))
    with anyio.fail_after(TIMEOUT):
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            yield session


async def call(session: ClientSession, tool: str, **arguments) -> dict:
    result = await session.call_tool(tool, arguments)
    assert not result.is_error, result.content
    payload = orjson.loads(result.content[0].text)
    assert result.structured_content == payload
    return payload


async def call_error(session: ClientSession, tool: str, arguments: dict) -> dict:
    result = await session.call_tool(tool, arguments)
    assert result.is_error, result.content
    payload = orjson.loads(result.content[0].text)
    assert set(payload) >= {"error", "message"}
    return payload


async def test_tools_are_listed_with_typed_parameters_and_docstrings(home):
    async with connect(home) as session:
        listed = {t.name: t for t in (await session.list_tools()).tools}
    assert set(listed) == TOOLS
    for tool in listed.values():
        assert tool.description and len(tool.description) > 40, tool.name
        assert tool.input_schema["type"] == "object"
        assert "ctx" not in tool.input_schema.get("properties", {})
    cov = listed["runs_coverage"].input_schema
    assert set(cov["required"]) == {"workdir", "project"}
    assert {"since", "until", "goal", "assignment", "exclude", "current_session"} <= set(cov["properties"])
    assert set(listed["runs_delete"].input_schema["required"]) == {"workdir", "run_id"}
    assert listed["runs_groups"].input_schema["properties"]["budget_bytes"]["type"] == "integer"
    assert listed["runs_status"].annotations.read_only_hint is True
    assert listed["runs_delete"].annotations.destructive_hint is True


async def test_the_cli_entry_serves_the_same_tools(home):
    async with connect(home, "-c", "import sys; from server.cli import main; sys.exit(main(['mcp']))") as session:
        names = {t.name for t in (await session.list_tools()).tools}
    assert names == TOOLS


async def test_a_run_coordinated_over_mcp_projects_to_complete(home, tmp_path):
    wd = str(tmp_path / "work")
    phases = []

    async def on_progress(progress, total, message):
        phases.append((progress, total, message))

    async with connect(home) as session:
        suggestion = await call(session, "runs_workdir")
        assert suggestion["source"] == "default" and suggestion["warning"]

        page = await call(session, "runs_projects", limit=1)
        assert page["total"] == 2 and page["next_offset"] == 1
        rest = await call(session, "runs_projects", offset=1)
        assert {e["project"] for e in page["projects"] + rest["projects"]} == {PROJECT, OTHER}

        cov = await call(session, "runs_coverage", workdir=wd, project=PROJECT, goal="find repeated requests",
                         current_session="c-two", exclude=["nope"])
        assert cov["coverage"]["sessions"] == 2 and not cov["confirmed"]
        assert [(e["id"], e["reason"]) for e in cov["exclusions"]] == [("c-two", "current-session"),
                                                                       ("nope", "named")]
        assert "first: please fix" not in orjson.dumps(cov).decode()  # aggregates only
        run_id = cov["run_id"]

        confirmed = await call(session, "runs_confirm", workdir=wd, digest=cov["coverage"]["digest"],
                               current_session="c-two")
        assert confirmed["confirmed"] and confirmed["run_id"] == run_id

        result = await session.call_tool("runs_prepare", {"workdir": wd, "current_session": "c-two"},
                                         progress_callback=on_progress)
        assert not result.is_error, result.content
        prepared = orjson.loads(result.content[0].text)
        assert prepared["run_id"] == run_id and prepared["status"] == "plan-ready" and prepared["tasks"] >= 1
        assert Path(prepared["readme"]).is_file()
        values = [p for p, _, _ in phases]
        assert values == sorted(values) and {m for _, _, m in phases} >= {"checking sessions",
                                                                           "writing and validating the plan"}

        status = await call(session, "runs_status", workdir=wd, run_id=run_id)
        assert status["status"] == "plan-ready" and status["done"] == 0 and status["tasks"] == prepared["tasks"]

        run_dir = Path(prepared["run_dir"])
        if not run_dir.is_absolute():
            run_dir = Path(wd) / run_dir
        for readme in sorted((run_dir / "plan").glob("T*/README.md")):
            simulated_worker(readme)
        status = await call(session, "runs_status", workdir=wd, run_id=run_id)
        assert status["done"] == status["tasks"]

        listed = await call(session, "runs_list", workdir=wd)
        assert [r["run_id"] for r in listed["runs"]] == [run_id] and listed["broken"] == []
        groups = await call(session, "runs_groups", workdir=wd, run_id=run_id, budget_bytes=1_000_000)
        assert groups["final"] and len(groups["groups"]) == 1

        refused = await call(session, "runs_finish", workdir=wd, run_id=run_id)
        assert not refused["complete"] and any("summary.md" in p for p in refused["problems"])
        (run_dir / "summary.md").write_text("# Summary (simulated)\nevery task analyzed\n")
        done = await call(session, "runs_finish", workdir=wd, run_id=run_id)
        assert done["complete"] and done["status"] == "complete" and not done["partial"]
        status = await call(session, "runs_status", workdir=wd, run_id=run_id)
        assert status["status"] == "complete"


async def test_argument_bounds_are_checked_on_the_whole_object_before_anything(home, tmp_path):
    wd = tmp_path / "work"
    async with connect(home) as session:
        cases = [
            # the whole arguments object: each string within its own bound, together over 24 KiB
            ("runs_coverage", {"workdir": str(wd), "project": PROJECT, "goal": "g" * 9000,
                               "assignment": "a" * 8000, "exclude": ["x" * 4000] * 3}, None),
            ("runs_coverage", {"workdir": str(wd), "project": "p" * 5000}, "project"),
            ("runs_coverage", {"workdir": str(wd), "project": PROJECT, "assignment": "é" * 4500}, "assignment"),
            ("runs_coverage", {"workdir": str(wd), "project": PROJECT, "name": "a\x00b"}, "name"),
            ("runs_coverage", {"workdir": "work", "project": PROJECT}, "workdir"),
            ("runs_coverage", {"workdir": str(tmp_path) + "/x/../work", "project": PROJECT}, "workdir"),
            ("runs_prepare", {"workdir": str(wd), "dirs": ["relative/dir"]}, "dirs"),
            # an unknown key is checked against the bounds too, before it is reported as unknown
            ("runs_status", {"workdir": str(wd), "run_id": "0123456789ab", "junk": "j" * 30_000}, None),
        ]
        for tool, arguments, field in cases:
            err = await call_error(session, tool, arguments)
            assert err["error"] == "bounds", (tool, err)
            assert err.get("field") == field, (tool, err)
            if field is None:
                assert err["limit"] == 24 * 1024 and err["size"] > err["limit"], err
        unknown = await call_error(session, "runs_status", {"workdir": str(wd), "runid": "0123456789ab"})
        assert unknown["error"] == "unknown-arguments" and unknown["unknown"] == ["runid"]
        typed = await call_error(session, "runs_groups", {"workdir": str(wd), "run_id": "0123456789ab",
                                                          "budget_bytes": "lots"})
        assert typed["error"] == "invalid-arguments" and typed["fields"] == ["budget_bytes"]
    assert not wd.exists()  # nothing was created: every refusal came before any mutation


async def test_unknown_run_id_is_a_tool_error_carrying_the_run_error(home, tmp_path):
    wd = str(tmp_path / "work")
    async with connect(home) as session:
        await call(session, "runs_coverage", workdir=wd, project=PROJECT)
        for tool in ("runs_status", "runs_finish", "runs_delete", "runs_resume", "runs_cancel"):
            err = await call_error(session, tool, {"workdir": wd, "run_id": "0123456789ab"})
            assert err["error"] == "not-found" and "0123456789ab" in err["message"], (tool, err)
        err = await call_error(session, "runs_status", {"workdir": wd, "run_id": "not-a-run"})
        assert err["error"] == "not-found" and err["run_id"] == "not-a-run"
        # an argument-less prepare with nothing confirmed: refused, named, and the run is kept
        err = await call_error(session, "runs_prepare", {"workdir": wd})
        assert err["error"] == "not-found" and "confirmed" in err["message"]
        assert len((await call(session, "runs_list", workdir=wd))["runs"]) == 1
