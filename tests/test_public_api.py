"""The public surface is pinned: widening it is a deliberate act."""

from __future__ import annotations

import mainsdk_memory
import mainsdk_memory.drivers
import mainsdk_memory.keys
from mainsdk_memory import MemorySDKError


def test_exported_names() -> None:
    assert sorted(mainsdk_memory.__all__) == sorted([
        "AgentDisabledError", "AgentLimits", "AsyncEpisodes", "AsyncMemory",
        "AsyncPersonMemory", "AsyncPrivacy", "AsyncScopedMemory", "AsyncWorkingMemory",
        "AuditError", "BatchError", "BundleError", "Capabilities",
        "ConfigurationError", "ConsentRequiredError", "ConsolidationReport", "DamagedMemoryError",
        "Entity", "Episode", "Episodes", "Fork", "ModelError", "ModelNotAllowedError",
        "WorkingMemory", "ai", "ErasePolicyError", "ForgetRequest", "Formation", "Hit",
        "ExportError", "ImportReport", "IntegrityError",
        "InvalidInputError", "KeyStoreError", "Kind", "LANGUAGES", "Link",
        "LimitExceededError", "Memory", "MemoryCapabilityError", "MemoryConflictError",
        "MemoryInjectionError", "MemoryNotFound", "MemoryRecord", "MemorySDKError",
        "NoTenantError", "Options", "Page", "PersonMemory", "Privacy",
        "Ranking", "RankingSignals", "ReadPolicy", "RecallMode",
        "Receipt", "ReceiptError", "Region", "ReindexReport", "RequestNotFound", "Residency",
        "ResidencyError", "Revision",
        "Scope", "ScopeError", "ScopedMemory", "SealError", "Source", "StoreError",
        "TenantMismatchError", "TokenError", "Trust", "__version__", "audit", "injection",
        "receipts", "tenant",
    ])
    for name in mainsdk_memory.__all__:
        assert hasattr(mainsdk_memory, name)


def test_subpackages_are_installed_in_the_namespace() -> None:
    assert mainsdk_memory.drivers.__name__ == "mainsdk_memory.drivers"
    assert {"Driver", "StoredRow", "Filter", "Capabilities"} <= set(mainsdk_memory.drivers.__all__)
    assert {"KeyStore", "SubjectKeys"} <= set(mainsdk_memory.keys.__all__)


def test_every_error_has_one_root_a_unique_code_and_a_next_step() -> None:
    errors = [getattr(mainsdk_memory, name) for name in mainsdk_memory.__all__
              if name.endswith("Error") or name.endswith("NotFound")]
    codes = set()
    for error in errors:
        assert issubclass(error, MemorySDKError)
        assert error.code.startswith("MAIN-MEM-") and error.code not in codes
        codes.add(error.code)
        assert error.__doc__
    assert not issubclass(MemorySDKError, MemoryError)  # not the builtin
