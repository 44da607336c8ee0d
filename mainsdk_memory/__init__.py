"""mainsdk-memory: privacy-first memory for app agents.

Tenant-scoped, sealed under a key per person, recalled as untrusted data, versioned instead
of overwritten, and forgotten with a signed receipt::

    from mainsdk_memory import Memory, tenant

    memory = Memory.open("local:./memories", keys="./keys", app="support")
    with tenant.use("acme"):
        me = memory.acting_for("person-42", agent="support-bot", session="s-1")
        me.remember("Prefers WhatsApp over email", kind="preference")
        block = me.context("how to contact them")   # put this in a *user* message
"""

from mainsdk_memory import ai, audit, injection, receipts, tenant
from mainsdk_memory._agents import ReadPolicy
from mainsdk_memory._async import (
    AsyncEpisodes,
    AsyncMemory,
    AsyncPersonMemory,
    AsyncPrivacy,
    AsyncScopedMemory,
    AsyncWorkingMemory,
)
from mainsdk_memory._consolidation import ConsolidationReport
from mainsdk_memory._episodes import Episode, Episodes
from mainsdk_memory._errors import (
    AgentDisabledError,
    AuditError,
    BatchError,
    BundleError,
    ConfigurationError,
    ConsentRequiredError,
    DamagedMemoryError,
    ErasePolicyError,
    ExportError,
    IntegrityError,
    InvalidInputError,
    KeyStoreError,
    LimitExceededError,
    MemoryCapabilityError,
    MemoryConflictError,
    MemoryInjectionError,
    MemoryNotFound,
    MemorySDKError,
    ModelError,
    ModelNotAllowedError,
    NoTenantError,
    ReceiptError,
    RequestNotFound,
    ResidencyError,
    ScopeError,
    SealError,
    StoreError,
    TenantMismatchError,
    TokenError,
)
from mainsdk_memory._fork import Fork
from mainsdk_memory._importing import ImportReport
from mainsdk_memory._memory import Memory
from mainsdk_memory._options import Options
from mainsdk_memory._privacy import Privacy
from mainsdk_memory._recall import Ranking, RecallMode
from mainsdk_memory._records import (
    AgentLimits,
    Entity,
    ForgetRequest,
    Formation,
    Hit,
    Kind,
    Link,
    MemoryRecord,
    Page,
    Revision,
    Scope,
    Source,
    Trust,
)
from mainsdk_memory._reindex import ReindexReport
from mainsdk_memory._residency import Region, Residency
from mainsdk_memory._scoped import PersonMemory, ScopedMemory
from mainsdk_memory._signals import RankingSignals
from mainsdk_memory._text import LANGUAGES
from mainsdk_memory._working import WorkingMemory
from mainsdk_memory.drivers import Capabilities
from mainsdk_memory.receipts import Receipt

__version__ = "0.1.0"

__all__ = [
    "LANGUAGES",
    "AgentDisabledError",
    "AgentLimits",
    "AsyncEpisodes",
    "AsyncMemory",
    "AsyncPersonMemory",
    "AsyncPrivacy",
    "AsyncScopedMemory",
    "AsyncWorkingMemory",
    "AuditError",
    "BatchError",
    "BundleError",
    "Capabilities",
    "ConfigurationError",
    "ConsentRequiredError",
    "ConsolidationReport",
    "DamagedMemoryError",
    "Entity",
    "Episode",
    "Episodes",
    "ErasePolicyError",
    "ExportError",
    "ForgetRequest",
    "Fork",
    "Formation",
    "Hit",
    "ImportReport",
    "IntegrityError",
    "InvalidInputError",
    "KeyStoreError",
    "Kind",
    "LimitExceededError",
    "Link",
    "Memory",
    "MemoryCapabilityError",
    "MemoryConflictError",
    "MemoryInjectionError",
    "MemoryNotFound",
    "MemoryRecord",
    "MemorySDKError",
    "ModelError",
    "ModelNotAllowedError",
    "NoTenantError",
    "Options",
    "Page",
    "PersonMemory",
    "Privacy",
    "Ranking",
    "RankingSignals",
    "ReadPolicy",
    "RecallMode",
    "Receipt",
    "ReceiptError",
    "Region",
    "ReindexReport",
    "RequestNotFound",
    "Residency",
    "ResidencyError",
    "Revision",
    "Scope",
    "ScopeError",
    "ScopedMemory",
    "SealError",
    "Source",
    "StoreError",
    "TenantMismatchError",
    "TokenError",
    "Trust",
    "WorkingMemory",
    "__version__",
    "ai",
    "audit",
    "injection",
    "receipts",
    "tenant",
]
