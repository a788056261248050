"""kitsoki's `host.starlark.run` (internal/host/starlark_run.go, internal/host/starlark/*.go) in a flow.

A flow reaches the real handler when it sets `starlark_http_cassette:` or
`starlark_inspect_cassette:` (the handler is registered and wrapped with the cassette's replay
client or inspector) or `host_bindings:` (every builtin is registered). The handler reads the
script (`script:`, relative to the app's folder, else the cwd) and its sidecar `<script>.yaml`
(typed inputs and outputs), validates `with.inputs`, runs `main(ctx)` in the sandbox and validates
the returned dict. `ctx.http` is served by the HTTP cassette, `ctx.fs` / `ctx.probe` by the
inspect cassette; without one kitsoki would reach the network or the working tree, and the runner
declines. Answers: the outputs (plus `__http_exchanges` / `__inspections` summaries), a domain
error `host.starlark.run: …` (the effect's on_error), or an infrastructure error (missing files).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import yaml

from core.flows.starlark import load
from core.flows.starlark.values import (
    Builtin,
    Dict,
    EvalError,
    Fail,
    List,
    Object,
    Struct,
    Unsure,
    type_name,
)
from core.flows.values import GoInt, go_type
from core.flows.workdir import in_workdir

RESERVED_HTTP = "__http_exchanges"
RESERVED_INSPECT = "__inspections"
_TYPES = ("", "any", "string", "int", "number", "bool", "object", "list")


class HostAnswerError(Exception):
    """An infrastructure error (kitsoki's handler returned a Go error)."""


class StarlarkDeclined(Exception):
    """The runner cannot say what kitsoki's handler would answer."""


# --- cassettes ------------------------------------------------------------------------------


def _read_yaml(path: Path, what: str) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
        try:  # libyaml's scanner, the same constructors; a file it refuses is read again for PyYAML's own words
            data = yaml.load(text, Loader=yaml.CSafeLoader)
        except yaml.YAMLError:
            data = yaml.safe_load(text)
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise StarlarkDeclined(f"{what} {path.name} does not load ({exc}; kitsoki stops the run)") from None
    if not isinstance(data, dict):
        raise StarlarkDeclined(f"{what} {path.name} is not a mapping (kitsoki stops the run)")
    return data


def _text(value: Any, where: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise StarlarkDeclined(f"{where} is not a string (kitsoki's decoder refuses it)")
    return value


class HttpReplay:
    """ReplayClient over a `kind: http_cassette` (replay.go)."""

    def __init__(self, path: Path) -> None:
        data = _read_yaml(path, "starlark_http_cassette")
        mode = os.environ.get("KITSOKI_HTTP_CASSETTE_RECORD") or _text(data.get("record_mode"), "record_mode")
        if mode not in ("", "none"):
            raise StarlarkDeclined(f"starlark_http_cassette record_mode {mode} (recording reaches the network)")
        self.match_on = [str(field) for field in data.get("match_on") or []] or ["method", "url"]
        self.repeatable = bool(data.get("allow_playback_repeats"))
        self.episodes: list[dict[str, Any]] = []
        for index, raw in enumerate(data.get("exchanges") or []):
            if not isinstance(raw, dict):
                raise StarlarkDeclined(f"starlark_http_cassette exchange {index} is not a mapping")
            response = raw.get("response") or {}
            status = response.get("status", 0)
            if not isinstance(status, int) or isinstance(status, bool):
                raise StarlarkDeclined(f"starlark_http_cassette exchange {index} status is not a number")
            headers = response.get("headers") or {}
            if not isinstance(headers, dict) or not all(isinstance(v, str) for v in headers.values()):
                raise StarlarkDeclined(f"starlark_http_cassette exchange {index} headers are not strings")
            request = raw.get("request")
            match = raw.get("match") or {}
            if request is not None and not isinstance(request, dict) or not isinstance(match, dict):
                raise StarlarkDeclined(f"starlark_http_cassette exchange {index} request/match is not a mapping")
            if match.get("url_pattern"):
                raise StarlarkDeclined("starlark_http_cassette url_pattern (a Go regexp)")
            self.episodes.append({
                "request": None if request is None else {k: request.get(k) for k in ("method", "url", "headers", "body")},
                "match": {k: _text(match.get(k), f"match.{k}") for k in ("method", "url")},
                "status": status, "headers": {str(k): v for k, v in headers.items()},
                "body": _text(response.get("body"), "response.body"), "replay": _text(raw.get("replay"), "replay"),
                "consumed": False})
        self.exchanges: list[dict[str, Any]] = []

    def do(self, method: str, url: str, headers: dict[str, str], body: str | None) -> dict[str, Any]:
        for episode in self.episodes:
            if episode["consumed"] and episode["replay"] != "any" and not self.repeatable:
                continue
            if self._matches(episode, method, url, headers, body):
                episode["consumed"] = True
                self.exchanges.append({"method": method, "url": url, "status": GoInt(episode["status"])})
                return episode
        keys = []
        for episode in self.episodes:
            if episode["request"] is not None:
                keys.append(f"{episode['request'].get('method') or '*'} {episode['request'].get('url') or ''}")
            else:
                keys.append(f"{episode['match']['method'] or '*'} {episode['match']['url']}")
        raise Fail(f"starlark http replay: no episode matched {method} {url}; available: {', '.join(keys)}")

    def _matches(self, episode: dict[str, Any], method: str, url: str, headers: dict[str, str], body: str | None) -> bool:
        request = episode["request"]
        if request is None:
            match = episode["match"]
            return (not match["method"] or match["method"].lower() == method.lower()) and \
                (not match["url"] or match["url"] == url)
        for field in self.match_on:
            field = field.lower()
            recorded_method, recorded_url = _text(request.get("method"), "method"), _text(request.get("url"), "url")
            if field == "method":
                if recorded_method and recorded_method.lower() != method.lower():
                    return False
            elif field in ("url", "uri"):
                if recorded_url and recorded_url != url:
                    return False
            elif field == "body":
                if body is None:
                    raise StarlarkDeclined("matching a JSON request body Go encodes")
                if _text(request.get("body"), "body") != body:
                    return False
            elif field == "headers":
                for key, value in (request.get("headers") or {}).items():
                    if headers.get(str(key)) != value:
                        return False
            else:
                raise StarlarkDeclined(f"starlark_http_cassette match_on {field}")
        return True


class InspectReplay:
    """ReplayInspector over an inspect cassette (inspect_replay.go)."""

    def __init__(self, path: Path) -> None:
        data = _read_yaml(path, "starlark_inspect_cassette")
        self.interactions = []
        for index, raw in enumerate(data.get("interactions") or []):
            if not isinstance(raw, dict):
                raise StarlarkDeclined(f"starlark_inspect_cassette interaction {index} is not a mapping")
            exit_code = raw.get("exit", 0) or 0
            if not isinstance(exit_code, int) or isinstance(exit_code, bool):
                raise StarlarkDeclined(f"starlark_inspect_cassette interaction {index} exit is not a number")
            self.interactions.append({"op": _text(raw.get("op"), "op"), "target": _text(raw.get("target"), "target"),
                                      "exit": exit_code, "out": _text(raw.get("out"), "out"), "consumed": False})
        self.inspections: list[dict[str, Any]] = []

    def take(self, op: str, target: str) -> dict[str, Any]:
        for item in self.interactions:
            if not item["consumed"] and item["op"] == op and item["target"] == target:
                item["consumed"] = True
                return item
        keys = ", ".join(f"{item['op']} {item['target']}" for item in self.interactions)
        raise Fail(f"starlark inspect replay: no interaction matched {op} {target}; available: {keys}")

    def note(self, op: str, target: str, status: str) -> None:
        self.inspections.append({"op": op, "target": target, "status": status})


# --- ctx --------------------------------------------------------------------------------------


def _unpack(name: str, args: list, kwargs: list, names: list[str], required: int) -> list[Any]:
    from core.flows.starlark.library import _args

    return _args(name, args, kwargs, names, required)


def _go_string(name: str, value: Any) -> str:
    if not isinstance(value, str):
        raise EvalError(f"{name}: got {type_name(value)}, want string")
    return value


def to_starlark(value: Any) -> Any:
    """goToStarlark over the runner's values (Go types as core.flows.values models them)."""
    kind = go_type(value)
    if value is None or isinstance(value, (bool, str, float)):
        return value
    if isinstance(value, int):
        if kind not in ("int", "int64"):
            raise StarlarkDeclined(f"an integer kitsoki holds as {kind} reaching the script "
                                   "(its conversion depends on where the value was decoded)")
        return int(value)
    if isinstance(value, (list, tuple)):
        return List([to_starlark(item) for item in value])
    if isinstance(value, dict):
        out = Dict()
        for key in sorted(value, key=lambda k: str(k).encode("utf-8")):
            out.set(str(key), to_starlark(value[key]))
        return out
    raise StarlarkDeclined(f"a {type(value).__name__} value reaching the script")


class WorldProxy(Object):
    type_name = "ctx.world"

    def __init__(self, snapshot: dict[str, Any]) -> None:
        self.snapshot = snapshot

    def attr(self, name: str) -> Any:
        if name == "get":
            return Builtin("ctx.world.get", self._get)
        return super().attr(name)

    def attr_names(self) -> list[str]:
        return ["get"]

    def _get(self, args: list, kwargs: list) -> Any:
        (key,) = _unpack("ctx.world.get", args, kwargs, ["key"], 1)
        key = _go_string("ctx.world.get", key)
        return to_starlark(self.snapshot[key]) if key in self.snapshot else None


class Response(Object):
    type_name = "http.response"

    def __init__(self, episode: dict[str, Any]) -> None:
        self.episode = episode

    def truth(self) -> bool:
        return 200 <= self.episode["status"] < 300

    def text(self) -> str:
        return f"<http response {self.episode['status']}>"

    def attr_names(self) -> list[str]:
        return ["status", "headers", "text", "json"]

    def attr(self, name: str) -> Any:
        if name == "status":
            return int(self.episode["status"])
        if name == "headers":
            out = Dict()
            for key in sorted(self.episode["headers"]):
                out.set(key, self.episode["headers"][key])
            return out
        if name == "text":
            return Builtin("http.response.text", lambda args, kwargs: self.episode["body"])
        if name == "json":
            return Builtin("http.response.json", self._json)
        return super().attr(name)

    def _json(self, args: list, kwargs: list) -> Any:
        def no_constant(name: str) -> Any:
            raise StarlarkDeclined("http.response.json of a body Go's decoder refuses")

        try:  # encoding/json into `any`: every number a float64, objects with sorted keys
            value = json.loads(self.episode["body"], parse_int=float, parse_constant=no_constant)
        except ValueError:
            raise StarlarkDeclined("http.response.json of a body that is not JSON (Go words the error)") from None
        return to_starlark(value)


class HttpProxy(Object):
    type_name = "ctx.http"

    def __init__(self, replay: HttpReplay | None) -> None:
        self.replay = replay

    def attr_names(self) -> list[str]:
        return ["get", "post"]

    def attr(self, name: str) -> Any:
        if name in ("get", "post"):
            return Builtin(f"ctx.http.{name}", lambda args, kwargs: self._do(name, args, kwargs))
        return super().attr(name)

    def _do(self, name: str, args: list, kwargs: list) -> Response:
        if name == "get":
            url, headers = _unpack("ctx.http.get", args, kwargs, ["url", "headers"], 1)
            body: str | None = ""
        else:
            url, raw_body, headers = _unpack("ctx.http.post", args, kwargs, ["url", "body", "headers"], 1)
            if raw_body is None:
                body = ""
            elif isinstance(raw_body, str):
                body = raw_body
            elif isinstance(raw_body, Dict):
                body = None  # json.Marshal's bytes: only matched when the cassette matches on body
            else:
                raise EvalError(f"ctx.http.post: body must be a string or dict, got {type_name(raw_body)}")
        url = _go_string(f"ctx.http.{name}", url)
        header_map: dict[str, str] = {}
        if headers is not None:
            if not isinstance(headers, Dict):
                raise EvalError(f"ctx.http.{name}: for parameter headers: got {type_name(headers)}, want dict")
            for key, value in headers.items():
                if not isinstance(key, str) or not isinstance(value, str):
                    raise EvalError("header key or value is not a string")
                header_map[key] = value
        if name == "post" and body is None and "Content-Type" not in header_map:
            header_map["Content-Type"] = "application/json"
        if self.replay is None:
            raise StarlarkDeclined(f"ctx.http.{name} without a starlark_http_cassette (kitsoki would reach the network)")
        return Response(self.replay.do(name.upper(), url, header_map, body))


class FsValue(Object):
    type_name = "ctx.fs"

    def __init__(self, replay: InspectReplay | None) -> None:
        self.replay = replay

    def attr_names(self) -> list[str]:
        return ["read", "exists", "glob"]

    def attr(self, name: str) -> Any:
        if name in ("read", "exists", "glob"):
            return Builtin(f"ctx.fs.{name}", lambda args, kwargs: self._op(name, args, kwargs))
        return super().attr(name)

    def _op(self, name: str, args: list, kwargs: list) -> Any:
        (target,) = _unpack(f"ctx.fs.{name}", args, kwargs, ["pattern" if name == "glob" else "path"], 1)
        target = _go_string(f"ctx.fs.{name}", target)
        if self.replay is None:
            raise StarlarkDeclined(f"ctx.fs.{name} without a starlark_inspect_cassette (kitsoki would read the "
                                   "working tree)")
        item = self.replay.take(name, target)
        if name == "read":
            self.replay.note("read", target, "ok")
            return item["out"]
        if name == "exists":
            found = item["out"].strip().lower() == "true"
            self.replay.note("exists", target, "ok" if found else "missing")
            return found
        trimmed = item["out"].strip()
        matches = trimmed.split("\n") if trimmed else []
        self.replay.note("glob", target, f"matched:{len(matches)}")
        return List(matches)


def _probe(replay: InspectReplay | None):
    def probe(args: list, kwargs: list) -> Dict:
        name, arg_list = _unpack("ctx.probe", args, kwargs, ["name", "args"], 1)
        name = _go_string("ctx.probe", name)
        if arg_list is not None:
            if not isinstance(arg_list, List):
                raise EvalError("ctx.probe: for parameter args: want list")
            for index, item in enumerate(arg_list.items):
                if not isinstance(item, str):
                    raise Fail(f"ctx.probe: arg {index} is not a string (got {type_name(item)})")
        if replay is None:
            raise StarlarkDeclined("ctx.probe without a starlark_inspect_cassette (kitsoki would run the probe)")
        item = replay.take("probe", name)
        replay.note("probe", name, f"exit:{item['exit']}")
        out = Dict()
        out.set("exit", int(item["exit"]))
        out.set("out", item["out"])
        return out
    return probe


# --- the handler ------------------------------------------------------------------------------


def _from_starlark(value: Any) -> Any:
    """starlarkToGo: ints become int64 (float64 past its range), tuples lists, dict keys strings."""
    if value is None or isinstance(value, (bool, str, float)):
        return value
    if isinstance(value, int):
        return GoInt(value, "int64") if -(1 << 63) <= value < (1 << 63) else float(value)
    if isinstance(value, (List, tuple)):
        return [_from_starlark(item) for item in (value.items if isinstance(value, List) else value)]
    if isinstance(value, Dict):
        out = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise StarlarkDeclined(f"an output dict with a {type_name(key)} key (Go words the error)")
            out[key] = _from_starlark(item)
        return out
    raise Fail(f"starlark: convert outputs: cannot convert Starlark value of type {type_name(value)} to a Go output")


def _matches(value: Any, kind: str) -> bool:
    go = go_type(value)
    if kind in ("", "any"):
        return True
    if kind in ("int", "number"):
        if isinstance(value, int) and not isinstance(value, bool) and go not in ("int", "int64"):
            raise StarlarkDeclined(f"an integer kitsoki holds as {go} checked against a sidecar type")
        return go in ("int", "int64", "float64")
    return {"string": "string", "bool": "bool", "object": "map[string]interface {}", "list": "[]interface {}"}.get(kind) == go


class Sidecar:
    def __init__(self, path: Path) -> None:
        data = _read_yaml(path, "sidecar")
        self.inputs = self._fields(data.get("inputs"), "inputs")
        self.outputs = self._fields(data.get("outputs"), "outputs")

    @staticmethod
    def _fields(value: Any, where: str) -> dict[str, tuple[str, bool]]:
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise StarlarkDeclined(f"a sidecar whose {where} is not a mapping")
        out = {}
        for name, spec in value.items():
            spec = spec or {}
            if not isinstance(spec, dict) or not isinstance(spec.get("type", ""), str) or \
                    not isinstance(spec.get("required", False), bool):
                raise StarlarkDeclined(f"a sidecar field {name} of an unexpected shape")
            kind = spec.get("type") or ""
            if kind not in _TYPES or (where == "outputs" and name == RESERVED_HTTP):
                raise StarlarkDeclined(f"a sidecar kitsoki refuses ({where}.{name})")
            out[str(name)] = (kind, bool(spec.get("required")))
        return out


def _one(problems: list[str]) -> str | None:
    """kitsoki reports the first problem in Go map order: only a single one is certain."""
    if len(problems) > 1:
        raise StarlarkDeclined("more than one sidecar violation (kitsoki reports one in map order)")
    return problems[0] if problems else None


def run(args: dict[str, Any], world: dict[str, Any], app_dir: Path | None, http: HttpReplay | None,
        inspect: InspectReplay | None) -> tuple[dict[str, Any] | None, str]:
    """(data, domain error) of one host.starlark.run call; raises HostAnswerError for an
    infrastructure error and StarlarkDeclined where the runner cannot say."""
    raw = args.get("script")
    if not isinstance(raw, str) or not raw:
        return None, "host.starlark.run: script argument is required"
    script = raw
    if not os.path.isabs(script):
        base = os.environ.get("KITSOKI_APP_DIR") or (str(app_dir) if app_dir is not None else "")
        script = os.path.join(base, script) if base else in_workdir(script)
    if not os.path.isfile(script) and not os.path.isabs(raw) and os.path.isfile(in_workdir(raw)):
        script = in_workdir(raw)  # kitsoki's repo-relative fallback: its cwd is the project's root
    if not os.path.isfile(script):
        if os.path.exists(script):
            raise StarlarkDeclined(f"script {script} is not a regular file")
        raise HostAnswerError(f'host.starlark.run: read script "{script}": open {script}: no such file or directory')
    source = Path(script).read_bytes().decode("utf-8", "surrogateescape")
    sidecar_path = script + ".yaml"
    if not os.path.exists(sidecar_path):
        raise HostAnswerError(f'host.starlark.run: starlark sidecar: read "{sidecar_path}": open {sidecar_path}: '
                              "no such file or directory")
    sidecar = Sidecar(Path(sidecar_path))
    inputs = args.get("inputs") if isinstance(args.get("inputs"), dict) else None
    snapshot = dict(world)
    if isinstance(args.get("world"), dict):
        snapshot.update(args["world"])
    problems = []
    for name, (kind, required) in sidecar.inputs.items():
        if inputs is None or name not in inputs:
            if required:
                problems.append(f'missing required input "{name}"')
        elif not _matches(inputs[name], kind):
            problems.append(f'input "{name}": expected {kind or "any"}, got {go_type(inputs[name])}')
    problem = _one(problems)
    if problem:
        return None, f"host.starlark.run: {problem}"
    try:
        module = load(source, script)
    except Fail as exc:
        return None, f"host.starlark.run: starlark: load {script}: {exc}"
    except (EvalError, Unsure) as exc:
        raise StarlarkDeclined(f"loading {Path(script).name}: {exc}") from None
    main = module.get("main")
    if "main" not in module.globals:
        return None, f"host.starlark.run: starlark: {script} does not define main(ctx)"
    if not isinstance(main, (Builtin,)) and type_name(main) != "function":
        return None, f"host.starlark.run: starlark: {script} defines main but it is not callable (it is a {type_name(main)})"
    ctx = Struct({"inputs": to_starlark(inputs or {}), "world": WorldProxy(snapshot), "http": HttpProxy(http),
                  "fs": FsValue(inspect), "probe": Builtin("ctx.probe", _probe(inspect))})
    try:
        result = module.call(main, [ctx], [])
    except Fail as exc:
        return None, f"host.starlark.run: starlark: main(ctx): {exc}"
    except (EvalError, Unsure) as exc:
        raise StarlarkDeclined(f"running {Path(script).name}: {exc}") from None
    if not isinstance(result, Dict):
        return None, f"host.starlark.run: starlark: main must return a dict, got {type_name(result)}"
    try:
        outputs = _from_starlark(result)
    except Fail as exc:
        return None, f"host.starlark.run: {exc}"
    problem = _one([f'script returned reserved output "{RESERVED_HTTP}" (used for HTTP exchange summaries)'
                    if name == RESERVED_HTTP else f'script returned undeclared output "{name}"'
                    for name in outputs if name == RESERVED_HTTP or (sidecar.outputs and name not in sidecar.outputs)])
    if problem is None:
        problem = _one([f'script did not return declared output "{name}"' if name not in outputs else
                        f'output "{name}": expected {kind or "any"}, got {go_type(outputs[name])}'
                        for name, (kind, _) in sidecar.outputs.items()
                        if name not in outputs or not _matches(outputs[name], kind)])
    if problem:
        return None, f"host.starlark.run: {problem}"
    data = dict(outputs)
    # the replay client and inspector live for the whole flow: their summaries accumulate
    if http is not None and http.exchanges:
        data[RESERVED_HTTP] = [dict(exchange) for exchange in http.exchanges]
    if inspect is not None and inspect.inspections:
        data[RESERVED_INSPECT] = [dict(inspection) for inspection in inspect.inspections]
    return data, ""


class Handler:
    """host.starlark.run as a flow registers it: the fixture's cassettes (read on first use, as
    kitsoki reads them when the run starts), the app's folder for relative scripts."""

    def __init__(self, app_dir: Path | None, http_cassette: Path | None, inspect_cassette: Path | None,
                 bindings: bool) -> None:
        self.app_dir = app_dir
        self.registered = bool(http_cassette or inspect_cassette or bindings)
        self.http = HttpReplay(http_cassette) if http_cassette else None
        self.inspect = InspectReplay(inspect_cassette) if inspect_cassette else None

    def __call__(self, args: dict[str, Any], world: dict[str, Any]) -> tuple[dict[str, Any] | None, str]:
        from core.flows.hosts import InfraError
        from core.flows.machine import Unsupported

        try:
            return run(args, world, self.app_dir, self.http, self.inspect)
        except HostAnswerError as exc:
            raise InfraError(str(exc)) from None
        except StarlarkDeclined as exc:
            raise Unsupported(f"host.starlark.run: {exc}") from None
        except Unsure as exc:
            raise Unsupported(f"host.starlark.run: {exc}") from None
