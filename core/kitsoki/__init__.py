"""kitsoki workspace files: `.kitsoki.yaml` loading and validation (story loading, inventory and
comment-preserving edits live beside it)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from core.kitsoki.config import (
        CONFIG_FILE,
        DEV_STORY,
        DEV_STORY_HOST_INTERFACES,
        DEV_STORY_WORLD_KEYS,
        LOCAL_CONFIG_FILE,
        ConfigError,
        ConfigIssue,
        KitsokiConfig,
        MiningConfig,
        RootConfig,
        RootOverrides,
        find_workspace,
        load_config,
    )
    from core.kitsoki.duration import DurationError, parse_go_duration

# Imported on first use (PEP 562): importing any core.kitsoki module runs this package first, and
# most of them (the parse memo, the checks memo) need nothing of the config's models.
_WHERE = {"DurationError": "duration", "parse_go_duration": "duration"}


def __getattr__(name: str):
    if name not in __all__:
        raise AttributeError(f"module 'core.kitsoki' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"core.kitsoki.{_WHERE.get(name, 'config')}"), name)
    globals()[name] = value
    return value


__all__ = [
    "CONFIG_FILE",
    "DEV_STORY",
    "DEV_STORY_HOST_INTERFACES",
    "DEV_STORY_WORLD_KEYS",
    "LOCAL_CONFIG_FILE",
    "ConfigError",
    "ConfigIssue",
    "DurationError",
    "KitsokiConfig",
    "MiningConfig",
    "RootConfig",
    "RootOverrides",
    "find_workspace",
    "load_config",
    "parse_go_duration",
]
