"""kitsoki's checks on a `view:` (internal/app/view_element.go, choice.go at 1f4abf0e).

Two levels, as kitsoki has them:

- decoding (`element_problem`, View.UnmarshalYAML and toElement, view_element.go:246-553): each
  element of an element list sets exactly one kind; a list item is a non-empty string or a strict
  `{label, hint, when}` with a label; a `when:` nested inside a list, kv or banner body is refused
  (it would be ignored). These fail the file's decoding (core.kitsoki.schema reports them);
- validation (`view_problems`, View.Validate and validateChoiceCrossRefs, view_element.go:555-630,
  choice.go:738-836), run per state and per transition view: a list has items, a kv has pairs whose
  values are strings, a banner has text, a media element a handle, at most one choice element and
  none inside `blocks:`; a choice's intents and slots are declared where the view is (the state's
  intents, its ancestors', the app's), its enum values allowed, a param slot not pre-bound, a
  multi choice's values literal, a form's fields and template placeholders declared.

A choice element is also held to the shape kitsoki's choice schema gives it (`choice_shape_problem`:
a `mode` of single, multi or form, and each mode's required keys, items and fields, no other key).
Not modelled: the pongo syntax of a choice's templates (docs/kitsoki-load-checks.md).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import orjson

from core.kitsoki.parse import LMap, LSeq

_NAME = {"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]*$"}
_SCALAR = {"type": ["string", "number", "integer", "boolean"]}
_STR = {"type": "string"}
CHOICE_SHAPE: dict[str, Any] = {
    "type": "object", "required": ["mode"], "properties": {"mode": {"enum": ["single", "multi", "form"]}},
    "allOf": [{"if": {"properties": {"mode": {"const": mode}}, "required": ["mode"]}, "then": {"$ref": f"#/$defs/{mode}"}}
              for mode in ("single", "multi", "form")],
    "$defs": {
        "single": {"type": "object", "additionalProperties": False, "required": ["mode", "items"], "properties": {
            "mode": {"const": "single"}, "prompt": _STR, "when": _STR,
            "items": {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/singleItem"}}}},
        "multi": {"type": "object", "additionalProperties": False, "required": ["mode", "intent", "slot", "items"],
                  "properties": {"mode": {"const": "multi"}, "prompt": _STR, "when": _STR, "intent": _NAME,
                                 "slot": {"type": "string", "minLength": 1}, "min": {"type": "integer", "minimum": 0},
                                 "max": {"type": "integer", "minimum": 1},
                                 "items": {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/multiItem"}}}},
        "form": {"type": "object", "additionalProperties": False, "required": ["mode", "intent", "template", "fields"],
                 "properties": {"mode": {"const": "form"}, "prompt": _STR, "when": _STR, "intent": _NAME,
                                "template": {"type": "string", "minLength": 1},
                                "fields": {"type": "object", "minProperties": 1,
                                           "additionalProperties": {"$ref": "#/$defs/field"}}}},
        "singleItem": {"type": "object", "additionalProperties": False, "required": ["label", "intent"], "properties": {
            "label": {"type": "string", "minLength": 1}, "hint": _STR, "intent": _NAME, "slots": {"type": "object"},
            "when": _STR, "param": {"$ref": "#/$defs/param"}}},
        "multiItem": {"type": "object", "additionalProperties": False, "required": ["value"], "properties": {
            "value": {"type": "string", "minLength": 1}, "label": _STR, "hint": _STR, "when": _STR}},
        "param": {"type": "object", "additionalProperties": False, "required": ["slot", "type"], "properties": {
            "slot": {"type": "string", "minLength": 1}, "type": {"enum": ["string", "int", "enum"]},
            "placeholder": _STR, "values": {"type": "array", "items": _STR}, "required": {"type": "boolean"}},
            "allOf": [{"if": {"properties": {"type": {"const": "enum"}}, "required": ["type"]},
                       "then": {"required": ["values"]}}]},
        "field": {"type": "object", "additionalProperties": False, "required": ["type"], "properties": {
            "type": {"enum": ["string", "int", "float", "bool", "enum"]}, "hint": _STR, "placeholder": _STR,
            "unit": _STR, "values": {"type": "array", "items": _STR}, "default": _SCALAR, "min": _SCALAR,
            "max": _SCALAR, "required": {"type": "boolean"}, "readonly": {"type": "boolean"}, "expr": _STR,
            "when": _STR},
            "allOf": [{"if": {"properties": {"type": {"const": "enum"}}, "required": ["type"]},
                       "then": {"required": ["values"]}},
                      {"if": {"properties": {"readonly": {"const": True}}, "required": ["readonly"]},
                       "then": {"required": ["expr"]}}]},
    },
}
"""The shape of a choice element, written from kitsoki's contract (its choice schema,
internal/app/schemas/choice.schema.json, and docs/stories/choice-widget.md at 1f4abf0e)."""
_CHOICE_VALIDATOR: Any = None

KINDS = ("prose", "heading", "code", "template", "list", "kv", "banner", "choice", "media")
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


def _q(text: Any) -> str:
    return '"' + str(text).replace("\\", "\\\\").replace('"', '\\"') + '"'


def _template(text: Any) -> bool:
    return isinstance(text, str) and ("{{" in text or "{%" in text)


def element_problem(element: Any) -> str | None:
    """Why one element of an element list does not decode (toElement), or None."""
    if not isinstance(element, LMap):
        return "must be a string, an array of elements, or an {extends, blocks} mapping"
    kinds = [key for key in KINDS if key in element and element[key] is not None]
    if not kinds:
        return "element has no kind (expected one of prose / heading / list / kv / code / template / banner / choice)"
    if len(kinds) > 1:
        return f"element has multiple kinds set ({', '.join(kinds)}); each element must declare exactly one"
    kind = kinds[0]
    body = element[kind]
    if kind in ("list", "kv", "banner") and isinstance(body, LMap) and body.get("when") is not None:
        return (f"{kind} element: `when:` must be a sibling of `{kind}:` (element level), not nested inside the {kind} "
                f"body — a nested guard is ignored. Dedent the `when:` to align with `{kind}:`.")
    if kind == "list" and isinstance(body, LMap):
        for item in body.get("items") or () if isinstance(body.get("items"), LSeq) else ():
            if isinstance(item, str) or item is None or isinstance(item, (int, float, bool)):
                if not str(item if item is not None else "").strip():
                    return "list item: empty string is not allowed"
                continue
            if not isinstance(item, LMap) or set(item) - {"label", "hint", "when"}:
                return "list item: must be a string or {label, hint?, when?} object"
            if not str(item.get("label") or "").strip():
                return "list item: label is required"
    return None


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


_CHOICE_SEEN: dict[bytes, str | None] = {}
"""Answers by the body's JSON: a story's imports bring the same views into many stories."""


def choice_shape_problem(body: Any) -> str | None:
    """Why a choice element's body does not have the choice schema's shape (validateChoice), or None."""
    plain = _plain(body)
    try:
        key = orjson.dumps(plain)
    except (TypeError, orjson.JSONEncodeError):
        return _choice_shape_problem(plain)
    if key not in _CHOICE_SEEN:
        if len(_CHOICE_SEEN) > 4096:
            _CHOICE_SEEN.clear()
        _CHOICE_SEEN[key] = _choice_shape_problem(plain)
    return _CHOICE_SEEN[key]


_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _s(value: Any, min_length: int = 0) -> bool:
    return type(value) is str and len(value) >= min_length


def _opt_s(body: dict, *keys: str) -> bool:
    return all(key not in body or type(body[key]) is str for key in keys)


def _name(value: Any) -> bool:
    return type(value) is str and _IDENT.fullmatch(value) is not None


def _nat(value: Any, least: int) -> bool:
    return type(value) is int and value >= least


def _strs(value: Any) -> bool:
    return type(value) is list and all(type(item) is str for item in value)


def _keys(body: Any, allowed: frozenset[str], required: tuple[str, ...]) -> bool:
    return type(body) is dict and body.keys() <= allowed and all(key in body for key in required)


_SINGLE = frozenset({"mode", "prompt", "when", "items"})
_SINGLE_ITEM = frozenset({"label", "hint", "intent", "slots", "when", "param"})
_PARAM = frozenset({"slot", "type", "placeholder", "values", "required"})
_MULTI = frozenset({"mode", "prompt", "when", "intent", "slot", "min", "max", "items"})
_MULTI_ITEM = frozenset({"value", "label", "hint", "when"})
_FORM = frozenset({"mode", "prompt", "when", "intent", "template", "fields"})
_FIELD = frozenset({"type", "hint", "placeholder", "unit", "values", "default", "min", "max", "required", "readonly",
                    "expr", "when"})
_SCALARS = (str, int, float, bool)


def _single_item(item: Any) -> bool:
    if not _keys(item, _SINGLE_ITEM, ("label", "intent")) or not _s(item["label"], 1) or not _name(item["intent"]):
        return False
    if not _opt_s(item, "hint", "when") or ("slots" in item and type(item["slots"]) is not dict):
        return False
    param = item.get("param", {"slot": "-", "type": "string"})
    return (_keys(param, _PARAM, ("slot", "type")) and _s(param["slot"], 1)
            and param["type"] in ("string", "int", "enum") and _opt_s(param, "placeholder")
            and ("values" not in param or _strs(param["values"])) and (param["type"] != "enum" or "values" in param)
            and ("required" not in param or type(param["required"]) is bool))


def _field(field: Any) -> bool:
    return (_keys(field, _FIELD, ("type",)) and type(field["type"]) is str
            and field["type"] in ("string", "int", "float", "bool", "enum")
            and _opt_s(field, "hint", "placeholder", "unit", "expr", "when")
            and ("values" not in field or _strs(field["values"]))
            and all(key not in field or type(field[key]) in _SCALARS for key in ("default", "min", "max"))
            and all(key not in field or type(field[key]) is bool for key in ("required", "readonly"))
            and (field["type"] != "enum" or "values" in field)
            and (field.get("readonly") is not True or "expr" in field))


def _surely_choice_shaped(plain: Any) -> bool:
    """True only when `plain` certainly passes CHOICE_SHAPE (checked by hand, exactly and no looser:
    a body this cannot vouch for goes to the schema, which also words what is wrong). Most bodies are
    well shaped, and this spares them jsonschema (its import and its walk were a tenth of a cold load)."""
    mode = plain.get("mode") if type(plain) is dict else None
    if mode == "single" and type(mode) is str:
        items = plain.get("items")
        return (_keys(plain, _SINGLE, ("mode", "items")) and _opt_s(plain, "prompt", "when")
                and type(items) is list and len(items) >= 1 and all(_single_item(item) for item in items))
    if mode == "multi" and type(mode) is str:
        items = plain.get("items")
        return (_keys(plain, _MULTI, ("mode", "intent", "slot", "items")) and _opt_s(plain, "prompt", "when")
                and _name(plain["intent"]) and _s(plain["slot"], 1)
                and ("min" not in plain or _nat(plain["min"], 0)) and ("max" not in plain or _nat(plain["max"], 1))
                and type(items) is list and len(items) >= 1
                and all(_keys(item, _MULTI_ITEM, ("value",)) and _s(item["value"], 1)
                        and _opt_s(item, "label", "hint", "when") for item in items))
    if mode == "form" and type(mode) is str:
        fields = plain.get("fields")
        return (_keys(plain, _FORM, ("mode", "intent", "template", "fields")) and _opt_s(plain, "prompt", "when")
                and _name(plain["intent"]) and _s(plain["template"], 1)
                and type(fields) is dict and len(fields) >= 1 and all(_field(field) for field in fields.values()))
    return False


def _choice_shape_problem(plain: Any) -> str | None:
    if _surely_choice_shaped(plain):
        return None
    global _CHOICE_VALIDATOR
    if _CHOICE_VALIDATOR is None:
        import jsonschema

        _CHOICE_VALIDATOR = jsonschema.Draft202012Validator(CHOICE_SHAPE)
    errors = sorted(_CHOICE_VALIDATOR.iter_errors(plain), key=lambda e: (len(e.absolute_path), e.message))
    leaves = [error for error in errors if not error.context] or errors
    if not leaves:
        return None
    error = leaves[0]
    where = "/" + "/".join(str(part) for part in error.absolute_path)
    message = error.message
    if error.validator == "required":
        missing = [name for name in error.validator_value if name not in (error.instance or {})]
        message = "missing property " + ", ".join(f"'{name}'" for name in missing[:1])
    return f"choice: {where}: {message}"


def _elements(view: Any) -> tuple[list[Any], dict[str, list[Any]]]:
    if isinstance(view, LSeq):
        return list(view), {}
    if isinstance(view, LMap):
        blocks = view.get("blocks")
        if isinstance(blocks, LMap):
            return [], {str(name): list(items) for name, items in blocks.items() if isinstance(items, LSeq)}
    return [], {}


def _kind(element: Any) -> str | None:
    if not isinstance(element, LMap):
        return None
    kinds = [key for key in KINDS if key in element and element[key] is not None]
    return kinds[0] if len(kinds) == 1 else None


def _element_problem(kind: str, body: Any) -> str | None:
    """ViewElement.validate (view_element.go:588-630), the choice's schema aside."""
    if kind == "list":
        items = body.get("items") if isinstance(body, LMap) else None
        if not items:
            return "list requires items: with at least one entry"
    elif kind == "kv":
        pairs = body.get("pairs") if isinstance(body, LMap) else None
        if not pairs:
            return "kv requires pairs: with at least one entry"
        for index, (key, value) in enumerate(pairs.items() if isinstance(pairs, LMap) else ()):
            if value is not None and not isinstance(value, str):
                kind_name = {bool: "bool", int: "uint64", float: "float64"}.get(type(value), "[]interface {}" if
                                                                                 isinstance(value, LSeq) else
                                                                                 "yaml.MapSlice")
                if isinstance(value, int) and not isinstance(value, bool) and value < 0:
                    kind_name = "int64"
                return f"kv pair {index} ({key}): value must be a string (got {kind_name})"
    elif kind == "banner":
        text = body.get("text") if isinstance(body, LMap) else None
        if not str(text or "").strip():
            return "banner requires a non-empty text"
    elif kind == "media":
        handle = body.get("handle") if isinstance(body, LMap) else None
        if not str(handle or "").strip():
            return "media requires a non-empty handle"
    elif kind == "choice":
        return choice_shape_problem(body)
    return None


