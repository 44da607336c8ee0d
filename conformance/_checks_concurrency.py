"""Concurrency checks: processes and threads writing one store at once lose nothing.

Writers run as forked processes (each opens its own driver with the factory), as threads with
their own driver, and as threads sharing one driver; a barrier starts them together. Forking
keeps the factory usable even when it is a closure; where fork is unavailable only threads run,
and the check's note says so.
"""

from __future__ import annotations

import multiprocessing
import random
import sys
import threading
import traceback
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import timedelta
from multiprocessing.connection import Connection
from typing import Any

from mainsdk_memory import MemoryConflictError
from mainsdk_memory.drivers import Driver

from ._compare import expect_rows
from ._model import CheckFailed
from ._registry import CheckContext, DriverFactory, check
from ._rows import Scope

__all__: list[str] = []

PROCESSES = 2
OWN_DRIVER_THREADS = 2
SHARED_DRIVER_THREADS = 2
TIMEOUT = 120.0  # seconds for all writers; a deadlocked driver fails instead of hanging
MAX_ATTEMPTS = 500

Job = Callable[[Driver, int], Any]
"""A writer's work: given its driver and its index, returns a picklable result."""


@dataclass(frozen=True, slots=True)
class _Outcome:
    writer: str
    result: Any = None
    error: str | None = None


def _fork_available() -> bool:
    return sys.platform.startswith("linux") and "fork" in multiprocessing.get_all_start_methods()


def _run_writer(
    job: Job,
    index: int,
    driver: Driver | None,
    factory: DriverFactory,
    ctx: CheckContext,
    barrier: Any,
) -> Any:
    own = driver is None
    try:
        used = factory(ctx.folder) if driver is None else driver
    except BaseException:
        barrier.abort()  # the others stop waiting for a writer that will never come
        raise
    try:
        barrier.wait(TIMEOUT)
        return job(used, index)
    finally:
        if own:
            used.close()


def _process_main(
    job: Job, index: int, ctx: CheckContext, barrier: Any, conn: Connection
) -> None:  # pragma: no cover - runs in a forked child
    try:
        result = _run_writer(job, index, None, ctx.factory, ctx, barrier)
        conn.send(_Outcome(f"process {index}", result=result))
    except BaseException as exc:
        conn.send(_Outcome(f"process {index}", error=_describe(exc)))
    finally:
        conn.close()


