"""Load and validate a kitsoki workspace's `.kitsoki.yaml`, with `.kitsoki.local.yaml` on top.

The rules are kitsoki's own (`internal/webconfig/webconfig.go`, reference/kitsoki-formats.md §1):
a disabled or absent `mining:` block is not validated; an enabled one needs a parseable,
non-negative cadence and non-negative sample and threshold; `root.import` may only be dev-story,
binding interfaces and world keys must be dev-story's. Loading fails fast, but every problem of
the files is reported at once, each with file, line, column and key path, in one ConfigError.

YAML is composed (never constructed into arbitrary objects) with ruamel's safe pure-Python
loader, under caps on file size, nesting depth, token count and values after alias expansion,
so a hostile file (alias bomb, `[[[[...`) costs at most about a second before it is refused.
"""

from __future__ import annotations

import difflib
import math
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from ruamel.yaml.scanner import Scanner, ScannerError

from core.kitsoki.duration import DurationError, parse_go_duration, parse_go_duration_ns

CONFIG_FILE = ".kitsoki.yaml"
LOCAL_CONFIG_FILE = ".kitsoki.local.yaml"

MAX_CONFIG_BYTES = 1 << 20
"""Files larger than this are refused unread; a real `.kitsoki.yaml` is a few KiB."""
MAX_YAML_VALUES = 20_000
"""Budget of values after alias expansion: `*alias` may repeat an anchor, never explode it."""
MAX_YAML_DEPTH = 32
MAX_YAML_TOKENS = 20_000
"""Scanner tokens read before giving up: bounds parse time (a real config has a few hundred)."""


@dataclass(frozen=True, slots=True)
class YamlLimits:
    """Caps a YAML file is read under; what they refuse is reported, never raised bare."""

    max_bytes: int = MAX_CONFIG_BYTES
    max_values: int = MAX_YAML_VALUES
    max_depth: int = MAX_YAML_DEPTH
    max_tokens: int = MAX_YAML_TOKENS
    what: str = "config files"

    @property
    def too_deep(self) -> str:
        return f"YAML is nested too deeply (more than {self.max_depth} levels are refused)"

    @property
    def too_many_tokens(self) -> str:
        return f"YAML has more than {self.max_tokens} tokens; {self.what} of kitsoki are far smaller"

    def too_large(self, size: int) -> str:
        return f"is {size} bytes; {self.what} over {self.max_bytes} bytes ({self.max_bytes >> 20} MiB) are refused"


CONFIG_LIMITS = YamlLimits()

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
    {"enabled", "cadence", "first_pass_sample", "priority_threshold", "transcript_dirs", "mined_through"}
)
_ROOT_KEYS = frozenset({"import", "overrides"})
_OVERRIDES_KEYS = frozenset({"bindings", "world", "synonyms"})

# kitsoki decodes with gopkg.in/yaml.v3, which still reads these YAML 1.1 words into a bool field.
_YAML11_TRUE = frozenset({"y", "Y", "yes", "Yes", "YES", "on", "On", "ON"})
_YAML11_FALSE = frozenset({"n", "N", "no", "No", "NO", "off", "Off", "OFF"})

_TAG = "tag:yaml.org,2002:"
_STR, _INT, _FLOAT, _BOOL, _NULL = (_TAG + name for name in ("str", "int", "float", "bool", "null"))
_MAP, _SEQ, _MERGE = _TAG + "map", _TAG + "seq", _TAG + "merge"


# --- the error a caller sees ------------------------------------------------------------------


class ConfigIssue(BaseModel):
    """One problem in a config file. Line and column are 1-based; key is a dotted path."""

    model_config = ConfigDict(frozen=True)

    file: str
    line: int
    column: int
    key: str = ""
    """Dotted key path, e.g. `mining.cadence` or `story_dirs[1]`; empty for a whole-file problem."""
    message: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}:{self.column}"
        return f"{where}: {self.key}: {self.message}" if self.key else f"{where}: {self.message}"


