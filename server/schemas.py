"""Every schema we publish: core's formats plus the sidecar protocol.

`python -m server.schemas` rewrites schemas/ (core's alone: `python -m core.schemas`); a test fails
when a committed file drifts from its model.
"""

from __future__ import annotations

import sys
from pathlib import Path

from core.schemas import MODELS as CORE_MODELS
from core.schemas import SCHEMA_DIR
from core.schemas import write as core_write
from server.protocol import Protocol

MODELS: dict[str, type] = {**CORE_MODELS, "protocol.schema.json": Protocol}


def write(target: Path = SCHEMA_DIR) -> list[Path]:
    return core_write(target, MODELS)


if __name__ == "__main__":
    for path in write(Path(sys.argv[1]) if len(sys.argv) > 1 else SCHEMA_DIR):
        print(path)
