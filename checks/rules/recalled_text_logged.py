"""MAIN-MEM-0029: recalled memory text is written to a log or an exception message."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from typing import ClassVar

from mainsdk_memory.checks import _knowledge as known
from mainsdk_memory.checks._flow import LOGGER, RECALLED, Analysis, Origin, Sink
from mainsdk_memory.checks._rule import Severity, TaintRule, register

__all__ = ["RecalledTextLogged"]

_NOT_TEXT = frozenset({"exc_info", "stack_info", "stacklevel"})


@register
class RecalledTextLogged(TaintRule):
    """Recalled memory text is written to a log or an exception message.

    ## What it does

    Follows recalled memory text exactly as MAIN-MEM-0022 does, and reports it when it reaches
    a log call — `logging.info(...)` and the other `logging` functions, `warnings.warn(...)`,
    or a method such as `.info`, `.warning` or `.exception` on a logger made by
    `logging.getLogger`, `structlog.get_logger` or loguru's `logger` — or the arguments of
    an exception raised with `raise`.

    ## Why is this bad?

    A memory is sealed under the key of the person it is about, and `forget()` proves that
    every copy is gone. A copy in a log line is not sealed, is read by everyone who reads logs,
    is kept for as long as logs are kept, and is not erased by `forget()`: the receipt would no
    longer be true. The SDK itself logs and raises with ids only.

    ## Example

    ```python
    import logging
    import os

    from mainsdk_memory import Memory, tenant

    log = logging.getLogger(__name__)
    memory = Memory.open("local:/srv/memories", keys=os.environ["MEMORY_KEYS"], app="support")


    def best_match(person: str, question: str) -> str:
        with tenant.use("acme"):
            hits = memory.acting_for(person, agent="support-bot").recall(question)
        if not hits:
            return ""
        log.info("best match: %s", hits[0].record.text)  # flagged
        return hits[0].record.text
    ```

    ## Use instead

    ```python
    import logging
    import os

    from mainsdk_memory import Memory, tenant

    log = logging.getLogger(__name__)
    memory = Memory.open("local:/srv/memories", keys=os.environ["MEMORY_KEYS"], app="support")


    def best_match(person: str, question: str) -> str:
        with tenant.use("acme"):
            hits = memory.acting_for(person, agent="support-bot").recall(question)
        if not hits:
            return ""
        log.info("best match: %s (score %.2f)", hits[0].record.id, hits[0].score)
        return hits[0].record.text
    ```

    Ids, versions, scores, kinds, trust levels, labels and times of records are metadata, not
    memory text, and may be logged.

    ## Limits

    The same as MAIN-MEM-0022. `print` is not a sink: command-line tools print recalled text
    to the person who asked for it. A logger that is neither made by one of the factories above
    nor imported from loguru is not recognised.

    ## Added in

    0.1.0
    """

    code: ClassVar[str] = "MAIN-MEM-0029"
    name: ClassVar[str] = "recalled-text-logged"
    severity: ClassVar[Severity] = "high"
    tags: ClassVar[tuple[str, ...]] = ("security", "privacy", "external/cwe/cwe-532")
    origin_kinds: ClassVar[frozenset[str]] = frozenset({RECALLED})

    def message(self, where: str, origin: Origin) -> str:
        """Name the sink and where the text was recalled."""
        return (
            f"recalled memory text from {origin.what} on line {origin.line} reaches {where}; "
            "log and raise with ids only, so forget() leaves no copy behind"
        )

    def sinks(self, node: ast.AST, analysis: Analysis) -> Iterable[Sink]:
        """Arguments of log calls and of raised exceptions."""
        if isinstance(node, ast.Raise):
            if isinstance(node.exc, ast.Call):
                return self._arguments(node.exc, analysis, "an exception message")
            return ()
        if not isinstance(node, ast.Call):
            return ()
        func = node.func
        name = analysis.call_names.get(id(node))
        if name in known.LOG_FUNCTIONS:
            return self._arguments(node, analysis, f"a log call (`{name}`)")
        if isinstance(func, ast.Attribute) and func.attr in known.LOG_METHODS:
            logger = analysis.value(func.value)
            if LOGGER in logger.kinds:
                return self._arguments(node, analysis, f"a log call (`.{func.attr}`)")
        return ()

    def _arguments(self, call: ast.Call, analysis: Analysis, where: str) -> Iterator[Sink]:
        for arg in call.args:
            yield self.sink(arg, analysis, where)
        for keyword in call.keywords:
            if keyword.arg not in _NOT_TEXT:
                yield self.sink(keyword.value, analysis, where)
