"""Load and validate a kitsoki workspace's `.kitsoki.yaml`, with `.kitsoki.local.yaml` on top.

The rules are kitsoki's own (`internal/webconfig/webconfig.go`, reference/kitsoki-formats.md §1):
a disabled or absent `mining:` block is not validated; an enabled one needs a parseable,
non-negative cadence and non-negative sample and threshold; `root.import` may only be dev-story,
binding interfaces and world keys must be dev-story's. Loading fails fast, but every problem of
the files is reported at once, each with file, line, column and key path, in one ConfigError.

The files are read by core.kitsoki.yamlread (located values, bounded parsing).
"""

from __future__ import annotations

import difflib
import math
import os
import re
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

# The located-YAML reader lives in yamlread (its limits stay importable from here for the tests).
from core.kitsoki.yamlread import (  # noqa: F401
    _FLOAT,
    _MAP,
    MAX_CONFIG_BYTES,
    MAX_YAML_DEPTH,
    MAX_YAML_TOKENS,
    ConfigError,
    ConfigIssue,
    Where,
    YamlLimits,
    _BoundedScanner,
    _Checker,
    _deep_merge,
    _describe,
    _FileProblem,
    _join,
    _Mark,
    _plain,
    _TreeBuilder,
    _Value,
    _ValueProblems,
    read_limited,
)
from core.kitsoki.parse import _compose_file, _read_document  # noqa: F401  (the flow runner reads them here)
from core.kitsoki.duration import DurationError, parse_go_duration, parse_go_duration_ns

CONFIG_FILE = ".kitsoki.yaml"
LOCAL_CONFIG_FILE = ".kitsoki.local.yaml"


DEFAULT_STORY_DIRS = ("./stories",)
DEFAULT_CADENCE = "30s"
DEFAULT_FIRST_PASS_SAMPLE = 12
DEFAULT_PRIORITY_THRESHOLD = 0.0
"""kitsoki documents no default: the Go zero value, which Proposer.PriorityThreshold uses as is."""
DEFAULT_PROJECT_PROFILE = ".kitsoki/project-profile.yaml"

DEV_STORY = "dev-story"
"""The only base story `root.import` may name in kitsoki v1 (empty means dev-story too)."""

DEV_STORY_HOST_INTERFACES: tuple[str, ...] = ("ticket", "vcs", "ci", "workspace", "transport")
"""The host interfaces `root.overrides.bindings` may rebind (reference/dev-story-facts.md)."""