def view_problems(view: Any, global_intents: Mapping[str, Any],
                  scope_intents: Mapping[str, Any]) -> tuple[str | None, list[tuple[int, str]]]:
    """(View.Validate's error, or None; when it passes, (index, problem) for each choice element whose
    cross-references do not resolve): kitsoki's texts, without the leading `state "x": `."""
    elements, blocks = _elements(view)
    choices = 0
    for index, element in enumerate(elements):
        kind = _kind(element)
        if kind is None:
            continue  # refused when the file was decoded
        if kind == "choice":
            choices += 1
            if choices > 1:
                return f"view[{index}] (choice): only one choice element per view is allowed", []
        problem = _element_problem(kind, element[kind])
        if problem:
            return f"view[{index}] ({kind}): {problem}", []
    for name in blocks:
        for index, element in enumerate(blocks[name]):
            kind = _kind(element)
            if kind == "choice":
                return f"blocks.{name}[{index}] (choice): choice elements are not allowed inside extends/blocks views", []
            problem = _element_problem(kind, element[kind]) if kind else None
            if problem:
                return f"blocks.{name}[{index}] ({kind}): {problem}", []
    out = []
    for index, element in enumerate(elements):
        if _kind(element) == "choice":
            problem = choice_cross_ref(element["choice"], global_intents, scope_intents)
            if problem:
                out.append((index, problem))
    return None, out


