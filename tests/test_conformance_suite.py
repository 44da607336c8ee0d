"""The conformance suite passes honest drivers and fails each lying one on exactly its lie."""

from __future__ import annotations

import base64
import functools
import json
from dataclasses import fields, replace
from pathlib import Path

import pytest

from mainsdk_memory.conformance import (
    CAPABILITIES,
    DriverFactory,
    Report,
    Status,
    all_checks,
    run_check,
    run_suite,
)
from mainsdk_memory.conformance._checks_erase import _blob_needles, _find, _haystacks
from mainsdk_memory.drivers import Capabilities
from mainsdk_memory.drivers.local import LocalDriver
from tests import conformance_broken_drivers as broken

REQUIRED = {"protocol", "round_trip", "versions", "filters", "isolation", "pagination",
            "raw_storage", "retention", "control", "erase"}  # fmt: skip


@functools.cache
def _report(factory: DriverFactory) -> Report:
    """The suite's report on ``factory``, run once per test session (checks run 4 at a time)."""
    return run_suite(factory, workers=4)


def _statuses(report: Report) -> dict[str, Status]:
    return {result.name: result.status for result in report.capabilities}


# Each liar, the one capability it lies about, and words its reason must contain.
LIARS = [
    pytest.param(broken.SoftDeletingDriver, "erase",
                 ["declared 'hard'", "sealed blob", "still in raw storage", ".trash"],
                 id="declares-hard-erase-but-soft-deletes"),
    pytest.param(broken.OverwritingDriver, "time_travel",
                 ["time_travel is declared", "overwritten"],
                 id="declares-time-travel-but-overwrites"),
    pytest.param(broken.TenantLeakingDriver, "isolation",
                 ["returned", "of tenant", "leak across tenants"],
                 id="leaks-rows-to-another-tenant"),
    pytest.param(broken.SessionLeakingDriver, "isolation",
                 ["in session", "leak across sessions"],
                 id="leaks-session-only-rows"),
    pytest.param(broken.UnsortedScoresDriver, "text_search", ["unsorted"],
                 id="returns-unsorted-scores"),
    pytest.param(broken.OutOfRangeScoresDriver, "text_search", ["score", "outside [0, 1]"],
                 id="returns-out-of-range-scores"),
    pytest.param(broken.LostUpdateDriver, "concurrent_writers",
                 ["concurrent_writers is declared", "both succeeded", "lost"],
                 id="declares-concurrent-writers-but-loses-updates"),
    pytest.param(broken.ControlLeakingDriver, "control",
                 ["control_get in another tenant", "this tenant's record"],
                 id="shares-control-records-across-tenants"),
    pytest.param(broken.BadRegionsDriver, "regions", ["'EU West'", "not a region name"],
                 id="declares-a-malformed-region"),
    pytest.param(broken.SessionBlindVectorsDriver, "vectors",
                 ["vectors(", "no session", "returned", "session-only row of session"],
                 id="vectors-ignore-the-session-rules-and-filters"),
    pytest.param(broken.VectorClaimDriver, "vectors",
                 ["vectors is declared", "no vectors() method", "VectorDriver"],
                 id="declares-vectors-without-the-method"),
    pytest.param(broken.VectorKeepingEraseDriver, "vectors",
                 ["declared 'hard'", "the vector of", "still in raw storage", "vectors/"],
                 id="erase-keeps-the-vectors"),
    pytest.param(broken.MemoryKeyedVectorsDriver, "vectors",
                 ["vectors(as_of v1", "returned the vector of", "v2 for", "v1"],
                 id="one-vector-per-memory-not-per-version"),
    pytest.param(broken.KnownIgnoringVectorsDriver, "vectors",
                 ["which is in known", "sealed=None"],
                 id="vectors-ignore-known"),
    pytest.param(broken.StaleVectorStateDriver, "vectors",
                 ["vector_state()", "same token", "vectors() changed"],
                 id="vector-state-that-never-changes"),
    pytest.param(broken.LinkKeepingEraseDriver, "relations",
                 ["after erase() of", "still returns link", "the erased memory is the target",
                  "both ends, in every subject"],
                 id="erase-keeps-the-links-to-the-memory"),
    pytest.param(broken.SubjectBlindLinksDriver, "relations",
                 ["links(", "of subject", "which the read does not name",
                  "links leak across subjects"],
                 id="links-ignore-the-subjects"),
    pytest.param(broken.DuplicatingLinksDriver, "relations",
                 ["returned two links with the key", "must replace the link, not add one"],
                 id="put-links-appends-instead-of-replacing"),
    pytest.param(broken.RelationClaimDriver, "relations",
                 ["relations is declared", "no put_links(), links(), delete_links() method",
                  "RelationDriver"],
                 id="declares-relations-without-the-methods"),
    pytest.param(broken.IdFilterIgnoringDriver, "text_search",
                 ["search() for memory_ids", "bm25_rank"],
                 id="search-ignores-the-memory-ids"),
    pytest.param(broken.MirroringControlRegionsDriver, "regions",
                 ["control_get()/control_list()", "placed in another region",
                  "through region", "returned a record"],
                 id="writes-control-records-into-every-region"),
    pytest.param(broken.DefaultRegionDriver, "regions",
                 ["put()", "placed in no region, was not refused"],
                 id="stores-an-unplaced-tenant-instead-of-refusing"),
    pytest.param(broken.TagBlindDriver, "tags",
                 ["list() by one of MAX_TAGS tags returned", "which it should not have"],
                 id="reads-ignore-the-tag-clauses"),
]  # fmt: skip

