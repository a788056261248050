"""The ids kitsoki generates at random in a flow run, as the built-in runner writes them.

kitsoki's session id is a UUID and a background job's id a ULID, both random per run. The runner
writes fixed ids of the same shapes (so a view wraps them where kitsoki's wraps its own), and a
view assertion whose outcome would change with another id of the same shape is declined
(`id_dependent`), since kitsoki's verdict on it would depend on the draw.
"""

from __future__ import annotations

import re

SESSION_ID = "00000000-0000-4000-8000-000000000000"
_OTHER_SESSION_ID = "9f3c2a1e-7b4d-4e8a-a1c6-5d2f0e9b8c7a"
_JOB_ID = re.compile(r"01\d{24}")
_OTHER_JOB_ID = "01HZX3M9QW7T5VKR2B8NDJ4PYE"


def job_id(number: int) -> str:
    """The id of the flow's `number`-th background job (1-based): ULID-shaped, 26 characters."""
    return f"01{number:024d}"


def with_other_ids(text: str) -> str:
    """`text` with every id this runner generated replaced by another of the same shape."""
    return _JOB_ID.sub(_OTHER_JOB_ID, text.replace(SESSION_ID, _OTHER_SESSION_ID))
