"""memory-check's fixture corpus: a bad program gives exactly its snapshot, a good one nothing.

Fixtures live in tests/fixtures/checks/<CODE>/. A ``bad_*.py`` has a ``bad_*.expected`` beside it
holding the exact ``line:col: CODE message`` lines (the code, the message and the position are
all compared, not a count). Set MEMORY_CHECK_UPDATE_SNAPSHOTS=1 to rewrite the snapshots, then
review the diff.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mainsdk_memory.checks import RULES, Settings, check_source

FIXTURES = Path(__file__).parent / "fixtures" / "checks"
# The corpus declares these soft-erase drivers, as a project would in [tool.memory-check].
SETTINGS = Settings(
    soft_erase_schemes=frozenset({"mem0"}), soft_erase_drivers=frozenset({"VendorArchive"})
)
BAD = sorted(FIXTURES.glob("MAIN-MEM-*/bad_*.py"))
GOOD = sorted(FIXTURES.glob("MAIN-MEM-*/good_*.py"))


def _lines(path: Path) -> list[str]:
    found = check_source(path.read_text(), str(path), settings=SETTINGS)
    return [f"{d.line}:{d.col}: {d.code} {d.message}" for d in found]


def _id(path: Path) -> str:
    return f"{path.parent.name}/{path.name}"


def test_every_rule_has_bad_and_good_fixtures() -> None:
    folders = {p.parent.name for p in BAD} & {p.parent.name for p in GOOD}
    assert folders == set(RULES)


@pytest.mark.parametrize("path", BAD, ids=_id)
def test_bad_fixture_matches_its_snapshot(path: Path) -> None:
    snapshot = path.with_suffix(".expected")
    lines = _lines(path)
    if os.environ.get("MEMORY_CHECK_UPDATE_SNAPSHOTS"):
        snapshot.write_text("".join(line + "\n" for line in lines))
    assert lines == snapshot.read_text().splitlines()
    # a bad fixture is about its own rule, and fires it
    code = path.parent.name
    assert lines
    assert {line.split()[1] for line in lines} == {code}


@pytest.mark.parametrize("path", GOOD, ids=_id)
def test_good_fixture_is_silent(path: Path) -> None:
    assert _lines(path) == []
