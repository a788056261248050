"""The learning record, schema v1, as session-orchestrator's `/evolve` writes it (reference/evolve-store.md §1).

A record is kept as a plain dict on disk and in memory (unknown fields survive a rewrite untouched);
`LearningRecord` is the pydantic model of the same shape, used for the JSON Schema and documentation.
`validate_learning` is the check every write runs; `normalize` is the tolerant read of legacy dialects.
"""

from __future__ import annotations

import math
import re
from datetime import datetime, timedelta, timezone
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

SCHEMA_VERSION = 1
SCOPES = ("local", "private", "public")

LEARNING_TTL_DAYS: dict[str, int] = {
    "mode-selector-accuracy": 30,
    "fragile-file": 45,
    "effective-sizing": 45,
    "recurring-issue": 45,
    "fragile-pattern": 45,
    "hardware-pattern": 60,
    "domain-regression": 60,
    "stagnation-class-frequency": 60,
    "workflow-pattern": 90,
    "proven-pattern": 90,
    "anti-pattern": 90,
    "autopilot-effectiveness": 90,
    "autonomy-verdict": 90,
    "convention": 90,
    "architecture-pattern": 90,
    "design-pattern": 90,
}
"""TTL in days per type (LEARNING_TYPE_REGISTRY). Any other type, e.g. the skill's `scope-guidance`
and `deviation-pattern` (listed as valid but absent from the registry), gets DEFAULT_TTL_DAYS."""
DEFAULT_TTL_DAYS = 60
MIGRATION_TTL_DAYS = 30
"""A legacy record with no `expires_at` gets created_at + 30 days on migration."""

NEW_CONFIDENCE = 0.5
CONFIRM_STEP = 0.15
CONTRADICT_STEP = 0.2

TYPE_ALIASES = {"gotcha": "anti-pattern", "pattern": "proven-pattern"}
INSIGHT_ALIASES = ("description", "recommendation", "observation", "lesson")
"""Legacy names of `insight`, in precedence order."""
LEGACY_LOCAL_SCOPES = frozenset({"vault-tools", "deep-sessions", "wave-executor", "coordinator"})
REQUIRED = ("id", "type", "subject", "insight", "evidence", "confidence", "source_session",
            "created_at", "expires_at")
_SLUG = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_KEBAB_RUN = re.compile(r"[^a-z0-9]+")


class LearningValidationError(ValueError):
    """A record that may not be written; raised before anything touches the disk."""


class LearningRecord(BaseModel):
    """One learning (schema_version 1). Extra fields are allowed and kept."""

    model_config = ConfigDict(extra="allow")

    id: str = Field(description="UUID v4")
    type: str = Field(description="a LEARNING_TTL_DAYS key (others get the 60-day default)")
    subject: str
    insight: str
    evidence: str | list[Any] = Field(description="a string; legacy records may hold an array")
    confidence: float = Field(ge=0.0, le=1.0)
    source_session: str = Field(min_length=1, description="kebab slug, e.g. main-2026-04-27-1942")
    created_at: str = Field(description="ISO 8601, millisecond precision, Z")
    expires_at: str = Field(description="ISO 8601, millisecond precision, Z")
    schema_version: Literal[0, 1] = 1
    scope: Literal["local", "private", "public"] = "local"
    host_class: str | None = None
    anonymized: bool = False
    anonymization_version: int | None = None
    file_paths: list[str] | None = None
    updated_at: str | None = None
    evidence_sessions: list[str] | None = None
    title: str | None = None


# --- time -------------------------------------------------------------------------------------


def iso(dt: datetime) -> str:
    """`2026-04-27T19:42:00.000Z`: UTC, millisecond precision (what the anchor writes)."""
    dt = dt.astimezone(timezone.utc) if dt.tzinfo else dt.replace(tzinfo=timezone.utc)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"


def parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        dt = datetime.fromisoformat(text)
    except ValueError:
        return None
    return dt if dt.tzinfo else dt.replace(tzinfo=timezone.utc)


def now_utc() -> datetime:
    return datetime.now(timezone.utc)


def ttl_days(type_: str) -> int:
    return LEARNING_TTL_DAYS.get(type_, DEFAULT_TTL_DAYS)


def derive_expires_at(created_at: Any, type_: str, *, now: datetime | None = None) -> str:
    """created_at (or now, when it does not parse) + the type's TTL."""
    base = parse_time(created_at) or (now or now_utc())
    return iso(base + timedelta(days=ttl_days(type_)))


def clamp(value: float) -> float:
    return min(1.0, max(0.0, float(value)))


# --- keys -------------------------------------------------------------------------------------


def kebab(text: str) -> str:
    return _KEBAB_RUN.sub("-", str(text).lower()).strip("-")


def learning_key(record: dict) -> str | None:
    """`<type>/<kebab(title or subject)>`, or None when it cannot be formed."""
    type_ = record.get("type")
    if not isinstance(type_, str) or not type_.strip():
        return None
    title = record.get("title") if isinstance(record.get("title"), str) else ""
    subject = record.get("subject") if isinstance(record.get("subject"), str) else ""
    slug = kebab(title or subject)
    if not slug:
        return None
    return f"{type_.strip()}/{slug}"


