"""`harness_profiles:`, `default_profile:` and `intercept:` checked as kitsoki checks them.

kitsoki (webconfig.resolveHarnessProfiles / resolveIntercept), on the merged config:
- a profile's backend is "", claude, copilot or codex; its `model` is in its `models` catalog
  when both are set; `effort` and every `efforts` entry is low, medium, high, xhigh or max, and
  `effort` is in `efforts` when both are set; `quota.window` / `quota.lease_timeout` are Go
  durations; quota counts are not negative;
- `${VAR}` in a profile's env must be set: for the `default_profile` a missing variable is an
  error, any other such profile is dropped (with a warning);
- `default_profile` names a declared (and kept) profile;
- an enabled `intercept` names an `app` and a `room`, and its `confidence_bar` (0 means 0.90) is
  in (0, 1].
"""

from __future__ import annotations

import os
import re
from typing import Any

from core.kitsoki.duration import DurationError, parse_go_duration_ns
from core.kitsoki.yamlread import _Checker, _Value

BACKENDS = ("", "claude", "copilot", "codex")
EFFORTS = ("low", "medium", "high", "xhigh", "max")
PROFILE_KEYS = frozenset({"backend", "model", "models", "models_endpoint", "effort", "efforts", "env", "quota", "plugin"})
QUOTA_KEYS = frozenset({"window", "tokens_per_window", "max_concurrent", "reserve_tokens", "state_path", "lease_timeout"})
INTERCEPT_KEYS = frozenset({"enabled", "app", "room", "confidence_bar", "escape_prefix"})
_VAR = re.compile(r"\$\{([^}]*)\}")


def missing_env(text: str, env: dict[str, str]) -> str | None:
    """The first `${VAR}` in `text` that `env` does not set (kitsoki's expandEnvVar)."""
    for match in _VAR.finditer(text):
        if match.group(1) not in env:
            return match.group(1)
    return None


def check_profiles(profiles: _Value | None, default: str | None, default_at: _Value | None, checker: _Checker,
                   env: dict[str, str] | None = None) -> list[str]:
    """The names of the usable profiles; problems are reported on `checker`."""
    env = dict(os.environ) if env is None else env
    usable: list[str] = []
    for name, profile in checker.mapping(profiles, "harness_profiles").items():
        key = f"harness_profiles.{name}"
        spec = checker.mapping(profile, key)
        checker.unknown_keys(spec, key, PROFILE_KEYS)
        backend = checker.string(spec.get("backend"), f"{key}.backend", "")
        if backend not in BACKENDS:
            checker.report(spec["backend"], f"{key}.backend",
                           f'harness_profiles.{name}: backend "{backend}" is invalid (want claude|copilot|codex)')
        dropped = False
        for var, value in checker.mapping(spec.get("env"), f"{key}.env").items():
            missing = missing_env(checker.string(value, f"{key}.env.{var}", ""), env)
            if missing is None:
                continue
            if name == default:
                checker.report(value, f"{key}.env.{var}",
                               f"harness_profiles.{name}: env var {missing} referenced in env.{var} not set")
            else:
                checker.warn(value, f"{key}.env.{var}", f"profile {name} is dropped: env var {missing} is not set "
                                                         "(kitsoki drops a profile it cannot resolve unless it is the "
                                                         "default_profile)")
                dropped = True
            break
        if dropped:
            continue
        model = checker.string(spec.get("model"), f"{key}.model", "")
        models = checker.strings(spec.get("models"), f"{key}.models", [])
        if models and model and model not in models:
            checker.report(spec["model"], f"{key}.model", f'harness_profiles.{name}: model "{model}" is not in its '
                                                          "models catalog")
        efforts = checker.strings(spec.get("efforts"), f"{key}.efforts", [])
        for index, effort in enumerate(efforts):
            if effort not in EFFORTS:
                checker.report(spec["efforts"].data[index], f"{key}.efforts[{index}]",
                               f'harness_profiles.{name}: effort "{effort}" is invalid (valid: {", ".join(EFFORTS)})')
        effort = checker.string(spec.get("effort"), f"{key}.effort", "")
        if effort:
            if effort not in EFFORTS:
                checker.report(spec["effort"], f"{key}.effort",
                               f'harness_profiles.{name}: effort "{effort}" is invalid (valid: {", ".join(EFFORTS)})')
            elif efforts and effort not in efforts:
                checker.report(spec["effort"], f"{key}.effort",
                               f'harness_profiles.{name}: effort "{effort}" is not in its efforts catalog')
        quota = checker.mapping(spec.get("quota"), f"{key}.quota")
        checker.unknown_keys(quota, f"{key}.quota", QUOTA_KEYS)
        for field in ("window", "lease_timeout"):
            text = checker.string(quota.get(field), f"{key}.quota.{field}", "")
            if text:
                try:
                    parse_go_duration_ns(text)
                except DurationError as exc:
                    checker.report(quota[field], f"{key}.quota.{field}",
                                   f'harness_profiles.{name}: quota.{field} "{text}" is not a valid duration: {exc}')
        for field in ("tokens_per_window", "max_concurrent", "reserve_tokens"):
            count = checker.integer(quota.get(field), f"{key}.quota.{field}", 0)
            if count is not None and count < 0:
                checker.report(quota[field], f"{key}.quota.{field}",
                               f"harness_profiles.{name}: quota.{field} must not be negative")
        checker.string(spec.get("plugin"), f"{key}.plugin", "")
        checker.string(spec.get("models_endpoint"), f"{key}.models_endpoint", "")
        usable.append(name)
    if default and default not in usable and default_at is not None:
        listed = ", ".join(sorted(usable)) if usable else "none are declared under harness_profiles"
        checker.report(default_at, "default_profile", f'default_profile "{default}" names no declared harness profile '
                                                      f"({listed})")
    return usable


def check_intercept(value: _Value | None, checker: _Checker) -> dict[str, Any] | None:
    """The intercept binding with kitsoki's default bar applied, or None when absent."""
    if value is None or value.is_null:
        return None
    block = checker.mapping(value, "intercept")
    checker.unknown_keys(block, "intercept", INTERCEPT_KEYS)
    enabled = checker.boolean(block.get("enabled"), "intercept.enabled", False)
    app = checker.string(block.get("app"), "intercept.app", "")
    room = checker.string(block.get("room"), "intercept.room", "")
    bar = checker.number(block.get("confidence_bar"), "intercept.confidence_bar", 0.0)
    prefix = checker.string(block.get("escape_prefix"), "intercept.escape_prefix", "")
    if enabled:
        if not app:
            checker.report(value, "intercept.app", "intercept.app is required when intercept.enabled is true")
        elif not room:
            checker.report(value, "intercept.room", "intercept.room is required when intercept.enabled is true")
        else:
            if bar == 0:
                bar = 0.90
            if not 0 < bar <= 1:
                checker.report(block.get("confidence_bar", value), "intercept.confidence_bar",
                               f"intercept.confidence_bar {bar:g} is invalid (want a value in (0, 1])")
    return {"enabled": enabled, "app": app, "room": room, "confidence_bar": bar, "escape_prefix": prefix}
