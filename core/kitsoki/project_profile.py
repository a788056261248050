"""`.kitsoki/project-profile.yaml`: what kitsoki's onboarding writes, folded into the root's overrides.

kitsoki (webconfig.resolveProjectProfile) reads the profile named by `project_profile` (default
`.kitsoki/project-profile.yaml` beside `.kitsoki.yaml`; a missing file is no profile), refuses a
`schema:` other than project-profile/v1, and turns it into root overrides: `kitsoki.instance.
bindings` as bindings; world `workdir` and `repo_root` (repo.root, else "."), `judge_mode`
(kitsoki.judge_mode), the docs paths of dev_story_profile.docs, `build_cmd` / `test_cmd`
(dev_story_profile.bugfix, else commands.build / commands.test). `root.overrides` in the config win
over the profile key by key, so a project overrides one value without restating the profile.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from core.kitsoki.yamlread import ConfigIssue, _Checker, _Value

PROFILE_SCHEMA = "project-profile/v1"
_DOCS_KEYS = ("publish_durable_path", "prd_doc_filename", "design_template_dir", "design_durable_path",
              "design_doc_filename", "design_ticket_dir", "ticket_repo")


def _child(value: _Value | None, *keys: str) -> _Value | None:
    for key in keys:
        if value is None or value.kind != "map":
            return None
        value = value.data.get(key)
    return value


def profile_overrides(document: _Value, file: str, checker: _Checker) -> tuple[dict[str, str], dict[str, Any]] | None:
    """(bindings, world) the profile sets, or None when it sets nothing; problems go to `checker`."""
    if document.kind != "map":
        checker.report(document, "", f"a project profile is a mapping (schema: {PROFILE_SCHEMA}, ...)")
        return None
    schema = checker.string(_child(document, "schema"), "schema", "")
    if schema and schema != PROFILE_SCHEMA:
        checker.report(document.data["schema"], "schema",
                       f'project_profile: {file} has schema "{schema}", want {PROFILE_SCHEMA}')
        return None
    bindings = {}
    for iface, handler in checker.mapping(_child(document, "kitsoki", "instance", "bindings"),
                                          "kitsoki.instance.bindings").items():
        bindings[iface] = checker.string(handler, f"kitsoki.instance.bindings.{iface}", "")
    world: dict[str, Any] = {}
    root = checker.string(_child(document, "repo", "root"), "repo.root", "").strip()
    world["workdir"] = world["repo_root"] = root or "."
    judge = checker.string(_child(document, "kitsoki", "judge_mode"), "kitsoki.judge_mode", "")
    if judge:
        world["judge_mode"] = judge
    for key in _DOCS_KEYS:
        value = checker.string(_child(document, "dev_story_profile", "docs", key), f"dev_story_profile.docs.{key}", "")
        if value:
            world[key] = value
    commands = checker.mapping(_child(document, "commands"), "commands")
    for key, command in (("build_cmd", "build"), ("test_cmd", "test")):
        value = checker.string(_child(document, "dev_story_profile", "bugfix", key), f"dev_story_profile.bugfix.{key}", "")
        value = value or checker.string(commands.get(command), f"commands.{command}", "")
        if value:
            world[key] = value
    return bindings, world


def profile_path(workspace: Path, configured: str) -> Path:
    path = Path(configured)
    return path if path.is_absolute() else workspace / path


def issue(file: str, message: str) -> ConfigIssue:
    return ConfigIssue(file=file, line=1, column=1, key="project_profile", message=message)
