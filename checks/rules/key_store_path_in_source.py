"""MAIN-MEM-0026: the key store's path is hard-coded inside the working tree."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import ClassVar

from mainsdk_memory.checks import _knowledge as known
from mainsdk_memory.checks._diagnostic import Finding
from mainsdk_memory.checks._rule import Module, Rule, Severity, register

__all__ = ["KeyStorePathInSource"]

_PATH_CLASSES = frozenset({"Path", "PurePath", "PosixPath", "WindowsPath"})


def _relative(text: str) -> bool:
    text = text.strip()
    if not text or text.startswith(("/", "~", "\\", "$", "%")):
        return False
    return not (len(text) > 1 and text[1] == ":")  # C:\keys


@register
class KeyStorePathInSource(Rule):
    """The key store's path is hard-coded inside the working tree.

    ## What it does

    Reports the key store path given to `Memory.open(..., keys=...)`, `KeyStore.open(...)` or
    `KeyStore.create(...)` when it is a relative path written in the code (`"./keys"`,
    `Path("keys")`, `Path("config") / "keys"`, or a module constant holding one), or a path
    built from `__file__` (next to the source code).

    ## Why is this bad?

    The key store holds the project's key-encryption key and signing key. A relative path
    resolves against the working directory, which is the repository checkout in development
    and the application folder in a container image; a path next to `__file__` is inside the
    package. There the key store is one `git add .` or one `COPY . .` away from being
    committed or shipped, next to the sealed memories it protects. Read the path from the
    environment or the deployment's configuration, and keep the folder outside the repository.

    ## Example

    ```python
    from mainsdk_memory import Memory

    memory = Memory.open("local:/srv/memories", keys="./keys", app="support")  # flagged
    ```

    ## Use instead

    ```python
    import os

    from mainsdk_memory import Memory

    memory = Memory.open("local:/srv/memories", keys=os.environ["MEMORY_KEYS"], app="support")
    ```

    An absolute path outside the repository (`"/etc/support/memory-keys"`) is not reported.

    ## Limits

    Paths assembled at run time are not judged, and an absolute path is assumed to be outside
    the repository. Tests that create a key store in a temporary folder are not affected; a
    test that writes a relative one can suppress the rule with `per-file-ignores`.

    ## Added in

    0.1.0
    """

    code: ClassVar[str] = "MAIN-MEM-0026"
    name: ClassVar[str] = "key-store-path-in-source"
    severity: ClassVar[Severity] = "high"
    tags: ClassVar[tuple[str, ...]] = ("security", "keys", "external/cwe/cwe-538")

    def check(self, module: Module) -> Iterator[Finding]:
        """Judge the key store argument of each ``Memory.open`` and ``KeyStore`` call."""
        for call in module.calls():
            name = module.qualname(call.func)
            if name == known.MEMORY_OPEN:
                path = next((k.value for k in call.keywords if k.arg == "keys"), None)
            elif name in (f"{known.KEYSTORE}.open", f"{known.KEYSTORE}.create"):
                path = call.args[0] if call.args else next(
                    (k.value for k in call.keywords if k.arg == "path"), None
                )
            else:
                continue
            if path is None:
                continue
            reason = self._reason(path, module)
            if reason:
                yield self.at(
                    path,
                    self.code,
                    f"the key store path {reason}, where it gets committed or shipped with the "
                    "code; read it from the environment or configuration",
                )

    def _reason(self, node: ast.expr, module: Module) -> str | None:
        if any(isinstance(n, ast.Name) and n.id == "__file__" for n in ast.walk(node)):
            return "is built from __file__, inside the source tree"
        while isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            node = node.left
        if isinstance(node, ast.Call):
            func = node.func
            last = func.attr if isinstance(func, ast.Attribute) else (
                func.id if isinstance(func, ast.Name) else ""
            )
            if last not in _PATH_CLASSES or not node.args:
                return None
            node = node.args[0]
        text = module.analysis.constant(node)
        if isinstance(text, str) and _relative(text):
            return f"{text!r} is relative to the working directory"
        return None
