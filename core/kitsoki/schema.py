"""kitsoki's app.yaml shape, decoded strictly as kitsoki decodes it (goccy/go-yaml with Strict()).

kitsoki unmarshals every app.yaml and room file into its AppDef struct with unknown fields
refused, so a typo (`descripton:`) is a load error, not a silently ignored key; and each field
has a Go type: a string field takes any scalar (`description: 5` is "5"), a bool only true/false,
an int a whole number (2.0 too), `on:` a map of LISTS of transitions. The table below is that
struct tree (internal/app/types.go at 1f4abf0e), written as data; `check_app` walks a located tree
against it and reports each problem at its file:line:col with goccy's wording.

Fields kitsoki decodes through its own lenient unmarshalers are checked only as deep as kitsoki
checks them: a world variable (`{type, default, values}` or any value as its default), a view
(a string, an element list, or `{extends, blocks}` / `{template_file}`), `agent_off_ramp`
(true/false or a mapping), an agent's `bash_profile`, a `routing:` block (strict, typed).
"""

from __future__ import annotations

from typing import Any

from core.kitsoki.parse import LMap, LSeq
from core.kitsoki.view_checks import element_problem
from core.kitsoki.yamlread import ConfigIssue

# Field kinds: "str", "bool", "int", "float", "any", a struct name (a key of STRUCTS), or a
# ("list", kind) / ("map", kind) pair. "lenient" fields are decoded by kitsoki's own unmarshalers.
S, B, I, F, A = "str", "bool", "int", "float", "any"
VIEW, VARDEF, LENIENT = "view", "vardef", "lenient"


def L(kind: Any) -> tuple[str, Any]:  # noqa: N802 - reads like the Go type []X
    return ("list", kind)


def M(kind: Any) -> tuple[str, Any]:  # noqa: N802 - reads like map[string]X
    return ("map", kind)


