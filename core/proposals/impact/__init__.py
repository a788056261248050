"""Impact before accept: what a draft would have done to this project's past prompts and fixtures.

For every proposal the router is replayed, before and after the draft (the live inventory against
the staged one), over three kinds of input:

- this workspace's own mined prompts (people's asks, not programs', deduplicated on the ask as the
  miner normalized and redacted it, with how often each was asked and the session it came from);
- every flow fixture's `input:` line of the apps whose routing changes (file:line);
- the examples and synonyms of every other intent of those apps.

What the draft **gains** are inputs that did not route to the intents it adds phrasings to and now do;
what it **moves** are inputs that routed to another intent (or to nothing: kitsoki's free-form
fallback) and now route elsewhere. A move is a route someone relied on changing under them, so a
draft that moves routes is labelled and ranked below those that do not, and the drafter first tries a
narrower phrasing (one of the ask's own phrasings that says more) that gains without moving.

A change that moves no phrase (a world key, a binding, a decider) reports who reads what it changes
instead: the states and flow fixtures that read the world key, invoke the interface or rest in the
state, with file:line.

Replay is exact and incremental: an input whose stems do not hold every stem of some phrase the draft
adds or removes is routed by the same entries before and after (kitsoki's stem-bag and exact tiers
only consider entries whose stems the input holds), so only the inputs that could change are routed
again; the corpus (prompts, fixtures) is read once per file version and kept in memory.

This package: the record every proposal carries (here), the corpus replayed (corpus.py), the replay
(replay.py), the readers of what a change sets (readers.py), and the proposer's one call (assess.py).
The replay's machinery (inventory, router) is imported by the functions that replay: `Impact` is a
field of every proposal, and reading a staged proposal must not load the router.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

FREE_FORM = "free-form"
"""Where an input routed to no intent goes: kitsoki hands it to the agent as a free-form ask."""
ROUTED = 0.65
"""A verdict at or above this confidence is a route (kitsoki's partial-template band and up)."""
MAX_LISTED = 50
"""Gains, moves and readers listed per card (the counts cover all of them)."""
NARROWER_TRIES = 3


class Gain(BaseModel, defer_build=True):
    text: str
    count: int
    source: str = ""
    """Where the first instance came from: `session <id> <file>:<line>`, `fixture <file>:<line>`, `example of ...`."""
    to: str = ""
    """`story:intent` it now routes to."""


class Move(BaseModel, defer_build=True):
    model_config = ConfigDict(populate_by_name=True, serialize_by_alias=True)

    text: str
    from_: str = Field(alias="from")
    """`story:intent` it routes to today, or `free-form`."""
    to: str
    source: str
    count: int = 1


class Reader(BaseModel, defer_build=True):
    """A state or flow fixture that reads what a rung-1 (or decider) change sets."""

    kind: Literal["state", "flow"]
    where: str
    """file:line."""
    what: str
    """The state's path, or what the fixture does there."""


class Impact(BaseModel, defer_build=True):
    replayed: int = 0
    """Distinct inputs replayed through the router (prompts, fixture inputs, other intents' phrases)."""
    prompts: int = 0
    """How many past prompts (with repeats) those inputs stand for."""
    gained: list[Gain] = Field(default_factory=list)
    moved: list[Move] = Field(default_factory=list)
    reads: list[Reader] = Field(default_factory=list)
    """Who reads a world key / invokes an interface / rests in a state the change sets."""
    narrower: list[str] = Field(default_factory=list)
    """What the drafter tried before this draft, and why it did not keep it."""
    note: str = ""

    @property
    def moves_routes(self) -> bool:
        return bool(self.moved)

    def gained_prompts(self) -> int:
        return sum(g.count for g in self.gained if g.source.startswith("session "))

    def headline(self) -> str:
        """One line for a card: what accepting it would have done."""
        if self.note and not self.replayed and not self.reads:
            return self.note
        parts = []
        if self.replayed:
            past = self.gained_prompts()
            parts.append(f"replayed {self.replayed} inputs: gains {len(self.gained)}"
                         + (f" ({past} past prompts)" if past else ""))
            parts.append(f"MOVES {len(self.moved)} ROUTE" + ("" if len(self.moved) == 1 else "S") if self.moved
                         else "moves no route")
        if self.reads:
            parts.append(f"read by {len(self.reads)} " + ("place" if len(self.reads) == 1 else "places"))
        elif self.note:
            parts.append(self.note)
        return "; ".join(parts)

    def says(self) -> str:
        """A sentence or two for the hover and the confirmation asked before an accept."""
        parts = []
        if self.moved:
            first = self.moved[0]
            more = f" (and {len(self.moved) - 1} more)" if len(self.moved) > 1 else ""
            parts.append(f"Moves {len(self.moved)} route{'' if len(self.moved) == 1 else 's'}: \"{first.text}\" "
                         f"({first.source}) from {first.from_} to {first.to}{more}.")
        if self.gained:
            past = self.gained_prompts()
            shown = "; ".join(f'"{g.text}" ×{g.count}' for g in self.gained[:3])
            parts.append(f"Gains {len(self.gained)} input{'' if len(self.gained) == 1 else 's'}"
                         + (f", {past} past prompt{'' if past == 1 else 's'}" if past else "") + f" ({shown}).")
        if self.replayed:
            parts.append(f"Replayed {self.replayed} inputs" + ("" if self.moved else "; no route moves") + ".")
        if self.reads:
            shown = "; ".join(f"{r.kind} {r.what} ({r.where})" for r in self.reads[:3])
            more = f" and {len(self.reads) - 3} more" if len(self.reads) > 3 else ""
            parts.append(f"Read by {shown}{more}.")
        if self.narrower and self.moved:
            parts.append("Tried first: " + "; ".join(self.narrower) + ".")
        if not parts and self.note:
            parts.append(self.note[0].upper() + self.note[1:] + ".")
        return " ".join(parts)

    def lines(self) -> list[str]:
        """The impact as text lines, for the CLI and the card's markdown."""
        out = [f"impact: {self.headline()}"]
        for gain in self.gained[:8]:
            out.append(f'  gains "{gain.text}" x{gain.count} -> {gain.to} ({gain.source})')
        for move in self.moved[:8]:
            out.append(f'  MOVES "{move.text}" from {move.from_} to {move.to} ({move.source})')
        for reader in self.reads[:8]:
            out.append(f"  read by {reader.kind} {reader.what} ({reader.where})")
        for tried in self.narrower:
            out.append(f"  tried first: {tried}")
        return out

    def markdown(self) -> str:
        head = "**Impact**" + (" (moves routes)" if self.moved else "") + f": {self.headline()}."
        rows = []
        for gain in self.gained[:5]:
            rows.append(f'- gains "{gain.text}" ×{gain.count} → {gain.to} ({gain.source})')
        for move in self.moved[:5]:
            rows.append(f'- **moves** "{move.text}" from {move.from_} to {move.to} ({move.source})')
        for reader in self.reads[:5]:
            rows.append(f"- read by {reader.kind} {reader.what} ({reader.where})")
        for tried in self.narrower:
            rows.append(f"- tried first: {tried}")
        return "\n\n" + head + ("\n\n" + "\n".join(rows) if rows else "")


__all__ = ["FREE_FORM", "MAX_LISTED", "NARROWER_TRIES", "ROUTED", "Gain", "Impact", "Move", "Reader"]
