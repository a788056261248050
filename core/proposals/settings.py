"""Our own settings, in a `miner:` block of `.kitsoki.yaml` (kitsoki ignores keys it does not know):

```yaml
miner:
  gate_scope: importers     # own | importers: also gate the stories importing a changed one
  ungated: hold             # hold | allow: a change no flow exercises is held, or kept after
                            #   the structural checks (the decision records gated: false)
  outcome_window: 30d       # a kept change unused this long is offered for revert (Go duration or <n>d)
  flow_gate:                # how an accept is gated (default: auto)
    kind: auto              # auto | kitsoki | command | builtin
    command: ["make", "test"]
    flows: "flows/*.yaml"   # each app's fixtures, relative to its folder; or a mapping
                            #   {stories/bugfix: "flows/smoke-*.yaml", ".": "flows/*.yaml"} (".": root flows)
    skip: [repo-bakeoff, bench-bugfix]   # stories never gated (kitsoki's own CI quarantine)
    fail_fast: false        # stop at the first red app
    jobs: 2                 # kitsoki calls at once (default and at most: the cores)
    kitsoki: kitsoki        # the binary; kitsoki_repo: the checkout for --kitsoki-repo
    timeout: 5m             # Go duration, per app
  drafter:                  # optional agent drafter instead of the built-in one
    command: ["claude", "-p", "--output-format", "json"]
    mode: record            # record | replay | live
    cassettes: .artifacts/mining/cassettes
    timeout: 2m
```
A bad value is an error naming `miner.<key>` and the file, never a silent default.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from core.apply.gates import GateSettings
from core.kitsoki.config import CONFIG_FILE, KitsokiConfig
from core.kitsoki.duration import DurationError, parse_go_duration


class SettingsError(ValueError):
    pass


class DrafterSettings(BaseModel, defer_build=True):
    model_config = ConfigDict(extra="forbid")

    command: list[Annotated[str, Field(min_length=1)]] = Field(min_length=1)
    mode: Literal["record", "replay", "live"] = "record"
    cassettes: str = Field(default=".artifacts/mining/cassettes", min_length=1)
    timeout_s: float = Field(default=120.0, gt=0, allow_inf_nan=False)


MINER_KEYS = ("flow_gate", "drafter", "gate_scope", "ungated", "outcome_window")
MINER_CHOICES = {"gate_scope": ("own", "importers"), "ungated": ("hold", "allow")}
"""The scalar keys of `miner:` and their values."""


def _block(config: KitsokiConfig, key: str) -> dict[str, Any]:
    miner = config.extra.get("miner")
    if miner is None:
        return {}
    if not isinstance(miner, dict):
        raise SettingsError(f"{_file(config)}: miner: expected a mapping")
    unknown = sorted(str(k) for k in miner if k not in MINER_KEYS)
    if unknown:
        raise SettingsError(f"{_file(config)}: " + "; ".join(
            f"miner.{k}: unknown key (known: {', '.join(MINER_KEYS)})" for k in unknown))
    block = miner.get(key)
    if block is None:
        return {}
    if not isinstance(block, dict):
        raise SettingsError(f"{_file(config)}: miner.{key}: expected a mapping")
    block = dict(block)
    if "timeout_s" in block:  # the YAML key is `timeout`; the other spelling is not a second way in
        raise SettingsError(f"{_file(config)}: miner.{key}.timeout_s: unknown key (the timeout is `timeout`, "
                            "a Go duration such as 5m)")
    if "timeout" in block:
        raw = block.pop("timeout")
        try:
            block["timeout_s"] = parse_go_duration(raw)
        except DurationError as exc:
            raise SettingsError(f"{_file(config)}: miner.{key}.timeout: {exc}") from None
        if not block["timeout_s"] > 0:
            raise SettingsError(f"{_file(config)}: miner.{key}.timeout: {raw} is not a positive duration "
                                "(a gate or drafter given no time fails every time)")
    return block


def _file(config: KitsokiConfig) -> str:
    return str(config.source_files[0]) if config.source_files else CONFIG_FILE


def _validated(model: type[BaseModel], config: KitsokiConfig, key: str, raw: dict[str, Any]):
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(_problem(key, error) for error in exc.errors())
        raise SettingsError(f"{_file(config)}: {problems}") from None


def _problem(key: str, error) -> str:
    loc = ".".join(str(part) for part in error["loc"])
    where = f"miner.{key}.{loc}" if loc else f"miner.{key}"
    if error["type"] == "extra_forbidden":
        return f"{where}: unknown key"
    message = error["msg"].removeprefix("Value error, ")
    return f"{where}: {message}"


def _choice(config: KitsokiConfig, key: str) -> str | None:
    _block(config, "flow_gate")  # the miner: block's own checks (a mapping, known keys)
    miner = config.extra.get("miner") or {}
    value = miner.get(key)
    if value is None:
        return None
    if value not in MINER_CHOICES[key]:
        raise SettingsError(f"{_file(config)}: miner.{key}: {value!r} is not one of {', '.join(MINER_CHOICES[key])}")
    return value


def gate_settings(config: KitsokiConfig) -> GateSettings:
    raw = _block(config, "flow_gate")
    for key, field in (("gate_scope", "scope"), ("ungated", "ungated")):
        if field in raw:  # set at the top of miner:, not inside flow_gate
            raise SettingsError(f"{_file(config)}: miner.flow_gate.{field}: unknown key (it is miner.{key})")
        value = _choice(config, key)
        if value is not None:
            raw[field] = value
    return _validated(GateSettings, config, "flow_gate", raw)


def drafter_settings(config: KitsokiConfig) -> DrafterSettings | None:
    raw = _block(config, "drafter")
    return _validated(DrafterSettings, config, "drafter", raw) if raw else None


def configured_drafter(workspace: Path, config: KitsokiConfig):
    """The agent drafter the config asks for, or None for the built-in one."""
    settings = drafter_settings(config)
    if settings is None:
        return None
    from core.proposals.agent import AgentDrafter

    cassettes = Path(settings.cassettes)
    return AgentDrafter(settings.command, cassettes if cassettes.is_absolute() else Path(workspace) / cassettes,
                        mode=settings.mode, timeout_s=settings.timeout_s)


def outcome_window(config: KitsokiConfig):
    """`miner.outcome_window` as a timedelta (None: not set); `30d` or a Go duration such as `720h`."""
    from datetime import timedelta

    _block(config, "flow_gate")  # the miner: block's own checks (a mapping, known keys)
    raw = (config.extra.get("miner") or {}).get("outcome_window")
    if raw is None:
        return None
    text = str(raw).strip()
    try:
        if text.endswith("d") and text[:-1].isdigit():
            seconds = int(text[:-1]) * 86400.0
        else:
            seconds = parse_go_duration(text)
    except DurationError as exc:
        raise SettingsError(f"{_file(config)}: miner.outcome_window: {exc}") from None
    if not seconds > 0:
        raise SettingsError(f"{_file(config)}: miner.outcome_window: {raw} is not a positive duration")
    return timedelta(seconds=seconds)
