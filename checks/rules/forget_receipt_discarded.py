"""MAIN-MEM-0024: the receipt that ``forget()`` or ``approve()`` returns is thrown away."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import ClassVar

from mainsdk_memory.checks import _knowledge as known
from mainsdk_memory.checks._diagnostic import Finding
from mainsdk_memory.checks._flow import PERSON
from mainsdk_memory.checks._rule import Module, Rule, Severity, register

__all__ = ["ForgetReceiptDiscarded"]

_Scope = ast.Module | ast.FunctionDef | ast.AsyncFunctionDef


@register
class ForgetReceiptDiscarded(Rule):
    """The receipt that `forget()` or `approve()` returns is thrown away.

    ## What it does

    Reports a `forget(...)` or `approve(...)` on a person's memory handle (from
    `memory.person(...)`, or annotated `PersonMemory`) whose result is not used: a call standing
    alone as a statement (awaited or not), or assigned to a name that the function (or module)
    never reads, `_` included. These are the calls that erase and return a signed receipt; an
    agent's `forget` only files a request, and its result is not judged.

    ## Why is this bad?

    `forget()` is a hard delete, and its receipt — signed by the project key, listing ids only —
    is the only proof that it happened. A person who asked to be forgotten, or an auditor, can
    be shown the receipt; a deletion nobody kept a receipt of can only be asserted. Keep it:
    return it, store its `token`, or hand it to the person.

    ## Example

    ```python
    import os

    from mainsdk_memory import Memory, tenant

    memory = Memory.open("local:/srv/memories", keys=os.environ["MEMORY_KEYS"], app="support")


    def forget_address(person: str, memory_id: str) -> None:
        with tenant.use("acme"):
            memory.person(person).forget(memory_id)  # flagged
    ```

    ## Use instead

    ```python
    import os

    from mainsdk_memory import Memory, tenant

    memory = Memory.open("local:/srv/memories", keys=os.environ["MEMORY_KEYS"], app="support")


    def forget_address(person: str, memory_id: str) -> str:
        with tenant.use("acme"):
            receipt = memory.person(person).forget(memory_id)
        return receipt.token
    ```

    ## Limits

    A receipt stored in a variable that is read later is taken as kept, whatever is done with
    it. A `forget` on something not known to be a person's memory handle is not judged.

    ## Added in

    0.1.0
    """

    code: ClassVar[str] = "MAIN-MEM-0024"
    name: ClassVar[str] = "forget-receipt-discarded"
    severity: ClassVar[Severity] = "medium"
    tags: ClassVar[tuple[str, ...]] = ("security", "privacy", "erasure", "external/cwe/cwe-778")

    def check(self, module: Module) -> Iterator[Finding]:
        """Look at each scope's statements for forget calls whose result goes nowhere."""
        if not any(isinstance(c.func, ast.Attribute) and c.func.attr in known.RECEIPT_METHODS
                   for c in module.calls()):
            return
        scopes: list[_Scope] = [module.tree]
        scopes += [info.node for info in module.analysis.functions.values()]
        for scope in scopes:
            read: set[str] | None = None
            for statement in _statements(scope):
                if isinstance(statement, ast.Expr) and self._is_forget(statement.value, module):
                    yield self._finding(statement.value)
                elif (
                    isinstance(statement, ast.Assign | ast.AnnAssign)
                    and statement.value is not None
                    and self._is_forget(statement.value, module)
                ):
                    targets = (
                        statement.targets if isinstance(statement, ast.Assign)
                        else [statement.target]
                    )
                    if read is None:
                        read = _names_read(scope)
                    if all(isinstance(t, ast.Name) and t.id not in read for t in targets):
                        yield self._finding(statement.value)

    def _finding(self, node: ast.expr) -> Finding:
        return self.at(
            node,
            self.code,
            "the receipt of this erasure is thrown away; keep it (return it or store "
            "receipt.token) as the proof that the memory was forgotten",
        )

    @staticmethod
    def _is_forget(node: ast.expr, module: Module) -> bool:
        if isinstance(node, ast.Await):
            node = node.value
        return (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in known.RECEIPT_METHODS
            and PERSON in module.value(node.func.value).kinds
        )


def _statements(scope: _Scope) -> Iterator[ast.stmt]:
    """The statements of a scope, nested blocks included, nested functions and classes not."""
    stack: list[ast.stmt] = list(reversed(scope.body))
    while stack:
        statement = stack.pop()
        yield statement
        if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            children = getattr(statement, field, None)
            if children:
                for child in reversed(children):
                    if isinstance(child, ast.stmt):
                        stack.append(child)
                    else:  # except handlers and match cases hold statements in their body
                        stack.extend(reversed(child.body))


def _names_read(scope: _Scope) -> set[str]:
    return {
        n.id for n in ast.walk(scope) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
    }