DEV_STORY_WORLD_KEYS: Mapping[str, str] = MappingProxyType({
    # key -> declared type in dev-story's app.yaml (reference/dev-story-facts.md, HEAD 1f4abf0e).
    "prev_state": "string",
    "inbox_unread": "int",
    "last_error": "string",
    "captured": "int",
    "landing_request": "string",
    "landing_note": "object",
    "landing_started": "bool",
    "landing_prior_summary": "string",
    "landing_prior_details": "string",
    "accepted_plan": "object",
    "verify_ok": "string",
    "verify_reason": "string",
    "landing_plan_prior": "object",
    "plan_decision": "string",
    "apply_note": "object",
    "issue_source": "string",
    "origin_repo": "string",
    "upstream_repo": "string",
    "ticket_query": "string",
    "ticket_results": "string",
    "ticket_id": "string",
    "ticket_title": "string",
    "ticket_url": "string",
    "ticket_type": "string",
    "gate_command": "string",
    "ticket_source": "string",
    "ticket_legacy_id": "string",
    "my_tickets": "list",
    "thread": "string",
    "current_workspace": "string",
    "workspace_id": "string",
    "workdir": "string",
    "base_branch": "string",
    "feature_branch": "string",
    "workspace_list": "list",
    "cleanup_candidates": "list",
    "cleanup_deleted": "list",
    "cleanup_skipped": "list",
    "cleanup_errors": "list",
    "cleanup_recommended": "int",
    "cleanup_filter": "string",
    "cleanup_base": "string",
    "cleanup_status": "string",
    "judge_mode": "string",
    "judge_confidence_threshold": "float",
    "bugfix_mode": "string",
    "bugfix_destination": "string",
    "merge_strategy": "string",
    "build_cmd": "string",
    "test_cmd": "string",
    "standup_summary": "string",
    "agent_question": "string",
    "agent_answer": "string",
    "incident_alert": "string",
    "incident_triage": "object",
    "incident_action": "string",
    "incident_postmortem": "object",
    "incident_status": "string",
    "incident_path": "string",
    "deploy_target": "string",
    "deploy_preflight": "string",
    "deploy_gate": "object",
    "deploy_action": "string",
    "deploy_probe": "string",
    "deploy_health": "object",
    "deploy_status": "string",
    "obs_signal": "string",
    "obs_query": "string",
    "obs_triage": "object",
    "obs_action": "string",
    "obs_status": "string",
    "docs_target": "string",
    "docs_draft": "object",
    "docs_action": "string",
    "docs_status": "string",
    "docs_path": "string",
    "init_request": "string",
    "init_discovery": "object",
    "init_run_ok": "bool",
    "init_run_output": "string",
    "init_target_path": "string",
    "init_project_id": "string",
    "init_project_title": "string",
    "init_stack": "string",
    "init_dev_command": "string",
    "init_test_command": "string",
    "init_build_command": "string",
    "init_conventions": "string",
    "init_tracker": "string",
    "init_profile_status": "string",
    "init_feedback": "string",
    "init_apply_result": "object",
    "init_apply_ok": "bool",
    "init_apply_output": "string",
    "init_tools_result": "object",
    "init_tools_ok": "bool",
    "init_tools_output": "string",
    "init_profile_mode": "string",
    "init_profile_draft": "object",
    "init_profile_validation": "object",
    "init_profile_json": "string",
    "design_slug": "string",
    "design_workspace": "string",
    "design_idea": "string",
    "design_kind": "string",
    "design_existing_paths": "string",
    "design_existing_state": "object",
    "design_existing_path": "string",
    "design_overlap_decision": "string",
    "design_change_target": "string",
    "design_reference_hits": "object",
    "design_references": "object",
    "design_references_path": "string",
    "design_brief_path": "string",
    "design_brief_decision": "object",
    "design_refine_analysis": "object",
    "design_last_refine_message": "string",
    "design_artifact": "object",
    "design_draft_doc": "string",
    "design_stage_doc": "string",
    "design_stage_artifact": "object",
    "design_diff_verdict": "string",
    "design_file": "string",
    "design_ticket_path": "string",
    "design_refine_feedback": "string",
    "design_cycle": "int",
    "design_brief_cycle": "int",
    "design_brief_budget": "int",
    "design_draft_cycle": "int",
    "design_draft_budget": "int",
    "repo_root": "string",
    "publish_durable_path": "string",
    "prd_doc_filename": "string",
    "prd_mockup_path": "string",
    "mockup_handle": "string",
    "design_template_dir": "string",
    "design_durable_path": "string",
    "design_doc_filename": "string",
    "design_ticket_dir": "string",
    "ticket_repo": "string",
    "ideas_path": "string",
    "ideas_review": "object",
    "ideas_review_path": "string",
    "ideas_review_feedback": "string",
    "ideas_apply_result": "object",
    "design_seed_idea": "string",
    "last_pr_url": "string",
    "status": "string",
    "human_review_reason": "string",
    "human_review_issue_comment_id": "string",
    "human_review_pr_comment_ok": "bool",
    "pr_title": "string",
    "pr_body": "string",
    "pr_id": "string",
    "pr_author": "string",
    "proposal_path": "string",
    "feature_slug": "string",
    "video_expectation": "string",
    "iteration_budget": "int",
    "cost_budget_usd": "number",
})
"""Every world key dev-story declares; `root.overrides.world` may set only these."""

# Top-level keys kitsoki's WebConfig knows. The ones we do not model (harness_profiles,
# intercept) are kept verbatim in KitsokiConfig.extra; any other key draws a warning.
_MODELED_KEYS = frozenset({"story_dirs", "default_profile", "mining", "root", "project_profile"})
KNOWN_TOP_LEVEL_KEYS = _MODELED_KEYS | {"harness_profiles", "intercept", "miner"}
"""`miner:` is ours (flow gate settings); kitsoki ignores keys it does not know."""
_MINING_KEYS = frozenset(
    {"enabled", "cadence", "first_pass_sample", "priority_threshold", "transcript_dirs", "mined_through",
     "other_projects", "project_paths"}
)
"""kitsoki's mining keys and ours (other_projects, project_paths), which kitsoki's loader ignores."""
_ROOT_KEYS = frozenset({"import", "overrides"})
_OVERRIDES_KEYS = frozenset({"bindings", "world", "synonyms"})



