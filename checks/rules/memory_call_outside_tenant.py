"""MAIN-MEM-0028: a tenant-scoped memory call runs where no tenant can be set."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import ClassVar

from mainsdk_memory.checks import _knowledge as known
from mainsdk_memory.checks._diagnostic import Finding
from mainsdk_memory.checks._flow import HANDLE, STORE
from mainsdk_memory.checks._rule import Module, Rule, Severity, register

__all__ = ["MemoryCallOutsideTenant"]

MODULE_SCOPE = "<module>"


@register
class MemoryCallOutsideTenant(Rule):
    """A tenant-scoped memory call runs where no tenant can be set.

    ## What it does

    Reports `acting_for(...)` and `person(...)` on a memory store, and `remember`, `recall`,
    `context`, `get`, `list`, `history`, `revise`, `pin`, `unpin`, `forget`, `confirm`,
    `pending`, `approve` and `reject` on a memory handle, when the call
    is not inside a `with tenant.use(...)` block of its own function and that function can run
    without a tenant: it is module-level code (run at import time or under
    `if __name__ == "__main__":`), or a function reached from such code — called, or passed as
    a callback — outside any `with tenant.use(...)`, through the functions of the same module.

    A function that is never reached that way in its module — a request handler, a helper that
    receives a handle, a method — is not reported: its caller may well have set the tenant.

    ## Why is this bad?

    The tenant is never a parameter: every memory call reads it from `tenant.use(...)`, and
    raises `NoTenantError` outside one. Code that only works because some caller far away set
    a tenant is the code that, run from a script, a cron job or a new entry point, fails —
    or, worse, is "fixed" by setting a default tenant that mixes customers' memories.

    ## Example

    ```python
    import os

    from mainsdk_memory import Memory, tenant

    memory = Memory.open("local:/srv/memories", keys=os.environ["MEMORY_KEYS"], app="support")


    def main() -> None:
        ada = memory.acting_for("ada", agent="nightly-digest")  # flagged
        with tenant.use("acme"):
            print(ada.context("open orders"))


    if __name__ == "__main__":
        main()
    ```

    ## Use instead

    ```python
    import os

    from mainsdk_memory import Memory, tenant

    memory = Memory.open("local:/srv/memories", keys=os.environ["MEMORY_KEYS"], app="support")


    def main() -> None:
        with tenant.use("acme"):
            ada = memory.acting_for("ada", agent="nightly-digest")
            print(ada.context("open orders"))


    if __name__ == "__main__":
        main()
    ```

    ## Limits

    Only `with tenant.use(...)` in the same module counts; a tenant set by a framework's
    middleware is invisible, which is why functions not reached from module-level code are not
    judged. A thread started inside a tenant does not inherit it (context variables are not
    copied to threads), and this rule does not see that. A method is reached only through
    `self.` calls.

    ## Added in

    0.1.0
    """

    code: ClassVar[str] = "MAIN-MEM-0028"
    name: ClassVar[str] = "memory-call-outside-tenant"
    severity: ClassVar[Severity] = "medium"
    tags: ClassVar[tuple[str, ...]] = ("security", "tenant-isolation", "external/cwe/cwe-668")

    def check(self, module: Module) -> Iterator[Finding]:
        """Find memory calls outside tenants, then which functions can run without one."""
        analysis = module.analysis
        calls: list[tuple[ast.Call, str, str]] = []
        flagged: set[int] = set()
        for call in module.calls():
            func = call.func
            if not isinstance(func, ast.Attribute):
                continue
            kinds = module.value(func.value).kinds
            if (HANDLE in kinds and func.attr in known.SCOPED_METHODS) or (
                STORE in kinds and func.attr in known.STORE_HANDLE_METHODS
            ):
                scope, in_tenant = analysis.call_scopes.get(id(call), (MODULE_SCOPE, True))
                if not in_tenant:
                    calls.append((call, func.attr, scope))
                    flagged.add(id(call))
        if not calls:
            return
        reached = self._reached(analysis.references)
        for call, method, scope in calls:
            receiver = call.func.value if isinstance(call.func, ast.Attribute) else None
            if id(receiver) in flagged:
                continue  # memory.acting_for(...).recall(...): one report, on acting_for
            if scope == MODULE_SCOPE:
                context = "at module level"
            elif scope in reached:
                name = analysis.function_name(scope)
                context = f"in {name}(), called without a tenant on line {reached[scope]}"
            else:
                continue
            yield self.at(
                call,
                self.code,
                f"{method}() runs {context}: it raises NoTenantError. Call it inside "
                "`with tenant.use(tenant_id):`",
            )

    @staticmethod
    def _reached(references: set[tuple[str, str, bool, int]]) -> dict[str, int]:
        """Functions reachable from module-level code without a tenant: key -> first line."""
        outside: dict[str, list[tuple[str, int]]] = {}
        for callee, caller, in_tenant, line in sorted(references, key=lambda r: r[3]):
            if not in_tenant:
                outside.setdefault(caller, []).append((callee, line))
        reached: dict[str, int] = {}
        queue = [MODULE_SCOPE]
        while queue:
            scope = queue.pop()
            for callee, line in outside.get(scope, ()):
                if callee not in reached:
                    reached[callee] = line
                    queue.append(callee)
        return reached
