"""Episodes: one human prompt and everything the agent did until the next one, with its signals.

The measures are kitsoki's own (reference/kitsoki-formats.md §5, tools/session-mining/tag_score.py):
- tool_calls: actions in the episode;
- retries: actions repeating an earlier (tool, argument) pair of the same episode;
- edit_rerun_cycles: an edit followed by a shell command that tests or builds.
Determinism follows tag_score's classes from what the transcript shows for certain: a person decided
something inside the episode (a rejected call, an interrupt, a question tool, a plan approval) ->
agent-gated; no action at all -> irreducible; otherwise deterministic.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime
from enum import Enum
from typing import TYPE_CHECKING

from dataclasses import dataclass, field

import msgspec
from pydantic import ConfigDict, with_config

from core.mining.signatures import (
    EDIT_TOOLS,
    PLAN_TOOLS,
    QUESTION_TOOLS,
    SHELL_TOOLS,
    action_signature,
)

if TYPE_CHECKING:
    from core.transcripts.model import Session, ToolCall, Turn
    from core.transcripts.steps import Step, StepCall

# The transcript model and the ask reader are imported by the functions that make episodes: reading a
# recipe (which names its Determinism) must not load the transcript readers and the stemmers.

def _model(cls):
    """A plain slotted dataclass (one per tool call on the mining hot path: building a pydantic
    dataclass validated every field); pydantic still validates it, with `extra="forbid"`, where the
    watermark store reads it back, and makes its JSON Schema."""
    return with_config(ConfigDict(extra="forbid"))(dataclass(slots=True, kw_only=True)(cls))


_RERUN = re.compile(r"\b(test|go test|pytest|npm|make|run|build|cargo|jest|vitest)\b", re.I)


class Determinism(str, Enum):
    deterministic = "deterministic"
    agent_gated = "agent-gated"
    irreducible = "irreducible"


@_model
class Action:
    signature: str
    tool: str
    call_id: str = ""
    argument: str
    """The full key argument (whole command, path): what `retries` compares."""
    is_error: bool = False
    interrupted: bool = False
    rejected: bool = False
    by_human: bool = False
    exit_code: int | None = None
    line: int = 0
    file: str = ""


@_model
class Measures:
    tool_calls: int = 0
    edit_rerun_cycles: int = 0
    retries: int = 0

    @property
    def cost(self) -> int:
        """kitsoki's recipe priority (pipeline.go): tool_calls + edit_rerun_cycles + retries."""
        return self.tool_calls + self.edit_rerun_cycles + self.retries


@_model
class Episode:
    session: str
    project: str | None
    index: int
    """Position of the prompt among the session's human prompts (0-based)."""
    prompt: str
    file: str
    line_start: int
    line_end: int
    timestamp: datetime | None = None
    actions: list[Action]
    measures: Measures
    determinism: Determinism
    errors: int = 0
    interrupted_turns: int = 0
    """Interrupt markers between the episode's turns (the person pressed Esc)."""
    interrupts: int = 0
    """interrupted_turns plus actions whose own result says they were interrupted."""
    rejections: int = 0
    questions: int = 0
    agent_session: bool = False
    stems: list[str] = field(default_factory=list)
    """What the prompt asks, as sorted terms (core/mining/asks.py: kind, verbs, objects): what clustering
    compares, computed once at extraction. Empty when the prompt asks nothing of its own."""
    phrasing: str = ""
    """The ask, short and normalized (client wrappers, pasted logs and politeness removed), as a recipe shows it."""
    cluster: str = ""
    """The key of the episode whose prompt seeded this one's intent cluster (set by the miner)."""

    def __reduce__(self):
        # Pickled (a worker's episodes on their way to the pass) as msgspec's JSON of it: pickle's own
        # way with a slotted dataclass runs Python code for every field of every action, and cost a seed
        # pass more than cutting the episodes. The timestamp travels as itself (an offset in seconds
        # does not survive JSON), so the copy is the episode, field for field.
        return _episode_from, (_encode_episode(self), self.timestamp)

    @property
    def signature(self) -> tuple[str, ...]:
        """The distinct action signatures in first-seen order (the episode's 'how')."""
        seen: dict[str, None] = {}
        for action in self.actions:
            if not action.by_human:
                seen.setdefault(action.signature, None)
        return tuple(seen)


_encode_episode = msgspec.json.Encoder().encode
_decode_episode = msgspec.json.Decoder(Episode).decode


def _episode_from(data: bytes, timestamp: datetime | None) -> Episode:
    episode = _decode_episode(data)
    episode.timestamp = timestamp
    return episode


def _argument(call: ToolCall) -> str:
    return argument_of(call.input)


def argument_of(inp: dict) -> str:
    """The key argument of a tool input (whole command, path, pattern, ...); "" when it has none."""
    for key in ("command", "file_path", "path", "notebook_path", "pattern", "query", "url", "skill", "prompt"):
        value = inp.get(key)
        if isinstance(value, str) and value:
            return value
    return ""


