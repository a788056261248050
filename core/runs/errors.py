"""Errors of the runs operations: each says what is wrong and what a person can do about it."""

from __future__ import annotations


class RunError(RuntimeError):
    """An operation was refused or failed; nothing beyond what the message says was changed."""

    kind = "run-error"

    def __init__(self, message: str, **details) -> None:
        super().__init__(message)
        self.details = details

    def to_json(self) -> dict:
        return {"error": self.kind, "message": str(self), **self.details}


class BoundsError(RunError):
    kind = "bounds"


class LockBusy(RunError):
    kind = "lock-busy"


class LockLeft(RunError):
    kind = "lock-left"


class NotFound(RunError):
    kind = "not-found"


class Ambiguous(RunError):
    kind = "ambiguous"


class StaleSelection(RunError):
    kind = "stale-selection"


class Refused(RunError):
    kind = "refused"


class BrokenRun(RunError):
    kind = "broken-run"
