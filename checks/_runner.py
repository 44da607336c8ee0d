"""Find the files, parse them once, learn the project's soft-erase drivers, run the rules.

Nothing is imported or run: each file is read as text and parsed with :func:`ast.parse`. A file
that cannot be read or parsed becomes a MAIN-MEM-0900 diagnostic and the run goes on.
"""

from __future__ import annotations

import ast
import fnmatch
import io
import multiprocessing
import os
import re
import tokenize
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from itertools import repeat
from pathlib import Path

from mainsdk_memory.checks._config import Config
from mainsdk_memory.checks._diagnostic import Diagnostic, Finding
from mainsdk_memory.checks._flow import Analysis, EngineConfig, Summary, TaintSource, analyse
from mainsdk_memory.checks._rule import RULES, Module, Rule, Settings, TaintRule

__all__ = [
    "FILE_NOT_CHECKED",
    "Report",
    "SourceFile",
    "check_paths",
    "check_source",
    "discover",
    "resolve_codes",
]

FILE_NOT_CHECKED = "MAIN-MEM-0900"
EXCLUDED_DIRS = frozenset(
    {".git", ".hg", ".svn", ".venv", "venv", "__pycache__", "node_modules", ".tox", ".nox",
     ".mypy_cache", ".ruff_cache", ".pytest_cache", ".hypothesis", "build", "dist", ".eggs",
     "site-packages"}
)
_SUPPRESS = re.compile(r"#\s*memory-check:\s*ignore(?:\[([A-Z0-9,\s-]*)\])?")
_SOFT_HINT = re.compile(r"erase\s*=\s*['\"]soft['\"]")


@dataclass
class Report:
    """The result of a run: diagnostics in path and line order, and what was read."""

    diagnostics: list[Diagnostic] = field(default_factory=list)
    files: int = 0
    lines: int = 0

    @property
    def exit_code(self) -> int:
        """0 clean, 1 with findings, 2 when a file was not checked."""
        if any(d.code == FILE_NOT_CHECKED for d in self.diagnostics):
            return 2
        return 1 if self.diagnostics else 0


@dataclass
class SourceFile:
    """One file to check: how to show its path, its text and its tree (or why there is none)."""

    display: str
    path: Path
    source: str = ""
    tree: ast.Module | None = None
    error: Finding | None = None
    package: str | None = None
    """The dotted package of the file (from the ``__init__.py`` folders above it)."""
    uses_memory: bool | None = None
    """Whether to run the engine: it mentions mainsdk_memory or imports a module that does."""

    def load(self) -> SourceFile:
        """Read and parse the file; a failure is kept as a MAIN-MEM-0900 finding."""
        try:
            self.source = self.path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            self.error = Finding(1, 1, FILE_NOT_CHECKED, f"cannot read the file: {reason}")
            return self
        self.tree, self.error = parse(self.source, self.display)
        return self


def parse(source: str, filename: str) -> tuple[ast.Module | None, Finding | None]:
    """Parse source text, turning a syntax error into a MAIN-MEM-0900 finding."""
    try:
        return ast.parse(source, filename=filename), None
    except SyntaxError as exc:
        return None, Finding(
            exc.lineno or 1,
            exc.offset or 1,
            FILE_NOT_CHECKED,
            f"cannot parse the file: {exc.msg}; it was not checked",
        )
    except (ValueError, RecursionError, MemoryError) as exc:
        return None, Finding(1, 1, FILE_NOT_CHECKED, f"cannot parse the file: {exc}")


def resolve_codes(patterns: Iterable[str]) -> set[str]:
    """Codes matching each pattern (a code or a prefix such as ``MAIN-MEM-002``)."""
    codes: set[str] = set()
    for pattern in patterns:
        pattern = pattern.strip().upper()
        if not pattern:
            continue
        if pattern == "ALL":
            codes |= set(RULES)
            continue
        matched = {code for code in RULES if code.startswith(pattern)}
        if not matched:
            raise ValueError(f"no rule matches {pattern!r}; see memory-check --list-rules")
        codes |= matched
    return codes


def _suppressions(source: str) -> dict[int, set[str] | None]:
    """Line -> codes suppressed on it (``None``: every code), from comments only."""
    found: dict[int, set[str] | None] = {}
    if "memory-check:" not in source:
        return found
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError):
        return found
    for token in tokens:
        if token.type != tokenize.COMMENT:
            continue
        match = _SUPPRESS.search(token.string)
        if not match:
            continue
        line = token.start[0]
        if match.group(1) is None:
            found[line] = None
        elif found.get(line, set()) is not None:
            codes = {c.strip() for c in match.group(1).split(",") if c.strip()}
            found[line] = found.get(line, set()) | codes  # type: ignore[operator]
    return found