# Each vector liar, and the checks that must catch it (its other vector checks pass).
VECTOR_LIARS = {
    broken.VectorClaimDriver: {c.name for c in all_checks() if c.capability == "vectors"},
    broken.SessionBlindVectorsDriver: {"matches_filter", "pinning_keeps_vectors"},
    broken.VectorKeepingEraseDriver: {"erase_leaves_no_vector_bytes"},
    broken.MemoryKeyedVectorsDriver: {"revisions", "matches_filter", "known",
                                      "pinning_keeps_vectors", "put_vector"},
    broken.KnownIgnoringVectorsDriver: {"known"},
    broken.StaleVectorStateDriver: {"vector_state"},
}  # fmt: skip

# Each other liar whose lie only some checks of its capability see, and those checks.
CAUGHT_BY = {
    broken.LinkKeepingEraseDriver: {"relations.erase_removes_links"},
    broken.SubjectBlindLinksDriver: {"relations.scoped"},
    broken.DuplicatingLinksDriver: {"relations.replace_by_key"},
    broken.RelationClaimDriver: {c.id for c in all_checks() if c.capability == "relations"},
    broken.IdFilterIgnoringDriver: {"text_search.memory_ids"},
    broken.TagBlindDriver: {c.id for c in all_checks() if c.capability == "tags"},
    broken.MirroringControlRegionsDriver: {"regions.writes_stay_in_their_region"},
    broken.DefaultRegionDriver: {"regions.writes_stay_in_their_region"},
}  # fmt: skip

RELATION_CHECKS = {
    "relations.declared",
    "relations.round_trip",
    "relations.replace_by_key",
    "relations.scoped",
    "relations.atomic",
    "relations.delete",
    "relations.erase_removes_links",
}


@pytest.mark.parametrize(("driver", "lie", "words"), LIARS)
def test_a_lying_driver_fails_exactly_the_capability_it_lies_about(
    driver: type[LocalDriver], lie: str, words: list[str]
) -> None:
    report = _report(driver)
    assert not report.passed
    assert [result.name for result in report.failed] == [lie], report.summary()
    reason = report[lie].reason
    for word in words:
        assert word in reason, reason
    # Everything else it declares still holds: the suite blames only the lie.
    for result in report.capabilities:
        if result.name != lie and result.status is not Status.NOT_DECLARED:
            assert result.status is Status.PASSED, result
    if driver in VECTOR_LIARS:
        failed = {c.check for c in report["vectors"].checks if c.status is Status.FAILED}
        assert failed == {f"vectors.{name}" for name in VECTOR_LIARS[driver]}, report.summary()
    if driver in CAUGHT_BY:
        failed = {c.check for c in report[lie].checks if c.status is Status.FAILED}
        assert failed == CAUGHT_BY[driver], report.summary()


