"""A pytest plugin that runs the conformance suite on your driver, one pytest test per check.

Enable it in your test file and give it your driver factory::

    import pytest

    pytest_plugins = ["mainsdk_memory.conformance.pytest_plugin"]


    @pytest.fixture
    def memory_driver_factory():
        return MyDriver  # takes an empty folder, returns a driver on a new store there


    def test_conformance(memory_conformance_check):
        memory_conformance_check()

Every check becomes one test, ``test_conformance[<capability>.<check>]``: it passes, fails
with the reason, or is skipped when the driver does not declare the capability.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from ._model import CheckResult, Status
from ._registry import Check, DriverFactory, all_checks
from ._runner import DEFAULT_SEED, run_check

__all__ = ["memory_conformance_check", "memory_driver_factory", "pytest_generate_tests"]

_FIXTURE = "memory_conformance_check"


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrize every test that asks for ``memory_conformance_check`` with every check."""
    if _FIXTURE in metafunc.fixturenames:
        checks = all_checks()
        metafunc.parametrize(_FIXTURE, checks, ids=[c.id for c in checks], indirect=True)


@pytest.fixture
def memory_driver_factory() -> DriverFactory:
    """Override this fixture: return a callable that takes an empty folder and gives a driver."""
    pytest.fail(
        "Define a fixture named memory_driver_factory that returns your driver factory (a "
        "callable taking an empty pathlib.Path and returning a driver), next to the test that "
        "uses memory_conformance_check.",
        pytrace=False,
    )


@pytest.fixture
def memory_conformance_check(
    request: pytest.FixtureRequest, memory_driver_factory: DriverFactory, tmp_path: Path
) -> Callable[[], CheckResult]:
    """This test's check: call it to run it on a fresh store (fails or skips as it must)."""
    check: Check = request.param

    def run() -> CheckResult:
        result = run_check(check, memory_driver_factory, tmp_path / "store", seed=DEFAULT_SEED)
        if result.status is Status.NOT_DECLARED:
            pytest.skip(f"{check.id}: {result.reason}")
        if result.status is Status.FAILED:
            pytest.fail(f"{check.id}: {result.reason}", pytrace=False)
        return result

    return run
