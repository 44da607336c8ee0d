"""The data-flow engine: which values are our memory, and where recalled or untrusted text flows.

It interprets one module's ``ast`` abstractly, statement by statement, never importing or
running it. Every expression gets a :class:`Value`: the *kinds* of object it may be (a memory
store, a scoped handle, a prompt template, an HTTP client, ...), the *origins* of text it may
carry (``recall``: text a memory handle returned; ``untrusted``: text a web call or an MCP
server returned), the parameters of the enclosing function it depends on, and a constant when
one is known. ADR 0032 explains the design; in short:

- Flow-sensitive inside a function: an assignment replaces a name's value, branches are joined,
  loop bodies run twice so a value can go round once.
- Interprocedural inside the module: a function's return value is summarised in terms of its
  own parameters and substituted at each call, so ``def fmt(x): return f"- {x}"`` taints only
  the calls that pass it tainted text. A sink reached by a parameter is recorded on the
  function and reported when a call passes tainted text into it. Parameter *kinds* (is it a
  handle?) are joined over the module's call sites and annotations. Instance attributes
  (``self.memory``) are joined over the class. Summaries are iterated to a fixed point.
- What leaves the module is unknown: a call to an unknown function passes the text of its
  arguments on (``json.dumps(hits)`` is still the hits) but no kinds.

Taint rules (:class:`TaintRule`) name the sinks; the engine reports a sink whose value carries
an origin of the kind the rule follows.
"""

from __future__ import annotations

import ast
import string
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import ClassVar, NamedTuple, Protocol

from mainsdk_memory.checks import _knowledge as known
from mainsdk_memory.checks._diagnostic import Finding

__all__ = [
    "EMPTY",
    "Analysis",
    "EngineConfig",
    "Origin",
    "Sink",
    "Summary",
    "TaintSource",
    "Value",
    "analyse",
    "scheme_of",
]

# Kinds of object a value may be.
STORE = "store"
HANDLE = "handle"
PERSON = "handle:person"
TEMPLATE = "template"
SOURCE_TRUSTED = "source:trusted"
SOURCE_UNTRUSTED = "source:untrusted"
SOFT_DRIVER = "driver:soft"
HTTP_CLIENT = "http-client"
LOGGER = "logger"
_DEF = "def:"
_CLASS = "class:"
_INSTANCE = "self:"

# Kinds of origin a text may have.
RECALLED = "recall"
UNTRUSTED = "untrusted"

SYSTEM_ROLES = frozenset({"system", "developer"})
_MAX_ROUNDS = 6
MODULE = "<module>"
_MAX_LOOP_DEPTH = 2

Const = str | tuple[str, ...]


class Origin(NamedTuple):
    """Where a text came from: its kind, the 1-based line and column, and the call that made it."""

    kind: str
    line: int
    col: int
    what: str


@dataclass(frozen=True, slots=True)
class Value:
    """What the engine knows about one expression (see the module docstring)."""

    kinds: frozenset[str] = frozenset()
    origins: frozenset[Origin] = frozenset()
    params: frozenset[str] = frozenset()
    const: Const | None = None
    placeholders: frozenset[str] = frozenset()

    def join(self, other: Value) -> Value:
        """What either of two values may be."""
        if other is self or other is EMPTY:
            return self
        if self is EMPTY:
            return other
        return Value(
            self.kinds | other.kinds,
            self.origins | other.origins,
            self.params | other.params,
            self.const if self.const == other.const else None,
            self.placeholders | other.placeholders,
        )

    def taint(self) -> Value:
        """Only the text this value carries: its origins and parameter dependencies."""
        if not self.origins and not self.params:
            return EMPTY
        if not self.kinds and self.const is None and not self.placeholders:
            return self
        return Value(origins=self.origins, params=self.params)

    def carries(self, kinds: frozenset[str]) -> bool:
        """Whether any origin of this value is of one of ``kinds``."""
        return any(origin.kind in kinds for origin in self.origins)

    def first_origin(self, kinds: frozenset[str]) -> Origin | None:
        """The earliest origin of one of ``kinds``, by line then column."""
        found = [origin for origin in self.origins if origin.kind in kinds]
        return min(found, key=lambda o: (o.line, o.col)) if found else None


EMPTY = Value()


class Sink(NamedTuple):
    """A place a rule does not want certain text to reach: report at ``node``."""

    node: ast.expr
    value: Value
    where: str


class TaintSource(Protocol):
    """What the engine needs from a taint rule (see :class:`~mainsdk_memory.checks.TaintRule`)."""

    code: ClassVar[str]
    origin_kinds: ClassVar[frozenset[str]]

    def sinks(self, node: ast.AST, analysis: Analysis) -> Iterable[Sink]:
        """The sinks at ``node`` (a call, dict, tuple or raise), with their values."""
        ...  # pragma: no cover - protocol

    def message(self, where: str, origin: Origin) -> str:
        """The diagnostic message for text from ``origin`` reaching the sink ``where``."""
        ...  # pragma: no cover - protocol


@dataclass(frozen=True, slots=True)
class Summary:
    """What a module-level function of another checked module does, as its callers see it."""

    positional: tuple[str, ...]
    kwonly: tuple[str, ...] = ()
    vararg: str | None = None
    kwarg: str | None = None
    kinds: frozenset[str] = frozenset()
    """Kinds of object it returns (a store, a handle)."""
    origins: tuple[tuple[str, str], ...] = ()
    """(kind, call) of the text it returns by itself: ``("recall", "context()")``."""
    depends: frozenset[str] = frozenset()
    """Parameters whose text it returns."""
    sinks: tuple[tuple[str, frozenset[str], str], ...] = ()
    """(rule code, parameters, sink) for each sink its parameters reach."""


@dataclass(frozen=True, slots=True)
class EngineConfig:
    """Project knowledge the engine uses: soft-erase drivers and extra untrusted calls."""

    soft_schemes: frozenset[str] = frozenset()
    soft_classes: frozenset[str] = frozenset()
    untrusted_calls: frozenset[str] = frozenset()
    exports: Mapping[str, frozenset[str]] = field(default_factory=dict)
    """Other checked modules' globals that are stores or handles: ``pkg.mod.name`` -> kinds."""
    summaries: Mapping[str, Summary] = field(default_factory=dict)
    """Other checked modules' module-level functions, by qualified name."""


