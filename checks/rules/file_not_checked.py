"""MAIN-MEM-0900: a file could not be read or parsed, so it was not checked."""

from __future__ import annotations

from typing import ClassVar

from mainsdk_memory.checks._rule import Rule, Severity, register

__all__ = ["FileNotChecked"]


@register
class FileNotChecked(Rule):
    """A file could not be read or parsed, so it was not checked.

    ## What it does

    Reports a Python file that memory-check could not read (missing, unreadable, not UTF-8)
    or parse (a syntax error for the Python that runs memory-check), at the line and column of
    the error. memory-check never imports or runs what it checks, so a file it cannot parse is
    a file it knows nothing about.

    This diagnostic cannot be turned off with `--ignore`, `ignore` or a suppression comment,
    and it makes `memory-check` exit with status 2 even when there are no other findings.

    ## Why is this bad?

    A file that was not checked may hold every mistake the other rules look for. Passing CI
    because the linter could not read a file would be a silent gap.

    ## Example

    ```python
    def broken(:  # flagged
        pass
    ```

    ## Use instead

    ```python
    def fixed() -> None:
        pass
    ```

    Exclude files that are not meant to be Python for this interpreter (templates, fixtures
    for another version) with `exclude` under `[tool.memory-check]`.

    ## Added in

    0.1.0
    """

    code: ClassVar[str] = "MAIN-MEM-0900"
    name: ClassVar[str] = "file-not-checked"
    severity: ClassVar[Severity] = "low"
    tags: ClassVar[tuple[str, ...]] = ("security", "coverage")
    needs_memory: ClassVar[bool] = False
    suppressible: ClassVar[bool] = False