def soft_driver_classes(trees: Iterable[tuple[str, ast.Module]]) -> set[str]:
    """Names of classes that declare ``Capabilities(..., erase="soft")`` in their body."""
    names: set[str] = set()
    for source, tree in trees:
        if not _SOFT_HINT.search(source):
            continue
        for node in ast.walk(tree):
            if not isinstance(node, ast.ClassDef):
                continue
            for inner in ast.walk(node):
                if (
                    isinstance(inner, ast.Call)
                    and _last_name(inner.func) == "Capabilities"
                    and any(
                        k.arg == "erase"
                        and isinstance(k.value, ast.Constant)
                        and k.value.value == "soft"
                        for k in inner.keywords
                    )
                ):
                    names.add(node.name)
                    break
    return names


def _last_name(func: ast.expr) -> str:
    if isinstance(func, ast.Name):
        return func.id
    return func.attr if isinstance(func, ast.Attribute) else ""


def _project_settings(
    settings: Settings, entry_points: Mapping[str, str], soft_classes: set[str]
) -> tuple[Settings, EngineConfig]:
    classes = set(settings.soft_erase_drivers) | soft_classes
    schemes = set(settings.soft_erase_schemes)
    for scheme, target in entry_points.items():
        attribute = target.partition(":")[2]
        if attribute and attribute.split(".")[0] in classes:
            schemes.add(scheme.lower())
    full = Settings(frozenset(schemes), frozenset(classes), settings.untrusted_calls)
    return full, EngineConfig(frozenset(schemes), frozenset(classes), settings.untrusted_calls)


def check_module(
    file: SourceFile,
    rules: Sequence[type[Rule]],
    settings: Settings,
    engine: EngineConfig,
    ignored: set[str] = frozenset(),  # type: ignore[assignment]
) -> list[Diagnostic]:
    """Run the rules on one parsed file and return its diagnostics, suppressions applied."""
    if file.tree is None:
        error = file.error or Finding(1, 1, FILE_NOT_CHECKED, "cannot parse the file")
        return [_diagnostic(file.display, error)]
    mentions_memory = (
        file.uses_memory if file.uses_memory is not None else "mainsdk_memory" in file.source
    )
    active = [r() for r in rules if r.code not in ignored and (mentions_memory or not
                                                                r.needs_memory)]
    taint: list[TaintSource] = [r for r in active if isinstance(r, TaintRule)]
    try:
        analysis = analyse(file.tree, engine, taint, file.package) if mentions_memory else (
            Analysis(file.tree, engine, ())
        )
    except RecursionError:
        return [_diagnostic(file.display, Finding(
            1, 1, FILE_NOT_CHECKED, "the file is nested too deeply to analyse; it was not checked"
        ))]
    module = Module(file.display, file.source, file.tree, analysis, settings)
    findings: list[Finding] = list(analysis.findings.values())
    for rule in active:
        findings.extend(rule.check(module))
    suppressed = _suppressions(file.source)
    diagnostics = []
    for finding in sorted(set(findings)):
        codes = suppressed.get(finding.line, set())
        if (codes is None or finding.code in codes) and RULES[finding.code].suppressible:
            continue
        diagnostics.append(_diagnostic(file.display, finding))
    return diagnostics


def _diagnostic(path: str, finding: Finding) -> Diagnostic:
    return Diagnostic(path, finding.line, finding.col, finding.code, finding.message,
                      finding.end_line, finding.end_col)


def _selected(select: Iterable[str], ignore: Iterable[str]) -> list[type[Rule]]:
    chosen = resolve_codes(select) if select else set(RULES)
    chosen -= resolve_codes(ignore)
    chosen.add(FILE_NOT_CHECKED)
    return [RULES[code] for code in sorted(chosen)]


def check_source(
    source: str,
    path: str = "<source>",
    *,
    select: Sequence[str] = (),
    ignore: Sequence[str] = (),
    settings: Settings | None = None,
) -> list[Diagnostic]:
    """Check one module's source text, as if it were the whole project."""
    file = SourceFile(path, Path(path), source)
    file.tree, file.error = parse(source, path)
    soft = soft_driver_classes([(source, file.tree)] if file.tree else [])
    full, engine = _project_settings(settings or Settings(), {}, soft)
    return check_module(file, _selected(select, ignore), full, engine)