class ConfigError(ValueError):
    """The workspace config cannot be used; `issues` lists every problem found, in file order."""

    def __init__(self, issues: Iterable[ConfigIssue]) -> None:
        self.issues = list(issues)
        super().__init__("\n".join(str(issue) for issue in self.issues))


# --- the models -------------------------------------------------------------------------------


def _check_cadence(text: str) -> str:
    if parse_go_duration_ns(text) < 0:
        raise ValueError(f'"{text}" must not be negative (it is the wait between passes)')
    return text


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

    @field_validator("cadence")
    @classmethod
    def _cadence_is_a_wait(cls, cadence: str) -> str:
        return _check_cadence(cadence)

    # A plain property, not a computed field, so a dumped config validates back unchanged.
    @property
    def cadence_seconds(self) -> float:
        return parse_go_duration(self.cadence)


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


def load_config(workspace: Path) -> KitsokiConfig:
    """Read, merge and validate the workspace's config; raise ConfigError listing every problem."""
    workspace = Path(workspace)
    base_path = workspace / CONFIG_FILE
    local_path = workspace / LOCAL_CONFIG_FILE
    issues: list[ConfigIssue] = []

    if not _exists(base_path):
        raise ConfigError([
            ConfigIssue(
                file=str(base_path), line=1, column=1,
                message=f"no {CONFIG_FILE} in {workspace}; a kitsoki workspace needs one (it may be empty)",
            )
        ])
    documents = [_read_document(base_path, issues)]
    source_files = [base_path]
    if _exists(local_path):
        documents.append(_read_document(local_path, issues))
        source_files.append(local_path)
    if issues:
        raise ConfigError(issues)

    merged = documents[0]
    for document in documents[1:]:
        merged = _deep_merge(merged, document)

    checker = _Checker()
    try:
        fields = _read_config(merged, checker)
        if checker.issues:
            raise ConfigError(sorted(checker.issues, key=_issue_order(source_files)))
        return KitsokiConfig(
            **fields, workspace=workspace, source_files=source_files,
            warnings=sorted(checker.warnings, key=_issue_order(source_files)),
        )
    except ValidationError as exc:  # our checks should have caught it; still never escape bare
        raise ConfigError(checker.issues + [
            ConfigIssue(file=str(base_path), line=1, column=1,
                        key=".".join(str(part) for part in error["loc"]), message=error["msg"])
            for error in exc.errors()
        ]) from None


def _exists(path: Path) -> bool:
    try:
        path.lstat()
    except OSError:
        return False
    return True


def _issue_order(files: list[Path]):
    rank = {str(path): index for index, path in enumerate(files)}
    return lambda issue: (rank.get(issue.file, len(rank)), issue.line, issue.column, issue.key)


# --- reading YAML into a located tree ---------------------------------------------------------


@dataclass(slots=True)
class _Mark:
    file: str
    line: int
    column: int


@dataclass(slots=True)
class _Value:
    """A YAML value with where it came from. `data`: a plain scalar, dict[str, _Value] or list[_Value]."""

    kind: Literal["scalar", "map", "seq"]
    data: Any
    tag: str
    text: str
    """A scalar's source text (what yaml.v3 puts in a string field); empty for collections."""
    at: _Mark
    key_at: _Mark | None = None

    @property
    def is_null(self) -> bool:
        return self.kind == "scalar" and self.tag == _NULL


class _FileProblem(Exception):
    def __init__(self, line: int, column: int, message: str) -> None:
        super().__init__(message)
        self.line, self.column, self.message = line, column, message


def _read_document(path: Path, issues: list[ConfigIssue]) -> _Value | None:
    file = str(path)
    try:
        return _compose_file(path)
    except _FileProblem as problem:
        issues.append(ConfigIssue(file=file, line=problem.line, column=problem.column, message=problem.message))
    except _ValueProblems as problems:
        issues.extend(problems.issues)
    return None


class _ValueProblems(Exception):
    def __init__(self, issues: list[ConfigIssue]) -> None:
        super().__init__(f"{len(issues)} problems")
        self.issues = issues