# --- the models -------------------------------------------------------------------------------


def _unknown_world_key_message(key: str) -> str:
    close = difflib.get_close_matches(key, DEV_STORY_WORLD_KEYS, n=1)
    hint = f"; did you mean {close[0]}?" if close else ""
    return f'"{key}" is not a dev-story world key{hint}'


def _unknown_interface_message(iface: str) -> str:
    return f'"{iface}" is not a dev-story host interface (one of {", ".join(DEV_STORY_HOST_INTERFACES)})'


def _unknown_import_message(name: str) -> str:
    return f'"{name}" is not a known base story (kitsoki v1 supports only {DEV_STORY})'


class MiningConfig(BaseModel):
    """The `mining:` block, with kitsoki's defaults already applied (zero sample means 12)."""

    model_config = ConfigDict(strict=True, extra="forbid")

    enabled: bool = False
    cadence: str = DEFAULT_CADENCE
    """Go duration between live passes."""
    first_pass_sample: int = Field(default=DEFAULT_FIRST_PASS_SAMPLE, ge=0)
    """How many recent sessions the history seed mines."""
    priority_threshold: float = Field(default=DEFAULT_PRIORITY_THRESHOLD, ge=0)
    """Recipes scoring below this never surface."""
    transcript_dirs: list[str] = Field(default_factory=list)
    """Transcript folders beyond the resolved ~/.claude/projects/<slug>."""
    mined_through: dict[str, int] = Field(default_factory=dict)
    """Watermark per project slug: newest mined transcript mtime, unix seconds."""
    other_projects: bool = False
    """Read sessions of other projects found under the transcript folders too (ours; kitsoki ignores
    it). Their evidence only ever makes a dev-story-enrich suggestion."""
    project_paths: list[str] = Field(default_factory=list)
    """Other folders this project was worked in (an earlier checkout, a container's mount): sessions
    recorded there are this project's (ours; kitsoki ignores it). Absolute paths."""

    @field_validator("cadence")
    @classmethod
    def _cadence_is_a_duration(cls, cadence: str) -> str:
        parse_go_duration_ns(cadence)  # kitsoki only requires that it parses (-1s is accepted)
        return cadence

    # A plain property, not a computed field, so a dumped config validates back unchanged.
    @property
    def cadence_seconds(self) -> float:
        """The wait between live passes; a negative cadence (kitsoki accepts it) waits none."""
        return max(parse_go_duration(self.cadence), 0.0)


class RootOverrides(BaseModel):
    """`root.overrides`: rung-1 changes folded into the synthesized dev-story instance."""

    model_config = ConfigDict(strict=True, extra="forbid")

    bindings: dict[str, str] = Field(default_factory=dict)
    """Host interface -> handler, e.g. `transport: host.append_to_file`."""
    world: dict[str, Any] = Field(default_factory=dict)
    """dev-story world key -> instance default."""
    synonyms: dict[str, list[str]] = Field(default_factory=dict)
    """Intent name -> extra routing phrases (bare phrases or `{slot}` templates)."""

    @field_validator("bindings")
    @classmethod
    def _known_interfaces(cls, bindings: dict[str, str]) -> dict[str, str]:
        unknown = [iface for iface in bindings if iface not in DEV_STORY_HOST_INTERFACES]
        if unknown:
            raise ValueError("; ".join(_unknown_interface_message(iface) for iface in unknown))
        return bindings

    @field_validator("world")
    @classmethod
    def _known_world_keys(cls, world: dict[str, Any]) -> dict[str, Any]:
        unknown = [key for key in world if key not in DEV_STORY_WORLD_KEYS]
        if unknown:
            raise ValueError("; ".join(_unknown_world_key_message(key) for key in unknown))
        return world


