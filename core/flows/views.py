"""Views: what `expect_view_matches` reads (kitsoki's RenderState of the landed state)."""

from __future__ import annotations

from typing import Any

from core.flows.app import AppModel
from core.flows.machine import Unsupported


def view_matches(app: AppModel, state: str, world: dict[str, Any], pattern: str) -> list[str]:
    raise Unsupported("expect_view_matches (kitsoki's view rendering)")