def read_limited(path: Path, limits: YamlLimits, raw: bytes | None = None) -> str:
    """A YAML file's text, refused (as a _FileProblem at its line and column) when it is not a
    regular file, is over the size limit or is not UTF-8."""
    if raw is None:
        try:
            info = path.stat()
            if not stat.S_ISREG(info.st_mode):
                raise _FileProblem(1, 1, "is not a regular file")
            if info.st_size > limits.max_bytes:
                raise _FileProblem(1, 1, limits.too_large(info.st_size))
            with path.open("rb") as handle:
                raw = handle.read(limits.max_bytes + 1)
        except OSError as exc:
            raise _FileProblem(1, 1, f"cannot read: {exc.strerror or exc}") from None
    if len(raw) > limits.max_bytes:  # it grew after stat
        raise _FileProblem(1, 1, limits.too_large(len(raw)))
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line_start = raw.rfind(b"\n", 0, exc.start) + 1
        raise _FileProblem(
            raw.count(b"\n", 0, exc.start) + 1, exc.start - line_start + 1,
            f"is not UTF-8 text (byte 0x{raw[exc.start]:02x})",
        ) from None


def _compose_file(path: Path, limits: YamlLimits = CONFIG_LIMITS, raw: bytes | None = None) -> _Value:
    file = str(path)
    text = read_limited(path, limits, raw)

    yaml = YAML(typ="safe", pure=True)
    yaml.Scanner = _BoundedScanner if limits is CONFIG_LIMITS else type(
        "_LimitedScanner", (_BoundedScanner,), {"limits": limits})
    try:
        root = yaml.compose(text)
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "invalid YAML"
        if exc.context and exc.context_mark and exc.problem:
            problem += f" ({exc.context} started at line {exc.context_mark.line + 1}, column {exc.context_mark.column + 1})"
        raise _FileProblem(mark.line + 1 if mark else 1, mark.column + 1 if mark else 1,
                           problem if problem in (limits.too_deep, limits.too_many_tokens) else f"YAML syntax error: {problem}") from None
    except RecursionError:  # the scanner caps nesting first; this is the last line of defence
        raise _FileProblem(1, 1, limits.too_deep) from None
    except (YAMLError, ValueError, TypeError, IndexError) as exc:  # ruamel on hostile input: report, never raise
        raise _FileProblem(1, 1, f"YAML syntax error: {exc}") from None

    if root is None:  # an empty file is an empty config, as in kitsoki
        return _Value("map", {}, _MAP, "", _Mark(file, 1, 1))
    builder = _TreeBuilder(file, yaml, limits)
    value = builder.build(root, "", 0)
    if builder.issues:
        raise _ValueProblems(builder.issues)
    return value


class _BoundedScanner(Scanner):
    """ruamel's scanner, refusing excessive nesting and token counts as it reads.

    The pure-Python scanner reads ~50k tokens a second, and its cost grows with the square of
    the flow nesting depth (`[[[[...`: 1,000 levels take seconds) while the composer recurses
    per level; so both caps act here, before the time is spent.
    """

    limits: YamlLimits = CONFIG_LIMITS

    def reset_scanner(self) -> None:
        self.tokens_read = 0
        super().reset_scanner()

    def fetch_more_tokens(self) -> Any:
        self.tokens_read += 1
        if self.tokens_read > self.limits.max_tokens:
            raise ScannerError(None, None, self.limits.too_many_tokens, self.reader.get_mark())
        return super().fetch_more_tokens()

    def fetch_flow_collection_start(self, TokenClass: Any, to_push: str) -> None:
        if self.flow_level >= self.limits.max_depth:
            raise ScannerError(None, None, self.limits.too_deep, self.reader.get_mark())
        super().fetch_flow_collection_start(TokenClass, to_push)

    def add_indent(self, column: int) -> bool:
        if len(self.indents) >= self.limits.max_depth:
            raise ScannerError(None, None, self.limits.too_deep, self.reader.get_mark())
        return super().add_indent(column)