def scheme_of(url: str) -> str | None:
    """The driver scheme of a store URL, as ``mainsdk_memory.drivers`` reads it."""
    scheme, sep, _ = url.partition(":")
    if not sep or not scheme:
        return None
    return scheme.split("+", 1)[0].lower()


def _placeholders(template: str) -> frozenset[str]:
    names: set[str] = set()
    try:
        for _, name, _, _ in string.Formatter().parse(template):
            if name:
                names.add(name.split(".", 1)[0].split("[", 1)[0])
    except ValueError:
        return frozenset()
    return frozenset(names)


class _ParamSink(NamedTuple):
    code: str
    node: ast.expr
    where: str
    params: frozenset[str]


@dataclass(eq=False)
class _Function:
    key: str
    node: ast.FunctionDef | ast.AsyncFunctionDef
    class_key: str | None
    closure: dict[str, Value] | None
    positional: list[str]
    kwonly: list[str]
    vararg: str | None
    kwarg: str | None
    bound: bool
    param_kinds: dict[str, frozenset[str]] = field(default_factory=dict)
    ret: Value = EMPTY
    sinks: set[_ParamSink] = field(default_factory=set)
    runs: int = 0
    tool: bool = False


@dataclass(eq=False)
class _Class:
    key: str
    name: str
    bases: list[str]
    methods: dict[str, str] = field(default_factory=dict)
    static: set[str] = field(default_factory=set)
    attrs: dict[str, Value] = field(default_factory=dict)


