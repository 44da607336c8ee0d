"""``Memory``'s options, defined once: what ``Memory(...)`` and ``Memory.open(...)`` accept.

:class:`Options` is the one list of options (a ``TypedDict``, so both signatures take
``**options: Unpack[Options]`` and a type checker sees every name and type); :func:`settle`
checks a set of them and returns the :class:`Settings` the core keeps. docs/api.md documents
the same names, and a test holds the three together.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from enum import Enum
from typing import Final, TypedDict

from pydantic import BaseModel

from mainsdk_memory import _validate as validate
from mainsdk_memory._errors import ConfigurationError, InvalidInputError
from mainsdk_memory._records import AgentLimits
from mainsdk_memory._signals import RankingSignals
from mainsdk_memory._text import DEFAULT_LANGUAGE, check_language
from mainsdk_memory.ai import Model
from mainsdk_memory.audit import AuditSink, LoggingSink
from mainsdk_memory.embeddings import Embedder, StaticEmbedder
from mainsdk_memory.injection import DEFAULT_DETECTOR, AnyOf, Detector, RuleDetector

__all__ = ["DEFAULT_EMBEDDER", "OPTION_NAMES", "Options", "Settings", "resolve_embedder", "settle"]


class DefaultEmbedder(Enum):
    """The ``embedder`` option left out: the default embedder, if the driver stores vectors."""

    DEFAULT = "default"


DEFAULT_EMBEDDER: Final = DefaultEmbedder.DEFAULT


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
    """Gives every new version a sealed embedding for vector and hybrid recall (default:
    :class:`~mainsdk_memory.embeddings.StaticEmbedder` on a driver that stores vectors;
    ``None`` turns vectors off)."""
    allow_readable_keys: bool
    """Open a key store that other users can read (refused by default, as ssh does)."""
    signals: RankingSignals | None
    """How kind, uses, pin and feedback move recall scores (default :class:`RankingSignals`)."""
    language: str
    """The language memories and queries are stemmed in unless a call names one (default
    ``"english"``; :data:`mainsdk_memory.LANGUAGES`)."""
    formation: bool
    """Whether ``remember`` forms a text against the memories held (default ``True``);
    ``False`` stores every text as it is unless a call passes ``formation=True``."""
    model: Model | None
    """A language model (:class:`mainsdk_memory.ai.Model`) for the model-assisted extractor
    of ``learn``; every call goes through the redacting port. Default: none, no model runs."""


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
    embedder: Embedder | DefaultEmbedder | None
    """:data:`DEFAULT_EMBEDDER` when the option was left out (resolved once the driver is
    known: :func:`resolve_embedder`)."""
    allow_readable_keys: bool
    signals: RankingSignals
    language: str
    formation: bool = True
    model: Model | None = None


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
        embedder=opts.get("embedder", DEFAULT_EMBEDDER),
        allow_readable_keys=_flag(opts.get("allow_readable_keys", False), "allow_readable_keys"),
        signals=_signals(opts.get("signals")),
        language=_language(opts.get("language", DEFAULT_LANGUAGE)),
        formation=_flag(opts.get("formation", True), "formation"),
        model=_model(opts.get("model")),
    )


def resolve_embedder(settings: Settings, stores_vectors: bool) -> Settings:
    """``settings`` with its embedder decided: a left-out option becomes the default
    :class:`~mainsdk_memory.embeddings.StaticEmbedder` where the driver stores vectors, and
    no embedder (BM25 only) where it does not (ADR 0083)."""
    if settings.embedder is not DEFAULT_EMBEDDER:
        return settings
    return replace(settings, embedder=StaticEmbedder() if stores_vectors else None)


def _signals(value: object) -> RankingSignals:
    if value is None:
        return RankingSignals()
    if not isinstance(value, RankingSignals):
        raise ConfigurationError("signals must be a RankingSignals (or None: the defaults).")
    return value


def _model(value: object) -> Model | None:
    if value is not None and not callable(getattr(value, "complete", None)):
        raise ConfigurationError(
            "model must have a complete(messages, *, schema=None) method (mainsdk_memory.ai)."
        )
    return value  # type: ignore[return-value]


def _language(value: object) -> str:
    try:
        return check_language(value)
    except InvalidInputError as error:
        raise ConfigurationError(error.message) from None  # the message, not its code


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