class _TreeBuilder:
    """Turns composed YAML nodes into _Values, expanding aliases within a budget."""

    def __init__(self, file: str, yaml: YAML, limits: YamlLimits = CONFIG_LIMITS) -> None:
        self.file = file
        self.constructor = yaml.constructor
        self.limits = limits
        self.budget = limits.max_values
        self.issues: list[ConfigIssue] = []

    def mark(self, node: Node) -> _Mark:
        return _Mark(self.file, node.start_mark.line + 1, node.start_mark.column + 1)

    def problem(self, node: Node, key: str, message: str) -> None:
        at = self.mark(node)
        self.issues.append(ConfigIssue(file=self.file, line=at.line, column=at.column, key=key, message=message))

    def build(self, node: Node, key: str, depth: int) -> _Value:
        self.budget -= 1
        if self.budget < 0:
            at = self.mark(node)
            raise _FileProblem(at.line, at.column, (
                f"YAML expands to more than {self.limits.max_values} values; aliases (*name) that repeat large "
                "anchors are refused"
            ))
        if depth > self.limits.max_depth:
            at = self.mark(node)
            raise _FileProblem(at.line, at.column, self.limits.too_deep)
        if isinstance(node, ScalarNode):
            return self.scalar(node, key)
        if isinstance(node, SequenceNode):
            if node.tag != _SEQ:
                self.problem(node, key, f"unsupported YAML tag {node.tag} on a list")
            items = [self.build(item, f"{key}[{index}]", depth + 1) for index, item in enumerate(node.value)]
            return _Value("seq", items, _SEQ, "", self.mark(node))
        if isinstance(node, MappingNode):
            return self.mapping(node, key, depth)
        self.problem(node, key, "unsupported YAML node")
        return _Value("scalar", None, _NULL, "", self.mark(node))

    def scalar(self, node: ScalarNode, key: str) -> _Value:
        try:
            data = self.constructor.construct_object(node, deep=True)
        except (YAMLError, ValueError, TypeError, OverflowError) as exc:
            reason = exc.problem if isinstance(exc, MarkedYAMLError) and exc.problem else str(exc)
            self.problem(node, key, f"cannot read this value: {reason}")
            data = node.value
        return _Value("scalar", data, node.tag, node.value, self.mark(node))

    def mapping(self, node: MappingNode, key: str, depth: int) -> _Value:
        if node.tag != _MAP:
            self.problem(node, key, f"unsupported YAML tag {node.tag} on a mapping")
        entries: dict[str, _Value] = {}
        merge_sources: list[Node] = []
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE:
                merge_sources.append(value_node)
                continue
            if not isinstance(key_node, ScalarNode):
                self.problem(key_node, key, "a key must be a plain word or string, not a list or mapping")
                continue
            name = key_node.value  # its source text, as yaml.v3 fills a string-keyed map
            path = _join(key, name)
            if name in entries:
                first = entries[name].key_at
                self.problem(key_node, path, f"duplicate key (first defined at line {first.line if first else '?'})")
                continue
            child = self.build(value_node, path, depth + 1)
            child.key_at = self.mark(key_node)
            entries[name] = child
        # `<<: *base` merge keys: explicit keys win, then earlier sources over later ones.
        for source in merge_sources:
            parts = source.value if isinstance(source, SequenceNode) else [source]
            for part in parts:
                if not isinstance(part, MappingNode):
                    self.problem(part, key, "a merge key (<<) must name a mapping or a list of mappings")
                    continue
                for name, child in self.build(part, key, depth + 1).data.items():
                    entries.setdefault(name, child)
        return _Value("map", entries, _MAP, "", self.mark(node))


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _deep_merge(base: _Value, local: _Value) -> _Value:
    """Local wins: mappings merge key by key, recursively; anything else is replaced whole."""
    if base.kind == "map" and local.kind == "map":
        entries = dict(base.data)
        for name, value in local.data.items():
            entries[name] = _deep_merge(entries[name], value) if name in entries else value
        return _Value("map", entries, _MAP, "", local.at, local.key_at)
    return local