def _slots(intent: Any) -> LMap:
    slots = intent.get("slots") if isinstance(intent, LMap) else None
    return slots if isinstance(slots, LMap) else LMap()


def choice_cross_ref(body: Any, global_intents: Mapping[str, Any], scope_intents: Mapping[str, Any]) -> str | None:
    """validateChoiceCrossRefs (choice.go:738)."""
    if not isinstance(body, LMap):
        return None

    def resolve(name: Any) -> Any:
        if not isinstance(name, str) or not name:
            return None
        if name in scope_intents:
            return scope_intents[name] if scope_intents[name] is not None else LMap()
        if name in global_intents:
            return global_intents[name] if global_intents[name] is not None else LMap()
        return None

    mode = body.get("mode") if isinstance(body.get("mode"), str) and body.get("mode") else "single"
    items = [item for item in body.get("items") or ()] if isinstance(body.get("items"), LSeq) else []
    if mode == "single":
        for index, item in enumerate(items):
            if not isinstance(item, LMap):
                continue
            name = item.get("intent") if isinstance(item.get("intent"), str) else ""
            intent = resolve(name)
            if intent is None:
                return f"items[{index}]: intent {_q(name)} not declared in state or global intents"
            slots, bound = _slots(intent), item.get("slots") if isinstance(item.get("slots"), LMap) else LMap()
            for key, value in bound.items():
                if key not in slots:
                    return f"items[{index}].slots: key {_q(key)} is not a declared slot of intent {_q(name)}"
                slot = slots[key] if isinstance(slots[key], LMap) else LMap()
                values = [str(v) for v in slot.get("values") or ()] if isinstance(slot.get("values"), LSeq) else []
                if slot.get("type") == "enum" and values and isinstance(value, str) and not _template(value) \
                        and value not in values:
                    return f"items[{index}].slots.{key}: value {_q(value)} is not in the slot's enum values"
            param = item.get("param")
            if isinstance(param, LMap):
                slot_name = param.get("slot") if isinstance(param.get("slot"), str) else ""
                if slot_name not in slots:
                    return f"items[{index}].param.slot: {_q(slot_name)} is not a declared slot of intent {_q(name)}"
                if slot_name in bound:
                    return (f"items[{index}].param.slot: {_q(slot_name)} is already pre-bound in items[{index}].slots "
                            "— choose one or the other")
    elif mode == "multi":
        name = body.get("intent") if isinstance(body.get("intent"), str) else ""
        intent = resolve(name)
        if intent is None:
            return f"intent {_q(name)} not declared in state or global intents"
        slot = body.get("slot") if isinstance(body.get("slot"), str) else ""
        if slot not in _slots(intent):
            return f"slot {_q(slot)} is not a declared slot of intent {_q(name)}"
        for index, item in enumerate(items):
            if isinstance(item, LMap) and _template(item.get("value")):
                return f"items[{index}].value: must be a string literal (templated values are not allowed in multi mode)"
    elif mode == "form":
        name = body.get("intent") if isinstance(body.get("intent"), str) else ""
        intent = resolve(name)
        if intent is None:
            return f"intent {_q(name)} not declared in state or global intents"
        fields = body.get("fields") if isinstance(body.get("fields"), LMap) else LMap()
        for field_name, field in fields.items():
            if isinstance(field, LMap) and field.get("readonly") is True:
                continue
            if field_name not in _slots(intent):
                return f"fields.{field_name}: not a declared slot of intent {_q(name)}"
        template = body.get("template") if isinstance(body.get("template"), str) else ""
        for match in _PLACEHOLDER.finditer(template):
            if match.group(1) not in fields:
                return f"template references {{{match.group(1)}}} but no fields.{match.group(1)} is declared"
    return None
