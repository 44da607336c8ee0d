"""MAIN-MEM-0020: a driver that can only soft-delete is configured to hold personal data."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import ClassVar

from mainsdk_memory.checks import _knowledge as known
from mainsdk_memory.checks._diagnostic import Finding
from mainsdk_memory.checks._flow import SOFT_DRIVER, scheme_of
from mainsdk_memory.checks._rule import Module, Rule, Severity, register

__all__ = ["SoftEraseDriverHoldsPersonalData"]


@register
class SoftEraseDriverHoldsPersonalData(Rule):
    """A driver that can only soft-delete is configured to hold personal data.

    ## What it does

    Reports `Memory.open(url, ...)` when the URL's scheme names a soft-erase driver, and
    `Memory(driver, keys, ...)` when the driver is a soft-erase driver, unless the store is
    opened with `labels=["none"]` (exactly that one label), the only way to promise that it
    holds no personal data. This is the check `Memory.open` makes at run time
    (`ErasePolicyError`), moved to before the code ships.

    A driver is known to be soft-erase, without running anything, when:

    - its class is defined in the checked files and declares
      `Capabilities(..., erase="soft", ...)` anywhere in its body;
    - its class name is listed in the `soft-erase-drivers` option;
    - its URL scheme is listed in the `soft-erase-schemes` option, or is registered in the
      project's `[project.entry-points."mainsdk_memory.drivers"]` to a class known to be soft.

    A driver is built from such a class by calling it or its `from_url`, `open` or `create`,
    or by `open_driver(url)` with a soft scheme, and followed through variables like any value.

    ## Why is this bad?

    `forget()` promises a hard delete with a signed receipt, and forgetting a person destroys
    their key. A soft-erase driver only hides a row: the personal data stays in the database, in
    its backups and in its replicas, and the receipt would lie. Such a driver may only hold
    non-personal memory (`labels=["none"]`).

    ## Example

    ```python
    import os

    from mainsdk_memory import Capabilities, Memory
    from mainsdk_memory.keys import KeyStore


    class ArchiveDriver:
        \"\"\"Marks forgotten rows as hidden instead of deleting them.\"\"\"

        name = "archive"
        capabilities = Capabilities(erase="soft")


    keys = KeyStore.open(os.environ["MEMORY_KEYS"])
    memory = Memory(ArchiveDriver(), keys, app="support")  # flagged
    ```

    ## Use instead

    ```python
    import os

    from mainsdk_memory import Capabilities, Memory
    from mainsdk_memory.keys import KeyStore


    class ArchiveDriver:
        \"\"\"Marks forgotten rows as hidden instead of deleting them.\"\"\"

        name = "archive"
        capabilities = Capabilities(erase="soft")


    keys = KeyStore.open(os.environ["MEMORY_KEYS"])
    memory = Memory(ArchiveDriver(), keys, app="support", labels=["none"])
    ```

    ## Options

    ```toml
    [tool.memory-check]
    soft-erase-schemes = ["mem0", "zep"]        # drivers found by URL scheme
    soft-erase-drivers = ["VendorArchiveDriver"]  # driver classes, by name
    ```

    ## Limits

    A URL or labels that are not constants in the module (read from configuration at run time)
    are not judged: the run-time check in `Memory.open` still refuses them. A driver declared
    soft by a capability computed at run time is not known.

    ## Added in

    0.1.0
    """

    code: ClassVar[str] = "MAIN-MEM-0020"
    name: ClassVar[str] = "soft-erase-driver-holds-personal-data"
    severity: ClassVar[Severity] = "high"
    tags: ClassVar[tuple[str, ...]] = ("security", "privacy", "erasure", "external/cwe/cwe-459")

    def check(self, module: Module) -> Iterator[Finding]:
        """Judge each ``Memory.open`` and ``Memory(...)`` call."""
        for call in module.calls():
            name = module.qualname(call.func)
            if name == known.MEMORY_OPEN:
                url_node = call.args[0] if call.args else _keyword(call, "url")
                url = module.analysis.constant(url_node) if url_node is not None else None
                scheme = scheme_of(url) if isinstance(url, str) else None
                if scheme is None or scheme not in module.settings.soft_erase_schemes:
                    continue
                what = f"the soft-erase driver scheme {scheme!r}"
            elif name == known.MEMORY:
                driver = call.args[0] if call.args else _keyword(call, "driver")
                if driver is None or SOFT_DRIVER not in module.value(driver).kinds:
                    continue
                what = "a soft-erase driver"
            else:
                continue
            if _personal(call, module):
                yield self.at(
                    call,
                    self.code,
                    f"this store uses {what} but may hold personal data; forget() could only "
                    "hide it. Use a hard-erase driver, or pass labels=[\"none\"]",
                )


def _keyword(call: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def _personal(call: ast.Call, module: Module) -> bool:
    """Whether the store may hold personal data: no labels, ``None``, or other than ["none"]."""
    labels = _keyword(call, "labels")
    if labels is None:
        return not any(k.arg is None for k in call.keywords)
    if isinstance(labels, ast.Constant) and labels.value is None:
        return True
    value = module.analysis.constant(labels)
    if value is None:
        return False
    if isinstance(value, str):
        return value != "none"
    return tuple(dict.fromkeys(value)) != ("none",)
