"""Running the checks: one check on a fresh store, or the whole suite into a :class:`Report`."""

from __future__ import annotations

import importlib
import tempfile
import time
import zlib
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import cast

from mainsdk_memory.drivers import Capabilities, Driver

from . import (  # noqa: F401 - importing the check modules registers their checks
    _checks_concurrency,
    _checks_control,
    _checks_erase,
    _checks_isolation,
    _checks_regions,
    _checks_relations,
    _checks_retention,
    _checks_search,
    _checks_storage,
    _checks_tags,
    _checks_time,
    _checks_vectors,
)
from ._model import CapabilityResult, CheckFailed, CheckResult, Report, Status
from ._registry import (
    CAPABILITIES,
    Check,
    CheckContext,
    DriverFactory,
    all_checks,
    missing_members,
)
from ._rows import SyntheticRows

__all__ = ["DEFAULT_SEED", "FactoryError", "load_factory", "run_check", "run_suite"]

#: The seed used unless one is given: a run is reproducible by default.
DEFAULT_SEED = 20261028


class FactoryError(ValueError):
    """A ``module:factory`` spec that does not name a callable."""


def load_factory(spec: str) -> DriverFactory:
    """The callable named by ``module:attribute`` (dotted attributes allowed), e.g.
    ``mainsdk_memory.drivers.local:LocalDriver``."""
    module_name, sep, qualname = spec.partition(":")
    if not sep or not module_name or not qualname:
        raise FactoryError(
            f"{spec!r} is not 'module:factory', for example "
            "'mainsdk_memory.drivers.local:LocalDriver'."
        )
    try:
        obj: object = importlib.import_module(module_name)
    except ImportError as exc:
        raise FactoryError(f"Cannot import {module_name!r}: {exc}") from exc
    for part in qualname.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise FactoryError(f"{module_name!r} has no attribute {qualname!r}.") from None
    if not callable(obj):
        raise FactoryError(f"{spec!r} is not callable; give a function or a class.")
    return cast(DriverFactory, obj)


def _check_seed(seed: int, check: Check) -> int:
    # Each check gets its own stream, so running one check alone reproduces it exactly.
    return seed ^ zlib.crc32(check.id.encode())


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def run_check(
    check: Check, factory: DriverFactory, folder: Path, *, seed: int = DEFAULT_SEED
) -> CheckResult:
    """Run ``check`` on a driver the factory makes in ``folder`` (created if missing).

    A check whose capability (or a capability it needs) is not declared is not run and
    comes back ``NOT_DECLARED``; an exception the driver raises is a failure.
    """
    folder.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()

    def result(status: Status, reason: str = "") -> CheckResult:
        return CheckResult(
            check.id, check.capability, status, reason, time.perf_counter() - started
        )

    try:
        driver = factory(folder)
    except Exception as exc:
        return result(Status.FAILED, f"the factory raised {_describe(exc)}")
    context: CheckContext | None = None
    try:
        capabilities = getattr(driver, "capabilities", None)
        if not isinstance(capabilities, Capabilities):
            if check.capability == "protocol":
                capabilities = Capabilities()
            else:
                return result(
                    Status.FAILED,
                    "not run: the driver has no mainsdk_memory.Capabilities as `capabilities`",
                )
        missing = check.missing(capabilities)
        if missing:
            return result(Status.NOT_DECLARED, f"needs {', '.join(missing)}, not declared")
        context = CheckContext(
            factory=factory,
            folder=folder,
            driver=driver,
            capabilities=capabilities,
            rows=SyntheticRows(_check_seed(seed, check)),
            seed=seed,
        )
        note = check.function(context)
        return result(Status.PASSED, note or "")
    except CheckFailed as failure:
        return result(Status.FAILED, str(failure))
    except Exception as exc:
        return result(Status.FAILED, f"the driver raised {_describe(exc)}")
    finally:
        if context is not None:
            context.close_others()
        close = getattr(driver, "close", None)
        if callable(close):
            close()


