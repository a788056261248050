#!/usr/bin/env python3
"""Readers' exactness on real transcripts: `kitsoki-miner sessions --json` against facts counted here,
independently, from the files themselves.

    python tests/bench/exactness.py DIR [DIR ...] [--cli PATH] [--verbose] [--json]

DIR is any folder of real history (a ~/.claude or ~/.codex, a repository that committed its agent
transcripts, ...). This script imports nothing from core/: it walks the folders, groups and counts with
its own code, written from the formats (reference/transcript-formats.md, Codex's rollout types), runs
`kitsoki-miner sessions --dir DIR ... --json --no-redact` and compares, per session, the facts a person
reads in that report:

- human_prompts, tool_calls, interrupts, rejected_tool_uses, subagents, project, title, agent_session;
- and which files are sessions at all: a session the CLI reports that is not one (an index, a prompt
  history) counts against its format.

It prints `Codex N/M exact, Claude N/M exact` (M includes sessions reported that are not sessions), the
fields that differ most, and with --verbose every difference. Not part of the unit test run: the real
histories it is meant for are not in this repository.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent

FIELDS = ("human_prompts", "tool_calls", "interrupts", "rejected_tool_uses", "subagents", "project", "title",
          "agent_session")

# --- reading ---------------------------------------------------------------------------------------


def records(path: str):
    """(line number, record) for every line that is a JSON object."""
    with open(path, "rb") as fh:
        for number, raw in enumerate(fh, 1):
            try:
                rec = json.loads(raw)
            except ValueError:
                continue
            if isinstance(rec, dict):
                yield number, rec


def kind_of(path: str) -> str:
    """What a .jsonl file holds, from its first records: a Claude transcript, a Codex rollout, a Pi
    session, or something that is no transcript (Codex's thread index, a prompt history)."""
    for _, rec in records(path):
        if rec.get("type") == "session":
            return "pi"
        if "payload" in rec and rec.get("type") in ("session_meta", "response_item", "event_msg", "turn_context"):
            return "codex"
        if "type" not in rec and "thread_name" in rec and "id" in rec:
            return "codex-index"
        if "type" not in rec and "display" in rec and "project" in rec:
            return "claude-history"
        if "type" not in rec and "session_id" in rec and "ts" in rec and "text" in rec:
            return "codex-history"
        if rec.get("type") == "title":
            continue
        return "claude"
    return "claude"


def walk(folders: list[str]) -> list[str]:
    out = []
    for folder in folders:
        for root, dirs, files in os.walk(folder):
            dirs.sort()
            for name in sorted(files):
                if name.endswith(".jsonl"):
                    out.append(os.path.join(root, name))
    return out


# --- who started a session ---------------------------------------------------------------------------
# Written from the rule the README documents (section "Who started a session"), not from its code.

PERSON_ENTRYPOINTS = {"cli", "claude-vscode", "claude-desktop", "claude-desktop-3p", "local-agent", "remote",
                      "remote_mobile", "ssh-remote"}
PROGRAM_ENTRYPOINTS = {"sdk-cli", "sdk-ts", "sdk-py", "mcp", "claude-code-github-action", "bench"}
KITSOKI_TOOLS = {"mcp__validator__submit", "mcp__kitsoki-bash__Bash", "mcp__operator__ask"}
PERSON_ORIGINATORS = {"codex_cli_rs", "codex-tui", "codex_vscode", "codex_vscode_copilot", "Codex Desktop",
                      "codex_app", "codex_chatgpt_desktop", "codex_atlas"}


def claude_agent(entrypoint, origin, prompt_source, subagent_only, kitsoki, person_there) -> bool:
    if subagent_only or kitsoki:
        return True
    if entrypoint in PERSON_ENTRYPOINTS:
        return False
    if entrypoint in PROGRAM_ENTRYPOINTS or (entrypoint or "").startswith("sdk"):
        return not person_there
    if origin is not None:
        return origin != "human"
    if prompt_source == "typed":
        return False
    return False  # no entrypoint (older builds) or an unknown one, with no sign of a program


def codex_agent(source, originator, person_there) -> bool:
    if isinstance(source, dict):
        return True
    program = (isinstance(source, str) and source.lower() in ("exec", "mcp")) or (
        isinstance(originator, str) and originator not in PERSON_ORIGINATORS
        and any(w in originator.lower() for w in ("exec", "sdk")))
    return program and not person_there


# --- Claude Code -------------------------------------------------------------------------------------

WRAPPERS = ("<command-name>", "<command-message>", "<local-command-stdout>", "<local-command-stderr>",
            "<local-command-caveat>", "<bash-input>", "<bash-stdout>", "<bash-stderr>", "<task-notification>",
            "<system-reminder>", "<user-prompt-submit-hook>")
INTERRUPTS = ("[Request interrupted by user", "[Request cancelled by user")
REFUSALS = ("The user doesn't want to proceed with this tool use", "User rejected tool use")
ANSWERED = "User has answered your question"


def text_of(content) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # a pasted image is something a person sent too
        return "\n".join(b["text"] if b.get("type") == "text" and isinstance(b.get("text"), str) else "[image]"
                         for b in content if isinstance(b, dict) and b.get("type") in ("text", "image"))
    return ""


def claude_file(path: str, trunk: bool, trunk_calls: frozenset = frozenset()) -> dict:
    """What one Claude file holds: per record uuid, the prompts and calls it carries (for the
    cross-session count), and the rest of the facts."""
    out = dict(prompts=[], calls=[], interrupts=0, refused=set(), answered=False, kitsoki=False, entrypoint=None,
               prompt_source=None, origin=None, cwd=None, any_cwd=None, start=None, session_id=None,
               custom=None, ai=None, summaries=[], parent={}, last=None, user_type=None)
    seen: set = set()
    call_ids: set = set()
    for number, rec in records(path):
        uuid = rec.get("uuid")
        kind = rec.get("type")
        if isinstance(uuid, str) and uuid:
            if uuid in seen:
                continue
            seen.add(uuid)
        if isinstance(rec.get("cwd"), str) and out["any_cwd"] is None:
            out["any_cwd"] = rec["cwd"]
        if kind == "custom-title" and isinstance(rec.get("customTitle"), str):
            out["custom"] = rec["customTitle"]
        elif kind == "ai-title" and isinstance(rec.get("aiTitle"), str):
            out["ai"] = rec["aiTitle"]
        elif kind == "summary" and isinstance(rec.get("summary"), str):
            leaf = rec.get("leafUuid")
            out["summaries"].append((leaf if isinstance(leaf, str) else "", rec["summary"]))
        if isinstance(uuid, str) and uuid:
            parent = rec.get("parentUuid")
            if parent is None and rec.get("type") == "system":
                parent = rec.get("logicalParentUuid")
            out["parent"][uuid] = parent if isinstance(parent, str) else None
        if kind not in ("user", "assistant", "system"):
            continue
        if isinstance(uuid, str) and uuid:
            out["last"] = uuid
        ts = rec.get("timestamp")
        if isinstance(ts, str) and (out["start"] is None or ts < out["start"]):
            out["start"] = ts
        if out["cwd"] is None and isinstance(rec.get("cwd"), str):
            out["cwd"] = rec["cwd"]
        if out["session_id"] is None and isinstance(rec.get("sessionId"), str):
            out["session_id"] = rec["sessionId"]
        if out["entrypoint"] is None and isinstance(rec.get("entrypoint"), str):
            out["entrypoint"] = rec["entrypoint"]
        if out["prompt_source"] is None and isinstance(rec.get("promptSource"), str):
            out["prompt_source"] = rec["promptSource"]
        message = rec.get("message") if isinstance(rec.get("message"), dict) else {}
        content = message.get("content")
        if kind == "assistant":
            blocks = content if isinstance(content, list) else []
            for block in blocks:
                if isinstance(block, dict) and block.get("type") == "tool_use":
                    if block.get("id") in trunk_calls:
                        continue  # a side question replays its parent's conversation: the trunk's calls
                    out["calls"].append(uuid)
                    call_ids.add(block.get("id"))
                    if block.get("name") in KITSOKI_TOOLS:
                        out["kitsoki"] = True
            continue
        if kind != "user":
            continue
        if isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
            for block in content:
                if not (isinstance(block, dict) and block.get("type") == "tool_result"):
                    continue
                text = block.get("content")
                text = text if isinstance(text, str) else text_of(text)
                if text.startswith(REFUSALS) or rec.get("toolUseResult") == "User rejected tool use":
                    out["refused"].add(block.get("tool_use_id"))
                if text.startswith(ANSWERED):
                    out["answered"] = True
            continue
        text = text_of(content)
        head = text.lstrip()
        if rec.get("isCompactSummary") or rec.get("isMeta"):
            continue
        if head.startswith(INTERRUPTS):
            out["interrupts"] += 1
            continue
        if head.startswith("<bash-input>"):
            out["calls"].append(uuid)
            continue
        if head.startswith(WRAPPERS) or not head or rec.get("isSidechain") or not trunk:
            continue
        origin = rec.get("origin") if isinstance(rec.get("origin"), dict) else {}
        if origin.get("kind") not in (None, "human"):
            continue
        if out["origin"] is None and isinstance(origin.get("kind"), str):
            out["origin"] = origin["kind"]
        if out["user_type"] is None:
            out["user_type"] = rec.get("userType")
        out["prompts"].append(uuid)
    out["refused"] &= call_ids
    out["call_ids"] = call_ids
    return out


def final_branch_summary(facts: dict):
    """The summary whose leafUuid is on the final branch, the one nearest its end."""
    if not facts["summaries"]:
        return None
    branch, node, guard = [], facts["last"], set()
    while node is not None and node not in guard:
        guard.add(node)
        branch.append(node)
        node = facts["parent"].get(node)
    position = {uuid: i for i, uuid in enumerate(branch)}
    # nearest the end; two summaries of one leaf: the later record (Claude Code keeps the last one)
    on = [(position[leaf], -i, text) for i, (leaf, text) in enumerate(facts["summaries"]) if leaf in position]
    if on:
        return min(on)[2]
    # a summary that names no leaf cannot be another session's: the last one
    return next((text for leaf, text in reversed(facts["summaries"]) if not leaf), None)


def claude_sessions(paths: list[str]) -> list[dict]:
    trunks: dict[str, list[str]] = {}
    agents: list[tuple[str, str | None]] = []
    for path in paths:
        parts = Path(path).parts
        name = parts[-1]
        if "tool-results" in parts[-2:-1]:
            continue
        if parts[-2] == "subagents" and name.startswith("agent-"):
            agents.append((path, str(Path(path).parent.parent) + ".jsonl"))
        elif len(parts) > 4 and parts[-3] == "workflows" and parts[-4] == "subagents":
            if name.startswith("agent-"):
                agents.append((path, str(Path(*parts[:-4])) + ".jsonl"))
        elif "subagents" in parts[-4:-1]:
            continue
        elif name.startswith("agent-"):
            sid = next((r["sessionId"] for _, r in records(path) if isinstance(r.get("sessionId"), str)), None)
            agents.append((path, str(Path(path).with_name(f"{sid}.jsonl")) if sid else None))
        else:
            trunks[path] = []
    orphans: dict[str, list[str]] = {}
    for path, trunk in agents:
        if trunk in trunks:
            trunks[trunk].append(path)
        else:
            orphans.setdefault(trunk or path, []).append(path)
    sessions = []
    for trunk, subs in list(trunks.items()) + [(None, subs) for subs in orphans.values()]:
        main = claude_file(trunk, True) if trunk else None
        own = frozenset(main["call_ids"]) if main else frozenset()
        parts = [claude_file(p, False, own) for p in subs]
        head = main or parts[0]
        project = head["cwd"] or head["any_cwd"]
        if project is None:
            project = next((f["cwd"] or f["any_cwd"] for f in parts if f["cwd"] or f["any_cwd"]), None)
        title = (main["custom"] or main["ai"] or final_branch_summary(main)) if main else None
        person = bool(main and (main["interrupts"] or main["refused"] or main["answered"]))
        entrypoint = next((f["entrypoint"] for f in ([main] if main else []) + parts if f["entrypoint"]), None)
        starts = [f["start"] for f in ([main] if main else []) + parts if f["start"]]
        sessions.append(dict(
            format="claude", path=trunk, files=([trunk] if trunk else []) + subs,
            id=(main["session_id"] if main else None) or Path(trunk or subs[0]).stem,
            start=min(starts) if starts else "",
            prompts=main["prompts"] if main else [], calls=[c for f in ([main] if main else []) + parts
                                                             for c in f["calls"]],
            interrupts=main["interrupts"] if main else 0,
            rejected_tool_uses=len(main["refused"]) if main else 0,
            subagents=len(subs), project=project, title=title,
            agent_session=claude_agent(entrypoint, main["origin"] if main else None,
                                       main["prompt_source"] if main else None, main is None,
                                       any(f["kitsoki"] for f in ([main] if main else []) + parts), person),
        ))
    # A record repeated by a resumed or forked session counts once, in the session that started first.
    seen: set = set()
    for s in sorted(sessions, key=lambda s: (s["start"], s["path"] or "")):
        kept_prompts = [u for u in s["prompts"] if not (u and u in seen)]
        kept_calls = [u for u in s["calls"] if not (u and u in seen)]
        seen.update(u for u in s["prompts"] + s["calls"] if u)
        s["human_prompts"], s["tool_calls"] = len(kept_prompts), len(kept_calls)
    return sessions


# --- Codex CLI ---------------------------------------------------------------------------------------

CONTEXT = ("<environment_context>", "<user_instructions>", "# AGENTS.md instructions", "<INSTRUCTIONS>",
           "<user_shell_command>", "<turn_aborted>", "<subagent_notification>")
CALLS = ("function_call", "custom_tool_call", "local_shell_call", "web_search_call", "tool_search_call")


def codex_titles(paths: list[str]) -> dict[str, dict[str, str]]:
    """CODEX_HOME -> {thread id: its latest name} from every session_index.jsonl."""
    out: dict[str, dict[str, str]] = {}
    for path in paths:
        if os.path.basename(path) != "session_index.jsonl":
            continue
        names = out.setdefault(os.path.dirname(path), {})
        for _, rec in records(path):
            if isinstance(rec.get("id"), str) and isinstance(rec.get("thread_name"), str):
                names[rec["id"]] = rec["thread_name"]
    return out


def codex_home(path: str) -> str | None:
    p = Path(path).parent
    while p != p.parent:
        if p.name in ("sessions", "archived_sessions"):
            return str(p.parent)
        p = p.parent
    return None


def codex_session(path: str, titles: dict) -> dict:
    meta, cwd, events, items, typed, other_prompts = None, None, 0, 0, 0, 0
    calls, refused, spawned, spawn_calls, thread_name = set(), set(), set(), 0, None
    person, aborted_items = False, 0
    for number, rec in records(path):
        payload = rec.get("payload") if isinstance(rec.get("payload"), dict) else {}
        kind = rec.get("type")
        if kind == "session_meta" and meta is None:
            meta = payload
        elif kind == "turn_context" and cwd is None and isinstance(payload.get("cwd"), str):
            cwd = payload["cwd"]
        elif kind == "event_msg":
            what = payload.get("type")
            if what == "user_message" and isinstance(payload.get("message"), str):
                typed += bool(payload["message"].strip())
            elif what == "turn_aborted" and payload.get("reason", "interrupted") == "interrupted":
                events += 1
            elif what == "turn_aborted":
                events += 0
            elif what == "collab_agent_spawn_end" and isinstance(payload.get("new_thread_id"), str):
                spawned.add(payload["new_thread_id"])
            elif what == "thread_name_updated" and isinstance(payload.get("thread_name"), str):
                thread_name = payload["thread_name"]
        elif kind == "response_item":
            what = payload.get("type")
            if what == "message" and payload.get("role") == "user":
                text = "\n".join(c.get("text", "") for c in payload.get("content") or []
                                 if isinstance(c, dict) and isinstance(c.get("text"), str))
                head = text.lstrip()
                if head.startswith("<turn_aborted>"):
                    aborted_items += 1
                elif head and not head.startswith(CONTEXT):
                    other_prompts += 1
            elif what in CALLS:
                calls.add(payload.get("call_id") or payload.get("id") or f"line:{number}")
                if payload.get("name") == "spawn_agent":
                    spawn_calls += 1
            elif what in ("function_call_output", "custom_tool_call_output"):
                out = payload.get("output")
                if isinstance(out, dict):
                    out = out.get("content") if isinstance(out.get("content"), str) else json.dumps(out)
                out = out if isinstance(out, str) else json.dumps(out)
                if out.startswith(("exec command rejected by user", "patch rejected by user")) or \
                        'Rejected(\\"rejected by user\\")' in out or 'Rejected("rejected by user")' in out:
                    refused.add(payload.get("call_id"))
    meta = meta or {}
    source = meta.get("source")
    subagent = isinstance(source, dict)
    interrupts = events if events else aborted_items
    prompts = 0 if subagent else (typed if typed else other_prompts)
    sid = meta.get("id") or meta.get("session_id") or Path(path).stem[-36:]
    home = codex_home(path)
    title = titles.get(home, {}).get(sid) or thread_name
    person = bool(interrupts or refused)
    return dict(
        format="codex", path=path, files=[path], id=sid, human_prompts=prompts, tool_calls=len(calls),
        interrupts=interrupts, rejected_tool_uses=len(refused & calls),
        subagents=len(spawned) if spawned else spawn_calls,
        project=meta.get("cwd") if isinstance(meta.get("cwd"), str) else cwd, title=title,
        agent_session=codex_agent(source, meta.get("originator"), person),
    )


# --- comparing ---------------------------------------------------------------------------------------


def expected(folders: list[str]) -> tuple[list[dict], list[tuple[str, str]]]:
    paths = walk(folders)
    kinds = {p: kind_of(p) for p in paths}
    titles = codex_titles([p for p in paths if kinds[p] == "codex-index"])
    sessions = [codex_session(p, titles) for p in paths if kinds[p] == "codex"]
    claude = [p for p in paths if kinds[p] == "claude" and not (
        os.path.basename(p) == "journal.jsonl" and "workflows" in Path(p).parts)]
    sessions += claude_sessions(claude)
    not_sessions = [(p, kinds[p]) for p in paths if kinds[p] in ("codex-index", "claude-history", "codex-history")]
    return sessions, not_sessions


def reported(folders: list[str], cli: str) -> list[dict]:
    cmd = [cli, "sessions", "--json", "--no-redact"]
    for folder in folders:
        cmd += ["--dir", folder]
    done = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return json.loads(done.stdout)["sessions"]


def compare(folders: list[str], cli: str, verbose: bool) -> dict:
    want, not_sessions = expected(folders)
    got = reported(folders, cli)
    by_path = {(s["format"], s["path"]): s for s in got}
    by_id = {(s["format"], s["id"]): s for s in got}
    used: set = set()
    score = {"codex": [0, 0], "claude": [0, 0]}
    fields: collections.Counter = collections.Counter()
    diffs = []
    for w in want:
        g = by_path.get((w["format"], w["path"])) if w["path"] else None
        if g is None:
            g = next((by_path[(w["format"], f)] for f in w["files"] if (w["format"], f) in by_path), None)
        if g is None:
            g = by_id.get((w["format"], w["id"]))
        score[w["format"]][1] += 1
        if g is None:
            fields["missing"] += 1
            diffs.append((w["path"] or w["files"][0], "missing", None, None))
            continue
        used.add(id(g))
        wrong = [f for f in FIELDS if g.get(f) != w[f]]
        for f in wrong:
            fields[f] += 1
            diffs.append((w["path"] or w["files"][0], f, w[f], g.get(f)))
        if not wrong:
            score[w["format"]][0] += 1
    for g in got:
        if g["format"] == "pi":
            continue  # not counted here
        if id(g) not in used:
            fmt = g["format"] if g["format"] in score else "claude"
            score[fmt][1] += 1
            fields["not a session"] += 1
            diffs.append((g["path"], "not a session", None, g["format"]))
    result = {"codex": score["codex"], "claude": score["claude"], "fields": dict(fields.most_common()),
              "not_transcripts_seen": len(not_sessions)}
    if verbose:
        result["differences"] = [{"path": p, "field": f, "expected": e, "reported": r} for p, f, e, r in diffs]
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dirs", nargs="+")
    parser.add_argument("--cli", default=str(REPO / ".venv" / "bin" / "kitsoki-miner"))
    parser.add_argument("--verbose", action="store_true", help="list every difference")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    result = compare([str(Path(d).resolve()) for d in args.dirs], args.cli, args.verbose)
    if args.json:
        print(json.dumps(result, indent=2, ensure_ascii=False))
        return 0
    (cx, cm), (lx, lm) = result["codex"], result["claude"]
    print(f"Codex {cx}/{cm} exact, Claude {lx}/{lm} exact")
    print("differences by field:", ", ".join(f"{k} {v}" for k, v in result["fields"].items()) or "none")
    for d in result.get("differences", []):
        print(f"  {d['path']}: {d['field']}: expected {d['expected']!r}, reported {d['reported']!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