def _action(call: ToolCall, project: str | None) -> Action:
    result = call.result
    return Action(
        signature=action_signature(call.name, call.input, project),
        tool=call.name,
        call_id=call.id,
        argument=_argument(call),
        is_error=bool(result and result.is_error and not result.rejected),
        interrupted=bool(result and result.interrupted),
        rejected=bool(result and result.rejected),
        by_human=call.by_human,
        exit_code=result.exit_code if result else None,
        line=call.source.line,
        file=call.source.file,
    )


def measure(actions: list[Action]) -> Measures:
    measures = Measures(tool_calls=len(actions))
    seen: set[tuple[str, str]] = set()
    edited = False
    for action in actions:
        key = (action.tool, action.argument)
        if key in seen:
            measures.retries += 1
        seen.add(key)
        if action.tool in EDIT_TOOLS:
            edited = True
        elif edited and action.tool in SHELL_TOOLS and _RERUN.search(action.argument):
            measures.edit_rerun_cycles += 1
            edited = False
    return measures


def _classify(actions: list[Action], interrupts: int) -> Determinism:
    if interrupts or any(a.rejected or a.interrupted or a.tool in QUESTION_TOOLS or a.tool in PLAN_TOOLS
                         for a in actions):
        return Determinism.agent_gated
    if not actions:
        return Determinism.irreducible
    return Determinism.deterministic


def episodes(session: Session, *, carry: Episode | None = None) -> Iterator[Episode]:
    """Cut a session's active conversation at each human prompt.

    `carry` is the last, possibly unfinished, episode of an earlier read of the same file: what
    comes before the first prompt of this read continues it, and it is yielded first.
    """
    from core.transcripts.model import TurnKind

    current: Turn | None = None
    body: list[Turn] = []
    lead: list[Turn] = []
    index = carry.index + 1 if carry is not None else 0
    for turn in session.turns:
        if not turn.active:
            continue
        if turn.kind is TurnKind.human:
            if current is not None:
                yield _episode(session, current, body, index)
                index += 1
            elif carry is not None:
                yield continue_episode(carry, session, lead)
                carry = None
            current, body = turn, []
        elif current is not None:
            body.append(turn)
        else:
            lead.append(turn)
    if carry is not None:
        yield continue_episode(carry, session, lead)
    if current is not None:
        yield _episode(session, current, body, index)


def continue_episode(episode: Episode, session: Session, turns: list[Turn]) -> Episode:
    """The episode with the actions of `turns` (read later from the same file) added."""
    from core.transcripts.model import TurnKind

    if not turns:
        return episode
    calls = [c for t in turns for c in t.tool_calls]
    return _continued(episode, [_action(c, session.project) for c in calls],
                      sum(1 for t in turns if t.kind is TurnKind.interrupt), _last_line(turns))


def _continued(episode: Episode, more: list[Action], interrupts: int, last_line: int) -> Episode:
    actions = episode.actions + more
    return Episode(
        session=episode.session, project=episode.project, index=episode.index, prompt=episode.prompt,
        file=episode.file, line_start=episode.line_start, line_end=max(episode.line_end, last_line),
        timestamp=episode.timestamp, actions=actions, agent_session=episode.agent_session,
        stems=episode.stems, phrasing=episode.phrasing, cluster=episode.cluster,
        **_outcomes(actions, episode.interrupted_turns + interrupts),
    )


def _outcomes(actions: list[Action], interrupted_turns: int) -> dict:
    """Measures, counts and class: everything about an episode that follows from its actions (what
    measure() and _classify() say, and the counts, in one pass over the actions)."""
    measures = Measures(tool_calls=len(actions))
    seen: set[tuple[str, str]] = set()
    edited = gated = False
    errors = interrupted = rejections = questions = retries = cycles = 0
    for action in actions:
        tool = action.tool
        key = (tool, action.argument)
        if key in seen:
            retries += 1
        else:
            seen.add(key)
        if tool in EDIT_TOOLS:
            edited = True
        elif edited and tool in SHELL_TOOLS and _RERUN.search(action.argument):
            cycles += 1
            edited = False
        if action.is_error:
            errors += 1
        if action.interrupted:
            interrupted += 1
            gated = True
        if action.rejected:
            rejections += 1
            gated = True
        if tool in QUESTION_TOOLS:
            questions += 1
            gated = True
        elif tool in PLAN_TOOLS:
            gated = True
    measures.retries, measures.edit_rerun_cycles = retries, cycles
    if interrupted_turns or gated:
        determinism = Determinism.agent_gated
    elif not actions:
        determinism = Determinism.irreducible
    else:
        determinism = Determinism.deterministic
    return dict(
        measures=measures,
        determinism=determinism,
        errors=errors,
        interrupted_turns=interrupted_turns,
        interrupts=interrupted_turns + interrupted,
        rejections=rejections,
        questions=questions,
    )