class RootConfig(BaseModel):
    """`root:`: the implicit project root. Absent (None on KitsokiConfig) is rung 0."""

    # Dumps say `import`, as the file does; Python code may also write import_=.
    model_config = ConfigDict(strict=True, extra="forbid", validate_by_name=True, serialize_by_alias=True)

    import_: str = Field(default="", alias="import")
    """As written; empty means dev-story, see `base_story`."""
    overrides: RootOverrides = Field(default_factory=RootOverrides)

    @field_validator("import_")
    @classmethod
    def _known_base_story(cls, name: str) -> str:
        if name not in ("", DEV_STORY):
            raise ValueError(_unknown_import_message(name))
        return name

    @property
    def base_story(self) -> str:
        return self.import_ or DEV_STORY


class KitsokiConfig(BaseModel):
    """A workspace's effective kitsoki config: `.kitsoki.yaml` with `.kitsoki.local.yaml` merged on top."""

    model_config = ConfigDict(strict=True, extra="forbid")

    story_dirs: list[str] = Field(default_factory=lambda: list(DEFAULT_STORY_DIRS))
    root: RootConfig | None = None
    mining: MiningConfig = Field(default_factory=MiningConfig)
    default_profile: str | None = None
    """Harness profile new kitsoki sessions start on; None when unset."""
    project_profile: str = DEFAULT_PROJECT_PROFILE
    extra: dict[str, Any] = Field(default_factory=dict)
    """Top-level keys we do not model (harness_profiles, intercept, ...), as plain data."""
    workspace: Path | None = None
    """The folder holding `.kitsoki.yaml`; relative dirs above are relative to it."""
    source_files: list[Path] = Field(default_factory=list)
    """The files read, base first: `.kitsoki.yaml`, then `.kitsoki.local.yaml` when present."""
    warnings: list[ConfigIssue] = Field(default_factory=list)
    """Keys kitsoki ignores (likely typos); they do not fail the load."""
    harness_profiles: list[str] = Field(default_factory=list)
    """The harness profiles kitsoki can use here (one whose env var is unset is dropped)."""
    intercept: dict[str, Any] | None = None
    """The intercept binding with kitsoki's default bar applied, when declared."""
    profile_bindings: list[str] = Field(default_factory=list)
    """Interfaces the project profile binds (folded into root.overrides.bindings)."""
    profile_world: list[str] = Field(default_factory=list)
    """World keys the project profile sets (folded into root.overrides.world)."""


# --- public API -------------------------------------------------------------------------------


def find_workspace(start: Path) -> Path | None:
    """The nearest folder at or above `start` (a folder or a file) that holds `.kitsoki.yaml`."""
    try:
        here = Path(start).resolve()
    except (OSError, RuntimeError):  # a symlink loop: walk up the path as written
        here = Path(start).absolute()
    if not here.is_dir():
        here = here.parent
    for folder in (here, *here.parents):
        try:
            if (folder / CONFIG_FILE).is_file():
                return folder
        except OSError:  # an unreadable folder on the way up is not a workspace
            continue
    return None


def load_config(workspace: Path, *, overlay: dict[str, bytes] | None = None,
                env: dict[str, str] | None = None) -> KitsokiConfig:
    """Read, merge and validate the workspace's config as kitsoki does; raise ConfigError listing
    every problem. `overlay` (absolute path -> bytes) stands in for files on disk."""
    workspace = Path(workspace)
    overlay = {str(Path(os.path.abspath(path))): data for path, data in (overlay or {}).items()}
    base_path = workspace / CONFIG_FILE
    issues: list[ConfigIssue] = []
    warnings: list[ConfigIssue] = []
    source_files: list[Path] = []

    base = None
    if _present(base_path, overlay):
        base = _read_document(base_path, issues, overlay)
        source_files.append(base_path)
    else:  # kitsoki: a missing .kitsoki.yaml is an empty config
        warnings.append(ConfigIssue(file=str(base_path), line=1, column=1,
                                    message=f"no {CONFIG_FILE} in {workspace}: read as an empty config, as kitsoki does"))
    local_path = _local_config(workspace, overlay)
    local = None
    if local_path is not None:
        local = _read_document(local_path, issues, overlay)
        source_files.append(local_path)
    if issues:
        raise ConfigError(issues)

    checker = _Checker()
    merged = base if base is not None else _Value("map", {}, _MAP, "", _Mark(str(base_path), 1, 1))
    if local is not None:
        merged = _merge_local(merged, local, checker)
    try:
        fields = _read_config(merged, checker, env)
        _fold_profile(workspace, fields, overlay, checker, issues, source_files)
        if issues or checker.issues:
            raise ConfigError(issues + sorted(checker.issues, key=_issue_order(source_files)))
        return KitsokiConfig(
            **fields, workspace=workspace, source_files=source_files,
            warnings=warnings + sorted(checker.warnings, key=_issue_order(source_files)),
        )
    except ValidationError as exc:  # our checks should have caught it; still never escape bare
        raise ConfigError(checker.issues + [
            ConfigIssue(file=str(base_path), line=1, column=1,
                        key=".".join(str(part) for part in error["loc"]), message=error["msg"])
            for error in exc.errors()
        ]) from None


