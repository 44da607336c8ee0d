"""MAIN-MEM-0027: ``Memory.open`` is called without a key store."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import ClassVar

from mainsdk_memory.checks import _knowledge as known
from mainsdk_memory.checks._diagnostic import Finding
from mainsdk_memory.checks._rule import Module, Rule, Severity, register

__all__ = ["MemoryOpenWithoutKeyStore"]


@register
class MemoryOpenWithoutKeyStore(Rule):
    """`Memory.open` is called without a key store.

    ## What it does

    Reports a `Memory.open(...)` call with no `keys=` argument (and no `**options` that could
    hold one), or with `keys=None` or `keys=""`.

    ## Why is this bad?

    Every memory is sealed under a key of the person it is about, derived from the project key
    store; without one there is nothing to seal with, and `Memory.open` refuses to run
    (`TypeError` for a missing argument, `KeyStoreError` for an empty one). Code that tries to
    open memory "without encryption for now" fails only when it first runs, often in
    production; this rule fails it in CI. There is deliberately no unsealed mode.

    ## Example

    ```python
    from mainsdk_memory import Memory

    memory = Memory.open("local:/srv/memories", app="support")  # flagged
    ```

    ## Use instead

    ```python
    import os

    from mainsdk_memory import Memory

    # once: memory keys init --keys /srv/memory-keys  (outside the repository)
    memory = Memory.open("local:/srv/memories", keys=os.environ["MEMORY_KEYS"], app="support")
    ```

    ## Limits

    A `keys=` variable that is `None` at run time is not found.

    ## Added in

    0.1.0
    """

    code: ClassVar[str] = "MAIN-MEM-0027"
    name: ClassVar[str] = "memory-open-without-key-store"
    severity: ClassVar[Severity] = "high"
    tags: ClassVar[tuple[str, ...]] = ("security", "keys", "external/cwe/cwe-320")

    def check(self, module: Module) -> Iterator[Finding]:
        """Judge each ``Memory.open`` call's ``keys=``."""
        for call in module.calls():
            if module.qualname(call.func) != known.MEMORY_OPEN:
                continue
            keys = next((k.value for k in call.keywords if k.arg == "keys"), None)
            if keys is None:
                if any(k.arg is None for k in call.keywords):
                    continue
                problem = "without keys="
            elif isinstance(keys, ast.Constant) and keys.value in (None, ""):
                problem = f"with keys={keys.value!r}"
            else:
                continue
            yield self.at(
                call,
                self.code,
                f"Memory.open is called {problem}: memories are sealed under the project key "
                "store; create one with `memory keys init` and pass keys=",
            )
