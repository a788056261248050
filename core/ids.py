"""Recipe ids: one fixed shape, checked wherever an id is read from a stored file.

A recipe id is the first 16 hex digits of a sha256 (core.mining.recipes.recipe_id). Ids are read
back from files anyone can plant (`recipes.json`, the trace's `recipe_id`, a journal, a staged
`proposal.json`) and become folder and file names (`.artifacts/mining/<id>/`, `journal/<id>.json`),
so an id is accepted only in exactly that shape: `../../stories/x`, `/etc`, `..` or `.git` can
never reach a path. `require_recipe_id` is called at every place an id becomes a path.
"""

from __future__ import annotations

import re

RECIPE_ID_PATTERN = r"^[0-9a-f]{16}$"
_RECIPE_ID = re.compile(r"[0-9a-f]{16}")


class BadRecipeId(ValueError):
    """A stored or given id that is not a recipe id; nothing was done with it."""


def is_recipe_id(value: object) -> bool:
    return type(value) is str and _RECIPE_ID.fullmatch(value) is not None


def require_recipe_id(value: object, where: str = "") -> str:
    """`value` when it is a recipe id (16 lowercase hex digits), else BadRecipeId naming `where`."""
    if is_recipe_id(value):
        return value  # type: ignore[return-value]
    shown = repr(value) if not isinstance(value, str) or len(value) <= 80 else repr(value[:80] + "...")
    prefix = f"{where}: " if where else ""
    raise BadRecipeId(f"{prefix}recipe id {shown} is not a recipe id (16 lowercase hex digits); "
                      "refusing to use it as a file name")