def _plain(value: _Value) -> Any:
    if value.kind == "map":
        return {name: _plain(child) for name, child in value.data.items()}
    if value.kind == "seq":
        return [_plain(item) for item in value.data]
    return value.data


# --- checking values --------------------------------------------------------------------------


def _describe(value: _Value) -> str:
    if value.kind == "map":
        return "a mapping"
    if value.kind == "seq":
        return "a list"
    shown = value.text if len(value.text) <= 40 else value.text[:37] + "..."
    return {
        _STR: f'a string ("{shown}")',
        _INT: f"a whole number ({shown})",
        _FLOAT: f"a number ({shown})",
        _BOOL: f"true/false ({shown})",
        _NULL: "nothing (null)",
    }.get(value.tag, f"a {value.tag.removeprefix(_TAG)} value ({shown})")


class _Checker:
    """Typed readers that report a problem at the value's place and fall back to a default.

    Falling back keeps checking going, so one load reports every problem; the same readers,
    with their reports thrown away, give the lenient parse of a disabled mining block.
    """

    def __init__(self) -> None:
        self.issues: list[ConfigIssue] = []
        self.warnings: list[ConfigIssue] = []

    def report(self, value: _Value, key: str, message: str, *, at_key: bool = False) -> None:
        self.issues.append(_issue(value, key, message, at_key))

    def warn(self, value: _Value, key: str, message: str) -> None:
        self.warnings.append(_issue(value, key, message, True))

    def mapping(self, value: _Value | None, key: str) -> dict[str, _Value]:
        if value is None or value.is_null:
            return {}
        if value.kind != "map":
            self.report(value, key, f"expected a mapping, got {_describe(value)}")
            return {}
        return value.data

    def boolean(self, value: _Value | None, key: str, default: bool) -> bool:
        if value is None or value.is_null:
            return default
        if value.kind == "scalar" and value.tag == _BOOL:
            return bool(value.data)
        if value.kind == "scalar" and value.tag == _STR and value.data in _YAML11_TRUE | _YAML11_FALSE:
            return value.data in _YAML11_TRUE
        self.report(value, key, f"expected true or false, got {_describe(value)}")
        return default

    def integer(self, value: _Value | None, key: str, default: int | None) -> int | None:
        if value is None or value.is_null:
            return default
        whole: int | None = None
        if value.kind == "scalar" and value.tag == _INT:
            whole = int(value.data)
        elif value.kind == "scalar" and value.tag == _FLOAT and math.isfinite(value.data) and value.data.is_integer():
            whole = int(value.data)
        if whole is None:
            self.report(value, key, f"expected a whole number, got {_describe(value)}")
            return default
        if not -(1 << 63) <= whole < 1 << 63:  # kitsoki's fields are Go int/int64
            self.report(value, key, f"{value.text} is out of range")
            return default
        return whole

    def number(self, value: _Value | None, key: str, default: float) -> float:
        if value is None or value.is_null:
            return default
        if value.kind == "scalar" and value.tag == _INT:
            try:
                return float(value.data)
            except OverflowError:
                self.report(value, key, f"{value.text} is too large")
                return default
        if value.kind == "scalar" and value.tag == _FLOAT:
            if math.isnan(value.data):
                self.report(value, key, "expected a number, got .nan (not a number)")
                return default
            return float(value.data)
        self.report(value, key, f"expected a number, got {_describe(value)}")
        return default

    def string(self, value: _Value | None, key: str, default: str) -> str:
        if value is None or value.is_null:
            return default
        if value.kind != "scalar":
            self.report(value, key, f"expected a string, got {_describe(value)}")
            return default
        # Like yaml.v3, any scalar fills a string field with its source text (`cadence: 0` is "0").
        return value.data if value.tag == _STR else value.text

    def strings(self, value: _Value | None, key: str, default: list[str]) -> list[str]:
        if value is None or value.is_null:
            return list(default)
        if value.kind != "seq":
            self.report(value, key, f"expected a list of strings, got {_describe(value)}")
            return list(default)
        result = []
        for index, item in enumerate(value.data):
            item_key = f"{key}[{index}]"
            if item.is_null:
                self.report(item, item_key, "expected a string, got nothing (null)")
                continue
            text = self.string(item, item_key, "")
            if item.kind == "scalar":
                result.append(text)
        return result

    def unknown_keys(self, block: dict[str, _Value], key: str, known: frozenset[str]) -> None:
        for name, child in block.items():
            if name not in known:
                expected = ", ".join(sorted(known))
                self.warn(child, _join(key, name), f"unknown key, ignored by kitsoki (known: {expected})")


