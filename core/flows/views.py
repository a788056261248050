"""Views: kitsoki's RenderState of a state, which `expect_view_matches` reads.

A state's `view:` is a template string, a list of typed elements, `{extends, blocks}` (the
blocks' elements rendered, then poured into `views/<name>.pongo`), or `{template_file}`
(internal/machine RenderState, internal/render/elements). Elements render at width 80 and are
joined by a blank line (two kv blocks in a row by a single newline); an element whose `when:`
is falsy, or fails, is left out, and an element that renders empty leaves no gap:

* prose: template, whitespace collapsed, wrapped; heading: template, trimmed; code: template,
  trailing newlines trimmed; template: as rendered;
* kv: `key:` padded to the longest key, two spaces, the value wrapped into its column;
* list: `• label` rows, or with hints a label column and a wrapped hint column;
* banner: the title between `═` rules; choice (single and multi): prompt, rows, key hints;
* media: an icon, the label and the target.

Terminal styling is absent (kitsoki renders without a TTY). What this module does not render
exactly (menu helpers, forms, parallel states, pongo outside core.flows.pongo's subset) raises
Unsupported, and the runner declines to judge the view.
"""

from __future__ import annotations

import os
import re
from typing import Any

from core.flows.app import AppModel
from core.flows.expressions import ExprError, ExprUnsupported, eval_any
from core.flows.ids import with_other_ids
from core.flows.machine import Unsupported
from core.flows.pongo import PongoError, PongoUnsupported, TemplateSet
from core.flows.values import go_quote
from core.flows.wrap import cell_width, wordwrap
from core.flows.workdir import in_workdir

WIDTH = 80
_MARKDOWN_PATH = re.compile(r"\S+\.md$")
CHOICE_GUTTER = "  "
CHECKBOX = "[ ] "
CHOICE_FOOTER = {"single": "[↑/↓ move • Enter pick • Tab chat • Esc cancel]",
                 "multi": "[↑/↓ • Space toggle • Enter submit • Tab chat • Esc cancel]"}
MEDIA_ICONS = {"video": "📹", "image": "🖼", "pdf": "📄", "html": "🌐", "slideshow": "📊"}
ELEMENT_KINDS = ("prose", "heading", "code", "template", "list", "kv", "banner", "choice", "media")


class ViewError(Exception):
    """kitsoki would fail to render this view (a turn error on its side)."""


def _menu_helper(*_args: Any) -> Any:
    raise PongoUnsupported("menu helpers (available/blocked/intent_status) in a view")


