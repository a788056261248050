"""PyYAML's C loader reading YAML as Go's yaml.v3 does (YAML 1.2 booleans, 64-bit integers),
never nested deeper than MAX_DEPTH.

kitsoki decodes story and fixture files with yaml.v3, where only true/false are booleans; YAML
1.1 (PyYAML's default) would also read yes/no/on/off, turning every state's `on:` key into True.
An integer past 64 bits is, as in yaml.v3, a float or a string (never handed to int(), whose
4,300-digit limit raises).

Depth is bounded before the C composer sees the text: libyaml's composer recurses once per level
on the C stack and kills the process (SIGSEGV) somewhere past tens of thousands of levels, which
a 1 MiB fixture of `[` can reach. A cheap bound on the nesting (every `[`/`{` plus the deepest
line's indentation and `- `/`? ` markers) settles nearly every file at once; a file it cannot
settle is walked by libyaml's parser (iterative, no recursion) counting depth, and stops at the
first level past the limit with NestedTooDeep (a yaml.MarkedYAMLError naming line and column).
"""

from __future__ import annotations

import re

import yaml

BOOL = "tag:yaml.org,2002:bool"
INT = "tag:yaml.org,2002:int"
MAX_DEPTH = 512
"""Far past any real story or fixture (kitsoki's own are under 20 levels), far below the C stack."""


class NestedTooDeep(yaml.MarkedYAMLError):
    """YAML nested past MAX_DEPTH, refused before it is composed."""


def _cheap_bound(text: str) -> int:
    brackets = text.count("[") + text.count("{")
    deepest = max((len(line) - len(line.lstrip(" -?:")) for line in text.splitlines()), default=0)
    return brackets + deepest + 1


def check_depth(text: str | bytes, limit: int = MAX_DEPTH) -> None:
    """Raise NestedTooDeep when `text` nests YAML collections more than `limit` deep."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    if _cheap_bound(text) <= limit:
        return
    depth = 0
    starts = (yaml.MappingStartEvent, yaml.SequenceStartEvent)
    ends = (yaml.MappingEndEvent, yaml.SequenceEndEvent)
    parser = yaml.CSafeLoader(text)
    try:
        while True:
            event = parser.get_event()
            if event is None:
                return
            if isinstance(event, starts):
                depth += 1
                if depth > limit:
                    raise NestedTooDeep(problem=f"YAML is nested too deeply (more than {limit} levels are refused)",
                                        problem_mark=event.start_mark)
            elif isinstance(event, ends):
                depth -= 1
    except NestedTooDeep:
        raise
    except yaml.YAMLError:
        return  # a syntax error: the real load reports it, with its own position
    finally:
        parser.dispose()


class Yaml12Loader(yaml.CSafeLoader):
    """libyaml's safe loader with YAML 1.2 booleans, Go's integers and a bounded depth."""

    def __init__(self, stream) -> None:
        text = stream.read() if hasattr(stream, "read") else stream
        check_depth(text)
        super().__init__(text)

    def construct_yaml_int(self, node):
        text = self.construct_scalar(node)
        digits = text.lstrip("+-").replace("_", "")
        if len(digits.lstrip("0")) > 22:  # past 64 bits in any base yaml.v3 reads: Go's float, else a string
            try:
                value = float(text.replace("_", ""))
            except ValueError:
                return text
            return text if value in (float("inf"), float("-inf")) else value
        return super().construct_yaml_int(node)


Yaml12Loader.add_constructor(INT, Yaml12Loader.construct_yaml_int)


Yaml12Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != BOOL]
    for first, resolvers in yaml.CSafeLoader.yaml_implicit_resolvers.items()}
Yaml12Loader.add_implicit_resolver(BOOL, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF"))