_LOCAL_REPLACED = ("story_dirs", "default_profile", "project_profile", "intercept")
_LOCAL_IGNORED = ("mining", "root")


def _merge_local(base: _Value, local: _Value, checker: _Checker) -> _Value:
    """kitsoki's mergeConfig: from the local file only story_dirs, default_profile, project_profile
    (when set), intercept (whole) and harness_profiles (by profile name, each whole) count; its
    mining: and root: are ignored, which the user is told. Our own `miner:` merges key by key."""
    if local.kind != "map" and not local.is_null:  # kitsoki: "cannot unmarshal !!seq into WebConfig"
        checker.report(local, "", f"the top level of {LOCAL_CONFIG_FILE} must be a mapping of keys (story_dirs, "
                                  f"default_profile, harness_profiles, ...), got {_describe(local)}; kitsoki refuses "
                                  "to load a workspace whose local file is not one")
        return base
    if base.kind != "map" or local.kind != "map":
        return local if base.kind != "map" else base
    entries = dict(base.data)
    for name, value in local.data.items():
        if name in _LOCAL_IGNORED:
            checker.warn(value, name, f"ignored: kitsoki reads {name}: only from {CONFIG_FILE}, never from "
                                      f"{LOCAL_CONFIG_FILE}")
        elif name in _LOCAL_REPLACED:
            if name == "intercept" or not (value.is_null or (value.kind == "seq" and not value.data)
                                           or (value.kind == "scalar" and value.data == "")):
                entries[name] = value
        elif name == "harness_profiles":
            if value.kind == "map" and name in entries and entries[name].kind == "map":
                profiles = dict(entries[name].data)
                profiles.update(value.data)
                entries[name] = _Value("map", profiles, _MAP, "", value.at, value.key_at)
            else:
                entries[name] = value
        elif name == "miner" and name in entries:
            entries[name] = _deep_merge(entries[name], value)
        else:
            entries[name] = value
    return _Value("map", entries, _MAP, "", base.at, base.key_at)


def _present(path: Path, overlay: dict[str, bytes]) -> bool:
    return str(Path(os.path.abspath(path))) in overlay or _exists(path)


def _local_config(workspace: Path, overlay: dict[str, bytes]) -> Path | None:
    """The sibling `.kitsoki.local.yaml`; in a linked git worktree without one, the primary
    checkout's file at the same place (kitsoki's LocalConfigPathCandidates)."""
    local = workspace / LOCAL_CONFIG_FILE
    if _present(local, overlay):
        return local
    primary = _primary_worktree_file(workspace, LOCAL_CONFIG_FILE)
    return primary if primary is not None and _exists(primary) else None


def _primary_worktree_file(workspace: Path, name: str) -> Path | None:
    start = Path(os.path.abspath(workspace))
    for folder in (start, *start.parents):
        git = folder / ".git"
        if not _exists(git):
            continue
        if git.is_dir():
            return None  # the primary checkout itself
        try:
            text = git.read_text(encoding="utf-8", errors="replace").strip()
        except OSError:
            return None
        if not text.startswith("gitdir:"):
            return None
        git_dir = Path(text[len("gitdir:"):].strip())
        git_dir = git_dir if git_dir.is_absolute() else folder / git_dir
        common = git_dir
        try:
            common_text = (git_dir / "commondir").read_text(encoding="utf-8").strip()
            common = Path(common_text) if os.path.isabs(common_text) else git_dir / common_text
        except OSError:
            pass
        common = Path(os.path.normpath(common))
        if common.name != ".git":
            return None
        primary = common.parent
        if os.path.normpath(primary) == os.path.normpath(folder):
            return None
        rel = os.path.relpath(start / name, folder)
        if rel.startswith(".."):
            return None
        return primary / rel
    return None