def test_the_local_driver_passes_every_relation_check_and_the_memory_ids_filter() -> None:
    report = _report(LocalDriver)
    relations = report["relations"]
    assert relations.status is Status.PASSED and relations.declared == "True"
    assert {check.check for check in relations.checks} == RELATION_CHECKS
    assert all(check.status is Status.PASSED for check in relations.checks)
    notes = {check.check: check.reason for check in relations.checks}
    assert "links erased with the memory" in notes["relations.erase_removes_links"]
    assert "refused whole" in notes["relations.atomic"]
    checks = {c.check: c for result in report.capabilities for c in result.checks}
    assert checks["filters.memory_ids"].status is Status.PASSED
    assert checks["text_search.memory_ids"].status is Status.PASSED
    assert "hits compared with bm25_rank" in checks["text_search.memory_ids"].reason
    states = {check.check: check.reason for check in report["vectors"].checks}
    assert "sets of memory ids" in states["vectors.vector_state"]


def test_a_driver_that_does_not_declare_relations_is_not_asked_for_them() -> None:
    report = _report(broken.HiddenStorageDriver)
    assert report["relations"].status is Status.NOT_DECLARED
    assert report["relations"].declared == "False"
    assert {check.check for check in report["relations"].checks} == RELATION_CHECKS


def test_an_honest_vectors_driver_passes_every_vector_check() -> None:
    report = _report(broken.LocalVectorsDriver)
    assert report.passed, report.summary()
    vectors = report["vectors"]
    assert vectors.status is Status.PASSED and vectors.declared == "True"
    assert {check.check for check in vectors.checks} == {
        "vectors.round_trip",
        "vectors.revisions",
        "vectors.matches_filter",
        "vectors.known",
        "vectors.isolation",
        "vectors.erase_removes_vectors",
        "vectors.erase_leaves_no_vector_bytes",
        "vectors.pinning_keeps_vectors",
        "vectors.put_vector",
        "vectors.vector_state",
    }
    assert all(check.status is Status.PASSED for check in vectors.checks)
    notes = {check.check: check.reason for check in vectors.checks}
    assert "with as_of" in notes["vectors.matches_filter"]
    assert "first and last microsecond" in notes["vectors.revisions"]


def test_vectors_without_time_travel_or_hard_erase_run_the_checks_that_apply() -> None:
    some = [check for check in all_checks() if check.capability == "vectors"]
    report = run_suite(broken.VectorsWithoutHistoryDriver, checks=some, workers=4)
    assert report.passed, report.summary()
    statuses = {check.check: check.status for check in report["vectors"].checks}
    assert statuses.pop("vectors.erase_leaves_no_vector_bytes") is Status.NOT_DECLARED
    assert set(statuses.values()) == {Status.PASSED}
    notes = {check.check: check.reason for check in report["vectors"].checks}
    assert "time_travel is not declared" in notes["vectors.matches_filter"]


def test_a_driver_that_hides_its_storage_fails_raw_storage_and_cannot_prove_hard_erase() -> None:
    report = _report(broken.HiddenStorageDriver)
    assert {result.name for result in report.failed} == {"raw_storage", "erase"}
    assert "raw_dump() is empty after writes" in report["raw_storage"].reason
    assert "cannot be verified" in report["erase"].reason
    assert "a memory that was not erased" in report["erase"].reason


def test_the_local_driver_passes_every_declared_capability() -> None:
    report = _report(LocalDriver)
    assert report.passed, report.summary()
    assert report.driver == "local"
    statuses = _statuses(report)
    for name in REQUIRED | {"text_search", "time_travel", "concurrent_writers"}:
        assert statuses[name] is Status.PASSED, name
    assert statuses["regions"] is Status.NOT_DECLARED
    # Passed once the local driver declares vectors; until then, not declared.
    vectors = Status.PASSED if LocalDriver.capabilities.vectors else Status.NOT_DECLARED
    assert statuses["vectors"] is vectors
    erase = report["erase"]
    assert {check.check: check.status for check in erase.checks} == {
        "erase.removes_every_version": Status.PASSED,
        "erase.no_bytes_left": Status.PASSED,
        "erase.deleted_control_records_leave_no_bytes": Status.PASSED,
    }
    assert erase.declared == "'hard'"


def test_an_honest_soft_erase_driver_passes_without_the_raw_storage_erase_check() -> None:
    report = _report(broken.HonestSoftEraseDriver)
    assert report.passed, report.summary()
    erase = report["erase"]
    assert erase.status is Status.PASSED and erase.declared == "'soft'"
    statuses = {check.check: check.status for check in erase.checks}
    assert statuses["erase.removes_every_version"] is Status.PASSED
    assert statuses["erase.no_bytes_left"] is Status.NOT_DECLARED