def _last_line(turns: list[Turn]) -> int:
    lines = [0]
    for turn in turns:
        lines.append(turn.source.last_line or turn.source.line)
        for call in turn.tool_calls:
            if call.result is not None and call.result.source is not None:
                lines.append(call.result.source.line)
    return max(lines)


def attach_results(episode: Episode, results: dict) -> None:
    """Outcomes that arrived in a later read for calls made in an earlier one (by call id)."""
    for action in episode.actions:
        result = results.get(action.call_id)
        if result is not None:
            action.is_error = result.is_error and not result.rejected
            action.interrupted = result.interrupted
            action.rejected = result.rejected
            action.exit_code = result.exit_code
    for name, value in _outcomes(episode.actions, episode.interrupted_turns).items():
        setattr(episode, name, value)


def _episode(session: Session, prompt: Turn, body: list[Turn], index: int) -> Episode:
    from core.transcripts.model import TurnKind

    actions = [_action(c, session.project) for t in body for c in t.tool_calls]
    return _made(session.id, session.project, session.agent_session, index, prompt.text, prompt.source.file,
                 prompt.source.line, max(prompt.source.last_line or prompt.source.line, _last_line(body)),
                 prompt.timestamp, actions, sum(1 for t in body if t.kind is TurnKind.interrupt))


def _made(session: str, project: str | None, agent_session: bool, index: int, prompt: str, file: str,
          line_start: int, line_end: int, timestamp: datetime | None, actions: list[Action],
          interrupts: int) -> Episode:
    from core.mining.asks import understand

    ask = understand(prompt)
    said, bag = ask.phrasing, ask.terms
    return Episode(
        session=session,
        project=project,
        index=index,
        prompt=prompt,
        file=file,
        line_start=line_start,
        line_end=line_end,
        timestamp=timestamp,
        actions=actions,
        agent_session=agent_session,
        stems=list(bag),
        phrasing=said,
        **_outcomes(actions, interrupts),
    )


# -- from steps (core/transcripts/steps.py: what mining reads of a Claude Code file) ----------------

def step_episodes(steps: list[Step], *, session: str, project: str | None, agent_session: bool, file: str,
                  carry: Episode | None = None) -> Iterator[Episode]:
    """episodes() of the session whose turns these steps are (the same cut, the same episodes)."""
    from core.transcripts.model import TurnKind

    current: Step | None = None
    body: list[Step] = []
    lead: list[Step] = []
    index = carry.index + 1 if carry is not None else 0
    human = TurnKind.human
    for step in steps:
        if step.kind is human:
            if current is not None:
                yield _step_episode(session, project, agent_session, file, current, body, index)
                index += 1
            elif carry is not None:
                yield continue_steps(carry, project, file, lead)
                carry = None
            current, body = step, []
        elif current is not None:
            body.append(step)
        else:
            lead.append(step)
    if carry is not None:
        yield continue_steps(carry, project, file, lead)
    if current is not None:
        yield _step_episode(session, project, agent_session, file, current, body, index)


def continue_steps(episode: Episode, project: str | None, file: str, steps: list[Step]) -> Episode:
    """continue_episode() for steps read later from the same file."""
    from core.transcripts.model import TurnKind

    if not steps:
        return episode
    return _continued(episode, [_step_action(c, project, file) for s in steps for c in s.calls],
                      sum(1 for s in steps if s.kind is TurnKind.interrupt), _steps_last_line(steps))


def _step_episode(session: str, project: str | None, agent_session: bool, file: str, prompt: Step,
                  body: list[Step], index: int) -> Episode:
    from core.transcripts.model import TurnKind
    from core.transcripts.normalize import parse_time

    actions = [_step_action(c, project, file) for s in body for c in s.calls]
    return _made(session, project, agent_session, index, prompt.prompt, file, prompt.line,
                 max(prompt.last_line or prompt.line, _steps_last_line(body)), parse_time(prompt.timestamp),
                 actions, sum(1 for s in body if s.kind is TurnKind.interrupt))


def _step_action(call: StepCall, project: str | None, file: str) -> Action:
    result = call.result
    name, inp = call.name, call.input
    if result is None:
        return Action(signature=action_signature(name, inp, project), tool=name, call_id=call.id,
                      argument=argument_of(inp), by_human=call.by_human, line=call.line, file=file)
    rejected = result.rejected  # an Outcome's flags are bools already
    return Action(
        signature=action_signature(name, inp, project),
        tool=name,
        call_id=call.id,
        argument=argument_of(inp),
        is_error=result.is_error and not rejected,
        interrupted=result.interrupted,
        rejected=rejected,
        by_human=call.by_human,
        exit_code=result.exit_code,
        line=call.line,
        file=file,
    )


def _steps_last_line(steps: list[Step]) -> int:
    last = 0
    for step in steps:
        line = step.last_line or step.line
        if line > last:
            last = line
        for call in step.calls:
            if call.result is not None and call.result.line > last:
                last = call.result.line
    return last