def _fold_profile(workspace: Path, fields: dict[str, Any], overlay: dict[str, bytes], checker: _Checker,
                  issues: list[ConfigIssue], source_files: list[Path]) -> None:
    """Fold `.kitsoki/project-profile.yaml` into root overrides (the config's own overrides win)."""
    from core.kitsoki.project_profile import profile_overrides, profile_path

    path = profile_path(workspace, fields.get("project_profile") or DEFAULT_PROJECT_PROFILE)
    if not _present(path, overlay):
        return
    document = _read_document(path, issues, overlay, what="the project profile")
    if document is None:
        return
    source_files.append(path)
    found = profile_overrides(document, str(path), checker)
    if found is None:
        return
    bindings, world = found
    if not bindings and not world:
        return
    root: RootConfig | None = fields.get("root")
    mine = root.overrides if root is not None else RootOverrides()
    unknown = [iface for iface in bindings if iface not in DEV_STORY_HOST_INTERFACES]
    for iface in unknown:
        checker.report(document, "kitsoki.instance.bindings", _unknown_interface_message(iface))
    merged_bindings = {k: v for k, v in bindings.items() if k not in unknown} | mine.bindings
    merged_world = {k: v for k, v in world.items() if k in DEV_STORY_WORLD_KEYS} | mine.world
    fields["root"] = RootConfig(import_=root.import_ if root is not None else "", overrides=RootOverrides(
        bindings=merged_bindings, world=merged_world, synonyms=mine.synonyms))
    fields["profile_bindings"] = sorted(bindings)
    fields["profile_world"] = sorted(world)


def _exists(path: Path) -> bool:
    try:
        path.lstat()
    except OSError:
        return False
    return True


def _issue_order(files: list[Path]):
    rank = {str(path): index for index, path in enumerate(files)}
    return lambda issue: (rank.get(issue.file, len(rank)), issue.line, issue.column, issue.key)


def _read_config(document: _Value, checker: _Checker, env: dict[str, str] | None = None) -> dict[str, Any]:
    if document.kind != "map":
        checker.report(document, "", f"the top level must be a mapping of keys (story_dirs, mining, root, ...), "
                                     f"got {_describe(document)}")
        return {}
    top = document.data
    for name, child in top.items():
        if name not in KNOWN_TOP_LEVEL_KEYS:
            checker.warn(child, name, "unknown top-level key, ignored by kitsoki")

    # kitsoki falls back to ./stories when story_dirs is empty, and treats "" as unset for the rest.
    story_dirs = checker.strings(top.get("story_dirs"), "story_dirs", []) or list(DEFAULT_STORY_DIRS)
    default_profile = checker.string(top.get("default_profile"), "default_profile", "") or None
    project_profile = checker.string(top.get("project_profile"), "project_profile", "") or DEFAULT_PROJECT_PROFILE
    from core.kitsoki.harness import check_intercept, check_profiles

    profiles = check_profiles(top.get("harness_profiles"), default_profile, top.get("default_profile"), checker, env)
    intercept = check_intercept(top.get("intercept"), checker)

    return {
        "harness_profiles": profiles,
        "intercept": intercept,
        "story_dirs": story_dirs,
        "default_profile": default_profile,
        "project_profile": project_profile,
        "mining": _read_mining(top.get("mining"), checker),
        "root": _read_root(top.get("root"), checker),
        "extra": {name: _plain(child) for name, child in top.items() if name not in _MODELED_KEYS},
    }


