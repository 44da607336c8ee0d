"""The model port: the one way the SDK sends text to the configured model, behind its walls.

:func:`complete` runs, in this order, before anything is sent: a model must be configured
(:class:`ConfigurationError`); the person must not be a child
(:class:`ModelNotAllowedError`: no model ever runs for a child); the agent's kill switch
(:class:`AgentDisabledError`) and its ``model_calls_per_minute`` (:class:`LimitExceededError`);
the injection check on every message but the app's own ``system`` instructions, which are
instructions by design (:class:`MemoryInjectionError`; ADR 0103). Then every message is
redacted with one :class:`~mainsdk_memory._redaction.Redactor` over the person's id and the
identifiers the caller names, the model is called, its answer is checked for injection once
its placeholders are restored, and the restored answer is returned. One audit event per call
(operation ``model``): the purpose, the number of messages and of values redacted; never
text. A model that fails is audited and raised as :class:`ModelError` (ADR 0087).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from mainsdk_memory import _validate as validate
from mainsdk_memory._errors import (
    ConfigurationError,
    InvalidInputError,
    LimitExceededError,
    ModelError,
    ModelNotAllowedError,
)
from mainsdk_memory._redaction import CATEGORIES, Redactor
from mainsdk_memory._walls import check_injection

if TYPE_CHECKING:
    from mainsdk_memory._caller import Caller

__all__ = ["available", "checked_identifiers", "complete"]

_ROLES = frozenset({"system", "user", "assistant"})


def available(caller: Caller) -> bool:
    """Whether a model call for ``caller`` could run: a model is configured and the person is
    not a child (the kill switch, the rate and the text are checked by :func:`complete`).
    A caller that can fall back to a model-free path asks this first."""
    return caller.services.settings.model is not None and not caller.is_child()


def complete(
    caller: Caller,
    messages: Sequence[Mapping[str, str]],
    *,
    purpose: str,
    schema: Mapping[str, Any] | None = None,
    identifiers: Sequence[str] = (),
) -> str:
    """The configured model's answer to ``messages``, asked for ``caller`` (see the module
    docstring for every check, in order).

    ``messages`` are ``{"role": "system" | "user" | "assistant", "content": str}`` dicts;
    ``purpose`` names why the SDK asks (a short name such as ``learn``: it goes into the audit
    event); ``schema`` asks for a JSON answer of that shape (the answer's strings are then
    restored inside the JSON, so it stays valid JSON); ``identifiers`` are further values to
    redact besides the person's id (names, handles, account numbers the app knows)."""
    services = caller.services
    with caller.audited("model") as note:
        purpose = validate.name(purpose, "purpose")
        note.extra.append(("purpose", purpose))
        roles, contents = _messages(messages)
        names = checked_identifiers(identifiers)
        if schema is not None and not isinstance(schema, Mapping):
            raise InvalidInputError("schema is a JSON schema (a dict) or None.")
        model = services.settings.model
        if model is None:
            raise ConfigurationError(
                "No model is configured, so nothing was sent. Pass model= to Memory.open "
                "(e.g. mainsdk_memory.ai.OpenAICompatible(...)) to use one."
            )
        if caller.is_child():
            raise ModelNotAllowedError
        if not caller.is_person:
            records = caller.agent_records()
            caller.written_by(records)  # the kill switch
            _count_call(caller, services.agents.limits(records).model_calls_per_minute)
        for role, content in zip(roles, contents, strict=True):
            if role != "system":  # the app's (or the SDK's) own instructions to the model
                check_injection(services, content)
        redactor = Redactor([caller.person, *names])
        sent = [
            {"role": role, "content": text}
            for role, text in zip(roles, redactor.redact_all(contents), strict=True)
        ]
        note.count = len(sent)
        note.extra.append(("redacted", str(redactor.total)))
        counts = redactor.counts
        if redactor.total:
            by = ",".join(f"{category}:{counts[category]}" for category in CATEGORIES)
            note.extra.append(("redacted_by", by))
        answer = _call(model, sent, schema)
        restored = _restore(redactor, answer, json_answer=schema is not None)
        check_injection(services, restored)
        return restored


def _messages(messages: object) -> tuple[list[str], list[str]]:
    if isinstance(messages, str | bytes) or not isinstance(messages, Sequence) or not messages:
        raise InvalidInputError("messages is a non-empty list of {'role', 'content'} dicts.")
    roles, contents = [], []
    for message in messages:
        if not isinstance(message, Mapping):
            raise InvalidInputError("Each message is a {'role', 'content'} dict.")
        role, content = message.get("role"), message.get("content")
        if role not in _ROLES or not isinstance(content, str):
            raise InvalidInputError(
                "Each message has a role ('system', 'user' or 'assistant') and a text content."
            )
        if not validate.encodable(content):
            raise InvalidInputError(
                "A message is not valid Unicode (lone surrogates); nothing was sent."
            )
        roles.append(role)
        contents.append(content)
    return roles, contents


def checked_identifiers(identifiers: object) -> tuple[str, ...]:
    """``identifiers`` (more of the person's identifiers to redact), checked: a list of up to
    100 non-empty strings."""
    if isinstance(identifiers, str) or not isinstance(identifiers, Sequence | set | frozenset):
        raise InvalidInputError("identifiers is a list of strings (names, handles, ids).")
    names = tuple(identifiers)
    if not all(isinstance(name, str) and name.strip() for name in names) or len(names) > 100:
        raise InvalidInputError("identifiers is a list of up to 100 non-empty strings.")
    return names


def _count_call(caller: Caller, per_minute: int | None) -> None:
    """Refuse a model call over the agent's rate; otherwise count it: a sliding minute in the
    key store's anchors, apart from the agent's writes (agent names hold no "/", so the
    scope ``<tenant scope>/model/<agent>`` is never an agent's write scope)."""
    if per_minute is None:
        return
    services = caller.services
    scope = f"{services.anchor_scope(caller.tenant)}/model/{caller.agent}"
    if not services.keys.anchors.count_write(scope, per_minute, services.now().timestamp()):
        raise LimitExceededError(
            f"The agent reached its limit of {per_minute} model calls per minute; nothing was "
            "sent. Wait, or raise model_calls_per_minute with memory.set_limits(...)."
        )


def _call(model: Any, messages: list[dict[str, str]], schema: Mapping[str, Any] | None) -> str:
    """The model's answer; any failure is a :class:`ModelError` that names only its kind."""
    failed: str | None = None
    try:
        answer = model.complete(messages, schema=schema)
    except ModelError:
        raise
    except Exception as exc:  # an app's own model may raise anything
        # Not chained: the model's own exception may quote the prompt or the answer.
        failed = type(exc).__name__
    if failed is not None:
        raise ModelError(
            f"The model raised {failed}; nothing was stored. Check the model, then retry.",
            reason="raised",
        )
    if not isinstance(answer, str):
        raise ModelError(
            "The model's complete() returned something other than text; nothing was stored. "
            "A Model returns the answer as a str.",
            reason="malformed",
        )
    return answer


def _restore(redactor: Redactor, answer: str, *, json_answer: bool) -> str:
    """``answer`` with the redactor's placeholders put back; in a JSON answer, inside its
    strings, so a value with a quote or a backslash keeps the JSON valid (and the answer is
    written out again, so no escape such as ``\\u0069`` hides a word from the check)."""
    if json_answer:
        try:
            decoded = json.loads(answer)
        except ValueError:
            decoded = None  # not JSON after all: the caller's parser will say so
        if decoded is not None:
            return json.dumps(redactor.restore_json(decoded), ensure_ascii=False)
    return redactor.restore(answer)