class _Renderer:
    def __init__(self, app: AppModel, state: str, world: dict[str, Any], slots: dict[str, Any]) -> None:
        self.templates = _templates(app)
        found = app.states.get(state)
        self.env = {"world": world, "slots": slots, "event": {}}
        self.ctx = {"world": world, "slots": slots, "event": {}, "args": None, "item": None,
                    "run": {"id": "", "turn": 0},
                    "state": {"path": state, "description": found.description if found else ""},
                    "available": _menu_helper, "blocked": _menu_helper, "blocked_reason": _menu_helper,
                    "intent_status": _menu_helper}

    def leaf(self, source: Any) -> str:
        if source is None:
            return ""
        if not isinstance(source, str):
            source = str(source)
        return self.templates.render(source, self.ctx)

    def when(self, source: Any) -> bool:
        if not source:
            return True
        if not isinstance(source, str):
            raise Unsupported(f"view when: {source!r}")
        try:
            value = eval_any(source, self.env)
        except ExprUnsupported as exc:
            raise Unsupported(f"view when: {source} ({exc})") from None
        except ExprError:
            return False  # kitsoki leaves an element out when its guard fails
        return _truthy(value)

    # -- the view shapes --

    def view(self, view: Any) -> str:
        if view is None or view == "" or view == []:
            return ""
        if isinstance(view, str):
            return self.leaf(view)
        if isinstance(view, list):
            return self.elements(view)
        if isinstance(view, dict):
            if view.get("template_file"):
                return self.templates.execute(self.templates.load(str(view["template_file"])), self.ctx)
            if view.get("extends"):
                return self.extends(str(view["extends"]), view.get("blocks") or {})
        raise Unsupported(f"view shape {type(view).__name__}")

    def extends(self, name: str, blocks: dict[str, Any]) -> str:
        rendered = {block: self.elements(body if isinstance(body, list) else []) for block, body in blocks.items()}
        template = name if "." in name.rsplit("/", 1)[-1] else f"{name}.pongo"
        parent = self.templates.load(template)
        text_blocks = {block: [("text", body)] for block, body in rendered.items()}
        return self.templates.execute(parent, self.ctx, text_blocks)

    def elements(self, elements: list[Any]) -> str:
        parts: list[tuple[str, str]] = []
        for element in elements:
            if not isinstance(element, dict):
                raise Unsupported(f"view element {element!r}")
            kinds = [key for key in element if key in ELEMENT_KINDS]
            if len(kinds) != 1:
                raise Unsupported(f"view element with keys {sorted(element)}")
            kind = kinds[0]
            if not self.when(element.get("when")):
                continue
            out = getattr(self, f"_{kind}")(element[kind])
            if out:
                parts.append((kind, out))
        text = []
        for index, (kind, out) in enumerate(parts):
            if index:
                text.append("\n" if kind == "kv" and parts[index - 1][0] == "kv" else "\n\n")
            text.append(out)
        return "".join(text)

    # -- element kinds --

    def _prose(self, source: Any) -> str:
        body = self.leaf(source)
        if not body.strip():
            return ""
        return wordwrap(" ".join(body.split()), WIDTH)

    def _heading(self, source: Any) -> str:
        return self.leaf(source).strip()

    def _code(self, source: Any) -> str:
        return self.leaf(source).rstrip("\n")

    def _template(self, source: Any) -> str:
        return self.leaf(source)

    def _kv(self, spec: Any) -> str:
        pairs = spec.get("pairs") if isinstance(spec, dict) else None
        if not isinstance(pairs, dict) or not pairs:
            return ""
        rows = [(str(key), self.leaf(value) if isinstance(value, str) else "") for key, value in pairs.items()]
        longest = max(cell_width(key) for key, _ in rows)
        value_width = max(WIDTH - (longest + 1) - 2, 1)
        lines = []
        for key, value in rows:
            head = f"{key}:{' ' * (longest - cell_width(key))}  "
            link = ""
            if (value.strip() == value and "\n" not in value and cell_width(value) <= value_width
                    and _MARKDOWN_PATH.search(value)):
                # kitsoki makes a markdown path a terminal hyperlink (OSC 8) to its absolute path
                link = f"\x1b]8;;file://{os.path.normpath(in_workdir(value))}\x1b\\{value}\x1b]8;;\x1b\\"
            first = True
            for raw_line in value.split("\n"):
                for piece in wordwrap(raw_line, value_width).split("\n"):
                    if first:
                        lines.append(head + (link or piece))
                        first = False
                    else:
                        lines.append(" " * (longest + 1 + 2) + piece)
        return "\n".join(lines)

    def _list(self, spec: Any) -> str:
        if not isinstance(spec, dict):
            return ""
        marker = (str(spec.get("marker") or "") or "•") + " "
        rows = []
        for item in spec.get("items") or []:
            if isinstance(item, str):
                item = {"label": item}
            if not isinstance(item, dict):
                raise Unsupported(f"list item {item!r}")
            if not self.when(item.get("when")):
                continue
            rows.append((self.leaf(item.get("label")).rstrip(" \t"), self.leaf(item.get("hint")).strip()))
        if not rows:
            return ""
        if not any(hint for _, hint in rows):
            indent = " " * cell_width(marker)
            avail = max(WIDTH - len(indent), 1)
            return "\n".join(marker + ("\n" + indent).join(wordwrap(label, avail).split("\n")) for label, _ in rows)
        return self._two_columns(rows, marker)

    def _two_columns(self, rows: list[tuple[str, str]], marker: str) -> str:
        indent = " " * cell_width(marker)
        measured = max(cell_width(label) for label, _ in rows)
        budget = WIDTH - cell_width(marker) - 2 - 40
        widest = min(measured, budget) if budget >= 1 else measured
        widest = max(widest, 1)
        hint_width = max(WIDTH - cell_width(marker) - widest - 2, 8)
        lines = []
        for label, hint in rows:
            size = cell_width(label)
            overflow = size > widest
            padded = label if overflow else label + " " * (widest - size)
            if not hint:
                lines.append((marker + padded).rstrip(" "))
                continue
            hints = wordwrap(hint, hint_width).split("\n")
            if overflow:
                lines.append(marker + label)
                lines.extend(indent + " " * (widest + 2) + piece for piece in hints)
                continue
            for index, piece in enumerate(hints):
                if index == 0:
                    lines.append(marker + padded + "  " + piece)
                else:
                    lines.append(indent + " " * (widest + 2) + piece)
        return "\n".join(lines)

    def _banner(self, spec: Any) -> str:
        spec = spec if isinstance(spec, dict) else {"text": spec}
        source = self.leaf(spec.get("text")).strip()
        if not source:
            return ""
        subtitle = self.leaf(spec.get("subtitle")).strip()
        title = "  " + source + (f"  ·  {subtitle}" if subtitle else "")
        width = len(title) + 2
        if width > WIDTH and WIDTH >= 40:
            width = WIDTH
        width = max(width, 40)
        rule = "═" * width
        return f"{rule}\n{title}\n{rule}"

    def _choice(self, spec: Any) -> str:
        if not isinstance(spec, dict):
            return ""
        mode = str(spec.get("mode") or "single")
        if mode not in CHOICE_FOOTER:
            raise Unsupported(f"choice mode {mode}")
        multi = mode == "multi"
        prompt = self.leaf(spec.get("prompt")).strip()
        rows = []
        for item in spec.get("items") or []:
            if not isinstance(item, dict):
                raise Unsupported(f"choice item {item!r}")
            if not self.when(item.get("when")):
                continue
            source = item.get("label")
            if multi and not source:
                source = item.get("value")
            label = self.leaf(source).rstrip(" \t")
            hint = self.leaf(item.get("hint")).strip()
            param = item.get("param")
            if not multi and isinstance(param, dict):
                placeholder = self.leaf(param.get("placeholder")).strip()
                if placeholder:
                    label += f" [{placeholder}]"
                elif param.get("slot"):
                    label += f" ({param['slot']}?)"
            rows.append((label, hint))
        prefix = CHOICE_GUTTER + (CHECKBOX if multi else "")
        body = ""
        if rows:
            if not any(hint for _, hint in rows):
                body = "\n".join(prefix + label for label, _ in rows)
            else:
                widest = max(cell_width(label) for label, _ in rows)
                lines = []
                for label, hint in rows:
                    padded = label + " " * (widest - cell_width(label))
                    lines.append((prefix + padded).rstrip(" ") if not hint else prefix + padded + "  " + hint)
                body = "\n".join(lines)
        suffix = ""
        if multi and rows and ("min" in spec or "max" in spec):
            low = int(spec.get("min", 0)) if "min" in spec else 0
            high = int(spec.get("max", len(rows))) if "max" in spec else len(rows)
            suffix = f"({low})" if low == high else f"({low}–{high})"
        out = ""
        if prompt:
            out = prompt + (" " + suffix if suffix else "") + ("" if prompt.endswith(":") else ":") + "\n\n"
        elif suffix:
            out = suffix + "\n\n"
        out += body + ("\n\n" if body else "")
        return out + CHOICE_FOOTER[mode]

    def _media(self, spec: Any) -> str:
        if not isinstance(spec, dict):
            return ""
        icon = MEDIA_ICONS.get(str(spec.get("kind") or "").lower(), "📎")
        handle, caption = str(spec.get("handle") or ""), str(spec.get("caption") or "")
        label = caption or handle
        return f"{icon}  {label}\n   → {spec.get('path') or handle}"


