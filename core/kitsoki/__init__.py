"""kitsoki workspace files: `.kitsoki.yaml` loading and validation (story loading, inventory and
comment-preserving edits live beside it)."""

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
