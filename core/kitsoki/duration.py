"""Go's `time.ParseDuration`, ported rule for rule.

kitsoki reads `mining.cadence` with Go's parser, so a value we accept must be one Go accepts and
vice versa: `1.s` and `.5s` are valid, a bare `1` is not (only `0` may omit its unit), and a
value is a signed sequence of decimal numbers each followed by a unit.
"""

from __future__ import annotations

NANOSECONDS_PER_SECOND = 1_000_000_000

# Same table as Go's unitMap; both micro signs are accepted (U+00B5 and U+03BC).
_UNIT_NANOSECONDS: dict[str, int] = {
    "ns": 1,
    "us": 1_000,
    "\u00b5s": 1_000,
    "\u03bcs": 1_000,
    "ms": 1_000_000,
    "s": NANOSECONDS_PER_SECOND,
    "m": 60 * NANOSECONDS_PER_SECOND,
    "h": 3600 * NANOSECONDS_PER_SECOND,
}

_LIMIT = 1 << 63  # Go's Duration is an int64 of nanoseconds
EXAMPLES = "e.g. 30s, 1m30s, 250ms"
UNITS = "ns, us, µs, ms, s, m, h"
_OUT_OF_RANGE = "out of range (a Go duration is at most about 292 years)"


class DurationError(ValueError):
    """A string Go's time.ParseDuration would refuse; `reason` says why without repeating it."""

    def __init__(self, text: str, reason: str) -> None:
        self.text = text
        self.reason = reason
        super().__init__(f"{_go_quote(text)} is not a Go duration: {reason}")


def _is_digit(char: str) -> bool:
    # str.isdigit() would also accept non-ASCII digits, which Go rejects.
    return "0" <= char <= "9"


def parse_go_duration_ns(text: str) -> int:
    """Parse a Go duration string into integer nanoseconds; raise DurationError where Go errs."""
    if not isinstance(text, str):
        raise DurationError(str(text), f"expected a string like {EXAMPLES}, got {type(text).__name__}")
    rest = text
    negative = False
    if rest and rest[0] in "+-":
        negative = rest[0] == "-"
        rest = rest[1:]
    if rest == "0":
        return 0
    if rest == "":
        raise DurationError(text, f"it is empty ({EXAMPLES})")

    total = 0
    while rest:
        if not (rest[0] == "." or _is_digit(rest[0])):
            raise DurationError(text, f"expected a number at {_go_quote(rest)} ({EXAMPLES})")

        index = 0
        whole = 0
        while index < len(rest) and _is_digit(rest[index]):
            whole = whole * 10 + int(rest[index])
            if whole > _LIMIT:
                raise DurationError(text, _OUT_OF_RANGE)
            index += 1
        has_whole_digits = index > 0
        rest = rest[index:]

        fraction, scale, has_fraction_digits = 0, 1.0, False
        if rest.startswith("."):
            rest = rest[1:]
            index, overflowed = 0, False
            while index < len(rest) and _is_digit(rest[index]):
                # Like Go's leadingFraction: past int64 precision, further digits are ignored.
                if not overflowed:
                    candidate = fraction * 10 + int(rest[index])
                    if fraction > (_LIMIT - 1) // 10 or candidate > _LIMIT:
                        overflowed = True
                    else:
                        fraction, scale = candidate, scale * 10
                index += 1
            has_fraction_digits = index > 0
            rest = rest[index:]
        if not has_whole_digits and not has_fraction_digits:
            raise DurationError(text, f"a number needs at least one digit ({EXAMPLES})")

        index = 0
        while index < len(rest) and not (rest[index] == "." or _is_digit(rest[index])):
            index += 1
        if index == 0:
            raise DurationError(text, f"a number has no unit (units: {UNITS}; {EXAMPLES})")
        unit, rest = rest[:index], rest[index:]
        unit_ns = _UNIT_NANOSECONDS.get(unit)
        if unit_ns is None:
            raise DurationError(text, f"unknown unit {_go_quote(unit)} (units: {UNITS}; {EXAMPLES})")

        if whole > _LIMIT // unit_ns:
            raise DurationError(text, _OUT_OF_RANGE)
        value = whole * unit_ns
        if fraction > 0:
            # Go computes the fractional part in float64 and truncates; we do the same so that
            # e.g. 1.0000000001h lands on the very nanosecond Go's parser gives.
            value += int(float(fraction) * (float(unit_ns) / scale))
            if value > _LIMIT:
                raise DurationError(text, _OUT_OF_RANGE)
        total += value
        if total > _LIMIT:
            raise DurationError(text, _OUT_OF_RANGE)

    if negative:
        return -total
    if total > _LIMIT - 1:
        raise DurationError(text, _OUT_OF_RANGE)
    return total


def parse_go_duration(text: str) -> float:
    """Parse a Go duration string (`1h30m`, `1.5h`, `300ms`, `-1s`, `0`) into seconds."""
    return parse_go_duration_ns(text) / NANOSECONDS_PER_SECOND


def _go_quote(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'