class Analysis:
    """The engine's result for one module: values of expressions, imports, functions, findings."""

    def __init__(
        self,
        tree: ast.Module,
        config: EngineConfig,
        rules: Sequence[TaintSource],
        package: str | None = None,
    ) -> None:
        self.tree = tree
        self.package = package
        """The dotted package the module is in, for relative imports (``None``: unknown)."""
        self.config = config
        self.rules = list(rules)
        self.aliases: dict[str, str] = {}
        self.values: dict[int, Value] = {}
        self._findings: dict[str, dict[tuple[str, int, int], Finding]] = {}
        self.functions: dict[str, _Function] = {}
        self.call_targets: dict[int, set[str]] = {}
        self.calls: list[ast.Call] = []
        """Every call the engine evaluated, once each (all calls of the module it ran on)."""
        self.ran = False
        self.call_scopes: dict[int, tuple[str, bool]] = {}
        """Each call's scope (``<module>`` or a function key) and whether a tenant is set."""
        self.references: set[tuple[str, str, bool, int]] = set()
        """(function key, scope, inside ``tenant.use``, line) for each call or mention."""
        self._in_tenant = False
        self.classes: dict[str, _Class] = {}
        self._class_by_name: dict[str, str] = {}
        self._queue: list[str] = []
        self._queued: set[str] = set()
        self._readers: dict[str, set[str]] = {}
        self._scope = MODULE
        self._globals: dict[str, Value] = {}
        self._env: dict[str, Value] = {}
        self._closure: dict[str, Value] | None = None
        self._function: _Function | None = None
        self._class: _Class | None = None
        self._ret = EMPTY
        self._loop_depth = 0
        self._class_body = False
        self._module_runs = 0
        self._annotations: dict[int, frozenset[str]] = {}
        self.call_names: dict[int, str | None] = {}
        """Each evaluated call's callee as a qualified name (see :meth:`qualname`)."""

    # ----------------------------------------------------------------- public queries

    def value(self, node: ast.AST) -> Value:
        """The value the engine found for an expression (empty if it knows nothing)."""
        return self.values.get(id(node), EMPTY)

    def qualname(self, node: ast.AST) -> str | None:
        """The fully qualified, canonical name an expression refers to through imports."""
        attributes: list[str] = []
        while isinstance(node, ast.Attribute):
            attributes.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        target = self.aliases.get(node.id)
        if target is None or (node.id in self._env and self._env is not self._globals):
            return None
        if attributes:
            target = ".".join([target, *reversed(attributes)])
        return known.canonical(target)

    def function_name(self, key: str) -> str:
        """The name of a function the engine knows by key."""
        return self.functions[key].node.name

    def constant(self, node: ast.AST) -> Const | None:
        """The constant string (or tuple of strings) an expression is known to hold."""
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        return self.value(node).const

    # ----------------------------------------------------------------- driver

    @property
    def findings(self) -> dict[tuple[str, int, int], Finding]:
        """Every finding of the taint rules, by rule code and position."""
        merged: dict[tuple[str, int, int], Finding] = {}
        for scope in self._findings.values():
            merged.update(scope)
        return merged

    def run(self) -> Analysis:
        """Interpret the module, then its functions, re-running only what a change reaches.

        A scope (the module body or one function) is re-run when a summary it read — a
        function's return value or parameter sinks, a class attribute — or its own parameter
        kinds grew after it ran. Values only grow and are finite, so this ends; a cap on runs
        per scope bounds the work on pathological modules.
        """
        self.ran = True
        self._run_module()
        while self._queue:
            key = self._queue.pop(0)
            self._queued.discard(key)
            if key == MODULE:
                self._run_module()
                continue
            info = self.functions[key]
            if info.runs < _MAX_ROUNDS:
                info.runs += 1
                self._analyse_function(info)
        return self

    def _run_module(self) -> None:
        before = dict(self._globals)
        self._globals = {}
        self._findings[MODULE] = {}
        self._enter(self._globals, None, None, None)
        self._scope = MODULE
        self._module_runs += 1
        self._block(self.tree.body)
        if self._module_runs > 1 and before != self._globals:
            for key in self.functions:
                self._schedule(key)

    def _schedule(self, key: str) -> None:
        if key not in self._queued:
            self._queued.add(key)
            self._queue.append(key)

    def _read(self, summary: str) -> None:
        self._readers.setdefault(summary, set()).add(self._scope)

    def _changed(self, summary: str) -> None:
        for reader in self._readers.get(summary, ()):
            if reader == MODULE and self._module_runs > _MAX_ROUNDS:
                continue
            self._schedule(reader)

    def _enter(
        self,
        env: dict[str, Value],
        closure: dict[str, Value] | None,
        function: _Function | None,
        cls: _Class | None,
    ) -> None:
        self._env = env
        self._closure = closure
        self._function = function
        self._class = cls

    def _analyse_function(self, info: _Function) -> None:
        env: dict[str, Value] = {}
        args = info.node.args
        everything = [*args.posonlyargs, *args.args, *args.kwonlyargs]
        if args.vararg:
            everything.append(args.vararg)
        if args.kwarg:
            everything.append(args.kwarg)
        for index, arg in enumerate(everything):
            kinds = set(info.param_kinds.get(arg.arg, ()))
            kinds |= self._annotation_kinds(arg.annotation)
            if index == 0 and info.bound and info.class_key:
                kinds.add(_INSTANCE + info.class_key)
            env[arg.arg] = Value(kinds=frozenset(kinds), params=frozenset({arg.arg}))
        saved = (self._env, self._closure, self._function, self._class, self._ret, self._scope,
                 self._in_tenant)
        self._in_tenant = False
        self._enter(env, info.closure, info, self.classes.get(info.class_key or ""))
        self._ret = EMPTY
        self._scope = info.key
        self._findings[info.key] = {}
        self._read("params:" + info.key)
        self._block(info.node.body)
        ret = info.ret.join(self._ret)
        if ret != info.ret:
            info.ret = ret
            self._changed("fn:" + info.key)
        (self._env, self._closure, self._function, self._class, self._ret, self._scope,
         self._in_tenant) = saved

    def _annotation_kinds(self, annotation: ast.expr | None) -> set[str]:
        if annotation is None:
            return set()
        cached = self._annotations.get(id(annotation))
        if cached is not None:
            return set(cached)
        kinds = self._annotation_kinds_uncached(annotation)
        self._annotations[id(annotation)] = frozenset(kinds)
        return kinds

    def _annotation_kinds_uncached(self, annotation: ast.expr) -> set[str]:
        if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
            try:
                annotation = ast.parse(annotation.value, mode="eval").body
            except SyntaxError:
                return set()
        kinds: set[str] = set()
        for node in ast.walk(annotation):
            if isinstance(node, ast.Name | ast.Attribute):
                name = self.qualname(node)
                if name == known.MEMORY:
                    kinds.add(STORE)
                elif name == known.SCOPED_MEMORY:
                    kinds.add(HANDLE)
                elif name == known.PERSON_MEMORY:
                    kinds |= {HANDLE, PERSON}
                elif isinstance(node, ast.Name) and node.id in self._class_by_name:
                    kinds.add(_INSTANCE + self._class_by_name[node.id])
        return kinds

    # ----------------------------------------------------------------- names

    def _lookup(self, name: str) -> Value:
        value = self._env.get(name)
        if value is not None:
            return value
        if self._closure is not None:
            value = self._closure.get(name)
            if value is not None:
                return value
        return self._globals.get(name, EMPTY)

    def _bind(self, target: ast.expr, value: Value) -> None:
        if isinstance(target, ast.Name):
            self._env[target.id] = value
        elif isinstance(target, ast.Tuple | ast.List):
            for element in target.elts:
                self._bind(element, value)
        elif isinstance(target, ast.Starred):
            self._bind(target.value, value)
        elif isinstance(target, ast.Attribute):
            owner = self._expr(target.value)
            self._set_attribute(owner, target.attr, value)
            if isinstance(target.value, ast.Name):
                self._env[f"{target.value.id}.{target.attr}"] = value
        elif isinstance(target, ast.Subscript):
            self._expr(target.slice)
            container = target.value
            if isinstance(container, ast.Name):
                self._env[container.id] = self._lookup(container.id).join(value.taint())
            else:
                self._expr(container)

    def _set_attribute(self, owner: Value, attr: str, value: Value) -> None:
        for kind in owner.kinds:
            if kind.startswith(_INSTANCE):
                cls = self.classes.get(kind[len(_INSTANCE):])
                if cls is None:
                    continue
                old = cls.attrs.get(attr, EMPTY)
                new = old.join(value)
                if new != old:
                    cls.attrs[attr] = new
                    self._changed(f"attr:{cls.key}.{attr}")

    def _get_attribute(self, owner: Value, attr: str) -> Value:
        result = EMPTY
        for kind in owner.kinds:
            if kind.startswith(_INSTANCE):
                for cls in self._mro(kind[len(_INSTANCE):]):
                    self._read(f"attr:{cls.key}.{attr}")
                    if attr in cls.attrs:
                        result = result.join(cls.attrs[attr])
                        break
        return result

    def _mro(self, class_key: str) -> Iterator[_Class]:
        seen: set[str] = set()
        queue = [class_key]
        while queue:
            key = queue.pop(0)
            if key in seen or key not in self.classes:
                continue
            seen.add(key)
            cls = self.classes[key]
            yield cls
            queue.extend(self._class_by_name[b] for b in cls.bases if b in self._class_by_name)

    # ----------------------------------------------------------------- statements

    def _block(self, body: Sequence[ast.stmt]) -> None:
        for statement in body:
            self._stmt(statement)

    def _merge(self, *envs: dict[str, Value]) -> dict[str, Value]:
        merged: dict[str, Value] = {}
        for env in envs:
            for name, value in env.items():
                previous = merged.get(name)
                merged[name] = value if previous is None else previous.join(value)
        return merged

    def _replace_env(self, env: dict[str, Value]) -> None:
        if self._env is self._globals:
            self._globals.clear()
            self._globals.update(env)
        else:
            self._env.clear()
            self._env.update(env)

    def _branches(self, *bodies: Sequence[ast.stmt]) -> None:
        start = dict(self._env)
        results = []
        for body in bodies:
            self._replace_env(dict(start))
            self._block(body)
            results.append(dict(self._env))
        self._replace_env(self._merge(*results))

    def _loop(self, run_once: Callable[[], None], orelse: Sequence[ast.stmt]) -> None:
        before = dict(self._env)
        self._loop_depth += 1
        rounds = 2 if self._loop_depth <= _MAX_LOOP_DEPTH else 1
        for _ in range(rounds):
            run_once()
            self._replace_env(self._merge(before, self._env))
        self._loop_depth -= 1
        self._block(orelse)

    def _stmt(self, node: ast.stmt) -> None:
        if isinstance(node, ast.Expr):
            self._expr(node.value)
        elif isinstance(node, ast.Assign):
            value = self._expr(node.value)
            for target in node.targets:
                if isinstance(target, ast.Tuple | ast.List) and isinstance(
                    node.value, ast.Tuple | ast.List
                ) and len(target.elts) == len(node.value.elts):
                    for sub_target, sub_value in zip(target.elts, node.value.elts, strict=True):
                        self._bind(sub_target, self.value(sub_value))
                else:
                    self._bind(target, value)
        elif isinstance(node, ast.AnnAssign):
            if node.value is not None:
                value = self._expr(node.value)
                kinds = self._annotation_kinds(node.annotation)
                if kinds:
                    value = value.join(Value(kinds=frozenset(kinds)))
                self._bind(node.target, value)
            elif self._class is not None and self._function is None and isinstance(
                node.target, ast.Name
            ):
                kinds = self._annotation_kinds(node.annotation)
                if kinds:
                    self._set_attribute(
                        Value(kinds=frozenset({_INSTANCE + self._class.key})),
                        node.target.id,
                        Value(kinds=frozenset(kinds)),
                    )
        elif isinstance(node, ast.AugAssign):
            value = self._expr(node.value)
            current = self._expr(node.target) if not isinstance(node.target, ast.Name) else (
                self._lookup(node.target.id)
            )
            self._bind(node.target, current.join(value.taint()))
        elif isinstance(node, ast.Return):
            if node.value is not None:
                self._ret = self._ret.join(self._expr(node.value))
        elif isinstance(node, ast.If):
            self._expr(node.test)
            self._branches(node.body, node.orelse)
        elif isinstance(node, ast.For | ast.AsyncFor):
            iterated = self._expr(node.iter)
            element = Value(kinds=iterated.kinds, origins=iterated.origins, params=iterated.params)

            def run_for() -> None:
                self._bind(node.target, element)
                self._block(node.body)

            self._loop(run_for, node.orelse)
        elif isinstance(node, ast.While):

            def run_while() -> None:
                self._expr(node.test)
                self._block(node.body)

            self._loop(run_while, node.orelse)
        elif isinstance(node, ast.With | ast.AsyncWith):
            tenant = False
            for item in node.items:
                value = self._expr(item.context_expr)
                if isinstance(item.context_expr, ast.Call) and self.qualname(
                    item.context_expr.func
                ) == known.TENANT_USE:
                    tenant = True
                if item.optional_vars is not None:
                    entered = Value(
                        kinds=value.kinds & {STORE, HANDLE, PERSON, HTTP_CLIENT, LOGGER}
                        | frozenset(k for k in value.kinds if k.startswith(_INSTANCE)),
                        origins=value.origins,
                        params=value.params,
                    )
                    self._bind(item.optional_vars, entered)
            outer = self._in_tenant
            self._in_tenant = outer or tenant
            self._block(node.body)
            self._in_tenant = outer
        elif isinstance(node, ast.Try | ast.TryStar):
            start = dict(self._env)
            self._block(node.body)
            after_body = dict(self._env)
            self._block(node.orelse)
            results = [dict(self._env)]
            for handler in node.handlers:
                self._replace_env(self._merge(start, after_body))
                self._block(handler.body)
                results.append(dict(self._env))
            self._replace_env(self._merge(*results))
            self._block(node.finalbody)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            self._define_function(node)
        elif isinstance(node, ast.ClassDef):
            self._define_class(node)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    self.aliases[alias.asname] = alias.name
                else:
                    top = alias.name.split(".", 1)[0]
                    self.aliases[top] = top
        elif isinstance(node, ast.ImportFrom):
            base = self._absolute(node.module, node.level)
            if base:
                for alias in node.names:
                    self.aliases[alias.asname or alias.name] = f"{base}.{alias.name}"
        elif isinstance(node, ast.Raise):
            if node.exc is not None:
                self._expr(node.exc)
            if node.cause is not None:
                self._expr(node.cause)
            self._check_sinks(node)
        elif isinstance(node, ast.Match):
            self._expr(node.subject)
            for case in node.cases:
                if case.guard is not None:
                    self._expr(case.guard)
            self._branches(*[case.body for case in node.cases], [])
        elif isinstance(node, ast.Delete):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    self._env.pop(target.id, None)
        elif isinstance(node, ast.Assert):
            self._expr(node.test)
            if node.msg is not None:
                self._expr(node.msg)

    def _absolute(self, module: str | None, level: int) -> str | None:
        if level == 0:
            return module
        if self.package is None:
            return None
        parts = self.package.split(".") if self.package else []
        if level - 1 > len(parts):
            return None
        parts = parts[: len(parts) - (level - 1)]
        if module:
            parts.append(module)
        return ".".join(parts) or None

    def exported(self, module: str) -> tuple[dict[str, frozenset[str]], dict[str, Summary]]:
        """What another module may import from this one, by qualified name: globals that are
        stores or handles, and summaries of module-level functions that return a store, a
        handle or tainted text, or whose parameters reach a sink."""
        wanted = frozenset({STORE, HANDLE, PERSON})
        names = {
            f"{module}.{name}": value.kinds & wanted
            for name, value in self._globals.items()
            if value.kinds & wanted
        }
        summaries: dict[str, Summary] = {}
        for info in self.functions.values():
            if info.closure is not None or info.class_key is not None:
                continue
            origins = tuple(sorted({(o.kind, o.what) for o in info.ret.origins}))
            summary = Summary(
                positional=tuple(info.positional),
                kwonly=tuple(info.kwonly),
                vararg=info.vararg,
                kwarg=info.kwarg,
                kinds=info.ret.kinds & wanted,
                origins=origins,
                depends=info.ret.params,
                sinks=tuple(sorted({(s.code, s.params, s.where) for s in info.sinks},
                                   key=lambda s: (s[0], sorted(s[1]), s[2]))),
            )
            if summary.kinds or summary.origins or summary.depends or summary.sinks:
                summaries[f"{module}.{info.node.name}"] = summary
        return names, summaries

    def _imported(self, node: ast.expr) -> Value:
        """The kinds an imported name has in another checked module."""
        name = self.qualname(node)
        if name is None:
            return EMPTY
        if name in known.LOGGER_OBJECTS:
            return Value(kinds=frozenset({LOGGER}))
        kinds = self.config.exports.get(name)
        return Value(kinds=kinds) if kinds else EMPTY

    def _define_function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for decorator in node.decorator_list:
            self._expr(decorator)
        for default in [*node.args.defaults, *node.args.kw_defaults]:
            if default is not None:
                self._expr(default)
        key = f"{node.name}@{node.lineno}:{node.col_offset}"
        cls = self._class if self._class_body else None
        decorators = set()
        for decorator in node.decorator_list:
            if isinstance(decorator, ast.Call):  # @mcp.tool(), @tool("name")
                decorator = decorator.func
            if isinstance(decorator, ast.Name):
                decorators.add(decorator.id)
            elif isinstance(decorator, ast.Attribute):
                decorators.add(decorator.attr)
        static = "staticmethod" in decorators
        closure = None if self._env is self._globals else self._snapshot()
        positional = [a.arg for a in [*node.args.posonlyargs, *node.args.args]]
        info = self.functions.get(key)
        if info is not None and info.closure != closure:
            info.closure = closure
            self._schedule(key)
        if info is None:
            info = _Function(
                key=key,
                node=node,
                class_key=cls.key if cls is not None else None,
                closure=closure,
                positional=positional,
                kwonly=[a.arg for a in node.args.kwonlyargs],
                vararg=node.args.vararg.arg if node.args.vararg else None,
                kwarg=node.args.kwarg.arg if node.args.kwarg else None,
                bound=cls is not None and not static,
                tool=bool(decorators & known.TOOL_DECORATORS),
            )
            self.functions[key] = info
            for arg in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]:
                kinds = self._annotation_kinds(arg.annotation)
                if kinds:
                    info.param_kinds[arg.arg] = frozenset(kinds)
            self._schedule(key)
        if cls is not None:
            cls.methods[node.name] = key
            if static:
                cls.static.add(node.name)
        else:
            self._env[node.name] = Value(kinds=frozenset({_DEF + key}))

    def _snapshot(self) -> dict[str, Value]:
        snapshot = dict(self._closure or {})
        snapshot.update(self._env)
        return snapshot

    def _define_class(self, node: ast.ClassDef) -> None:
        for base in node.bases:
            self._expr(base)
        for decorator in node.decorator_list:
            self._expr(decorator)
        key = f"{node.name}@{node.lineno}:{node.col_offset}"
        cls = self.classes.get(key)
        if cls is None:
            cls = _Class(
                key=key,
                name=node.name,
                bases=[b.id for b in node.bases if isinstance(b, ast.Name)],
            )
            self.classes[key] = cls
        self._class_by_name[node.name] = key
        saved = (self._env, self._closure, self._function, self._class, self._class_body)
        closure = None if self._env is self._globals else self._snapshot()
        self._enter({}, closure, None, cls)
        self._class_body = True
        for statement in node.body:
            if isinstance(statement, ast.Assign):
                value = self._expr(statement.value)
                for target in statement.targets:
                    if isinstance(target, ast.Name):
                        self._set_attribute(Value(kinds=frozenset({_INSTANCE + key})),
                                            target.id, value)
            else:
                self._stmt(statement)
        self._env, self._closure, self._function, self._class, self._class_body = saved
        self._env[node.name] = Value(kinds=frozenset({_CLASS + key}))

    # ----------------------------------------------------------------- expressions

    def _record(self, node: ast.AST, value: Value) -> Value:
        if value is not EMPTY:
            previous = self.values.get(id(node))
            self.values[id(node)] = value if previous is None else previous.join(value)
        return value

    def _expr(self, node: ast.expr) -> Value:
        if isinstance(node, ast.Name):
            value = self._lookup(node.id)
            if value is EMPTY and node.id in self.aliases:
                value = self._imported(node)
            elif value.kinds and isinstance(node.ctx, ast.Load):
                for kind in value.kinds:
                    if kind.startswith(_DEF):
                        self.references.add(
                            (kind[len(_DEF):], self._scope, self._in_tenant, node.lineno)
                        )
        elif isinstance(node, ast.Constant):
            return self._record(node, Value(const=node.value)) if isinstance(
                node.value, str
            ) else EMPTY
        elif isinstance(node, ast.Attribute):
            value = self._attribute(node)
        elif isinstance(node, ast.Call):
            return self._call(node)
        elif isinstance(node, ast.JoinedStr):
            value = EMPTY
            for part in node.values:
                value = value.join(self._expr(part).taint())
        elif isinstance(node, ast.FormattedValue):
            value = self._expr(node.value).taint()
            if node.format_spec is not None:
                value = value.join(self._expr(node.format_spec))
        elif isinstance(node, ast.BinOp):
            left = self._expr(node.left)
            right = self._expr(node.right)
            value = left.taint().join(right.taint())
            if isinstance(node.op, ast.BitOr) and TEMPLATE in left.kinds:
                value = value.join(Value(kinds=frozenset({TEMPLATE}),
                                         placeholders=left.placeholders))
            elif (
                isinstance(node.op, ast.Add)
                and isinstance(left.const, str)
                and isinstance(right.const, str)
                and value is EMPTY
            ):
                value = Value(const=left.const + right.const)
        elif isinstance(node, ast.List | ast.Tuple | ast.Set):
            return self._sequence(node)
        elif isinstance(node, ast.Dict):
            value = EMPTY
            for key in node.keys:
                if key is not None:
                    value = value.join(self._expr(key).taint())
            for item in node.values:
                value = value.join(self._element(self._expr(item)))
            self._record(node, value)
            self._check_sinks(node)
            return value
        elif isinstance(node, ast.Subscript):
            container = self._expr(node.value)
            self._expr(node.slice)
            value = Value(kinds=container.kinds, origins=container.origins,
                          params=container.params)
        elif isinstance(node, ast.IfExp):
            self._expr(node.test)
            value = self._expr(node.body).join(self._expr(node.orelse))
        elif isinstance(node, ast.BoolOp):
            value = EMPTY
            for operand in node.values:
                value = value.join(self._expr(operand))
        elif isinstance(node, ast.Compare):
            self._expr(node.left)
            for comparator in node.comparators:
                self._expr(comparator)
            value = EMPTY
        elif isinstance(node, ast.UnaryOp):
            self._expr(node.operand)
            value = EMPTY
        elif isinstance(node, ast.Await):
            value = self._expr(node.value)
        elif isinstance(node, ast.Yield | ast.YieldFrom):
            if node.value is not None:
                self._ret = self._ret.join(self._expr(node.value))
            value = EMPTY
        elif isinstance(node, ast.NamedExpr):
            value = self._expr(node.value)
            self._bind(node.target, value)
        elif isinstance(node, ast.Starred):
            value = self._expr(node.value)
        elif isinstance(node, ast.ListComp | ast.SetComp | ast.GeneratorExp):
            value = self._comprehension(node.generators, [node.elt])
        elif isinstance(node, ast.DictComp):
            value = self._comprehension(node.generators, [node.key, node.value])
        elif isinstance(node, ast.Lambda):
            saved = dict(self._env) if self._env is not self._globals else None
            for arg in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]:
                self._env[arg.arg] = EMPTY
            self._expr(node.body)
            if saved is not None:
                self._replace_env(saved)
            value = EMPTY
        elif isinstance(node, ast.Slice):
            for bound in (node.lower, node.upper, node.step):
                if bound is not None:
                    self._expr(bound)
            value = EMPTY
        else:
            value = EMPTY
        return self._record(node, value)

    @staticmethod
    def _element(value: Value) -> Value:
        """What a container holding ``value`` carries (kinds, text, system placeholders)."""
        if value.const is None:
            return value
        return Value(value.kinds, value.origins, value.params, None, value.placeholders)

    def _sequence(self, node: ast.List | ast.Tuple | ast.Set) -> Value:
        value = EMPTY
        consts: list[str] = []
        for element in node.elts:
            item = self._expr(element)
            consts.append(item.const if isinstance(item.const, str) else "\0")
            value = value.join(self._element(item))
        if (
            isinstance(node, ast.Tuple)
            and len(node.elts) == 2
            and consts[0] in SYSTEM_ROLES
            and consts[1] != "\0"
        ):
            value = value.join(Value(placeholders=_placeholders(consts[1])))
        if node.elts and "\0" not in consts:
            value = Value(value.kinds, value.origins, value.params, tuple(consts),
                          value.placeholders)
        elif not node.elts:
            value = Value(const=())
        self._record(node, value)
        if isinstance(node, ast.Tuple):
            self._check_sinks(node)
        return value

    def _comprehension(
        self, generators: list[ast.comprehension], results: list[ast.expr]
    ) -> Value:
        saved: dict[str, Value | None] = {}
        for generator in generators:
            iterated = self._expr(generator.iter)
            for target in ast.walk(generator.target):
                if isinstance(target, ast.Name) and target.id not in saved:
                    saved[target.id] = self._env.get(target.id)
            self._bind(generator.target, Value(kinds=iterated.kinds, origins=iterated.origins,
                                               params=iterated.params))
            for condition in generator.ifs:
                self._expr(condition)
        value = EMPTY
        for result in results:
            value = value.join(self._element(self._expr(result)))
        for name, previous in saved.items():
            if previous is None:
                self._env.pop(name, None)
            else:
                self._env[name] = previous
        return value

    def _attribute(self, node: ast.Attribute) -> Value:
        owner = self._expr(node.value)
        value = owner.taint() if node.attr not in known.NON_CONTENT_ATTRIBUTES else EMPTY
        if any(kind.startswith(_INSTANCE) for kind in owner.kinds):
            if isinstance(node.value, ast.Name):
                local = self._env.get(f"{node.value.id}.{node.attr}")
                if local is not None:
                    return value.join(local)
            value = value.join(self._get_attribute(owner, node.attr))
        if owner is EMPTY:
            root = node.value
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(root, ast.Name) and root.id in self.aliases:
                value = value.join(self._imported(node))
        return value

    # ----------------------------------------------------------------- calls

    def _call(self, node: ast.Call) -> Value:
        if id(node) not in self.call_scopes:
            self.calls.append(node)
        self.call_scopes[id(node)] = (self._scope, self._in_tenant)
        func = node.func
        receiver: Value | None = None
        if isinstance(func, ast.Attribute):
            receiver = self._expr(func.value)
        callee = self._expr(func) if isinstance(func, ast.Name) else EMPTY
        args = [self._expr(arg) for arg in node.args]
        keywords = {kw.arg: self._expr(kw.value) for kw in node.keywords}
        name = self.qualname(func)
        self.call_names[id(node)] = name
        result = EMPTY
        handled = False
        where = Origin("", node.lineno, node.col_offset + 1, "")

        if receiver is not None:
            assert isinstance(func, ast.Attribute)  # noqa: S101 - narrowing for the type checker
            method = func.attr
            if HANDLE in receiver.kinds and method in known.RECALL_METHODS:
                result = Value(origins=frozenset({where._replace(kind=RECALLED,
                                                                 what=f"{method}()")}))
                handled = True
            elif STORE in receiver.kinds and method == "acting_for":
                result = Value(kinds=frozenset({HANDLE}))
                handled = True
            elif STORE in receiver.kinds and method == "person":
                result = Value(kinds=frozenset({HANDLE, PERSON}))
                handled = True
            elif (
                HTTP_CLIENT in receiver.kinds and method in known.HTTP_CLIENT_METHODS
            ) or method in known.MCP_METHODS:
                result = Value(origins=frozenset({where._replace(kind=UNTRUSTED,
                                                                 what=f"{method}()")}))
                handled = True
            elif method in known.TOOL_RUN_METHODS and any(
                k.startswith(_DEF) and self.functions[k[len(_DEF):]].tool
                for k in receiver.kinds
                if k[len(_DEF):] in self.functions
            ):
                for kind in receiver.kinds:
                    if kind.startswith(_DEF) and kind[len(_DEF):] in self.functions:
                        result = result.join(
                            self._tool_output(self.functions[kind[len(_DEF):]], where)
                        )
                handled = True
            elif TEMPLATE in receiver.kinds and method == "partial":
                result = Value(kinds=frozenset({TEMPLATE}), placeholders=receiver.placeholders)
            else:
                for kind in receiver.kinds:
                    if kind.startswith(_INSTANCE):
                        key = self._method(kind[len(_INSTANCE):], method)
                        if key is not None:
                            info = self.functions[key]
                            result = result.join(self._call_function(info, node, args, keywords,
                                                                     skip_first=info.bound))
                            handled = True
                    elif kind.startswith(_CLASS):
                        class_key = kind[len(_CLASS):]
                        cls = self.classes.get(class_key)
                        if cls is not None and cls.name in self.config.soft_classes:
                            result = result.join(Value(kinds=frozenset({SOFT_DRIVER})))
                        key = self._method(class_key, method)
                        if key is not None:
                            info = self.functions[key]
                            classmethod_ = any(
                                isinstance(d, ast.Name) and d.id == "classmethod"
                                for d in info.node.decorator_list
                            )
                            result = result.join(self._call_function(info, node, args, keywords,
                                                                     skip_first=classmethod_))
                            handled = True
        for kind in callee.kinds:
            if kind.startswith(_DEF):
                defined = self.functions.get(kind[len(_DEF):])
                if defined is not None:
                    result = result.join(self._call_function(defined, node, args, keywords))
                    if defined.tool:
                        result = result.join(self._tool_output(defined, where))
                    handled = True
            elif kind.startswith(_CLASS):
                class_key = kind[len(_CLASS):]
                instance = Value(kinds=frozenset({_INSTANCE + class_key}))
                cls = self.classes.get(class_key)
                if cls is not None and cls.name in self.config.soft_classes:
                    instance = instance.join(Value(kinds=frozenset({SOFT_DRIVER})))
                init = self._method(class_key, "__init__")
                if init is not None:
                    self._call_function(self.functions[init], node, args, keywords,
                                        skip_first=True)
                result = result.join(instance)
                handled = True

        if name is not None:
            known_result = self._known_call(name, node, args, keywords, where)
            if known_result is not None:
                result = result.join(known_result)
                handled = True
        template = self._template(node, func, args)
        if template is not None:
            result = result.join(template)
        if not handled:
            result = result.join(self._propagate(func, receiver, args, keywords))
        self._record(node, result)
        self._check_sinks(node)
        return result

    @staticmethod
    def _tool_output(info: _Function, where: Origin) -> Value:
        """What calling an agent tool returns: text the tool fetched or made, untrusted."""
        if not info.tool:
            return EMPTY
        origin = where._replace(kind=UNTRUSTED, what=f"the tool {info.node.name}()")
        return Value(origins=frozenset({origin}))

    def _method(self, class_key: str, method: str) -> str | None:
        for cls in self._mro(class_key):
            if method in cls.methods:
                return cls.methods[method]
        return None

    def _known_call(
        self,
        name: str,
        node: ast.Call,
        args: list[Value],
        keywords: dict[str | None, Value],
        where: Origin,
    ) -> Value | None:
        if name in (known.MEMORY_OPEN, known.MEMORY):
            return Value(kinds=frozenset({STORE}))
        summary = self.config.summaries.get(name)
        if summary is not None:
            return self._call_summary(name, summary, node, args, keywords, where)
        if name.startswith(known.SOURCE + "."):
            factory = name[len(known.SOURCE) + 1:]
            if factory in known.UNTRUSTED_SOURCES:
                return Value(kinds=frozenset({SOURCE_UNTRUSTED}))
            if factory in known.TRUSTED_SOURCES:
                return Value(kinds=frozenset({SOURCE_TRUSTED}))
        if name in known.HTTP_FUNCTIONS or name in self.config.untrusted_calls:
            return Value(origins=frozenset({where._replace(kind=UNTRUSTED, what=f"{name}()")}))
        if name in known.HTTP_CLIENT_CLASSES:
            return Value(kinds=frozenset({HTTP_CLIENT}))
        if name in known.LOGGER_FACTORIES:
            return Value(kinds=frozenset({LOGGER}))
        if name == known.OPEN_DRIVER and args:
            url = args[0].const
            if isinstance(url, str) and scheme_of(url) in self.config.soft_schemes:
                return Value(kinds=frozenset({SOFT_DRIVER}))
            return EMPTY
        last = name.rsplit(".", 1)[-1]
        owner = name.rsplit(".", 2)[-2] if name.count(".") >= 1 else ""
        if name in self.config.soft_classes or last in self.config.soft_classes or (
            owner in self.config.soft_classes and last in ("from_url", "open", "create")
        ):
            return Value(kinds=frozenset({SOFT_DRIVER}))
        return None

    def _template(self, node: ast.Call, func: ast.expr, args: list[Value]) -> Value | None:
        last = func.attr if isinstance(func, ast.Attribute) else (
            func.id if isinstance(func, ast.Name) else ""
        )
        owner = func.value if isinstance(func, ast.Attribute) else None
        owner_name = (
            owner.id if isinstance(owner, ast.Name)
            else owner.attr if isinstance(owner, ast.Attribute) else ""
        )
        if owner_name == "SystemMessagePromptTemplate" and last in (
            "from_template", "from_messages"
        ):
            placeholders: frozenset[str] = frozenset()
            for arg in args:
                if isinstance(arg.const, str):
                    placeholders |= _placeholders(arg.const)
            return Value(kinds=frozenset({TEMPLATE}), placeholders=placeholders)
        if last == "SystemMessagePromptTemplate":
            return Value(kinds=frozenset({TEMPLATE}))
        if (owner_name == "ChatPromptTemplate" and last in ("from_messages", "from_template")) or (
            last == "ChatPromptTemplate"
        ):
            placeholders = frozenset()
            for arg in [*args, *[self.value(kw.value) for kw in node.keywords]]:
                placeholders |= arg.placeholders
            return Value(kinds=frozenset({TEMPLATE}), placeholders=placeholders)
        return None

    def _propagate(
        self,
        func: ast.expr,
        receiver: Value | None,
        args: list[Value],
        keywords: dict[str | None, Value],
    ) -> Value:
        last = func.id if isinstance(func, ast.Name) else (
            func.attr if isinstance(func, ast.Attribute) else ""
        )
        if isinstance(func, ast.Name) and last in known.NON_TEXT_BUILTINS:
            return EMPTY
        value = receiver.taint() if receiver is not None else EMPTY
        for arg in args:
            value = value.join(arg.taint())
        for keyword in keywords.values():
            value = value.join(keyword.taint())
        return value

    def _call_function(
        self,
        info: _Function,
        node: ast.Call,
        args: list[Value],
        keywords: dict[str | None, Value],
        *,
        skip_first: bool = False,
    ) -> Value:
        positional = info.positional[1:] if skip_first else info.positional
        mapping, _ = _map_arguments(positional, info.kwonly, info.vararg, info.kwarg, node, args,
                                    keywords)
        for name, value in mapping.items():
            kinds = frozenset(k for k in value.kinds if not k.startswith(_DEF))
            old = info.param_kinds.get(name, frozenset())
            if not kinds <= old:
                info.param_kinds[name] = old | kinds
                self._changed("params:" + info.key)
        self._read("fn:" + info.key)
        self.call_targets.setdefault(id(node), set()).add(info.key)
        self.references.add((info.key, self._scope, self._in_tenant, node.lineno))
        ret = info.ret
        result = Value(kinds=ret.kinds, origins=ret.origins, const=ret.const,
                       placeholders=ret.placeholders) if ret is not EMPTY else EMPTY
        for param in ret.params:
            if param in mapping:
                result = result.join(mapping[param].taint())
        for sink in list(info.sinks):  # a recursive call may add to them
            reached = EMPTY
            for param in sink.params:
                reached = reached.join(mapping.get(param, EMPTY))
            self._reach(sink.code, sink.node, sink.where, reached)
        return result

    # ----------------------------------------------------------------- sinks

    def _check_sinks(self, node: ast.AST) -> None:
        for rule in self.rules:
            for sink in rule.sinks(node, self):
                self._reach(rule.code, sink.node, sink.where, sink.value)

    def _call_summary(
        self,
        name: str,
        summary: Summary,
        node: ast.Call,
        args: list[Value],
        keywords: dict[str | None, Value],
        where: Origin,
    ) -> Value:
        """A call to a function of another checked module, through its summary."""
        module, _, short = name.rpartition(".")
        values, nodes = _map_arguments(list(summary.positional), list(summary.kwonly),
                                       summary.vararg, summary.kwarg, node, args, keywords)
        result = Value(
            kinds=summary.kinds,
            origins=frozenset(
                where._replace(kind=kind, what=f"{short}() ({what} in {module})")
                for kind, what in summary.origins
            ),
        )
        for param in summary.depends:
            result = result.join(values.get(param, EMPTY).taint())
        active = {rule.code for rule in self.rules}
        for code, params, sink_where in summary.sinks:
            if code not in active:
                continue
            for param in sorted(params):
                if param in nodes:
                    self._reach(code, nodes[param], f"{sink_where} inside {short}() of {module}",
                                values[param])
        return result

    def _reach(self, code: str, node: ast.expr, where: str, value: Value) -> None:
        rule = next(r for r in self.rules if r.code == code)
        origin = value.first_origin(rule.origin_kinds)
        if origin is not None:
            key = (code, node.lineno, node.col_offset)
            findings = self._findings.setdefault(self._scope, {})
            if key not in findings:
                findings[key] = Finding(
                    node.lineno,
                    node.col_offset + 1,
                    code,
                    rule.message(where, origin),
                    node.end_lineno,
                    None if node.end_col_offset is None else node.end_col_offset + 1,
                )
        if value.params and self._function is not None:
            sink = _ParamSink(code, node, where, value.params)
            if sink not in self._function.sinks:
                self._function.sinks.add(sink)
                self._changed("fn:" + self._function.key)