def _display(path: Path) -> str:
    try:
        relative = os.path.relpath(path)
    except ValueError:  # another drive on Windows
        return str(path)
    return str(path.resolve()) if relative.startswith("..") else relative


def _excluded(path: Path, config: Config) -> bool:
    if not config.exclude:
        return False
    try:
        relative = path.resolve().relative_to(config.root).as_posix()
    except ValueError:
        return False
    parts = relative.split("/")
    candidates = ["/".join(parts[: i + 1]) for i in range(len(parts))] + [parts[-1]]
    return any(fnmatch.fnmatch(c, pattern.rstrip("/")) for c in candidates
               for pattern in config.exclude)


def discover(paths: Sequence[Path], config: Config) -> list[SourceFile]:
    """The Python files under ``paths`` (files given by name are always checked)."""
    files: dict[Path, SourceFile] = {}
    for given in paths:
        if given.is_dir():
            for folder, dirs, names in os.walk(given):
                dirs[:] = sorted(
                    d for d in dirs
                    if d not in EXCLUDED_DIRS and not d.endswith(".egg-info")
                    and not _excluded(Path(folder) / d, config)
                )
                for name in sorted(names):
                    candidate = Path(folder) / name
                    if name.endswith(".py") and not _excluded(candidate, config):
                        files.setdefault(candidate.resolve(),
                                         SourceFile(_display(candidate), candidate))
        else:
            files.setdefault(given.resolve(), SourceFile(_display(given), given))
    return list(files.values())


def _per_file_ignores(file: SourceFile, config: Config) -> set[str]:
    if not config.per_file_ignores:
        return set()
    try:
        relative = file.path.resolve().relative_to(config.root).as_posix()
    except ValueError:
        relative = file.path.as_posix()
    ignored: set[str] = set()
    for pattern, codes in config.per_file_ignores.items():
        if fnmatch.fnmatch(relative, pattern) or fnmatch.fnmatch(file.path.name, pattern):
            ignored |= resolve_codes(codes)
    ignored.discard(FILE_NOT_CHECKED)
    return ignored


_PARALLEL_MIN_FILES = 64


Job = tuple[str, str, str, frozenset[str], str | None, bool]
"""(display path, path, source, codes ignored for it, its package, whether it uses memory)."""


def _check_batch(
    batch: list[Job],
    rules: list[type[Rule]],
    settings: Settings,
    engine: EngineConfig,
) -> list[Diagnostic]:
    """Parse and check files in a worker (or in this process); sources are already read."""
    diagnostics: list[Diagnostic] = []
    for display, path, source, ignored, package, uses_memory in batch:
        file = SourceFile(display, Path(path), source, package=package, uses_memory=uses_memory)
        file.tree, file.error = parse(source, display)
        diagnostics.extend(check_module(file, rules, settings, engine, set(ignored)))
    return diagnostics


_IMPORT = re.compile(
    r"^[ \t]*(?:from[ \t]+(\.*)([\w.]*)[ \t]+import\b"
    r"|import[ \t]+([\w.]+(?:[ \t]*,[ \t]*[\w.]+)*))",
    re.M,
)


def module_name(path: Path) -> tuple[str, str]:
    """A file's dotted module name and package, from the ``__init__.py`` folders above it."""
    path = path.resolve()
    package: list[str] = []
    folder = path.parent
    while (folder / "__init__.py").is_file():
        package.insert(0, folder.name)
        folder = folder.parent
    own = [] if path.stem == "__init__" else [path.stem]
    return ".".join(package + own), ".".join(package)


def _imports(source: str, package: str) -> set[str]:
    """The modules a source imports (relative ones made absolute), read with a regex."""
    found: set[str] = set()
    for dots, module, names in _IMPORT.findall(source):
        if names:
            found.update(n.strip() for n in names.split(","))
            continue
        if dots:
            parts = package.split(".") if package else []
            parts = parts[: len(parts) - (len(dots) - 1)] if len(dots) - 1 <= len(parts) else []
            module = ".".join([*parts, module] if module else parts)
        if module:
            found.add(module)
    return found


def _depends(imports: set[str], modules: Iterable[str]) -> set[str]:
    """The modules among ``modules`` that an import of ``imports`` can reach."""
    reached = set()
    for module in modules:
        for imported in imports:
            if module == imported or module.startswith(imported + ".") or imported.startswith(
                module + "."
            ):
                reached.add(module)
                break
    return reached


_FLOW_HINT = re.compile(
    r"system|instructions|SystemMessage|requests|httpx|urlopen|aiohttp|call_tool|tool\b|"
    r"getLogger|structlog|loguru|warnings"
)
"""Words a module needs to hold a sink or an untrusted source; others export nothing."""