def _truthy(value: Any) -> bool:
    if value is None:
        return False
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return value != 0
    if isinstance(value, (str, list, dict)):
        return len(value) > 0
    return True


_TEMPLATE_SETS: dict[str, TemplateSet] = {}


def _templates(app: AppModel) -> TemplateSet:
    key = str(app.dir)
    found = _TEMPLATE_SETS.get(key)
    if found is None:
        views = app.dir / "views"
        found = _TEMPLATE_SETS[key] = TemplateSet(views if views.is_dir() else None)
    return found


def _guard(function, *args) -> str:
    try:
        return function(*args)
    except PongoUnsupported as exc:
        raise Unsupported(f"view: {exc}") from None
    except PongoError as exc:
        raise ViewError(str(exc)) from None


def render_state(app: AppModel, state: str, world: dict[str, Any], slots: dict[str, Any] | None = None) -> str:
    """kitsoki's RenderState: the state's own view against the world."""
    if "#" in state or state.startswith("$par("):
        raise Unsupported("views of parallel states")
    found = app.states.get(state)
    if found is None or found.view in (None, "", []):
        return ""
    renderer = _Renderer(app, state, world, slots or {})
    return _guard(renderer.view, found.view)


def render_say(app: AppModel, state: str, say: list[tuple[str, dict[str, Any], dict[str, Any]]]) -> str:
    """The turn's `say:` lines, each rendered against the world it was said in, one per line."""
    lines = []
    for source, world, slots in say:
        lines.append(_guard(_Renderer(app, state, world, slots).leaf, source))
    return "\n".join(line for line in lines)


