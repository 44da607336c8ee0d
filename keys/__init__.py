"""Hazmat: the key store, sealing and blind-index keys, and receipt signing keys.

This is the low-level layer. :class:`mainsdk_memory.Memory` is the recipe that uses it
correctly; code outside the SDK rarely needs anything here beyond ``KeyStore.create`` (which
``memory keys init`` calls) and ``KeyStore.rotate`` (``memory keys rotate``). Key handles never
expose raw keys, refuse to be pickled, and print without their secrets. The layout of the key
store and what rotation does are in docs/keys.md.
"""

from mainsdk_memory.keys._rotation import RotationReport
from mainsdk_memory.keys._store import KeyStore, SigningKey, SubjectKeys, associated_data

__all__ = ["KeyStore", "RotationReport", "SigningKey", "SubjectKeys", "associated_data"]
