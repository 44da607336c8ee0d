"""The driver conformance suite: checks that a driver does exactly what its Capabilities declare.

Run it on any driver factory (a callable that takes an empty folder and returns a driver on a
new store there)::

    from mainsdk_memory.conformance import run_suite

    report = run_suite(MyDriver)
    print(report.summary())
    assert report.passed

or from the command line, ``memory-conformance --driver mypackage.driver:MyDriver [--json]``,
or from pytest with the plugin :mod:`mainsdk_memory.conformance.pytest_plugin`. Each
capability comes back passed, failed (with the reason), or not declared. See
docs/conformance.md.
"""

from ._model import CapabilityResult, CheckResult, Report, Status
from ._registry import CAPABILITIES, Capability, Check, DriverFactory, all_checks
from ._runner import DEFAULT_SEED, FactoryError, load_factory, run_check, run_suite

__all__ = [
    "CAPABILITIES",
    "DEFAULT_SEED",
    "Capability",
    "CapabilityResult",
    "Check",
    "CheckResult",
    "DriverFactory",
    "FactoryError",
    "Report",
    "Status",
    "all_checks",
    "load_factory",
    "run_check",
    "run_suite",
]
