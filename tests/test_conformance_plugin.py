"""The pytest plugin certifies a driver in a few lines; the docs' worked example is run as is."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mainsdk_memory.conformance import all_checks

pytest_plugins = ["pytester"]

DOC = Path(__file__).resolve().parent.parent / "docs" / "conformance.md"


def _python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)


def _doc_files() -> dict[str, str]:
    files: dict[str, str] = {}
    for block in _python_blocks():
        first = block.partition("\n")[0]
        named = re.fullmatch(r"# file: (\S+\.py)", first)
        if named:
            files[named.group(1)] = block
    return files


def test_the_docs_example_driver_is_certified_by_the_plugin(pytester: pytest.Pytester) -> None:
    files = _doc_files()
    assert set(files) == {"dict_driver.py", "dict_vectors_driver.py", "test_dict_driver.py"}
    for name, code in files.items():
        pytester.makepyfile(**{name.removesuffix(".py"): code})
    namespace: dict[str, object] = {}
    exec(compile(files["dict_driver.py"], "dict_driver.py", "exec"), namespace)  # noqa: S102
    capabilities = namespace["DictDriver"].capabilities  # type: ignore[attr-defined]
    declared = [check for check in all_checks() if not check.missing(capabilities)]
    undeclared = [check for check in all_checks() if check.missing(capabilities)]
    assert declared and undeclared  # the example shows both

    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-v", "-rs")

    result.assert_outcomes(passed=len(declared), skipped=len(undeclared))
    result.stdout.fnmatch_lines([
        "*test_conformance?erase.no_bytes_left? PASSED*",
        "*test_conformance?text_search.matches_reference? PASSED*",
        "*test_conformance?concurrent_writers.parallel_revisions? SKIPPED*",
    ])  # fmt: skip
    result.stdout.fnmatch_lines(["*needs concurrent_writers, not declared*"])


def test_the_plugin_fails_a_lying_driver_on_its_lie_with_the_reason(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        test_liar="""
import pytest

from tests.conformance_broken_drivers import SoftDeletingDriver

pytest_plugins = ["mainsdk_memory.conformance.pytest_plugin"]


@pytest.fixture
def memory_driver_factory():
    return SoftDeletingDriver


def test_conformance(memory_conformance_check):
    memory_conformance_check()
"""
    )
    result = pytester.runpytest_inprocess(
        "-p", "no:cacheprovider", "-v", "-k", "erase and not vectors and not relations and not tags"
    )
    result.assert_outcomes(failed=1, passed=2)  # the other two erase checks hold
    result.stdout.fnmatch_lines([
        "*test_conformance?erase.no_bytes_left? FAILED*",
        "*erase.no_bytes_left: erase is declared 'hard', but after erase() the sealed blob*",
    ])  # fmt: skip


def test_the_plugin_says_what_is_missing_without_a_factory_fixture(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        test_no_factory="""
pytest_plugins = ["mainsdk_memory.conformance.pytest_plugin"]


def test_conformance(memory_conformance_check):
    memory_conformance_check()
"""
    )
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-k", "every_field")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*Define a fixture named memory_driver_factory*"])


def test_the_docs_python_example_runs() -> None:
    runnable = [block for block in _python_blocks() if not block.startswith("# file:")]
    assert len(runnable) == 1 and "run_suite(LocalDriver" in runnable[0]
    exec(compile(runnable[0], "docs/conformance.md", "exec"), {})  # noqa: S102