def _read_mining(value: _Value | None, checker: _Checker) -> MiningConfig:
    block = checker.mapping(value, "mining")
    if not block:
        return MiningConfig()
    checker.unknown_keys(block, "mining", _MINING_KEYS)
    enabled = checker.boolean(block.get("enabled"), "mining.enabled", False)
    # A value of the wrong type fails kitsoki's decode whether or not the block is enabled; the
    # rules on values (a duration that parses, counts not negative) apply only when it is.
    rules = checker if enabled else _Checker()

    cadence = checker.string(block.get("cadence"), "mining.cadence", "") or DEFAULT_CADENCE
    try:
        if parse_go_duration_ns(cadence) < 0:
            # kitsoki only parses the cadence; the miner waits no time rather than a negative one.
            rules.warn(block["cadence"], "mining.cadence", f'"{cadence}" is negative: kitsoki accepts it; the miner '
                                                           "runs passes back to back")
    except DurationError as exc:
        rules.report(block["cadence"], "mining.cadence", str(exc))
        cadence = DEFAULT_CADENCE

    sample = _whole(block.get("first_pass_sample"), "mining.first_pass_sample", checker)
    if sample < 0:
        rules.report(block["first_pass_sample"], "mining.first_pass_sample", f"{sample} must not be negative")
        sample = 0
    threshold = checker.number(block.get("priority_threshold"), "mining.priority_threshold", DEFAULT_PRIORITY_THRESHOLD)
    if not math.isfinite(threshold):
        # kitsoki would take inf (every recipe below it) or NaN (no comparison holds): refused here.
        checker.report(block["priority_threshold"], "mining.priority_threshold",
                       f"{block['priority_threshold'].text} is not a finite number; a threshold must be one")
        threshold = DEFAULT_PRIORITY_THRESHOLD
    elif threshold < 0:
        rules.report(block["priority_threshold"], "mining.priority_threshold", f"{threshold:g} must not be negative")
        threshold = DEFAULT_PRIORITY_THRESHOLD

    transcript_dirs = checker.strings(block.get("transcript_dirs"), "mining.transcript_dirs", [])
    other_projects = checker.boolean(block.get("other_projects"), "mining.other_projects", False)
    raw_paths = block.get("project_paths")
    project_paths = checker.strings(raw_paths, "mining.project_paths", [])
    if raw_paths is not None and raw_paths.kind == "seq":
        items = [(i, item) for i, item in enumerate(raw_paths.data) if not item.is_null and item.kind == "scalar"]
        for (index, item), path in zip(items, list(project_paths)):
            if not _absolute_anywhere(path):
                # relative to what? kitsoki's own folder is not the workspace: refused rather than guessed
                checker.report(item, f"mining.project_paths[{index}]",
                               f'"{path}" is not an absolute path (a session records its folder in full)')
                project_paths.remove(path)
    mined_through: dict[str, int] = {}
    for slug, mark in checker.mapping(block.get("mined_through"), "mining.mined_through").items():
        seconds = checker.integer(mark, _join("mining.mined_through", slug), None)
        if seconds is not None:
            mined_through[slug] = seconds

    return MiningConfig(
        enabled=enabled,
        cadence=cadence,
        first_pass_sample=max(sample, 0) or DEFAULT_FIRST_PASS_SAMPLE,  # kitsoki: zero means the default
        priority_threshold=max(threshold, 0.0),
        transcript_dirs=transcript_dirs,
        mined_through=mined_through,
        other_projects=other_projects,
        project_paths=project_paths,
    )


def _absolute_anywhere(path: str) -> bool:
    """An absolute POSIX or Windows path, or one under the home folder (`~/...`)."""
    return path.startswith(("/", "~/")) or path == "~" or re.match(r"^[A-Za-z]:[\\/]", path) is not None


def _whole(value: _Value | None, key: str, checker: _Checker) -> int:
    """An int field as yaml.v3 fills it: a whole number, or a float truncated toward zero."""
    if value is not None and value.kind == "scalar" and value.tag == _FLOAT and math.isfinite(value.data) \
            and abs(value.data) < 2 ** 63:
        return int(value.data)
    return checker.integer(value, key, 0) or 0