def _cross_module(
    files: list[SourceFile], engine: EngineConfig, rules: Sequence[type[Rule]]
) -> tuple[EngineConfig, dict[Path, bool]]:
    """Learn which globals and functions of the checked modules are stores or handles, so a
    module that imports ``memory`` from another checked module knows what it is."""
    names = {}
    imports: dict[Path, set[str]] = {}
    for file in files:
        name, file.package = module_name(file.path)
        names[name] = file
        imports[file.path] = _imports(file.source, file.package)
    imported = set().union(*imports.values()) if imports else set()
    providers = [
        (name, file) for name, file in names.items()
        if _depends(imported, [name]) and (
            "mainsdk_memory" in file.source
            or _FLOW_HINT.search(file.source)
            or _depends(imports[file.path], names)
        )
    ]
    taint_rules: list[TaintSource] = [r() for r in rules if issubclass(r, TaintRule)]
    exports: dict[str, frozenset[str]] = {}
    returns: dict[str, Summary] = {}
    for _ in range(3):  # providers may import each other; a few rounds reach a fixed point
        before = (dict(exports), dict(returns))
        config = replace(engine, exports=exports, summaries=returns)
        for name, file in providers:
            tree, _error = parse(file.source, file.display)
            if tree is None:
                continue
            try:
                analysis = analyse(tree, config, taint_rules, file.package)
                found_names, found_returns = analysis.exported(name)
            except RecursionError:
                continue
            exports = {**exports, **found_names}
            returns = {**returns, **found_returns}
        if (exports, returns) == before:
            break
    exporting = {name.rsplit(".", 1)[0] for name in exports} | {
        name.rsplit(".", 1)[0] for name, summary in returns.items()
        if summary.kinds or summary.origins
    }
    uses = {
        file.path: "mainsdk_memory" in file.source or bool(_depends(imports[file.path], exporting))
        for file in files
    }
    return replace(engine, exports=exports, summaries=returns), uses


def _workers(files: int) -> int:
    if files < _PARALLEL_MIN_FILES or "fork" not in multiprocessing.get_all_start_methods():
        return 1
    return max(1, min(os.cpu_count() or 1, 8))


def check_paths(
    paths: Sequence[Path],
    config: Config,
    *,
    select: Sequence[str] = (),
    ignore: Sequence[str] = (),
) -> Report:
    """Check every Python file under ``paths`` with the configuration's options.

    Files are read once here; the soft-erase driver index parses only the files that declare
    ``erase="soft"``. With many files and several cores, parsing and checking run in forked
    worker processes (the results are the same, in the same order).
    """
    rules = _selected(select or config.select, [*config.ignore, *ignore])
    files = discover(paths, config)
    report = Report(files=len(files))
    readable: list[SourceFile] = []
    hinted: list[tuple[str, ast.Module]] = []
    for file in files:
        try:
            file.source = file.path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            report.diagnostics.append(_diagnostic(file.display, Finding(
                1, 1, FILE_NOT_CHECKED, f"cannot read the file: {reason}; it was not checked"
            )))
            continue
        report.lines += file.source.count("\n") + (
            1 if file.source and not file.source.endswith("\n") else 0
        )
        if _SOFT_HINT.search(file.source):
            tree, _ = parse(file.source, file.display)
            if tree is not None:
                hinted.append((file.source, tree))
        readable.append(file)
    base = Settings(
        frozenset(s.lower() for s in config.soft_erase_schemes),
        frozenset(config.soft_erase_drivers),
        frozenset(config.untrusted_calls),
    )
    settings, engine = _project_settings(base, config.driver_entry_points,
                                         soft_driver_classes(hinted))
    engine, uses_memory = _cross_module(readable, engine, rules)
    jobs: list[Job] = [
        (file.display, str(file.path), file.source, frozenset(_per_file_ignores(file, config)),
         file.package, uses_memory[file.path])
        for file in readable
    ]
    workers = _workers(len(jobs))
    if workers == 1:
        report.diagnostics.extend(_check_batch(jobs, rules, settings, engine))
    else:
        size = max(1, len(jobs) // (workers * 4))
        batches = [jobs[i:i + size] for i in range(0, len(jobs), size)]
        context = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
            for diagnostics in pool.map(_check_batch, batches, repeat(rules), repeat(settings),
                                        repeat(engine)):
                report.diagnostics.extend(diagnostics)
    report.diagnostics.sort()
    return report
