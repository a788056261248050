"""Loading and evaluating a Starlark file as go.starlark.net does with kitsoki's (default) options.

Starlark's grammar is, closely enough, a subset of Python's, so the file is parsed by Python's
`ast` and then held to Starlark's rules before anything runs: only Starlark's statements and
expressions (no while, try, class, import, `**`, `is`, f-strings, chained comparisons, implicit
string concatenation), no `if`/`for` at top level, no global bound twice, every name resolved
(kitsoki would refuse to load the file otherwise). Anything outside that subset is `Unsure` and
the caller declines. Evaluation then follows the Go interpreter: lexical scopes with closures,
locals referenced before assignment are errors, no recursion, module values frozen after load.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from dataclasses import dataclass, field
from typing import Any, Callable

from core.flows.starlark import ops
from core.flows.starlark.values import (
    Builtin,
    Dict,
    EvalError,
    Function,
    List,
    Unsure,
    freeze,
    truth,
    type_name,
)

MAX_STEPS = 2_000_000
"""Past this many evaluation steps the runner declines (kitsoki's cap is 10M; a glue script
that long is not one to judge)."""

_BINOPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%",
           ast.BitOr: "|", ast.BitAnd: "&", ast.BitXor: "^", ast.LShift: "<<", ast.RShift: ">>"}
_CMPOPS = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=",
           ast.In: "in", ast.NotIn: "not in"}
_UNARY = {ast.Not: "not", ast.USub: "-", ast.UAdd: "+", ast.Invert: "~"}
_SAFE_ESCAPE = re.compile(r"\\(.)", re.S)


# --- checking the file against Starlark's grammar and resolver -------------------------------


def _check_tokens(source: str) -> None:
    previous = None
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError) as exc:
        raise Unsure(f"a file Python cannot tokenize ({exc})") from None
    for token in tokens:
        if token.type == tokenize.STRING:
            if previous == tokenize.STRING:
                raise Unsure("adjacent string literals (Starlark does not concatenate them)")
            prefix = re.match(r"[a-zA-Z]*", token.string).group(0)
            if prefix not in ("", "r", "R"):
                raise Unsure(f"a string literal with prefix {prefix}")
            if not prefix:
                for match in _SAFE_ESCAPE.finditer(token.string):
                    if match.group(1) not in "ntr\\'\"\n":
                        raise Unsure(f"the escape \\{match.group(1)} in a string literal")
        elif token.type == tokenize.NUMBER and ("_" in token.string or token.string.lower().endswith("j")):
            raise Unsure(f"the number literal {token.string}")
        if token.type not in (tokenize.NL, tokenize.COMMENT, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT):
            previous = token.type
    for line in source.splitlines():
        if line[: len(line) - len(line.lstrip())].count("\t"):
            raise Unsure("a tab in indentation")


_STATEMENTS = (ast.FunctionDef, ast.Return, ast.Assign, ast.AugAssign, ast.Expr, ast.If, ast.For, ast.Break,
               ast.Continue, ast.Pass)
_EXPRESSIONS = (ast.BoolOp, ast.BinOp, ast.UnaryOp, ast.Lambda, ast.IfExp, ast.Dict, ast.List, ast.Tuple,
                ast.ListComp, ast.DictComp, ast.Compare, ast.Call, ast.Constant, ast.Attribute, ast.Subscript,
                ast.Name, ast.Slice, ast.comprehension, ast.arguments, ast.arg, ast.keyword, ast.Load, ast.Store,
                ast.And, ast.Or, *_BINOPS, *_CMPOPS, *_UNARY, ast.Starred)


class _Checker:
    """Starlark's syntax subset and its resolver's load-time checks."""

    def __init__(self, predeclared: set[str]) -> None:
        self.predeclared = predeclared
        self.scopes: dict[int, set[str]] = {}
        self.globals: set[str] = set()

    def check(self, tree: ast.Module) -> None:
        call_stars = {id(arg) for node in ast.walk(tree) if isinstance(node, ast.Call)
                      for arg in node.args if isinstance(arg, ast.Starred)}
        for node in ast.walk(tree):
            if id(node) in call_stars:
                continue
            if isinstance(node, ast.stmt) and not isinstance(node, _STATEMENTS):
                raise Unsure(f"the statement {type(node).__name__}")
            if isinstance(node, ast.expr) and not isinstance(node, _EXPRESSIONS):
                raise Unsure(f"the expression {type(node).__name__}")
            self._shape(node)
        _check_placement(tree.body, in_function=False, in_loop=False)
        for statement in tree.body:
            if isinstance(statement, (ast.If, ast.For)):
                raise Unsure(f"a top-level {type(statement).__name__.lower()} statement (kitsoki refuses to load it)")
            if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call) \
                    and isinstance(statement.value.func, ast.Name) and statement.value.func.id == "load":
                raise Unsure("load() (kitsoki's sandbox provides no modules)")
            for name in _bound(statement):
                if name in self.globals or name in ("True", "False", "None"):
                    raise Unsure(f"the global {name} bound twice (kitsoki refuses to load it)")
                self.globals.add(name)
            if isinstance(statement, ast.AugAssign):
                raise Unsure("augmented assignment of a global (kitsoki refuses to load it)")
        self._resolve(tree.body, [])

    def _shape(self, node: ast.AST) -> None:
        if isinstance(node, ast.FunctionDef):
            if node.decorator_list or node.returns or node.args.posonlyargs or getattr(node, "type_params", None):
                raise Unsure(f"the function {node.name}'s Python-only syntax")
        elif isinstance(node, ast.For) and node.orelse:
            raise Unsure("for ... else")
        elif isinstance(node, ast.Assign) and len(node.targets) != 1:
            raise Unsure("chained assignment")
        elif isinstance(node, ast.Compare) and len(node.ops) != 1:
            raise Unsure("a chained comparison")
        elif isinstance(node, ast.Compare) and type(node.ops[0]) not in _CMPOPS:
            raise Unsure(f"the comparison {type(node.ops[0]).__name__}")
        elif isinstance(node, ast.Constant) and not (node.value is None or isinstance(node.value, (bool, int, float, str))):
            raise Unsure(f"the literal {node.value!r}")
        elif isinstance(node, ast.Starred):
            raise Unsure("a starred expression outside a call")
        elif isinstance(node, ast.Call):
            if sum(1 for a in node.args if isinstance(a, ast.Starred)) > 1 or \
                    sum(1 for k in node.keywords if k.arg is None) > 1:
                raise Unsure("more than one *args or **kwargs in a call")
        elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Tuple) and \
                any(isinstance(e, ast.Slice) for e in node.slice.elts):
            raise Unsure("an extended slice")
        elif isinstance(node, (ast.BinOp, ast.AugAssign)) and type(node.op) not in _BINOPS:
            raise Unsure(f"the operator {type(node.op).__name__}")
        elif isinstance(node, ast.comprehension) and node.is_async:
            raise Unsure("an async comprehension")

    def _resolve(self, body: list[ast.stmt], enclosing: list[set[str]]) -> None:
        for statement in body:
            for node in _walk_scope(statement):
                if isinstance(node, (ast.FunctionDef, ast.Lambda)):
                    self._function(node, enclosing)
                elif isinstance(node, (ast.ListComp, ast.DictComp)):
                    self._comprehension(node, enclosing)
                elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                    self._name(node.id, enclosing)

    def _function(self, node: ast.FunctionDef | ast.Lambda, enclosing: list[set[str]]) -> None:
        args = node.args
        for default in args.defaults + [d for d in args.kw_defaults if d is not None]:
            self._resolve([ast.Expr(default)], enclosing)
        params = [a.arg for a in args.args + args.kwonlyargs]
        params += [a.arg for a in (args.vararg, args.kwarg) if a is not None]
        body = node.body if isinstance(node, ast.FunctionDef) else [ast.Return(node.body)]
        local = set(params)
        for statement in body:
            for inner in _walk_scope(statement):
                local.update(_bound_node(inner))
        self.scopes[id(node)] = local
        self._resolve(body, enclosing + [local])

    def _comprehension(self, node: ast.ListComp | ast.DictComp, enclosing: list[set[str]]) -> None:
        local: set[str] = set()
        scopes = enclosing
        for index, generator in enumerate(node.generators):
            # the first iterable is evaluated in the enclosing scope, the rest in the comprehension's
            self._resolve([ast.Expr(generator.iter)], enclosing if index == 0 else scopes)
            local.update(_target_names(generator.target))
            scopes = enclosing + [local]
            for condition in generator.ifs:
                self._resolve([ast.Expr(condition)], scopes)
        self.scopes[id(node)] = local
        parts = [node.elt] if isinstance(node, ast.ListComp) else [node.key, node.value]
        for part in parts:
            self._resolve([ast.Expr(part)], scopes)

    def _name(self, name: str, enclosing: list[set[str]]) -> None:
        if any(name in scope for scope in enclosing) or name in self.globals or name in self.predeclared:
            return
        raise Unsure(f"the undefined name {name} (kitsoki refuses to load the script)")


def _check_placement(body: list[ast.stmt], in_function: bool, in_loop: bool) -> None:
    """return only in a function, break/continue only in a loop (Python's parser leaves that to
    its compiler; kitsoki's refuses to load)."""
    for statement in body:
        if isinstance(statement, ast.Return) and not in_function:
            raise Unsure("return outside a function")
        if isinstance(statement, (ast.Break, ast.Continue)) and not in_loop:
            raise Unsure(f"{type(statement).__name__.lower()} outside a loop")
        if isinstance(statement, ast.FunctionDef):
            _check_placement(statement.body, True, False)
        elif isinstance(statement, ast.For):
            _check_placement(statement.body, in_function, True)
        elif isinstance(statement, ast.If):
            _check_placement(statement.body, in_function, in_loop)
            _check_placement(statement.orelse, in_function, in_loop)


def _walk_scope(node: ast.AST):
    """The nodes of one scope: nested functions, lambdas and comprehensions are yielded, not entered."""
    yield node
    if isinstance(node, (ast.FunctionDef, ast.Lambda, ast.ListComp, ast.DictComp)):
        return
    for child in ast.iter_child_nodes(node):
        yield from _walk_scope(child)


def _target_names(target: ast.AST) -> list[str]:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [name for element in target.elts for name in _target_names(element)]
    return []


def _bound_node(node: ast.AST) -> list[str]:
    if isinstance(node, ast.FunctionDef):
        return [node.name]
    if isinstance(node, ast.Assign):
        return _target_names(node.targets[0])
    if isinstance(node, ast.AugAssign):
        return _target_names(node.target)
    if isinstance(node, ast.For):
        return _target_names(node.target)
    return []


def _bound(statement: ast.stmt) -> list[str]:
    return _bound_node(statement)


# --- evaluation -------------------------------------------------------------------------------


class _Return(Exception):
    def __init__(self, value: Any) -> None:
        self.value = value


class _Break(Exception):
    pass


class _Continue(Exception):
    pass


_UNBOUND = object()


@dataclass
class _Frame:
    function: Function | None
    locals: dict[str, Any] = field(default_factory=dict)
    local_names: set[str] = field(default_factory=set)
    parent: _Frame | None = None


_CHECKED: dict[tuple[str, str, frozenset[str]], tuple[ast.Module, _Checker]] = {}
"""A file's tree and its resolver's answers, by its text, name and the names predeclared: a flow run calls
the same script on many turns, and checking it took longer than running it. Both are only read after."""
_CHECKED_LIMIT = 256


def _checked(source: str, filename: str, names: frozenset[str]) -> tuple[ast.Module, _Checker]:
    """The tree of a file that holds to Starlark's grammar and resolver, with the resolver; else Unsure."""
    key = (source, filename, names)
    found = _CHECKED.get(key)
    if found is None:
        _check_tokens(source)
        try:
            tree = ast.parse(source, filename=filename)
        except SyntaxError as exc:
            raise Unsure(f"a file Python cannot parse ({exc.msg})") from None
        checker = _Checker(set(names))
        checker.check(tree)
        if len(_CHECKED) >= _CHECKED_LIMIT:
            _CHECKED.clear()
        found = _CHECKED[key] = (tree, checker)
    return found


class Module:
    """A loaded (executed, frozen) Starlark file."""

    def __init__(self, source: str, filename: str, predeclared: dict[str, Any], universe: dict[str, Any]) -> None:
        tree, self.checker = _checked(source, filename, frozenset(predeclared) | frozenset(universe))
        self.filename = filename
        self.predeclared, self.universe = predeclared, universe
        self.globals: dict[str, Any] = {name: _UNBOUND for name in self.checker.globals}
        self.steps = 0
        self.active: list[Any] = []
        frame = _Frame(function=None)
        self._exec_block(tree.body, frame)
        for value in self.globals.values():
            if value is not _UNBOUND:
                freeze(value)

    def get(self, name: str) -> Any:
        value = self.globals.get(name, _UNBOUND)
        return None if value is _UNBOUND else value

    # -- calls --

    def call(self, fn: Any, args: list[Any], kwargs: list[tuple[str, Any]]) -> Any:
        if isinstance(fn, Builtin):
            from core.flows.starlark.library import _CALLER

            _CALLER.append(self)  # a built-in taking a function (sorted's key=) calls back through it
            try:
                return fn.fn(args, kwargs) if fn.recv is None else fn.fn(fn.recv, args, kwargs)
            finally:
                _CALLER.pop()
        if not isinstance(fn, Function):
            raise EvalError(f"invalid call of non-function ({type_name(fn)})")
        if fn.node in self.active:
            raise EvalError(f"function {fn.name} called recursively")
        frame = _Frame(function=fn, local_names=self.checker.scopes[id(fn.node)], parent=fn.closure)
        self._bind(fn, frame, args, kwargs)
        self.active.append(fn.node)
        try:
            if isinstance(fn.node, ast.Lambda):
                return self._eval(fn.node.body, frame)
            try:
                self._exec_block(fn.node.body, frame)
            except _Return as returned:
                return returned.value
            return None
        finally:
            self.active.pop()

    def _bind(self, fn: Function, frame: _Frame, args: list[Any], kwargs: list[tuple[str, Any]]) -> None:
        spec = fn.node.args
        names = [a.arg for a in spec.args]
        kwonly = [a.arg for a in spec.kwonlyargs]
        values: dict[str, Any] = {}
        extra = List()
        for index, value in enumerate(args):
            if index < len(names):
                values[names[index]] = value
            elif spec.vararg is not None:
                extra.items.append(value)
            else:
                raise EvalError(f"function {fn.name} accepts at most {len(names)} positional arguments ({len(args)} given)")
        spare = Dict()
        for key, value in kwargs:
            if key in values:
                raise EvalError(f"function {fn.name} got multiple values for parameter {key}")
            if key in names or key in kwonly:
                values[key] = value
            elif spec.kwarg is not None:
                spare.set(key, value)
            else:
                raise EvalError(f"function {fn.name} got an unexpected keyword argument {key}")
        positional_defaults = fn.defaults[: len(spec.defaults)]
        keyword_defaults = fn.defaults[len(spec.defaults):]
        first_default = len(names) - len(spec.defaults)
        for index, name in enumerate(names):
            if name not in values:
                if index < first_default:
                    raise EvalError(f"function {fn.name} missing 1 argument ({name})")
                values[name] = positional_defaults[index - first_default]
        for index, name in enumerate(kwonly):
            if name not in values:
                default = keyword_defaults[index]
                if default is _UNBOUND:
                    raise EvalError(f"function {fn.name} missing 1 argument ({name})")
                values[name] = default
        if spec.vararg is not None:
            values[spec.vararg.arg] = tuple(extra.items)
        if spec.kwarg is not None:
            values[spec.kwarg.arg] = spare
        frame.locals.update(values)

    # -- statements --

    def _step(self) -> None:
        self.steps += 1
        if self.steps > MAX_STEPS:
            raise Unsure(f"a script that runs more than {MAX_STEPS} steps")

    def _exec_block(self, body: list[ast.stmt], frame: _Frame) -> None:
        for statement in body:
            self._exec(statement, frame)

    def _exec(self, node: ast.stmt, frame: _Frame) -> None:
        self._step()
        if isinstance(node, ast.Expr):
            self._eval(node.value, frame)
        elif isinstance(node, ast.Assign):
            self._assign(node.targets[0], self._eval(node.value, frame), frame)
        elif isinstance(node, ast.AugAssign):
            self._augmented(node, frame)
        elif isinstance(node, ast.Return):
            raise _Return(None if node.value is None else self._eval(node.value, frame))
        elif isinstance(node, ast.If):
            self._exec_block(node.body if truth(self._eval(node.test, frame)) else node.orelse, frame)
        elif isinstance(node, ast.For):
            for item in ops.iterate(self._eval(node.iter, frame)):
                self._assign(node.target, item, frame)
                try:
                    self._exec_block(node.body, frame)
                except _Break:
                    break
                except _Continue:
                    continue
        elif isinstance(node, ast.FunctionDef):
            self._store(node.name, self._function(node, frame), frame)
        elif isinstance(node, ast.Break):
            raise _Break()
        elif isinstance(node, ast.Continue):
            raise _Continue()
        elif not isinstance(node, ast.Pass):
            raise Unsure(f"the statement {type(node).__name__}")

    def _function(self, node: ast.FunctionDef | ast.Lambda, frame: _Frame) -> Function:
        defaults = [self._eval(d, frame) for d in node.args.defaults]
        defaults += [_UNBOUND if d is None else self._eval(d, frame) for d in node.args.kw_defaults]
        name = node.name if isinstance(node, ast.FunctionDef) else "lambda"
        return Function(name, node, defaults, frame if frame.function is not None else None, self)

    def _augmented(self, node: ast.AugAssign, frame: _Frame) -> None:
        op = _BINOPS.get(type(node.op))
        if op is None:
            raise Unsure(f"the operator {type(node.op).__name__}=")
        target = node.target
        if isinstance(target, ast.Name):
            current = self._load(target.id, frame)
            holder = None
        elif isinstance(target, ast.Subscript):
            holder = (self._eval(target.value, frame), self._eval(target.slice, frame))
            current = ops.index(*holder)
        else:
            raise Unsure("augmented assignment to an attribute")
        right = self._eval(node.value, frame)
        if op == "+" and isinstance(current, List) and isinstance(right, (List, tuple, Dict)):
            current.check_mutable("apply += to")
            current.items.extend(ops.elements(right))
            result = current
        elif op == "|" and isinstance(current, Dict) and isinstance(right, Dict):
            current.check_mutable("apply |= to")
            for key, value in right.items():
                current.set(key, value)
            result = current
        else:
            result = ops.binary(op, current, right)
        if holder is None:
            self._store(target.id, result, frame)
        else:
            _set_index(holder[0], holder[1], result)

    def _assign(self, target: ast.AST, value: Any, frame: _Frame) -> None:
        if isinstance(target, ast.Name):
            self._store(target.id, value, frame)
        elif isinstance(target, (ast.Tuple, ast.List)):
            items = ops.elements(value) if not isinstance(value, str) else None
            if items is None:
                raise EvalError("got string in sequence assignment")
            if len(items) != len(target.elts):
                raise EvalError(f"too {'many' if len(items) > len(target.elts) else 'few'} values to unpack "
                                f"(got {len(items)}, want {len(target.elts)})")
            for element, item in zip(target.elts, items):
                self._assign(element, item, frame)
        elif isinstance(target, ast.Subscript):
            _set_index(self._eval(target.value, frame), self._eval(target.slice, frame), value)
        else:
            raise EvalError("cannot assign to a field")

    def _store(self, name: str, value: Any, frame: _Frame) -> None:
        if frame.function is not None:
            frame.locals[name] = value
        else:
            self.globals[name] = value

    def _load(self, name: str, frame: _Frame) -> Any:
        scope: _Frame | None = frame
        while scope is not None and scope.function is not None:
            if name in scope.local_names:
                value = scope.locals.get(name, _UNBOUND)
                if value is _UNBOUND:
                    raise EvalError(f"local variable {name} referenced before assignment")
                return value
            scope = scope.parent
        if name in self.globals:
            value = self.globals[name]
            if value is _UNBOUND:
                raise EvalError(f"global variable {name} referenced before assignment")
            return value
        if name in self.predeclared:
            return self.predeclared[name]
        return self.universe[name]

    # -- expressions --

    def _eval(self, node: ast.expr, frame: _Frame) -> Any:
        self._step()
        kind = type(node)
        if kind is ast.Constant:
            return node.value
        if kind is ast.Name:
            return self._load(node.id, frame)
        if kind is ast.Attribute:
            return attribute(self._eval(node.value, frame), node.attr)
        if kind is ast.Call:
            return self._call(node, frame)
        if kind is ast.Subscript:
            value = self._eval(node.value, frame)
            if isinstance(node.slice, ast.Slice):
                parts = [None if p is None else self._eval(p, frame) for p in (node.slice.lower, node.slice.upper, node.slice.step)]
                return ops.slice_of(value, *parts)
            return ops.index(value, self._eval(node.slice, frame))
        if kind is ast.BinOp:
            op = _BINOPS.get(type(node.op))
            if op is None:
                raise Unsure(f"the operator {type(node.op).__name__}")
            return ops.binary(op, self._eval(node.left, frame), self._eval(node.right, frame))
        if kind is ast.BoolOp:
            value = None
            for operand in node.values:
                value = self._eval(operand, frame)
                if truth(value) == isinstance(node.op, ast.Or):
                    return value
            return value
        if kind is ast.UnaryOp:
            return ops.unary(_UNARY[type(node.op)], self._eval(node.operand, frame))
        if kind is ast.Compare:
            op = _CMPOPS.get(type(node.ops[0]))
            if op is None:
                raise Unsure(f"the comparison {type(node.ops[0]).__name__}")
            left, right = self._eval(node.left, frame), self._eval(node.comparators[0], frame)
            return ops.binary(op, left, right) if op in ("in", "not in") else ops.compare(op, left, right)
        if kind is ast.IfExp:
            return self._eval(node.body if truth(self._eval(node.test, frame)) else node.orelse, frame)
        if kind is ast.List:
            return List([self._eval(e, frame) for e in node.elts])
        if kind is ast.Tuple:
            return tuple(self._eval(e, frame) for e in node.elts)
        if kind is ast.Dict:
            out = Dict()
            for key_node, value_node in zip(node.keys, node.values):
                if key_node is None:
                    raise Unsure("** in a dict display")
                key = self._eval(key_node, frame)
                if out.get(key)[0]:
                    raise EvalError(f"duplicate key: {key!r}")
                out.set(key, self._eval(value_node, frame))
            return out
        if kind in (ast.ListComp, ast.DictComp):
            return self._comprehension(node, frame)
        if kind is ast.Lambda:
            return self._function(node, frame)
        raise Unsure(f"the expression {kind.__name__}")

    def _call(self, node: ast.Call, frame: _Frame) -> Any:
        fn = self._eval(node.func, frame)
        args: list[Any] = []
        kwargs: list[tuple[str, Any]] = []
        for arg in node.args:
            if isinstance(arg, ast.Starred):
                args.extend(ops.elements(self._eval(arg.value, frame)))
            else:
                args.append(self._eval(arg, frame))
        for keyword in node.keywords:
            value = self._eval(keyword.value, frame)
            if keyword.arg is None:
                if not isinstance(value, Dict):
                    raise EvalError(f"argument after ** must be a mapping, not {type_name(value)}")
                for key, item in value.items():
                    if not isinstance(key, str):
                        raise EvalError("keywords must be strings")
                    kwargs.append((key, item))
            else:
                kwargs.append((keyword.arg, value))
        return self.call(fn, args, kwargs)

    def _comprehension(self, node: ast.ListComp | ast.DictComp, frame: _Frame) -> Any:
        scope = _Frame(function=frame.function or _COMPREHENSION, local_names=self.checker.scopes[id(node)],
                       parent=frame if frame.function is not None else None)
        out: Any = List() if isinstance(node, ast.ListComp) else Dict()

        def produce(index: int) -> None:
            if index == len(node.generators):
                if isinstance(out, List):
                    out.items.append(self._eval(node.elt, scope))
                else:
                    out.set(self._eval(node.key, scope), self._eval(node.value, scope))
                return
            generator = node.generators[index]
            source = self._eval(generator.iter, frame if index == 0 else scope)
            for item in ops.iterate(source):
                self._assign(generator.target, item, scope)
                if all(truth(self._eval(condition, scope)) for condition in generator.ifs):
                    produce(index + 1)

        produce(0)
        return out


_COMPREHENSION = Function("comprehension", None, [], None, None)
"""A stand-in function marking a comprehension's scope as local (module-level ones too)."""


def _set_index(container: Any, key: Any, value: Any) -> None:
    if isinstance(container, Dict):
        container.set(key, value)
    elif isinstance(container, List):
        if not ops.is_int(key):
            raise EvalError(f"list index: got {type_name(key)}, want int")
        size = len(container.items)
        position = key + size if key < 0 else key
        if not 0 <= position < size:
            raise EvalError(f"list index {key} out of range [{-size}:{size}]")
        container.check_mutable("assign to element of")
        container.items[position] = value
    else:
        raise EvalError(f"{type_name(container)} value does not support item assignment")


def attribute(value: Any, name: str) -> Any:
    from core.flows.starlark.library import method

    return method(value, name)


def new_builtin(name: str, fn: Callable) -> Builtin:
    return Builtin(name, fn)