STRUCTS: dict[str, dict[str, Any]] = {
    "AppDef": {
        "app": "AppMeta", "world": M(VARDEF), "intents": M("Intent"), "root": A, "states": M("State"),
        "off_path": "OffPathDef", "hosts": L(S), "agent_plugins": M("AgentPluginDecl"),
        "providers": M("ProviderDecl"), "proposals": M("ProposalKind"), "include": L(S),
        "phase_templates": M("PhaseTemplate"), "phases": "PhasesBlock", "checkpoint_intents": M("Intent"),
        "meta_modes": M("MetaModeDef"), "decider": "DeciderSpec", "agents": M("AgentDecl"),
        "imports": M("ImportDef"), "exits": M("ExitDef"), "exports": "ExportsBlock",
        "host_interfaces": M("HostInterfaceDef"), "prompts": "PromptsConfig", "routing": "RoutingConfig",
    },
    "AppMeta": {"id": S, "version": S, "title": S, "author": S, "license": S, "context": S, "context_path": S},
    "State": {
        "type": S, "mode": S, "description": S, "view": VIEW, "terminal": B, "decider": S, "write_mode": S,
        "initial": S, "states": M("State"), "on": M(L("Transition")), "on_enter": L("Effect"),
        "intents": M("Intent"), "menu": L(S), "default_intent": S, "relevant_world": L(S), "footer": S,
        "relevant_slots": L(S), "timeout": "TimeoutDef", "agent_off_ramp": LENIENT,
        "contextual_routing": "ContextualRoutingConfig", "transcript": S, "theme": S, "intercept_drive": S,
    },
    "Transition": {
        "target": S, "when": S, "default": B, "effects": L("Effect"), "guard_hint": S, "view": VIEW,
        "emit": L(S), "push_history": B,
    },
    "Effect": {
        "when": S, "set": M(A), "increment": M(I), "say": S, "invoke": S, "id": S, "with": M(A),
        "bind": M(S), "on_error": S, "emit": S, "background": B, "once": B, "on_complete": L("Effect"),
        "target": S, "emit_intent": S, "slots": M(A), "effects": L("Effect"), "agent": S,
        "selection": "AgentSelection",
    },
    "AgentSelection": {"profile": S, "model": S, "effort": S, "evidence": S, "fallback_profile": S},
    "Intent": {
        "title": S, "description": S, "examples": L(S), "priority": I, "hidden": B, "slots": M("Slot"),
        "synonyms": L(S),
    },
    "Slot": {
        "type": S, "required": B, "default": A, "values": L(S), "description": S, "examples": L(S),
        "format_hint": S, "prompt": S, "validator": S, "format": S, "synonyms": M(L(S)),
    },
    "TimeoutDef": {"after": S, "target": S},
    "ContextualRoutingConfig": {
        "enabled": B, "help_chat": S, "room_chat": S, "meta_chat": S, "pending_plan_path": S,
        "plan_accept_intent": S, "plan_refine_intent": S,
    },
    "OffPathDef": {"trigger": S, "banner": S, "return": S, "persona": S, "agent": S},
    "AgentPluginDecl": {
        "plugin": S, "command": S, "args": L(S), "endpoint": S, "tool": S, "env": M(S), "headers": M(S),
        "model": S, "grammar": B, "port": I, "server_bin": S,
    },
    "ProviderDecl": {"model": S, "effort": S, "env": M(S)},
    "ProposalKind": {
        "schema": M(S), "draft": "ProposalStep", "refine": "ProposalStep", "execute": "ProposalExecute",
        "views": M(S), "policy": "ProposalPolicy",
    },
    "ProposalStep": {"prompt": S},
    "ProposalExecute": {
        "invoke": S, "with": M(A), "repeatable": B, "on_success": S, "background": B, "on_complete": L("Effect"),
    },
    "ProposalPolicy": {"auto_accept_if": S, "require_confirm": B},
    "PhaseTemplate": {"parameters": M("PhaseTemplateParam"), "states": M("State")},
    "PhaseTemplateParam": {"type": S, "required": B, "default": A},
    "PhasesBlock": {"template": S, "graph": M(M(A))},
    "MetaModeDef": {
        "trigger": S, "group": S, "default": B, "label": S, "banner": S, "agent": S, "persist": B, "cwd": S,
        "tools": L(S), "return": "MetaReturnDef",
    },
    "MetaReturnDef": {"message": S, "intent": S},
    "DeciderSpec": {"agent": S, "schema": S, "prompt": S, "threshold": F},
    "AgentDecl": {
        "system_prompt": S, "system_prompt_path": S, "model": S, "tools": L(S), "cwd": S, "effort": S,
        "provider": S, "inherit_claude_default": B, "bash_profile": LENIENT, "external_side_effect": B,
    },
    "ImportDef": {
        "source": S, "version": S, "entry": S, "exits": M("ImportExit"), "world_in": M(S), "hosts": S,
        "intents": "ImportIntents", "overrides": "ImportOverrides", "host_bindings": M(S),
    },
    "ImportExit": {"to": S, "set": M(A)},
    "ImportIntents": {"export": L(S), "import": L(S)},
    "ImportOverrides": {"states": M("State"), "intents": M("Intent"), "prompts": M(S)},
    "ExitDef": {"description": S, "requires": L(S)},
    "ExportsBlock": {"intents": L(S)},
    "HostInterfaceDef": {"description": S, "operations": M("HostInterfaceOp"), "default": S},
    "HostInterfaceOp": {"input": M(A), "output": M(A)},
    "PromptsConfig": {"shared": L(S), "overlay": S},
    "RoutingConfig": {
        "enabled": B, "semantic_high_bar": F, "semantic_mid_bar": F, "cache_enabled": B, "cache_max_age": S,
        "stopwords_extra": L(S), "cache_cap": I, "cache_trim_fraction": F, "revalidate_strikes": I,
        "confidence_decay": B, "extract_llm_on_no_match": B, "extract_llm_agent": S,
        "free_form_fallback": "FreeFormFallbackConfig", "embedding": "EmbedConfig",
    },
    "FreeFormFallbackConfig": {"state": S, "intent": S},
    "EmbedConfig": {"endpoint": S, "model": S, "cache_dir": S, "confident_bar": F, "margin": F},
}
"""Go struct -> yaml key -> kind (internal/app/types.go)."""

_VIEW_ELEMENT_KINDS = ("prose", "heading", "code", "template", "list", "kv", "banner", "choice", "media")


def _camel(key: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in key.split("_"))


def _go_kind(value: Any) -> str:
    """How goccy names a decoded value in its 'cannot unmarshal X' errors."""
    if isinstance(value, LMap) or isinstance(value, dict):
        return "map[string]interface {}"
    if isinstance(value, (LSeq, list)):
        return "[]interface {}"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "uint64" if value >= 0 else "int64"
    if isinstance(value, float):
        return "float64"
    return "string"


