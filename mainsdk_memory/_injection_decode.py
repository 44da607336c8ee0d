"""Payloads hidden in a text by an encoding, decoded so the injection check reads them too.

An instruction written in base64, in hex or in ROT13 passes every text rule as it stands.
:func:`hidden_payloads` finds what looks like such a payload and decodes it; the detector
checks each decoded payload again (itself searched again, so base64 inside hex is found) and
reports what the rules and the model find in it, under their own ids. What does not decode to
readable text (a long word, a URL path, a number, which also match the patterns) is dropped.
Detection only: nothing decoded is stored, logged or returned.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import re
from collections.abc import Iterator
from typing import Final

__all__ = ["MAX_DEPTH", "MAX_PAYLOADS", "hidden_payloads", "unfolded"]

MAX_PAYLOADS: Final = 16
"""At most this many payloads are decoded from one text (each level)."""
MAX_DEPTH: Final = 2
"""A payload's own payloads are searched once more, no deeper."""

_BASE64: Final = re.compile(r"(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{16,}={0,2}")
_HEX: Final = re.compile(r"(?<![0-9A-Fa-f])(?:[0-9A-Fa-f]{2}){8,}(?![0-9A-Fa-f])")
_ESCAPED_HEX: Final = re.compile(r"(?:\\x[0-9A-Fa-f]{2}){8,}")
# ROT13 is tried only when the text holds the ROT13 of a word attacks use: "ignore",
# "instructions", "previous", "system", "prompt", "disregard", "override", "reveal".
_ROT13_NEEDLES: Final = re.compile(
    r"vtaber|vafgehpgvba|cerivbhf|flfgrz|cebzcg|qvfertneq|bireevqr|erirny", re.IGNORECASE
)


def _readable(raw: bytes) -> str | None:
    """``raw`` as text if it is UTF-8 and nearly all printable, else ``None``."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if not text:
        return None
    printable = sum(1 for char in text if char.isprintable() or char in "\n\t")
    letters = sum(1 for char in text if char.isalpha())
    return text if printable >= 0.95 * len(text) and letters >= 0.5 * len(text) else None


def _from_base64(token: str) -> str | None:
    body = token.rstrip("=")
    padded = body + "=" * (-len(body) % 4)
    for decode in (base64.b64decode, base64.urlsafe_b64decode):
        try:
            text = _readable(decode(padded))
        except (binascii.Error, ValueError):
            continue
        if text is not None:
            return text
    return None


def _from_hex(token: str) -> str | None:
    try:
        return _readable(bytes.fromhex(token.replace("\\x", "")))
    except ValueError:
        return None


def hidden_payloads(text: str) -> list[str]:
    """The readable texts that base64, hex (plain or ``\\x``-escaped) and ROT13 hide in
    ``text``, at most :data:`MAX_PAYLOADS`."""
    found: list[str] = []
    for token in _ESCAPED_HEX.findall(text) + _HEX.findall(text):
        decoded = _from_hex(token)
        if decoded is not None:
            found.append(decoded)
    for token in _BASE64.findall(text):
        decoded = _from_base64(token)
        if decoded is not None:
            found.append(decoded)
    if _ROT13_NEEDLES.search(text):
        found.append(codecs.encode(text, "rot13"))
    return found[:MAX_PAYLOADS]


def unfolded(text: str) -> Iterator[str]:
    """``text``, then the payloads hidden in it, then theirs: :data:`MAX_DEPTH` levels below
    the text, at most :data:`MAX_PAYLOADS` a level. Every detector part checks each one."""
    texts = [text]
    for depth in range(MAX_DEPTH + 1):
        hidden: list[str] = []
        for one in texts:
            yield one
            if depth < MAX_DEPTH:
                hidden += hidden_payloads(one)
        texts = hidden[:MAX_PAYLOADS]
        if not texts:
            return
