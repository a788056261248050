"""Located YAML: every kitsoki file we read becomes a tree of values that know their file:line:col.

One reader for config files, stories and flow fixtures, under one set of limits (file size,
nesting depth, token count, values after alias expansion) and one error shape (ConfigIssue /
ConfigError, each problem at file:line:col with its dotted key path). `_Checker` holds the typed
readers that report a problem at the value's place and fall back to a default, so one load
reports every problem.
"""

from __future__ import annotations

import math
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict
from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from ruamel.yaml.scanner import Scanner, ScannerError

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


# kitsoki decodes with gopkg.in/yaml.v3, which still reads these YAML 1.1 words into a bool field.
_YAML11_TRUE = frozenset({"y", "Y", "yes", "Yes", "YES", "on", "On", "ON"})
_YAML11_FALSE = frozenset({"n", "N", "no", "No", "NO", "off", "Off", "OFF"})

_TAG = "tag:yaml.org,2002:"
_STR, _INT, _FLOAT, _BOOL, _NULL = (_TAG + name for name in ("str", "int", "float", "bool", "null"))
_MAP, _SEQ, _MERGE = _TAG + "map", _TAG + "seq", _TAG + "merge"


# --- the error a caller sees ------------------------------------------------------------------


class ConfigIssue(BaseModel, defer_build=True):
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


class Where(BaseModel, defer_build=True):
    model_config = ConfigDict(frozen=True)

    file: str
    line: int
    column: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


class ConfigError(ValueError):
    """The workspace config cannot be used; `issues` lists every problem found, in file order."""

    def __init__(self, issues: Iterable[ConfigIssue]) -> None:
        self.issues = list(issues)
        super().__init__("\n".join(str(issue) for issue in self.issues))


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
        if node.tag == "tag:yaml.org,2002:int" and len(node.value) > 24:
            from core.kitsoki.parse import resolve_scalar  # Go's rules past 64 bits: a float, else a string

            tag, data = resolve_scalar(node.value)
            return _Value("scalar", data, tag, node.value, self.mark(node))
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