def test_undeclared_capabilities_are_reported_not_declared_and_their_checks_not_run() -> None:
    report = _report(broken.NoSearchDriver)
    assert report.passed, report.summary()
    statuses = _statuses(report)
    assert statuses["text_search"] is Status.NOT_DECLARED
    assert statuses["time_travel"] is Status.NOT_DECLARED
    assert report["text_search"].declared == "False"
    for name in ("text_search", "time_travel"):
        assert report[name].checks
        assert all(check.status is Status.NOT_DECLARED for check in report[name].checks)
    # A check of a declared capability that needs an undeclared one is not run either.
    round_trip = {check.check: check.status for check in report["round_trip"].checks}
    assert round_trip["round_trip.search_returns_stored_rows"] is Status.NOT_DECLARED
    assert round_trip["round_trip.every_field"] is Status.PASSED


def test_search_without_time_travel_runs_search_checks_only() -> None:
    report = _report(broken.NoTimeTravelDriver)
    assert report.passed, report.summary()
    assert _statuses(report)["text_search"] is Status.PASSED
    assert _statuses(report)["time_travel"] is Status.NOT_DECLARED


def test_a_factory_that_raises_fails_every_capability_with_its_error() -> None:
    report = _report(broken.broken_factory)
    assert not report.passed
    assert {result.status for result in report.capabilities} == {Status.FAILED}
    assert "the factory raised RaisingFactoryError" in report["protocol"].reason


def test_a_factory_that_returns_no_driver_fails_with_that_reason() -> None:
    report = _report(broken.no_driver_factory)
    assert not report.passed
    assert "did not return a Driver" in report["protocol"].reason


def test_checks_run_at_once_report_exactly_what_they_report_one_by_one() -> None:
    def outcomes(report: Report) -> list[tuple[str, Status, str]]:
        # A failure's reason is reproducible; a pass's note may count retried conflicts.
        return [
            (check.check, check.status, check.reason if check.status is Status.FAILED else "")
            for result in report.capabilities
            for check in result.checks
        ]

    some = [c for c in all_checks() if c.capability in {"isolation", "erase", "text_search"}]
    at_once = run_suite(broken.UnsortedScoresDriver, checks=some, workers=4)
    one_by_one = run_suite(broken.UnsortedScoresDriver, checks=some, workers=1)
    assert outcomes(at_once) == outcomes(one_by_one)
    assert any(status is Status.FAILED for _, status, _ in outcomes(at_once))


def test_a_single_check_reproduces_from_its_seed(tmp_path: Path) -> None:
    check = next(c for c in all_checks() if c.id == "text_search.matches_reference")
    first = run_check(check, broken.OutOfRangeScoresDriver, tmp_path / "a", seed=7)
    again = run_check(check, broken.OutOfRangeScoresDriver, tmp_path / "b", seed=7)
    assert first.status is again.status is Status.FAILED
    assert first.reason == again.reason
    assert "outside [0, 1]" in first.reason
    passed = run_check(check, LocalDriver, tmp_path / "c", seed=7)
    assert passed.status is Status.PASSED and "hits compared" in passed.reason


def test_checks_cover_every_capability_and_describe_themselves() -> None:
    checks = all_checks()
    assert len({check.id for check in checks}) == len(checks)
    assert {check.capability for check in checks} == {c.name for c in CAPABILITIES}
    for check in checks:
        assert check.description.endswith("."), check.id


class _RegionalLocalDriver(LocalDriver):
    """The local driver, declaring the one flag it leaves undeclared."""

    capabilities = replace(LocalDriver.capabilities, regions=("eu", "us-east-1"))