def _map_arguments(
    positional: Sequence[str],
    kwonly: Sequence[str],
    vararg: str | None,
    kwarg: str | None,
    node: ast.Call,
    args: list[Value],
    keywords: dict[str | None, Value],
) -> tuple[dict[str, Value], dict[str, ast.expr]]:
    """Which value (and which argument expression) each parameter receives at a call."""
    mapping: dict[str, Value] = {}
    nodes: dict[str, ast.expr] = {}
    for index, (arg_node, arg) in enumerate(zip(node.args, args, strict=True)):
        if isinstance(arg_node, ast.Starred):
            for name in positional[index:]:
                mapping[name] = mapping.get(name, EMPTY).join(arg)
                nodes.setdefault(name, arg_node)
            if vararg:
                mapping[vararg] = mapping.get(vararg, EMPTY).join(arg)
            break
        if index < len(positional):
            mapping[positional[index]] = arg
            nodes[positional[index]] = arg_node
        elif vararg:
            mapping[vararg] = mapping.get(vararg, EMPTY).join(arg)
            nodes.setdefault(vararg, arg_node)
    keyword_nodes = {kw.arg: kw.value for kw in node.keywords}
    for keyword, value in keywords.items():
        if keyword is None:
            for name in [*positional, *kwonly]:
                mapping[name] = mapping.get(name, EMPTY).join(value)
        elif keyword in positional or keyword in kwonly:
            mapping[keyword] = value
            nodes[keyword] = keyword_nodes[keyword]
        elif kwarg:
            mapping[kwarg] = mapping.get(kwarg, EMPTY).join(value)
            nodes.setdefault(kwarg, keyword_nodes[keyword])
    return mapping, nodes


def analyse(
    tree: ast.Module,
    config: EngineConfig,
    rules: Sequence[TaintSource] = (),
    package: str | None = None,
) -> Analysis:
    """Run the engine over a parsed module and return what it found."""
    return Analysis(tree, config, rules, package).run()