def _issue(value: _Value, key: str, message: str, at_key: bool) -> ConfigIssue:
    at = value.key_at if at_key and value.key_at else value.at
    return ConfigIssue(file=at.file, line=at.line, column=at.column, key=key, message=message)


def _read_config(document: _Value, checker: _Checker) -> dict[str, Any]:
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
    if default_profile:
        _check_default_profile(top, default_profile, checker)

    return {
        "story_dirs": story_dirs,
        "default_profile": default_profile,
        "project_profile": project_profile,
        "mining": _read_mining(top.get("mining"), checker),
        "root": _read_root(top.get("root"), checker),
        "extra": {name: _plain(child) for name, child in top.items() if name not in _MODELED_KEYS},
    }


def _check_default_profile(top: dict[str, _Value], name: str, checker: _Checker) -> None:
    profiles = top.get("harness_profiles")
    declared = sorted(profiles.data) if profiles is not None and profiles.kind == "map" else []
    if name not in declared:
        listed = ", ".join(declared) if declared else "none are declared under harness_profiles"
        checker.report(top["default_profile"], "default_profile",
                       f'"{name}" names no declared harness profile ({listed})')


def _read_mining(value: _Value | None, checker: _Checker) -> MiningConfig:
    block = checker.mapping(value, "mining")
    if not block:
        return MiningConfig()
    checker.unknown_keys(block, "mining", _MINING_KEYS)
    enabled = checker.boolean(block.get("enabled"), "mining.enabled", False)
    # kitsoki validates the block only when it is enabled; a disabled block is read with a scratch
    # checker whose reports are dropped, and any unusable value falls back to its default.
    fields = checker if enabled else _Checker()

    cadence = fields.string(block.get("cadence"), "mining.cadence", "") or DEFAULT_CADENCE
    try:
        if parse_go_duration_ns(cadence) < 0:
            fields.report(block["cadence"], "mining.cadence",
                          f'"{cadence}" must not be negative (it is the wait between passes)')
            cadence = DEFAULT_CADENCE
    except DurationError as exc:
        fields.report(block["cadence"], "mining.cadence", str(exc))
        cadence = DEFAULT_CADENCE

    sample = fields.integer(block.get("first_pass_sample"), "mining.first_pass_sample", 0)
    if sample < 0:
        fields.report(block["first_pass_sample"], "mining.first_pass_sample", f"{sample} must not be negative")
        sample = 0
    threshold = fields.number(block.get("priority_threshold"), "mining.priority_threshold",
                              DEFAULT_PRIORITY_THRESHOLD)
    if threshold < 0:
        fields.report(block["priority_threshold"], "mining.priority_threshold", f"{threshold:g} must not be negative")
        threshold = DEFAULT_PRIORITY_THRESHOLD

    transcript_dirs = fields.strings(block.get("transcript_dirs"), "mining.transcript_dirs", [])
    mined_through: dict[str, int] = {}
    for slug, mark in fields.mapping(block.get("mined_through"), "mining.mined_through").items():
        seconds = fields.integer(mark, _join("mining.mined_through", slug), None)
        if seconds is not None:
            mined_through[slug] = seconds

    return MiningConfig(
        enabled=enabled,
        cadence=cadence,
        first_pass_sample=sample or DEFAULT_FIRST_PASS_SAMPLE,  # kitsoki: zero means the default
        priority_threshold=threshold,
        transcript_dirs=transcript_dirs,
        mined_through=mined_through,
    )


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
