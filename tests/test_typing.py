"""The public types are right for a type checker: a strictly typed app on the public API
type-checks cleanly against the package as installed, and type errors in one are reported."""

from __future__ import annotations

from pathlib import Path

from _typecheck import mypy

APPS = Path(__file__).parent / "fixtures" / "typing"


def test_a_typed_app_type_checks_cleanly() -> None:
    result = mypy("--strict", str(APPS / "app.py"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Success: no issues found in 1 source file" in result.stdout


def test_type_errors_in_an_app_are_reported() -> None:
    result = mypy("--strict", str(APPS / "bad_app.py"))
    assert result.returncode == 1
    assert '(got "list[Hit]", expected "list[str]")' in result.stdout
    assert '"embeder"' in result.stdout
    assert "Found 2 errors in 1 file" in result.stdout