def _declared(capabilities: Capabilities | None, name: str) -> tuple[bool, str]:
    spec = next(c for c in CAPABILITIES if c.name == name)
    if capabilities is None:
        return True, "?"
    return spec.declared(capabilities), spec.shown(capabilities)


def _probe(factory: DriverFactory, folder: Path) -> tuple[Capabilities | None, str, str]:
    """The declared capabilities and name of a driver, or why there are none."""
    folder.mkdir(parents=True, exist_ok=True)
    try:
        driver = factory(folder)
    except Exception as exc:
        return None, "", f"the factory raised {_describe(exc)}"
    try:
        capabilities = getattr(driver, "capabilities", None)
        name = getattr(driver, "name", "")
        missing = missing_members(driver)
        if missing:
            return (
                None,
                str(name),
                (f"the factory did not return a Driver (missing: {', '.join(missing)})"),
            )
        if not isinstance(driver, Driver) or not isinstance(capabilities, Capabilities):
            return None, str(name), "the factory did not return a Driver with Capabilities"
        return capabilities, str(name), ""
    finally:
        close = getattr(driver, "close", None)
        if callable(close):
            close()


def run_suite(
    factory: DriverFactory,
    *,
    seed: int = DEFAULT_SEED,
    name: str | None = None,
    checks: Iterable[Check] | None = None,
    workers: int = 1,
) -> Report:
    """Run every check on fresh stores the factory makes, and report per capability.

    ``factory`` takes an empty folder and returns a driver on a new store kept there (called
    again with the same folder, it must open the same store). ``name`` describes the factory
    in the report. ``checks`` limits the run (default: all). ``workers`` above 1 runs that
    many checks at once, each on its own store (the factory must then be thread-safe); checks
    that start their own writers still run alone, first, before any other thread exists.
    """
    chosen = tuple(all_checks() if checks is None else checks)
    described = name or _factory_name(factory)
    with tempfile.TemporaryDirectory(prefix="memory-conformance-") as tmp:
        root = Path(tmp)
        capabilities, driver_name, broken = _probe(factory, root / "probe")

        def run(index: int) -> CheckResult:
            check = chosen[index]
            if broken:
                return CheckResult(check.id, check.capability, Status.FAILED, f"not run: {broken}")
            return run_check(check, factory, root / f"{index:02d}-{check.id}", seed=seed)

        found: dict[int, CheckResult] = {}
        for index, check in enumerate(chosen):
            if check.alone or workers <= 1:
                found[index] = run(index)
        rest = [index for index in range(len(chosen)) if index not in found]
        if rest:
            with ThreadPoolExecutor(max_workers=workers) as pool:
                found.update(zip(rest, pool.map(run, rest), strict=True))
        results = [found[index] for index in range(len(chosen))]
    capability_results = []
    for capability in CAPABILITIES:
        mine = tuple(r for r in results if r.capability == capability.name)
        if not mine:
            continue
        declared, shown = _declared(capabilities, capability.name)
        failed = [r for r in mine if r.status is Status.FAILED]
        ran = [r for r in mine if r.status is not Status.NOT_DECLARED]
        if failed:
            status, reason = Status.FAILED, failed[0].reason
        elif not declared or not ran:
            status, reason = Status.NOT_DECLARED, f"declared {shown}: its checks were not run"
        else:
            status, reason = Status.PASSED, ""
        capability_results.append(CapabilityResult(capability.name, shown, status, reason, mine))
    return Report(
        driver=driver_name or described,
        factory=described,
        seed=seed,
        capabilities=tuple(capability_results),
    )


def _factory_name(factory: object) -> str:
    module = getattr(factory, "__module__", None)
    qualname = getattr(factory, "__qualname__", None)
    if module and qualname:
        return f"{module}:{qualname}"
    return repr(factory)