class _Check:
    def __init__(self) -> None:
        self.issues: list[ConfigIssue] = []

    def report(self, where: tuple[str, int, int], key: str, message: str) -> None:
        self.issues.append(ConfigIssue(file=where[0], line=where[1], column=where[2], key=key, message=message))

    def struct(self, value: Any, name: str, where: tuple[str, int, int], path: str, owner: str) -> None:
        if value is None:
            return
        if not isinstance(value, LMap):
            shape = "sequence" if isinstance(value, LSeq) else "string"
            self.report(where, path, f"{shape} was used where mapping is expected")
            return
        fields = STRUCTS[name]
        for key, child in value.items():
            kind = fields.get(key)
            child_path = f"{path}.{key}" if path else key
            if kind is None:
                self.report(value.key_at(key), child_path, f'unknown field "{key}"')
                continue
            child_owner = f"AppDef.{_camel(key)}" if owner == "AppDef" else owner
            self.field(child, kind, value.value_at(key), child_path, child_owner)

    def field(self, value: Any, kind: Any, where: tuple[str, int, int], path: str, owner: str) -> None:
        if isinstance(kind, tuple):
            shape, inner = kind
            if value is None:
                return
            if shape == "list":
                if not isinstance(value, LSeq):
                    got = "mapping" if isinstance(value, LMap) else "string"
                    self.report(where, path, f"{got} was used where sequence is expected")
                    return
                for index, item in enumerate(value):
                    self.field(item, inner, value.item_at(index), f"{path}[{index}]", owner)
                return
            if not isinstance(value, LMap):
                got = "sequence" if isinstance(value, LSeq) else "string"
                self.report(where, path, f"{got} was used where mapping is expected")
                return
            for key, child in value.items():
                self.field(child, inner, value.value_at(key), f"{path}.{key}", owner)
            return
        if kind in STRUCTS:
            self.struct(value, kind, where, path, owner)
        elif kind == S:
            if isinstance(value, (LMap, LSeq)):
                self.report(where, path, f"cannot unmarshal {_go_kind(value)} into Go struct field {owner} of type string")
        elif kind == B:
            if value is not None and not isinstance(value, bool):
                self.report(where, path, f"cannot unmarshal {_go_kind(value)} into Go struct field {owner} of type bool")
        elif kind == I:
            if value is None or isinstance(value, bool):
                if isinstance(value, bool):
                    self.report(where, path, f"cannot unmarshal bool into Go struct field {owner} of type int")
            elif isinstance(value, float):
                if not value.is_integer():
                    self.report(where, path, f"cannot unmarshal float64 into Go struct field {owner} of type int")
            elif not isinstance(value, int):
                self.report(where, path, f"cannot unmarshal {_go_kind(value)} into Go struct field {owner} of type int")
        elif kind == F:
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
                self.report(where, path, f"cannot unmarshal {_go_kind(value)} into Go struct field {owner} of type float64")
        elif kind == VIEW:
            self.view(value, where, path)
        elif kind == VARDEF:
            if isinstance(value, LMap) and ("type" in value or "default" in value or "values" in value):
                if "type" in value and isinstance(value["type"], (LMap, LSeq)):
                    self.report(value.value_at("type"), f"{path}.type",
                                f"cannot unmarshal {_go_kind(value['type'])} into Go struct field of type string")
                if "values" in value and value["values"] is not None and not isinstance(value["values"], LSeq):
                    self.report(value.value_at("values"), f"{path}.values", "string was used where sequence is expected")
        # A and LENIENT: any value

    def view(self, value: Any, where: tuple[str, int, int], path: str) -> None:
        """kitsoki's View: a string; `{extends, blocks}` or `{template_file}`; else a list of elements."""
        if value is None or not isinstance(value, (LMap, LSeq)):
            return
        if isinstance(value, LMap):
            if set(value) <= {"extends", "blocks", "template_file"} and (value.get("extends") or value.get("template_file")):
                if value.get("template_file") and (value.get("extends") or value.get("blocks")):
                    self.report(where, path, "view: template_file is mutually exclusive with extends/blocks")
                    return
                blocks = value.get("blocks")
                for name, items in (blocks.items() if isinstance(blocks, LMap) else ()):
                    for index, element in enumerate(items if isinstance(items, LSeq) else ()):
                        problem = element_problem(element)
                        if problem:
                            self.report(where, path, f"blocks.{name}[{index}]: {problem}")
                            return
                return
            self.report(where, path, "view: must be a string, an array of elements, or an {extends, blocks} mapping")
            return
        for index, element in enumerate(value):
            if not isinstance(element, LMap):
                self.report(value.item_at(index), f"{path}[{index}]",
                            "view: must be a string, an array of elements, or an {extends, blocks} mapping")
                return
            problem = element_problem(element)
            if problem:
                self.report(value.item_at(index), f"{path}[{index}]", f"view[{index}]: {problem}")
                return


def check_app(document: Any, file: str) -> list[ConfigIssue]:
    """Every place `document` (an app.yaml or room file) does not decode into kitsoki's AppDef."""
    check = _Check()
    if not isinstance(document, LMap):
        shape = "sequence" if isinstance(document, LSeq) else "string"
        check.report((file, 1, 1), "", f"{shape} was used where mapping is expected (an app.yaml is a mapping: "
                                       "app, intents, states, ...)")
        return check.issues
    check.struct(document, "AppDef", (file, document.line, document.column), "", "AppDef")
    return check.issues
