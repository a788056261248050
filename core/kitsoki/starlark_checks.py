"""validateStarlarkEffects (loader.go:2196-2298): a `host.starlark.run` script inside the app root that
exists, with its `.yaml` sidecar; an input is never a bare expression. The sidecar's types are not modelled."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

from core.kitsoki import probed
from core.kitsoki.effect_walk import Issues, as_map, quote, walk_all_effects
from core.kitsoki.parse import LMap
from core.kitsoki.probed import Probes

_BARE_STARLARK_INPUT = re.compile(r"^(world|slots|args|form)\s*[.?\[]")



def starlark_issues(definition: LMap, base_dir: Path | None, out: Issues, probes: Probes | None = None) -> None:
    """Every `host.starlark.run` effect of the folded app; with `probes`, the files looked at are recorded."""
    exists = probes.exists if probes is not None else probed.exists
    isfile = probes.isfile if probes is not None else probed.isfile
    for location, effect in walk_all_effects(as_map(definition.get("states"))):
        starlark_rule(location, effect, base_dir, exists, isfile, out)


def starlark_rule(location: str, effect: LMap, base_dir: Path | None, exists: Callable[[str], bool],
                  isfile: Callable[[str], bool], out: Issues) -> None:
    """validateStarlarkEffects for one effect; `exists` / `isfile` answer for the script and its sidecar."""
    if effect.get("invoke") != "host.starlark.run":
        return
    arguments = as_map(effect.get("with"))
    script = arguments.get("script")
    script = script.strip() if isinstance(script, str) else ""
    if not script:
        out.add(effect.at, f"{location}: host.starlark.run requires a non-empty with.script")
        return
    if "{{" in script:
        return
    resolved = script
    if base_dir is not None and not os.path.isabs(script):
        resolved = os.path.join(base_dir, script)
    if base_dir is not None:
        relative = os.path.relpath(os.path.normpath(resolved), base_dir)
        if relative.startswith(".."):
            out.add(arguments.value_at("script"), f"{location}: host.starlark.run script {quote(script)} resolves "
                                                  "outside the app root")
            return
    if not exists(resolved):
        out.add(arguments.value_at("script"), f"{location}: host.starlark.run script {quote(script)} not found "
                                              f"(resolved to {quote(resolved)})")
        return
    sidecar = resolved + ".yaml"
    if not isfile(sidecar):
        out.add(arguments.value_at("script"), f"{location}: host.starlark.run script {quote(script)} has no sidecar "
                                              f"(expected {quote(sidecar)}): open {sidecar}: no such file or directory")
        return
    inputs = as_map(arguments.get("inputs"))
    for name in inputs:
        value = inputs[name]
        if isinstance(value, str) and "{{" not in value and "{%" not in value and \
                _BARE_STARLARK_INPUT.match(value.strip()):
            out.add(inputs.value_at(name),
                    f"{location}: host.starlark.run input {quote(name)} is a bare expression {quote(value)} — it reaches "
                    "the script as that literal string, not its value. Template it: "
                    f"{quote('{{ ' + value.strip() + ' }}')} (a sole {{{{ }}}} preserves the typed value).")
