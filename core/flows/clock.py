"""The fake clock of an orchestrator-backed flow, and the state timeouts it drives.

kitsoki starts every orchestrator-backed flow on a fake clock at Unix 0
(internal/testrunner/flows.go) that only moves on `advance_clock:`. A state's
`timeout: {after, target}` is armed when the state is entered (re-armed on a re-entry, cancelled
when the session leaves it) and fires once the clock passes `after`; the runner then waits, at
most 32 rounds, for the timeouts due to settle. Durations are Go durations or `<n>d`
(internal/app/duration.go).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from core.kitsoki.duration import NANOSECONDS_PER_SECOND, DurationError, parse_go_duration_ns

MAX_ROUNDS = 32
"""kitsoki's advanceAndWait settles at most this many rounds of timers and jobs."""


def parse_duration_ns(text: str) -> int:
    """kitsoki's app.ParseDuration in nanoseconds: a Go duration, or days alone (`11d`, `1.5d`)."""
    text = text.strip()
    if not text:
        return 0
    if text.endswith("d"):
        number = text[:-1]
        for unit in ("ns", "us", "µs", "ms", "s", "m", "h"):
            if unit in number:
                raise DurationError(text, "mixes days with other units; declare days alone (e.g. \"10d\")")
        try:
            days = float(number)
        except ValueError:
            raise DurationError(text, "invalid day count") from None
        return int(days * 24 * 3600 * NANOSECONDS_PER_SECOND)
    return parse_go_duration_ns(text)


def parse_duration(text: str) -> float:
    """The same, in seconds."""
    return parse_duration_ns(text) / NANOSECONDS_PER_SECOND


@dataclass
class Timer:
    state: str
    target: str
    fires_at: int


@dataclass
class FakeClock:
    now: int = 0
    """Nanoseconds since Unix 0."""
    timers: dict[str, Timer] = field(default_factory=dict)

    def arm(self, state: str, target: str, after_ns: int) -> None:
        self.timers[state] = Timer(state, target, self.now + max(after_ns, 0))

    def cancel(self, state: str) -> None:
        self.timers.pop(state, None)

    def advance(self, ns: int) -> None:
        self.now += ns

    def due(self) -> list[Timer]:
        """Timers whose deadline has passed, earliest first."""
        return sorted((t for t in self.timers.values() if t.fires_at <= self.now), key=lambda t: t.fires_at)
