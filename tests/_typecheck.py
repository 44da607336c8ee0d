"""Type-check the package as installed: a tree of links laid out as pyproject maps it, then mypy.

The repository keeps ``drivers/``, ``keys/``, ``checks/`` and ``conformance/`` at its top
and setuptools installs them inside the ``mainsdk_memory`` namespace (ADR 0001), which an
editable install's import hook hides from mypy. :func:`tree` builds the installed layout
from ``[tool.setuptools.package-dir]`` out of symbolic links (so mypy's paths point at the
real files), and ``python tests/_typecheck.py`` runs ``mypy`` (strict, configured in
pyproject.toml) over it; ``.ci/run`` does that, and tests/test_typing.py checks a typed app
against the same tree.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WORK = REPO / ".typecheck"


def tree() -> Path:
    """The package laid out as installed, under ``.typecheck/tree``.

    Brought up to date in place (missing links made, stale ones removed), so two runs at
    once (a test and ``.ci/run``, or two sessions) never see a half-built tree.
    """
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    mapping: dict[str, str] = config["tool"]["setuptools"]["package-dir"]
    root = WORK / "tree"
    wanted: dict[Path, Path] = {}
    for package, folder in sorted(mapping.items()):
        target = root.joinpath(*package.split("."))
        for path in sorted((REPO / folder).iterdir()):
            if path.is_file() and path.suffix in {".py", ".typed"}:
                wanted[target / path.name] = path
    for link, source in wanted.items():
        link.parent.mkdir(parents=True, exist_ok=True)
        if link.is_symlink() and link.readlink() == source:
            continue
        with contextlib.suppress(FileNotFoundError):
            link.unlink()
        with contextlib.suppress(FileExistsError):  # made meanwhile by another run
            link.symlink_to(source)
    for link in root.rglob("*"):
        if link.is_symlink() and link not in wanted:
            with contextlib.suppress(FileNotFoundError):
                link.unlink()
    return root


def mypy(*args: str) -> subprocess.CompletedProcess[str]:
    """``mypy`` with the project's configuration, run where the installed layout is visible."""
    root = tree()
    command = [
        sys.executable, "-m", "mypy",
        "--config-file", str(REPO / "pyproject.toml"),
        "--cache-dir", str(WORK / "cache"),
        *args,
    ]
    env = {**os.environ, "MYPYPATH": str(root)}
    return subprocess.run(
        command, cwd=root, env=env, capture_output=True, text=True, check=False
    )


def main() -> int:
    """Type-check the whole package; print mypy's report; its exit code."""
    result = mypy("-p", "mainsdk_memory")
    sys.stdout.write(result.stdout)
    sys.stderr.write(result.stderr)
    return result.returncode


if __name__ == "__main__":
    raise SystemExit(main())