def _read_root(value: _Value | None, checker: _Checker) -> RootConfig | None:
    if value is None or value.is_null:
        return None  # rung 0: kitsoki synthesizes a bare dev-story import
    if value.kind != "map":
        checker.report(value, "root", f"expected a mapping, got {_describe(value)}")
        return None
    block = value.data
    checker.unknown_keys(block, "root", _ROOT_KEYS)

    import_name = checker.string(block.get("import"), "root.import", "")
    if import_name not in ("", DEV_STORY):
        checker.report(block["import"], "root.import", _unknown_import_message(import_name))
        import_name = ""

    overrides = checker.mapping(block.get("overrides"), "root.overrides")
    checker.unknown_keys(overrides, "root.overrides", _OVERRIDES_KEYS)

    bindings: dict[str, str] = {}
    for iface, handler in checker.mapping(overrides.get("bindings"), "root.overrides.bindings").items():
        key = _join("root.overrides.bindings", iface)
        if iface not in DEV_STORY_HOST_INTERFACES:
            checker.report(handler, key, _unknown_interface_message(iface), at_key=True)
            continue
        bindings[iface] = checker.string(handler, key, "")

    world: dict[str, Any] = {}
    for name, initial in checker.mapping(overrides.get("world"), "root.overrides.world").items():
        if name not in DEV_STORY_WORLD_KEYS:
            checker.report(initial, _join("root.overrides.world", name), _unknown_world_key_message(name), at_key=True)
            continue
        world[name] = _plain(initial)

    synonyms: dict[str, list[str]] = {}
    for intent, phrases in checker.mapping(overrides.get("synonyms"), "root.overrides.synonyms").items():
        synonyms[intent] = checker.strings(phrases, _join("root.overrides.synonyms", intent), [])

    return RootConfig(import_=import_name, overrides=RootOverrides(bindings=bindings, world=world, synonyms=synonyms))


# --- where root.overrides entries are written -------------------------------------------------


def override_locations(workspace: Path, config: KitsokiConfig | None = None) -> dict[tuple[str, str, int], Where]:
    """Where each `root.overrides` entry is written: (block, name, index) -> file:line:col.

    index is the position in a synonyms list, -1 for the entry's key itself. kitsoki reads
    `root:` only from `.kitsoki.yaml`; a value the project profile sets points at the profile.
    """
    located: dict[tuple[str, str, int], Where] = {}

    def where(value: _Value, at_key: bool = True) -> Where:
        mark = value.key_at if at_key and value.key_at else value.at
        return Where(file=mark.file, line=mark.line, column=mark.column)

    path = workspace / CONFIG_FILE
    try:
        document = _compose_file(path)
    except Exception:  # noqa: BLE001 - the config loader reports problems; locations are best effort
        document = None
    overrides = _child(_child(document, "root"), "overrides")
    for block in ("bindings", "world", "synonyms"):
        entries = _child(overrides, block)
        if entries is None or entries.kind != "map":
            continue
        for key, value in entries.data.items():
            located[(block, key, -1)] = where(value)
            if block == "synonyms" and value.kind == "seq":
                for index, item in enumerate(value.data):
                    located[(block, key, index)] = where(item, at_key=False)
    profile = workspace / ((config.project_profile if config else "") or DEFAULT_PROJECT_PROFILE)
    try:
        document = _compose_file(profile) if profile.is_file() else None
    except Exception:  # noqa: BLE001 - best effort, as above
        document = None
    if document is None:
        return located
    bindings = _child(_child(_child(document, "kitsoki"), "instance"), "bindings")
    for key, value in (bindings.data.items() if bindings is not None and bindings.kind == "map" else ()):
        located.setdefault(("bindings", key, -1), where(value))
    sources = {"workdir": ("repo", "root"), "repo_root": ("repo", "root"), "judge_mode": ("kitsoki", "judge_mode"),
               "build_cmd": ("dev_story_profile", "bugfix", "build_cmd"),
               "test_cmd": ("dev_story_profile", "bugfix", "test_cmd")}
    for key in ("publish_durable_path", "prd_doc_filename", "design_template_dir", "design_durable_path",
                "design_doc_filename", "design_ticket_dir", "ticket_repo"):
        sources[key] = ("dev_story_profile", "docs", key)
    fallbacks = {"build_cmd": ("commands", "build"), "test_cmd": ("commands", "test")}
    for key, chain in sources.items():
        value = document
        for part in chain:
            value = _child(value, part)
        if value is None and key in fallbacks:
            value = _child(_child(document, fallbacks[key][0]), fallbacks[key][1])
        if value is not None:
            located.setdefault(("world", key, -1), where(value))
    return located


def _child(value: _Value | None, key: str) -> _Value | None:
    if value is None or value.kind != "map":
        return None
    return value.data.get(key)
