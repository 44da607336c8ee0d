"""The wheel built from the repository installs in a fresh venv, and there every command works.

Issue 18's "done when": the wheel (built as the install benchmark builds it,
``benchmarks.install.build_wheel``: ``pip wheel --no-deps`` from a clean copy) is installed
with its dependencies (no extras; from the package index as pip is configured here, its
cache too) into a new virtual environment without the system's site-packages. There, in
processes that see nothing of the checkout (``-I``, run from an empty folder):

- every console script answers ``--version`` with ``<prog> <version>``, and so do
  ``python -m mainsdk_memory`` and ``python -m mainsdk_memory.checks``;
- ``memory explain E070`` prints its section of the errors page, which the wheel carries;
- ``import mainsdk_memory`` resolves to the venv's site-packages, not the checkout;
- the wheel holds ``py.typed``, the static embedder's table, the injection model (which flags
  there an attack the rules miss) and the errors page.

Not a timed test; about half a minute here (most of it the venv and pip).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

from benchmarks.install import build_wheel
from tests._injection_samples import MODEL_ONLY_ATTACK

REPO = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
VERSION = PROJECT["version"]

PROBE = r"""
import json, sys, sysconfig
import mainsdk_memory
print(json.dumps({
    "module": mainsdk_memory.__file__,
    "purelib": sysconfig.get_paths()["purelib"],
    "path": sys.path,
}))
"""


def _run(command: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        command, capture_output=True, text=True, check=False, timeout=600, cwd=cwd
    )
    assert done.returncode == 0, f"{command}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """(wheel, venv, an empty working folder) with the wheel installed in the venv."""
    root = tmp_path_factory.mktemp("wheel")
    wheel, _seconds = build_wheel(root / "wheels")
    venv = root / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], cwd=root)  # no system site-packages
    python = venv / "bin" / "python"
    _run([str(python), "-m", "pip", "install", "--disable-pip-version-check", "-q", str(wheel)],
         cwd=root)
    work = root / "work"
    work.mkdir()
    return wheel, venv, work


def test_the_wheel_carries_the_type_marker_and_the_data_files(
    installed: tuple[Path, Path, Path],
) -> None:
    wheel, _venv, _work = installed
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "mainsdk_memory/py.typed" in names
    assert "mainsdk_memory/docs/errors.md" in names
    assert any(n.startswith("mainsdk_memory/data/") and n.endswith(".npz") for n in names)
    assert "mainsdk_memory/data/injection-model.npz" in names  # the injection model (issue 20)
    assert "mainsdk_memory/__main__.py" in names
    assert "mainsdk_memory/checks/__main__.py" in names
    shipped = zipfile.ZipFile(wheel).read("mainsdk_memory/docs/errors.md").decode()
    assert shipped == (REPO / "docs" / "errors.md").read_text(encoding="utf-8")
    assert not [n for n in names if n.startswith("mainsdk_memory/docs/") and n.count("/") > 2]
    metadata = next(n for n in names if n.endswith(".dist-info/METADATA"))
    text = zipfile.ZipFile(wheel).read(metadata).decode()
    assert "Classifier: Typing :: Typed" in text
    assert "Project-URL: Homepage, https://github.com/mainsdk/mainsdk-memory" in text


def test_the_installed_injection_model_flags_what_the_rules_miss(
    installed: tuple[Path, Path, Path],
) -> None:
    # The default install reads the model's weights from the wheel, not from the checkout.
    _wheel, venv, work = installed
    probe = (
        "import json, sys\n"
        "from mainsdk_memory.injection import DEFAULT_DETECTOR, RuleDetector\n"
        "text = sys.argv[1]\n"
        "print(json.dumps([[f.rule for f in RuleDetector().check(text)],\n"
        "                  [f.rule for f in DEFAULT_DETECTOR.check(text)]]))\n"
    )
    done = _run([str(venv / "bin" / "python"), "-I", "-c", probe, MODEL_ONLY_ATTACK], cwd=work)
    assert json.loads(done.stdout) == [[], ["INJ-M01"]]


def test_the_venv_is_fresh_and_imports_the_installed_copy(
    installed: tuple[Path, Path, Path],
) -> None:
    _wheel, venv, work = installed
    config = (venv / "pyvenv.cfg").read_text()
    assert "include-system-site-packages = false" in config
    done = _run([str(venv / "bin" / "python"), "-I", "-c", PROBE], cwd=work)
    found = json.loads(done.stdout)
    module = Path(found["module"]).resolve()
    assert module.is_relative_to(Path(found["purelib"]).resolve()), module
    assert module.is_relative_to(venv.resolve())
    assert not module.is_relative_to(REPO)
    assert not any(Path(p).resolve() == REPO for p in found["path"] if p)


@pytest.mark.parametrize("script", sorted(PROJECT["scripts"]))
def test_every_console_script_answers_version(
    installed: tuple[Path, Path, Path], script: str
) -> None:
    _wheel, venv, work = installed
    done = _run([str(venv / "bin" / script), "--version"], cwd=work)
    assert done.stdout == f"{script} {VERSION}\n"


@pytest.mark.parametrize(
    ("module", "prog"), [("mainsdk_memory", "memory"), ("mainsdk_memory.checks", "memory-check")]
)
def test_python_dash_m_answers_version(
    installed: tuple[Path, Path, Path], module: str, prog: str
) -> None:
    _wheel, venv, work = installed
    done = _run([str(venv / "bin" / "python"), "-I", "-m", module, "--version"], cwd=work)
    assert done.stdout == f"{prog} {VERSION}\n"


def test_memory_explain_reads_the_page_inside_the_wheel(
    installed: tuple[Path, Path, Path],
) -> None:
    _wheel, venv, work = installed
    done = _run([str(venv / "bin" / "memory"), "explain", "E070"], cwd=work)
    assert done.stdout.startswith("## MAIN-MEM-E070\n")
    assert "`ConfigurationError`" in done.stdout
    assert "https://github.com/mainsdk/mainsdk-memory/blob/main/docs/errors.md#main-mem-e070" in (
        done.stdout
    )