# --- validation -------------------------------------------------------------------------------


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def validate_learning(record: Any) -> None:
    """Raise LearningValidationError unless `record` is a valid schema-v1 (or legacy v0) learning."""
    if not isinstance(record, dict):
        raise LearningValidationError(f"a learning must be a JSON object, not {type(record).__name__}")
    missing = [k for k in REQUIRED if k not in record]
    if missing:
        raise LearningValidationError(f"learning {record.get('id')!r} is missing {', '.join(missing)}")
    for key in ("type", "subject", "insight"):
        if not isinstance(record[key], str):
            raise LearningValidationError(f"learning {record['id']!r}: {key} must be a string")
    if not isinstance(record["evidence"], (str, list)):
        raise LearningValidationError(f"learning {record['id']!r}: evidence must be a string")
    conf = record["confidence"]
    if not _number(conf) or not 0.0 <= conf <= 1.0:
        raise LearningValidationError(f"learning {record['id']!r}: confidence must be a number in [0, 1], not {conf!r}")
    session = record["source_session"]
    if not isinstance(session, str) or not _SLUG.match(session) or session == "[object Object]":
        raise LearningValidationError(f"learning {record['id']!r}: source_session must be a non-empty slug, "
                                      f"not {session!r}")
    for key in ("created_at", "expires_at"):
        if parse_time(record[key]) is None:
            raise LearningValidationError(f"learning {record['id']!r}: {key} must be an ISO 8601 time")
    version = record.get("schema_version", 0)
    if isinstance(version, bool) or version not in (0, 1):
        raise LearningValidationError(f"learning {record['id']!r}: schema_version {version!r} is not 0 or 1")
    scope = record.get("scope", "local")
    if scope not in SCOPES:
        raise LearningValidationError(f"learning {record['id']!r}: scope must be one of {', '.join(SCOPES)}")
    if scope == "public":
        if record.get("anonymized") is not True:
            raise LearningValidationError(f"learning {record['id']!r}: a public learning must be anonymized")
        if record.get("host_class") is None:
            raise LearningValidationError(f"learning {record['id']!r}: a public learning needs a host_class")
    host = record.get("host_class")
    if host is not None and not isinstance(host, str):
        raise LearningValidationError(f"learning {record['id']!r}: host_class must be a string or null")
    for key in ("file_paths", "evidence_sessions"):
        if key in record and record[key] is not None and not (
                isinstance(record[key], list) and all(isinstance(v, str) for v in record[key])):
            raise LearningValidationError(f"learning {record['id']!r}: {key} must be a list of strings")
    _json_safe(record, record.get("id"))


def _json_safe(value: Any, rid: Any) -> None:
    """The round-trip check (#662): no NaN/inf and nothing JSON cannot carry."""
    if isinstance(value, float) and not math.isfinite(value):
        raise LearningValidationError(f"learning {rid!r} holds a non-finite number")
    if isinstance(value, dict):
        for k, v in value.items():
            if not isinstance(k, str):
                raise LearningValidationError(f"learning {rid!r} has a non-string key")
            _json_safe(v, rid)
    elif isinstance(value, list):
        for v in value:
            _json_safe(v, rid)
    elif not (value is None or isinstance(value, (str, int, float, bool))):
        raise LearningValidationError(f"learning {rid!r} holds a {type(value).__name__}, which JSON cannot carry")


def validate_stored(record: Any) -> None:
    """The legacy-tolerant check for a record that is already in the store: it must stay a JSON
    object that round-trips. Strict validation is for new records only (GH#69)."""
    if not isinstance(record, dict):
        raise LearningValidationError("a stored learning must be a JSON object")
    _json_safe(record, record.get("id"))


# --- normalization on read --------------------------------------------------------------------


def normalize(record: dict) -> dict:
    """Legacy migration plus dialect normalization (normalizeDialects); returns a new dict."""
    rec = dict(record)
    if rec.get("type") in TYPE_ALIASES:
        rec["type"] = TYPE_ALIASES[rec["type"]]
    if "insight" not in rec:
        for alias in INSIGHT_ALIASES:
            if alias in rec:
                rec["insight"] = rec.pop(alias)
                break
    if "subject" not in rec and "name" in rec:
        rec["subject"] = rec.pop("name")
    if "files" in rec:
        files = rec.pop("files")
        rec.setdefault("file_paths", files)
    if "last_seen" in rec:
        last = rec.pop("last_seen")
        rec.setdefault("updated_at", last)
    if "source_session" not in rec and isinstance(rec.get("sessions"), list) and rec["sessions"]:
        rec["source_session"] = rec["sessions"][0]
    if rec.get("session_id") is not None and rec.get("session_id") == rec.get("source_session"):
        del rec["session_id"]
    if "next_review" in rec and rec["next_review"] is None:
        del rec["next_review"]
    rec.setdefault("evidence", "")
    if rec.get("scope") in LEGACY_LOCAL_SCOPES or "scope" not in rec:
        rec["scope"] = "local"
    rec.setdefault("host_class", None)
    rec.setdefault("anonymized", False)
    if rec.get("anonymized") is True:
        rec.setdefault("anonymization_version", 1)
    else:
        rec.pop("anonymization_version", None)
    if "expires_at" not in rec and parse_time(rec.get("created_at")):
        rec["expires_at"] = iso(parse_time(rec["created_at"]) + timedelta(days=MIGRATION_TTL_DAYS))
    for key in ("created_at", "expires_at", "updated_at"):
        dt = parse_time(rec.get(key))
        if dt is not None:
            rec[key] = iso(dt)
    return rec


def is_archived(record: dict) -> bool:
    return "_archived_at" in record or "_archive_reason" in record
