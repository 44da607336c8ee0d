"""``Memory``'s options, defined once: what ``Memory(...)`` and ``Memory.open(...)`` accept.

:class:`Options` is the one list of options (a ``TypedDict``, so both signatures take
``**options: Unpack[Options]`` and a type checker sees every name and type); :func:`settle`
checks a set of them and returns the :class:`Settings` the core keeps. docs/api.md documents
the same names, and a test holds the three together.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TypedDict

from pydantic import BaseModel

from mainsdk_memory import _validate as validate
from mainsdk_memory._errors import ConfigurationError, InvalidInputError
from mainsdk_memory._records import AgentLimits
from mainsdk_memory.audit import AuditSink, LoggingSink
from mainsdk_memory.embeddings import Embedder
from mainsdk_memory.injection import DEFAULT_DETECTOR, AnyOf, Detector, RuleDetector

__all__ = ["OPTION_NAMES", "Options", "Settings", "settle"]


class Options(TypedDict, total=False):
    """The options of :class:`~mainsdk_memory.Memory`; every one may be left out."""

    schemas: Iterable[type[BaseModel]]
    """Pydantic models used as ``data=``, so typed facts come back as those models."""
    clock: Callable[[], datetime] | None
    """Returns timezone-aware datetimes; replaces the system time (tests, replays)."""
    labels: Iterable[str] | None
    """The only labels the store may hold (default: any)."""
    detector: Detector | None
    """The injection check (default :data:`~mainsdk_memory.injection.DEFAULT_DETECTOR`)."""
    audit: AuditSink | None
    """Receives one event per call (default: the ``mainsdk_memory.audit`` logger)."""
    limits: AgentLimits | None
    """The limits of every agent without limits of its own."""
    retention: Mapping[str, timedelta] | None
    """The lifetime of memories per label; a child's memories are capped at 90 days."""
    max_text_chars: int
    """The longest text ``remember``, ``revise`` and ``recall`` accept (default 8,000)."""
    embedder: Embedder | None
    """Gives every new version a sealed embedding and turns on vector and hybrid recall."""
    allow_readable_keys: bool
    """Open a key store that other users can read (refused by default, as ssh does)."""


#: Every option's name, in the order docs/api.md lists them.
OPTION_NAMES: tuple[str, ...] = tuple(Options.__annotations__)


@dataclass(frozen=True, slots=True)
class Settings:
    """The checked options the core keeps (see :class:`Options` for each one)."""

    app: str
    schemas: tuple[type[BaseModel], ...]
    clock: Callable[[], datetime]
    labels: frozenset[str] | None
    detector: Detector
    child_detector: Detector
    """``detector`` without any part that may call a model (for children's memories)."""
    audit: AuditSink
    limits: AgentLimits
    retention: Mapping[str, timedelta]
    max_text_chars: int
    embedder: Embedder | None
    allow_readable_keys: bool


def settle(app: str, options: Mapping[str, object]) -> Settings:
    """Check ``app`` and ``options``; raise :class:`ConfigurationError` on anything odd."""
    unknown = sorted(set(options) - set(OPTION_NAMES))
    if unknown:
        raise ConfigurationError(
            f"Memory has no option {unknown[0]!r}; its options are {', '.join(OPTION_NAMES)} "
            "(docs/api.md)."
        )
    opts = Options(**options)  # type: ignore[typeddict-item]
    # In the order the checks always ran: app, labels, schemas, detector, limits, retention.
    app = validate.name(app, "app")
    given_labels = opts.get("labels")
    labels = None if given_labels is None else frozenset(validate.labels(given_labels))
    schemas = tuple(opts.get("schemas", ()))  # once: an iterator is read here only
    for schema in schemas:
        if not (isinstance(schema, type) and issubclass(schema, BaseModel)):
            raise InvalidInputError("A schema is a pydantic model class.")
    given = opts.get("detector")
    detector = DEFAULT_DETECTOR if given is None else given
    if not callable(getattr(detector, "check", None)):
        raise ConfigurationError("detector must have a check(text) method (see injection).")
    audit = opts.get("audit")
    limits = opts.get("limits")
    if limits is not None and not isinstance(limits, AgentLimits):
        raise ConfigurationError("limits must be an AgentLimits.")
    retention: dict[str, timedelta] = {}
    for label, lifetime in (opts.get("retention") or {}).items():
        validate.labels([label])
        if not isinstance(lifetime, timedelta) or lifetime <= timedelta(0):
            raise ConfigurationError("Each retention is a positive timedelta, per label.")
        retention[label] = lifetime
    child_cap = retention.get(validate.CHILD_LABEL, validate.CHILD_RETENTION)
    retention[validate.CHILD_LABEL] = min(child_cap, validate.CHILD_RETENTION)
    max_text = opts.get("max_text_chars", validate.MAX_TEXT_CHARS)
    if isinstance(max_text, bool) or not isinstance(max_text, int) or max_text < 1:
        raise ConfigurationError("max_text_chars is a positive whole number.")
    return Settings(
        app=app,
        schemas=schemas,
        clock=opts.get("clock") or (lambda: datetime.now(UTC)),
        labels=labels,
        detector=detector,
        child_detector=model_free(detector),
        audit=LoggingSink() if audit is None else audit,
        limits=limits or AgentLimits(),
        retention=retention,
        max_text_chars=max_text,
        embedder=opts.get("embedder"),
        allow_readable_keys=_flag(opts.get("allow_readable_keys", False), "allow_readable_keys"),
    )


def _flag(value: object, what: str) -> bool:
    if not isinstance(value, bool):
        raise ConfigurationError(f"{what} is True or False.")
    return value


def _strip_models(detector: Detector) -> Detector | None:
    if isinstance(detector, AnyOf):
        kept = [part for part in map(_strip_models, detector.detectors) if part is not None]
        if not kept:
            return None
        return kept[0] if len(kept) == 1 else AnyOf(*kept)
    if isinstance(detector, RuleDetector) or getattr(detector, "uses_model", True) is False:
        return detector
    return None  # a classifier, or a detector of unknown make: it may call a model


def model_free(detector: Detector) -> Detector:
    """``detector`` without any part that may call a model (for children's memories).

    Rule detectors stay; classifiers go; a detector of unknown make counts as a model unless
    it says ``uses_model = False``; when nothing is left, the default rule detector runs.
    """
    return _strip_models(detector) or DEFAULT_DETECTOR
