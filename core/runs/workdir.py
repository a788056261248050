"""The workdir is chosen explicitly; the last workdir of a plan-ready run is only suggested.

The suggestion lives in a preference file. A missing or malformed preference gives a warning and
the default suggestion, never a failure, and the file is left as it is (no silent repair).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import orjson

from core.runs.files import ensure_dir, write_json



def prefs_path(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    base = env.get("XDG_CONFIG_HOME") or os.path.join(env.get("HOME", "~"), ".config")
    return Path(base).expanduser() / "kitsoki-miner" / "runs.json"


def suggest_workdir(prefs: Path | None = None, env: Mapping[str, str] | None = None) -> dict:
    """{"suggestion": absolute path, "source": "preference"|"default", "warning": str|None}."""
    env = os.environ if env is None else env
    prefs = prefs or prefs_path(env)
    default = os.path.normpath(os.path.join(env.get("HOME", os.path.expanduser("~")), "llm_session_analyze"))
    if not prefs.exists():
        return {"suggestion": default, "source": "default", "warning": f"no workdir preference yet ({prefs})"}
    try:
        data = orjson.loads(prefs.read_bytes())
        last = data["last_workdir"]
        if not isinstance(last, str) or not os.path.isabs(last) or os.path.normpath(last) != last:
            raise ValueError("last_workdir is not an absolute normalized path")
    except (OSError, orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        return {"suggestion": default, "source": "default",
                "warning": f"the workdir preference {prefs} is malformed ({exc}); left as it is"}
    return {"suggestion": last, "source": "preference", "warning": None}


def remember_workdir(workdir: Path, prefs: Path | None = None) -> None:
    prefs = prefs or prefs_path()
    ensure_dir(prefs.parent)
    write_json(prefs.parent, prefs.name, {"last_workdir": str(workdir)})