def test_every_capability_a_driver_can_declare_is_one_a_driver_can_pass(tmp_path: Path) -> None:
    """No flag whose checks always fail: extraction had no protocol behind it and is gone
    (ADR 0025), relations came back with one (RelationDriver); every other declarable flag
    passes on the local driver."""
    flags = {field.name for field in fields(Capabilities)}
    assert flags == {"text_search", "time_travel", "vectors", "relations", "erase", "regions",
                     "concurrent_writers", "person_records", "tags"}  # fmt: skip
    names = {capability.name for capability in CAPABILITIES}
    assert flags <= names
    assert "extraction" not in flags | names
    assert _statuses(_report(LocalDriver))["erase"] is Status.PASSED  # erase="hard" declared
    for name in flags - {"regions", "erase"}:
        assert getattr(LocalDriver.capabilities, name) is True
        assert _statuses(_report(LocalDriver))[name] is Status.PASSED, name
    regional = [check for check in all_checks() if check.capability == "regions"]
    assert regional
    for index, check in enumerate(regional):
        result = run_check(check, _RegionalLocalDriver, tmp_path / str(index))
        assert result.status is Status.PASSED, result.reason


def test_the_report_reads_as_json_and_as_a_table() -> None:
    report = _report(broken.UnsortedScoresDriver)
    data = json.loads(report.to_json_text())
    assert data["passed"] is False and data["driver"] == "unsorted-scores"
    by_name = {item["name"]: item for item in data["capabilities"]}
    assert by_name["text_search"]["status"] == "failed"
    declared = 16  # every capability but regions and tags (its lie would reach the tag checks)
    assert by_name["vectors"]["status"] == "passed"
    assert by_name["relations"]["status"] == "passed"
    assert by_name["isolation"]["status"] == "passed"
    failed_checks = [c for c in by_name["text_search"]["checks"] if c["status"] == "failed"]
    assert failed_checks and all("unsorted" in c["reason"] for c in failed_checks)
    table = report.summary()
    assert f"FAILED: 1 of {declared} declared capabilities do not hold: text_search." in table
    assert "text_search.matches_reference: search() for" in table


@pytest.mark.parametrize("shift", [0, 1, 2, 5])
@pytest.mark.parametrize("form", ["raw", "hex", "HEX", "base64", "base64url", "wrapped"])
def test_the_raw_check_finds_a_blob_in_any_form_at_any_alignment(form: str, shift: int) -> None:
    blob = bytes(range(7, 250)) + b"\x00\xff" * 20
    padded = b"\x01" * shift + blob + b"\x02" * 3
    stored = {
        "raw": padded,
        "hex": padded.hex().encode(),
        "HEX": padded.hex().upper().encode(),
        "base64": base64.b64encode(padded),
        "base64url": base64.urlsafe_b64encode(padded),
        "wrapped": base64.encodebytes(padded),  # 76-character lines
    }[form]
    haystacks = _haystacks([("noise", b"x" * 500), ("row 7", b'{"a": "' + stored + b'"}')])
    found = {_find(needle, haystacks) for needle in _blob_needles(blob, "blob")}
    assert "row 7" in found
    other = bytes((i * 91 + 13) % 256 for i in range(200))
    assert {_find(needle, haystacks) for needle in _blob_needles(other, "blob")} == {None}


def test_the_raw_check_finds_a_blob_split_across_pages() -> None:
    blob = bytes((i * 37) % 256 for i in range(300))
    pages = [("page 1", b"\x00" * 8 + blob[:150]), ("page 2", b"\x09" * 4 + blob[150:])]
    assert any(_find(needle, _haystacks(pages)) for needle in _blob_needles(blob, "blob"))


def test_the_region_router_passes_every_capability_and_shows_where_writes_land() -> None:
    """The router over two local drivers (tenants placed by a hash) keeps the whole contract,
    and its regions check wrote in each region, read the other, and saw a refusal."""
    report = _report(broken.LocalRegionsDriver)
    assert report.passed, report.summary()
    assert report.driver == "regions"
    regions = report["regions"]
    assert regions.status is Status.PASSED and regions.declared == "('eu', 'us')"
    notes = {check.check: check.reason for check in regions.checks}
    assert set(notes) == {"regions.region_names", "regions.writes_stay_in_their_region"}
    landed = notes["regions.writes_stay_in_their_region"]
    assert "a tenant of each of eu, us wrote" in landed
    assert "none of it found in another region" in landed
    assert "refused (ResidencyError) with nothing written" in landed


def test_regions_without_a_placement_protocol_are_the_drivers_word(tmp_path: Path) -> None:
    check = next(c for c in all_checks() if c.id == "regions.writes_stay_in_their_region")
    result = run_check(check, _RegionalLocalDriver, tmp_path)
    assert result.status is Status.PASSED
    assert "residency is the driver's word, not verified" in result.reason
