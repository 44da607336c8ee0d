"""What the core does with declared capabilities: MAIN-MEM-0020 for soft erase, and
MemoryCapabilityError for a call the driver does not declare; with real drivers, no mocks."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from mainsdk_memory import (
    ErasePolicyError,
    Memory,
    MemoryCapabilityError,
    MemorySDKError,
    tenant,
)
from mainsdk_memory.drivers import open_driver
from mainsdk_memory.drivers.local import LocalDriver
from mainsdk_memory.keys import KeyStore
from tests.conformance_broken_drivers import (
    HonestSoftEraseDriver,
    NoSearchDriver,
    NoTimeTravelDriver,
)

ENTRY_POINT = "tests.conformance_broken_drivers:HonestSoftEraseDriver.from_url"


@pytest.fixture
def softlocal_scheme(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """Register the honest soft-erase driver as the ``softlocal`` scheme, as an installed
    package would: a distribution's entry point in the ``mainsdk_memory.drivers`` group."""
    site = tmp_path / "site"
    dist = site / "softlocal_driver-1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: softlocal-driver\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(f"[mainsdk_memory.drivers]\nsoftlocal = {ENTRY_POINT}\n")
    monkeypatch.syspath_prepend(str(site))
    return "softlocal"


@pytest.fixture
def in_tenant() -> Iterator[None]:
    with tenant.use("acme"):
        yield


def test_the_soft_erase_driver_is_found_by_its_scheme(
    softlocal_scheme: str, tmp_path: Path
) -> None:
    driver = open_driver(f"{softlocal_scheme}:{tmp_path / 'store'}")
    try:
        assert isinstance(driver, HonestSoftEraseDriver)
        assert driver.capabilities.erase == "soft"
    finally:
        driver.close()


@pytest.mark.parametrize("labels", [None, ["personal"], ["none", "personal"], ["health"]])
def test_memory_open_refuses_a_soft_erase_driver_that_may_hold_personal_data(
    softlocal_scheme: str, tmp_path: Path, keys_path: Path, labels: list[str] | None
) -> None:
    url = f"{softlocal_scheme}:{tmp_path / 'store'}"
    with pytest.raises(ErasePolicyError) as refused:
        Memory.open(url, keys=keys_path, app="app", labels=labels)
    assert refused.value.code == "MAIN-MEM-0020"
    assert "MAIN-MEM-0020" in str(refused.value)
    assert "soft-delete" in str(refused.value)
    assert not (tmp_path / "store").exists()  # refused before anything was written


def test_a_soft_erase_driver_may_hold_only_non_personal_memory(
    softlocal_scheme: str, tmp_path: Path, keys_path: Path, in_tenant: None
) -> None:
    url = f"{softlocal_scheme}:{tmp_path / 'store'}"
    with Memory.open(url, keys=keys_path, app="app", labels=["none"]) as memory:
        assert memory.capabilities.erase == "soft"
        bot = memory.acting_for("ada", agent="helper")
        record = bot.remember(
            "Invoices are sent on the first Monday.",
            kind="procedure",
            about="tenant",
            labels=["none"],
        )
        with pytest.raises(MemorySDKError):
            bot.remember("Ada lives in Lisbon.")  # labelled personal by default: refused
        receipt = memory.person("ada").forget(record.id)  # a person's forget is immediate
        assert receipt.erase == "soft"  # the receipt says what really happened


def test_the_same_core_opens_a_hard_erase_driver_for_personal_data(
    tmp_path: Path, keys_path: Path
) -> None:
    with Memory(LocalDriver(tmp_path / "store"), KeyStore.open(keys_path), app="app") as memory:
        assert memory.capabilities.erase == "hard"


def test_constructing_memory_on_a_soft_erase_driver_is_refused_too(
    tmp_path: Path, keys_path: Path
) -> None:
    driver = HonestSoftEraseDriver(tmp_path / "store")
    with pytest.raises(ErasePolicyError):
        Memory(driver, KeyStore.open(keys_path), app="app")


def test_recall_on_a_driver_without_text_search_names_the_capability(
    tmp_path: Path, keys_path: Path, in_tenant: None
) -> None:
    driver = NoSearchDriver(tmp_path / "s")
    with Memory(driver, KeyStore.open(keys_path), app="app", embedder=None) as memory:
        ada = memory.acting_for("ada", agent="helper")
        record = ada.remember("Ada prefers WhatsApp.")
        with pytest.raises(MemoryCapabilityError) as missing:
            ada.recall("whatsapp")
        assert missing.value.capability == "text_search"
        assert "'text_search'" in str(missing.value)
        with pytest.raises(MemoryCapabilityError) as no_history:
            ada.history(record.id)
        assert no_history.value.capability == "time_travel"
        assert ada.get(record.id).text == "Ada prefers WhatsApp."  # what it declares works
    with Memory(NoSearchDriver(tmp_path / "s"), KeyStore.open(keys_path), app="app") as memory:
        ada = memory.acting_for("ada", agent="helper")  # the default embedder: vectors only
        found = ada.remember("Ada's daughter is called Mia.")
        assert [hit.record.id for hit in ada.recall("her child's name", mode="vector")][:1] == [
            found.id
        ]
        with pytest.raises(MemoryCapabilityError):
            ada.recall("whatsapp", mode="text")


def test_time_travel_calls_on_a_driver_without_it_name_the_capability(
    tmp_path: Path, keys_path: Path, in_tenant: None
) -> None:
    driver = NoTimeTravelDriver(tmp_path / "s")
    with Memory(driver, KeyStore.open(keys_path), app="app") as memory:
        ada = memory.acting_for("ada", agent="helper")
        record = ada.remember("Ada lives in Lisbon.")
        hits = ada.recall("Lisbon")
        assert [hit.record.id for hit in hits] == [record.id]  # declared: it works
        past = datetime.now(UTC) - timedelta(days=30)
        with pytest.raises(MemoryCapabilityError) as as_of:
            ada.recall("Lisbon", as_of=past)
        assert as_of.value.capability == "time_travel"
        assert "'time_travel'" in str(as_of.value)
        with pytest.raises(MemoryCapabilityError) as history:
            ada.history(record.id)
        assert history.value.capability == "time_travel"
