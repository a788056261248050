"""kitsoki's `{{ }}` template language (internal/expr Render / RenderValue / ValidateTemplate).

A template is literal text with `{{ expr }}` interpolations, `{{ if c }} .. {{ else }} .. {{ end }}` and
`{{ range list }} .. {{ end }}` blocks (inside a range body `.field` means `item.field`). `parse_template`
gives its node tree (the flow runner renders it); `template_error` is kitsoki's load-time check of one
(None, or kitsoki's message); `single_expression` is RenderValue's rule for a value that is one typed
expression.
"""

from __future__ import annotations

from functools import lru_cache

from core.expr.check import compile_error

BLOCK_WORDS = ("if", "else", "end", "range")


class TemplateError(ValueError):
    """A template whose blocks do not nest (kitsoki's wording)."""


def _tokens(template: str) -> list[tuple[bool, str]]:
    out: list[tuple[bool, str]] = []
    rest = template
    while rest:
        start = rest.find("{{")
        if start < 0:
            out.append((False, rest))
            break
        if start:
            out.append((False, rest[:start]))
        rest = rest[start + 2:]
        end = rest.find("}}")
        if end < 0:
            raise TemplateError("template: unclosed {{ block")
        out.append((True, rest[:end].strip()))
        rest = rest[end + 2:]
    return out


def keyword(block: str) -> tuple[str, str]:
    """kitsoki's splitKeyword: the block's first space-separated word and the rest."""
    head, _, rest = block.partition(" ")
    return head, rest


def _nodes(tokens: list[tuple[bool, str]], i: int, in_block: bool) -> tuple[list, int]:
    nodes: list = []
    while i < len(tokens):
        is_block, value = tokens[i]
        if not is_block:
            nodes.append(("text", value))
            i += 1
            continue
        word, rest = keyword(value)
        if word in ("end", "else"):
            if in_block:
                return nodes, i
            raise TemplateError(f"template: unexpected '{word}'")
        if word not in ("if", "range"):
            nodes.append(("expr", value))
            i += 1
            continue
        body, i = _nodes(tokens, i + 1, True)
        other: list = []
        if word == "if" and i < len(tokens) and tokens[i][0] and keyword(tokens[i][1])[0] == "else":
            other, i = _nodes(tokens, i + 1, True)
        if i >= len(tokens) or not tokens[i][0]:
            raise TemplateError(f"template: missing 'end' for {word} block")
        if keyword(tokens[i][1])[0] != "end":
            got = '"' + tokens[i][1].replace("\\", "\\\\").replace('"', '\\"') + '"'
            raise TemplateError(f"template: expected 'end', got {got}" if word == "if" else
                                f"template: expected 'end' for range, got {got}")
        nodes.append((word, rest.strip(), tuple(body), tuple(other)))
        i += 1
    return nodes, i


@lru_cache(maxsize=4096)
def parse_template(template: str) -> tuple:
    """The node tree: ("text", s) | ("expr", src) | ("if", cond, body, else_body) | ("range", list, body, ())."""
    nodes, _ = _nodes(_tokens(template), 0, False)
    return tuple(nodes)


def range_dots(source: str) -> str:
    """`.field` inside a range body means `item.field` (kitsoki's rewriteDotsForRange)."""
    out, boundary = [], True
    for i, char in enumerate(source):
        if char == "." and boundary and i + 1 < len(source) and (source[i + 1].isalpha() or source[i + 1] == "_"):
            out.append("item.")
            boundary = False
            continue
        out.append(char)
        boundary = not (char.isalnum() or char == "_")
    return "".join(out)


def single_expression(value: str) -> str | None:
    """RenderValue's rule: the inner source when `value` is one `{{ expr }}` and nothing else."""
    stripped = value.strip()
    if not (stripped.startswith("{{") and stripped.endswith("}}")):
        return None
    inner = stripped[2:-2]
    if "{{" in inner or "}}" in inner:
        return None
    inner = inner.strip()
    return None if keyword(inner)[0] in BLOCK_WORDS else inner


def _check_nodes(nodes: tuple, in_range: bool) -> str | None:
    fix = range_dots if in_range else (lambda text: text)
    for node in nodes:
        kind = node[0]
        if kind == "expr":
            problem = compile_error(fix(node[1]), False)
        elif kind == "if":
            problem = compile_error(fix(node[1]), True) or _check_nodes(node[2], in_range) or \
                _check_nodes(node[3], in_range)
        elif kind == "range":
            problem = compile_error(fix(node[1]), False) or _check_nodes(node[2], True)
        else:
            problem = None
        if problem:
            return problem
    return None


@lru_cache(maxsize=16384)
def template_error(template: str) -> str | None:
    """kitsoki's ValidateTemplate: None, or why the template does not compile."""
    if "{{" not in template:
        return None
    try:
        nodes = parse_template(template)
    except TemplateError as exc:
        return str(exc)
    return _check_nodes(nodes, False)


@lru_cache(maxsize=16384)
def value_error(value: str) -> str | None:
    """kitsoki's check of one templated effect value (validateEffectValue on a string)."""
    if "{{" not in value:
        return None
    inner = single_expression(value)
    return compile_error(inner, False) if inner is not None else template_error(value)