def render_turn(app: AppModel, state: str, world: dict[str, Any], arm_view: Any,
                say: list[tuple[str, dict[str, Any], dict[str, Any]]], slots: dict[str, Any]) -> str:
    """kitsoki's renderViewWithTyped: the arm's view (else the state's), after the turn's `say:` text."""
    renderer = _Renderer(app, state, world, slots)
    found = app.states.get(state)
    source = arm_view if arm_view not in (None, "", []) else (found.view if found is not None else None)
    view = _guard(renderer.view, source) if source not in (None, "", []) else ""
    said = render_say(app, state, say)
    if said and view:
        return f"{said}\n\n{view}"
    return said or view


ERROR_BANNER = "⚠ Action failed: {}"


def with_error_banner(view: str, message: str) -> str:
    """kitsoki's appendErrorBanner after an on_error redirect (unless the view already says it)."""
    if not message or message in view:
        return view
    banner = ERROR_BANNER.format(message)
    return f"{view}\n\n{banner}" if view else banner


def view_matches(view: str, pattern: str) -> list[str]:
    """`expect_view_matches`: a Go RE2 pattern, unanchored, against the turn's view."""
    if re.search(r"\(\?[a-zA-Z]*[<P]|\\[pPCz]|\(\?[=!<]", pattern):
        raise Unsupported(f"expect_view_matches pattern {go_quote(pattern)} (outside the RE2 syntax Python shares)")
    try:
        compiled = re.compile(_python_pattern(pattern))
    except re.error as exc:
        return [f"expect_view_matches: invalid regex {go_quote(pattern)}: {exc}"]
    matched = compiled.search(view) is not None
    if matched != (compiled.search(with_other_ids(view)) is not None):
        raise Unsupported(f"expect_view_matches pattern {go_quote(pattern)} on a view showing a session or job id "
                          "(kitsoki draws them at random, so its verdict depends on the draw)")
    if matched:
        return []
    return [f"expect_view_matches: view does not match {go_quote(pattern)}\nview: {go_quote(view)}"]


def _python_pattern(pattern: str) -> str:
    """An RE2 pattern as Python reads it the same way: without the `m` flag RE2's `$` matches only
    at the end of the text, where Python's also matches before a final newline (`\\Z` is RE2's)."""
    if re.search(r"\(\?[a-zA-Z]*m", pattern):
        return pattern
    out, escaped, in_class = [], False, False
    for char in pattern:
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
        elif char == "$":
            out.append(r"\Z")
            continue
        out.append(char)
    return "".join(out)