def _describe(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" at {frames[-1].name}" if frames else ""
    return f"{type(exc).__name__}{where}: {exc}"


def _run_concurrently(ctx: CheckContext, job: Job) -> tuple[list[_Outcome], str]:
    """Run ``job`` in every writer at once; return each writer's outcome and a note."""
    processes = PROCESSES if _fork_available() else 0
    total = processes + OWN_DRIVER_THREADS + SHARED_DRIVER_THREADS
    mp = multiprocessing.get_context("fork") if processes else multiprocessing.get_context()
    barrier = mp.Barrier(total)
    outcomes: list[_Outcome] = []
    lock = threading.Lock()
    children: list[tuple[Any, Connection]] = []
    for index in range(processes):
        receive, send = mp.Pipe(duplex=False)
        child = mp.Process(target=_process_main, args=(job, index, ctx, barrier, send))
        child.start()
        send.close()
        children.append((child, receive))

    def thread_main(index: int, driver: Driver | None, name: str) -> None:
        try:
            result = _run_writer(job, index, driver, ctx.factory, ctx, barrier)
            outcome = _Outcome(name, result=result)
        except BaseException as exc:
            outcome = _Outcome(name, error=_describe(exc))
        with lock:
            outcomes.append(outcome)

    threads = []
    for n in range(OWN_DRIVER_THREADS + SHARED_DRIVER_THREADS):
        index = processes + n
        shared = n >= OWN_DRIVER_THREADS
        name = f"thread {index} ({'shared' if shared else 'own'} driver)"
        threads.append(
            threading.Thread(
                target=thread_main, args=(index, ctx.driver if shared else None, name), daemon=True
            )
        )
    for thread in threads:
        thread.start()
    for child, receive in children:
        if receive.poll(TIMEOUT):
            try:
                outcomes.append(receive.recv())
            except EOFError:
                outcomes.append(_Outcome(f"process {child.name}", error="died without a result"))
        else:
            outcomes.append(_Outcome("a process", error=f"did not finish in {TIMEOUT:.0f} s"))
        child.join(5)
        if child.is_alive():
            child.kill()
            child.join()
        receive.close()
    for thread in threads:
        thread.join(TIMEOUT)
        if thread.is_alive():
            outcomes.append(_Outcome("a thread", error=f"did not finish in {TIMEOUT:.0f} s"))
    note = (
        f"{processes} processes, {OWN_DRIVER_THREADS} threads with their own driver, "
        f"{SHARED_DRIVER_THREADS} threads sharing one"
    )
    if not processes:
        note += " (no fork on this platform: threads only)"
    return outcomes, note


def _expect_no_errors(outcomes: list[_Outcome]) -> None:
    for outcome in outcomes:
        if outcome.error is not None:
            raise CheckFailed(
                f"concurrent_writers is declared, but a writer ({outcome.writer}) failed while "
                f"others wrote: {outcome.error}"
            )


PER_WRITER = 8


@check("concurrent_writers", alone=True)
def check_parallel_new_memories(ctx: CheckContext) -> str | None:
    """Writers storing new memories in one scope at once: every row is there afterwards."""
    scope = ctx.scope()
    writers = (PROCESSES if _fork_available() else 0) + OWN_DRIVER_THREADS + SHARED_DRIVER_THREADS
    plan = [[ctx.rows.row(scope) for _ in range(PER_WRITER)] for _ in range(writers)]

    def job(driver: Driver, index: int) -> int:
        for row in plan[index]:
            driver.put(row)
        return len(plan[index])

    outcomes, note = _run_concurrently(ctx, job)
    _expect_no_errors(outcomes)
    expected = [row for rows in plan for row in rows]
    for reader, what in ((ctx.driver, "the first driver"), (ctx.open_another(), "a new driver")):
        got = ctx.read_scope(scope, reader)
        if len(got) < len(expected):
            raise CheckFailed(
                f"concurrent_writers is declared, but {what} lists {len(got)} of the "
                f"{len(expected)} memories written at once: writes were lost"
            )
        expect_rows(got, expected, f"list() on {what} after concurrent writes")
    return f"{len(expected)} memories; {note}"


REVISIONS_PER_WRITER = 3


def _revise(scope: Scope, memory_id: str, seed: int) -> Job:
    def job(driver: Driver, index: int) -> dict[str, Any]:
        rng = random.Random(seed * 1000 + index)  # noqa: S311 - test data
        wins: list[tuple[int, bytes]] = []
        conflicts = 0
        for _ in range(MAX_ATTEMPTS):
            if len(wins) == REVISIONS_PER_WRITER:
                break
            current = driver.versions(scope.tenant, scope.app, [scope.subject], memory_id)[-1]
            sealed = rng.randbytes(96)
            when = current.valid_from + timedelta(milliseconds=1)
            row = replace(
                current,
                version=current.version + 1,
                sealed=sealed,
                recorded_at=when,
                valid_from=when,
                valid_to=None,
                terms={f"{rng.getrandbits(128):032x}": 1},
                length=1,
            )
            try:
                driver.put(row, closes=current.version)
            except MemoryConflictError:
                conflicts += 1
                continue
            wins.append((row.version, sealed))
        return {"wins": wins, "conflicts": conflicts}

    return job


@check("concurrent_writers", alone=True)
def check_parallel_revisions(ctx: CheckContext) -> str | None:
    """Writers revising one memory at once: each version is won once, and none is lost."""
    scope = ctx.scope()
    first = ctx.rows.row(scope)
    ctx.driver.put(first)
    outcomes, note = _run_concurrently(ctx, _revise(scope, first.memory_id, ctx.seed))
    _expect_no_errors(outcomes)
    wins: dict[int, list[bytes]] = {}
    conflicts = 0
    for outcome in outcomes:
        conflicts += outcome.result["conflicts"]
        for version, sealed in outcome.result["wins"]:
            wins.setdefault(version, []).append(sealed)
    twice = sorted(version for version, sealed in wins.items() if len(sealed) > 1)
    if twice:
        raise CheckFailed(
            f"concurrent_writers is declared, but two writers both closed the same version "
            f"and both succeeded (version {twice[0]}): one revision was silently lost"
        )
    total = sum(len(sealed) for sealed in wins.values())
    if sorted(wins) != list(range(2, total + 2)):
        raise CheckFailed(
            "concurrent_writers is declared, but the versions writers won are not 2, 3, … "
            "without gaps"
        )
    stored = ctx.open_another().versions(scope.tenant, scope.app, [scope.subject], first.memory_id)
    current = stored[-1] if stored else None
    if current is None or current.version != total + 1:
        raise CheckFailed(
            f"concurrent_writers is declared, but after {total} successful revisions the "
            f"current version is {None if current is None else current.version}, not "
            f"{total + 1}: revisions were lost"
        )
    for row in stored:
        if row.version in wins and row.sealed != wins[row.version][0]:
            raise CheckFailed(
                f"concurrent_writers is declared, but version {row.version} holds another "
                "writer's blob than the one whose put succeeded"
            )
    return f"{total} revisions, {conflicts} conflicts retried; {note}"
