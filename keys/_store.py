"""The project key store: key-encryption keys, wrapped per-subject secrets, and signing keys.

Layout of a key store folder (0700; every file 0600)::

    keystore.json          format, naming key, the active key-encryption key (KEK), Ed25519
                           signing keys (the active one private, retired ones public only) and,
                           only while a rotation is unfinished, the KEKs it is retiring
    subjects/<name>.json   one wrapped 32-byte secret per subject (a person, a person's
                           pseudonym key, or the tenant) in one tenant and app; <name> is an
                           HMAC of (tenant, app, subject) under the naming key, so no file
                           name carries a person id
    anchors.sqlite         what a writer of the memory store cannot roll back: each live
                           memory's highest version, pinned flag, creation time and the salt
                           its seal key is derived with; each control record's digest; recent
                           writes per agent (keys/_anchors.py, ADR 0047)
    rotate.lock            held by a running rotation (keys/_locks.py)
    subjects.lock          shared by writers of subjects/, exclusive for each rotation step;
                           empty but for one byte appended by every destroyed subject, so its
                           size tells every open handle, in every process, that a subject is
                           gone (see "Destroying" below)

keystore.json, field by field::

    format          "mainsdk-memory-keystore/1"
    name_key        base64, 32 bytes: HMAC key of the subject file names (never rotated)
    kek             {"kid": "kek_<16 hex>", "key": base64 of 32 bytes}: wraps new secrets
    signing         [{"kid": "sig_<16 hex>", "ed25519": base64 private key, "created": ISO}]
                    for the active key; a retired key keeps only
                    {"kid", "public": base64 raw public key, "created", "retired": ISO}
    active_signing  the kid that signs new receipts
    rotation        only during a rotation: {"started": ISO, "retiring": [{"kid", "key"}]}

A subject secret is random and never stored unwrapped: it is sealed with AES-256-GCM under
a KEK, with associated data binding the file's name and the KEK's id, so a wrapped secret
copied to another name does not open (the record layout is in :class:`KekRing`). From the
secret, HKDF-SHA256 derives the subject's sealing key, its blind-index key and (for the
tenant subject) the pseudonym key that hides person ids from the storage driver. Destroying
a subject removes its file; nothing else holds the secret. Rotating the KEK
(:meth:`KeyStore.rotate`, ADR 0060) re-wraps the same secrets, so no memory is re-encrypted.

Destroying reaches every open handle (ADR 0039). A process keeps the subject keys it has read,
so :meth:`KeyStore.destroy_subject` removes the file and then appends a byte to subjects.lock
(the destroy epoch). Every :meth:`KeyStore.subject_keys` call and every seal or open of a handle
first reads that file's size (one ``lseek`` on a descriptor the key store keeps open): while it
is the size the handle last saw, nothing was destroyed anywhere; once it moves, the handle reads
its subject file again and works on only if the file still holds its secret. A destroyed
subject's handle then refuses to seal (:class:`KeyStoreError`) or open (:class:`SealError`), in
this process and in every other, and ``subject_keys`` gives ``None`` or, with ``create=True``, a
fresh secret. Not announced, so not noticed by running processes: a subject file removed by
hand instead of through ``destroy_subject``, and a subjects.lock replaced or removed while they
run (restoring a key-store backup in place: restart them).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import secrets
import threading
import weakref
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.hashes import SHA256
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    PublicFormat,
)

from mainsdk_memory._errors import KeyStoreError, SealError
from mainsdk_memory._files import create_private_once, make_private_dir, remove_durably
from mainsdk_memory._locking import require as require_locks
from mainsdk_memory.keys._anchors import ANCHORS_FILE, Anchors
from mainsdk_memory.keys._locks import SUBJECTS_LOCK, announce_destroy, file_lock

if TYPE_CHECKING:
    from mainsdk_memory._progress import Progress
    from mainsdk_memory.keys._rotation import RotationReport

__all__ = ["KekRing", "KeyStore", "SigningKey", "SubjectKeys", "associated_data"]

FORMAT = "mainsdk-memory-keystore/1"
KEYSTORE_FILE = "keystore.json"
SUBJECTS_DIR = "subjects"
_ENVELOPE_VERSION = b"\x01"
_NONCE = 12
_TAG = 16
_RECORD_VERSION = 2  # v1 (pre-release) bound tenant, app and subject instead of the file name

#: (device, inode, modification time in ns, size) of keystore.json as it was read: a rotation
#: replaces the file, so a changed stamp tells a long-running process to read it again.
Stamp = tuple[int, int, int, int]

#: The size of subjects.lock (``None`` before it exists). It only grows, by one byte per
#: destroyed subject, so a size once seen never comes back: a changed epoch means "a subject
#: was destroyed somewhere since".
Epoch = int | None

_DESTROYED_SEAL = (
    "This subject's key was destroyed (its person was erased) after the key was taken, so "
    "nothing was sealed with it. Call again: a person who comes back gets a fresh key."
)
_DESTROYED_OPEN = (
    "This memory's key does not exist: its person was erased (the key destroyed), or this "
    "store does not belong to this key store. It cannot be opened."
)


#: Derived memory keys a subject handle keeps (cleared whole when full).
_MEMORY_KEYS_KEPT = 4096


def associated_data(*parts: str | int) -> bytes:
    """Encode ``parts`` unambiguously (length-prefixed) for use as AEAD associated data."""
    out = bytearray()
    for part in parts:
        raw = str(part).encode("utf-8")
        out += len(raw).to_bytes(4, "big") + raw
    return bytes(out)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.b64decode(text.encode("ascii"), validate=True)


def _hkdf(secret: bytes, info: str) -> bytes:
    return HKDF(algorithm=SHA256(), length=32, salt=None, info=info.encode()).derive(secret)


def _fingerprint(secret: bytes) -> bytes:
    """A one-way tag of a subject secret: tells whether a file still holds the same secret."""
    return hmac.new(secret, b"mainsdk-memory/v1/fingerprint", hashlib.sha256).digest()


class _NoCopy:
    """Key handles refuse to be pickled or copied, and print without their secrets."""

    def __reduce__(self) -> NoReturn:
        raise TypeError(f"{type(self).__name__} holds key material and cannot be pickled")

    def __copy__(self) -> NoReturn:
        raise TypeError(f"{type(self).__name__} holds key material and cannot be copied")

    def __deepcopy__(self, memo: object) -> NoReturn:
        raise TypeError(f"{type(self).__name__} holds key material and cannot be copied")


class SubjectKeys(_NoCopy):
    """Sealing and blind-index keys of one subject; a handle, never the raw keys.

    Envelope produced by :meth:`seal`, byte by byte::

        0      1 byte    envelope version, 0x01
        1      12 bytes  random nonce
        13     n bytes   AES-256-GCM ciphertext of the plaintext
        13+n   16 bytes  GCM tag (authenticates the ciphertext and the associated data)
    """

    __slots__ = ("_aead", "_guard", "_index", "_memories", "_memory_root", "_pseudonym", "label")

    def __init__(self, secret: bytes, label: str) -> None:
        if len(secret) != 32:
            raise KeyStoreError("A subject secret must be 32 bytes.")
        self._aead = AESGCM(_hkdf(secret, "mainsdk-memory/v1/seal"))
        self._index = _hkdf(secret, "mainsdk-memory/v1/blind-index")
        self._pseudonym = _hkdf(secret, "mainsdk-memory/v1/pseudonym")
        self._memory_root = _hkdf(secret, "mainsdk-memory/v1/memory-root")
        self._memories: dict[bytes, AESGCM] = {}
        self.label = label
        self._guard: _Guard | None = None
        """Set by the key store that read the secret: the handle works while its file holds it."""

    def __repr__(self) -> str:
        return f"<SubjectKeys {self.label} (secret hidden)>"

    def seal(self, plaintext: bytes, associated_data: bytes) -> bytes:
        """Encrypt and authenticate ``plaintext`` bound to ``associated_data`` (required).

        Raises :class:`KeyStoreError` if the subject was destroyed since this handle was taken.
        """
        if self._guard is not None and not self._guard.alive():
            raise KeyStoreError(_DESTROYED_SEAL)
        nonce = os.urandom(_NONCE)
        return _ENVELOPE_VERSION + nonce + self._aead.encrypt(nonce, plaintext, associated_data)

    def open(self, envelope: bytes, associated_data: bytes) -> bytes:
        """Decrypt an envelope from :meth:`seal`; raise the opaque :class:`SealError` on failure
        (also once the subject was destroyed, whenever this handle was taken)."""
        return self._open(self._aead, envelope, associated_data)

    def _open(self, aead: AESGCM, envelope: bytes, associated_data: bytes) -> bytes:
        if self._guard is not None and not self._guard.alive():
            raise SealError(_DESTROYED_OPEN)
        if len(envelope) < 1 + _NONCE + _TAG or envelope[:1] != _ENVELOPE_VERSION:
            raise SealError
        nonce = envelope[1 : 1 + _NONCE]
        try:
            return aead.decrypt(nonce, envelope[1 + _NONCE :], associated_data)
        except InvalidTag:
            raise SealError from None

    def _memory_aead(self, salt: bytes) -> AESGCM:
        aead = self._memories.get(salt)
        if aead is None:
            if len(salt) != 32:
                raise SealError
            key = HKDF(
                algorithm=SHA256(), length=32, salt=salt, info=b"mainsdk-memory/v1/memory-seal"
            ).derive(self._memory_root)
            aead = AESGCM(key)
            if len(self._memories) >= _MEMORY_KEYS_KEPT:
                self._memories.clear()
            self._memories[salt] = aead
        return aead

    def seal_memory(self, salt: bytes, plaintext: bytes, associated_data: bytes) -> bytes:
        """:meth:`seal` under the key of one memory: derived from this subject's secret and the
        memory's ``salt`` (kept in the key store's anchors, ADR 0047), so dropping the salt
        leaves every copy of the memory unopenable while the subject's key lives on."""
        if self._guard is not None and not self._guard.alive():
            raise KeyStoreError(_DESTROYED_SEAL)
        nonce = os.urandom(_NONCE)
        aead = self._memory_aead(salt)
        return _ENVELOPE_VERSION + nonce + aead.encrypt(nonce, plaintext, associated_data)

    def open_memory(self, salt: bytes, envelope: bytes, associated_data: bytes) -> bytes:
        """Open an envelope from :meth:`seal_memory` (the opaque :class:`SealError` on failure)."""
        return self._open(self._memory_aead(salt), envelope, associated_data)

    def blind(self, term: str) -> str:
        """Return the blind-index token of a normalized term: a keyed HMAC, 128 bits, hex."""
        return hmac.new(self._index, term.encode("utf-8"), hashlib.sha256).hexdigest()[:32]

    def pseudonym(self, name: str) -> str:
        """Return a stable keyed pseudonym for ``name`` (used for person ids), 128 bits, hex."""
        mac = hmac.new(self._pseudonym, name.encode("utf-8"), hashlib.sha256).hexdigest()
        return "p_" + mac[:32]


class _Guard:
    """Ties a handle to its subject file: the handle works only while the file holds its secret.

    ``alive`` costs one ``lseek`` while nothing was destroyed anywhere since the handle last
    looked; after a destroy (in any process) it reads the subject file once.
    """

    __slots__ = ("_file", "_fingerprint", "_store", "destroyed", "epoch")

    def __init__(self, store: KeyStore, file: Path, secret: bytes, epoch: Epoch) -> None:
        self._store = store
        self._file = file
        self._fingerprint = _fingerprint(secret)
        self.epoch = epoch
        """The epoch at which the file last held the secret (read before the file was)."""
        self.destroyed = False

    def same_secret(self, other: _Guard) -> bool:
        """Whether ``other`` guards a handle of the same secret."""
        return hmac.compare_digest(self._fingerprint, other._fingerprint)

    def alive(self) -> bool:
        """Whether the subject file still holds the secret."""
        if self.destroyed:
            return False
        now = self._store._epoch()
        if now == self.epoch:
            return True
        # A subject was destroyed somewhere since this handle last looked: is it this one?
        # The epoch was read before the file, so a destroy after this read moves it again.
        secret = self._store._read_subject(self._file)
        if secret is None or not hmac.compare_digest(_fingerprint(secret), self._fingerprint):
            self.destroyed = True
            return False
        self.epoch = now
        return True


@dataclass(frozen=True, slots=True, repr=False)
class SigningKey(_NoCopy):
    """An Ed25519 signing key with its key id; prints without the private key."""

    kid: str
    private: Ed25519PrivateKey
    created: datetime

    def __repr__(self) -> str:
        return f"<SigningKey {self.kid} (private key hidden)>"

    @property
    def public(self) -> Ed25519PublicKey:
        """The public half, safe to publish."""
        return self.private.public_key()


@dataclass(frozen=True, slots=True)
class _RetiredSigningKey:
    """A signing key that no longer signs: only its public half is kept, so old receipts verify."""

    kid: str
    public: Ed25519PublicKey
    created: datetime
    retired: datetime


class _RecordError(Exception):
    """A wrapped subject record did not open; ``unknown_kek`` when its KEK is not in the ring."""

    def __init__(self, *, unknown_kek: bool = False) -> None:
        super().__init__("unknown key-encryption key" if unknown_kek else "record does not open")
        self.unknown_kek = unknown_kek


class KekRing(_NoCopy):
    """Key-encryption keys by id: wrap under the active one, unwrap under whichever wrapped.

    The rotation type of the key store, like ``MultiFernet``: outside a rotation the ring holds
    one key; during one it also holds the keys being retired, so every subject secret opens at
    every moment. A wrapped record, as stored in ``subjects/<name>.json``::

        {"v": 2, "kek": <kid>, "nonce": <base64, 12 bytes>, "wrapped": <base64, 32 + 16 bytes>}

    ``wrapped`` is the AES-256-GCM ciphertext of the 32-byte secret followed by its 16-byte tag;
    the associated data is ``associated_data("mainsdk-memory/v2/wrap", <name>, <kid>)``, so a
    record copied to another name, or relabelled with another key id, does not open.
    """

    __slots__ = ("_active", "_aeads")

    def __init__(self, active: str, keys: Mapping[str, bytes]) -> None:
        if active not in keys:
            raise ValueError("the active KEK must be in the ring")
        if any(len(key) != 32 for key in keys.values()):
            raise ValueError("a KEK is 32 bytes")
        self._active = active
        self._aeads = {kid: AESGCM(key) for kid, key in keys.items()}

    def __repr__(self) -> str:
        return f"<KekRing active={self._active} kids={sorted(self._aeads)} (keys hidden)>"

    def __contains__(self, kid: object) -> bool:
        return kid in self._aeads

    @property
    def active_kid(self) -> str:
        """The id of the KEK that wraps every new or re-wrapped secret."""
        return self._active

    @property
    def kids(self) -> frozenset[str]:
        """Every KEK id in the ring (the active one and any being retired)."""
        return frozenset(self._aeads)

    @staticmethod
    def _ad(name: str, kid: str) -> bytes:
        return associated_data("mainsdk-memory/v2/wrap", name, kid)

    def wrap(self, secret: bytes, name: str) -> dict[str, Any]:
        """Wrap ``secret`` for the subject file ``name`` under the active KEK; return the record."""
        nonce = os.urandom(_NONCE)
        wrapped = self._aeads[self._active].encrypt(nonce, secret, self._ad(name, self._active))
        return {"v": _RECORD_VERSION, "kek": self._active, "nonce": _b64(nonce),
                "wrapped": _b64(wrapped)}

    def unwrap(self, record: object, name: str) -> bytes:
        """Return the secret of a record from :meth:`wrap`; raise ``_RecordError`` otherwise."""
        if not isinstance(record, dict) or record.get("v") != _RECORD_VERSION:
            raise _RecordError
        kid = record.get("kek")
        if not isinstance(kid, str) or kid not in self._aeads:
            raise _RecordError(unknown_kek=True)
        try:
            nonce, wrapped = _unb64(record["nonce"]), _unb64(record["wrapped"])
            secret = self._aeads[kid].decrypt(nonce, wrapped, self._ad(name, kid))
        except (KeyError, TypeError, ValueError, AttributeError, InvalidTag) as exc:
            raise _RecordError from exc
        if len(secret) != 32:
            raise _RecordError
        return secret

    def only_active(self) -> KekRing:
        """A ring of the active KEK alone: what remains once a rotation destroys the others."""
        ring = KekRing.__new__(KekRing)
        ring._active = self._active
        ring._aeads = {self._active: self._aeads[self._active]}
        return ring

    def self_test(self) -> None:
        """Wrap and unwrap a probe under every KEK of the ring; raise if one does not round-trip."""
        probe = os.urandom(32)
        for kid, aead in self._aeads.items():
            nonce = os.urandom(_NONCE)
            ad = self._ad("self-test", kid)
            if aead.decrypt(nonce, aead.encrypt(nonce, probe, ad), ad) != probe:  # pragma: no cover
                raise ValueError("a KEK does not round-trip")


def new_kek_entry() -> dict[str, str]:
    """A fresh key-encryption key as stored in keystore.json."""
    return {"kid": "kek_" + secrets.token_hex(8), "key": _b64(AESGCM.generate_key(256))}


def new_signing_entry(now: datetime) -> dict[str, str]:
    """A fresh Ed25519 signing key as stored in keystore.json."""
    private = Ed25519PrivateKey.generate().private_bytes_raw()
    return {"kid": "sig_" + secrets.token_hex(8), "ed25519": _b64(private),
            "created": now.isoformat()}


def retire_signing_entry(entry: Mapping[str, str], now: datetime) -> dict[str, str]:
    """The entry of a signing key that stops signing: its public key only, private key dropped."""
    if "ed25519" not in entry:
        return dict(entry)
    public = Ed25519PrivateKey.from_private_bytes(_unb64(entry["ed25519"])).public_key()
    return {"kid": entry["kid"], "public": _b64(public.public_bytes_raw()),
            "created": entry["created"], "retired": now.isoformat()}


def _stamp_of(status: os.stat_result) -> Stamp:
    return (status.st_dev, status.st_ino, status.st_mtime_ns, status.st_size)


def refuse_open_permissions(root: Path) -> None:
    """Raise :class:`KeyStoreError` if other users may read or change the key store (POSIX)."""
    if os.name != "posix":
        return
    for path in (root, root / KEYSTORE_FILE, root / SUBJECTS_DIR, root / ANCHORS_FILE):
        try:
            mode = path.stat().st_mode & 0o777
        except FileNotFoundError:
            continue  # a missing key store is explained when it is read
        except OSError:
            continue
        if mode & 0o077:
            raise KeyStoreError(
                f"The key store at {root} can be read or changed by other users ({path.name} "
                f"has mode {mode:o}). Run `chmod -R go-rwx {root}`; or, if that is your choice, "
                "open it with Memory.open(..., allow_readable_keys=True)."
            )


def read_document(root: Path) -> tuple[dict[str, Any], Stamp]:
    """Read keystore.json under ``root`` and the stamp of exactly the bytes read."""
    file = root / KEYSTORE_FILE
    try:
        with file.open("rb") as handle:
            data = handle.read()
            stamp = _stamp_of(os.fstat(handle.fileno()))
    except FileNotFoundError:
        raise KeyStoreError(
            f"No key store at {root}. Create one with `memory keys init --keys {root}` "
            "and keep it outside the memory store (and out of version control)."
        ) from None
    except OSError as exc:
        raise KeyStoreError(
            f"The key store at {root} cannot be read. Check its permissions, or restore it "
            "from your key backup."
        ) from exc
    try:
        document = json.loads(data)
    except ValueError as exc:
        raise KeyStoreError(
            f"The key store at {root} is damaged (keystore.json is not readable). "
            "Restore it from your key backup; a lost key store cannot be recreated."
        ) from exc
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise KeyStoreError(
            f"{file} is not a mainsdk-memory key store of a format this version knows."
        )
    return document, stamp


class _State(_NoCopy):
    """Everything read from one version of keystore.json; replaced whole, never edited."""

    __slots__ = ("active_signing", "name_key", "ring", "rotating", "signing", "stamp")

    def __init__(self, document: Mapping[str, Any], stamp: Stamp | None) -> None:
        self.stamp = stamp
        self.name_key = _unb64(document["name_key"])
        if len(self.name_key) != 32:
            raise ValueError("the naming key is 32 bytes")
        kek = document["kek"]
        keys = {str(kek["kid"]): _unb64(kek["key"])}
        rotation = document.get("rotation")
        self.rotating = rotation is not None
        if rotation is not None:
            for item in rotation["retiring"]:
                if item["kid"] in keys:
                    raise ValueError("a KEK id appears twice")
                keys[str(item["kid"])] = _unb64(item["key"])
        self.ring = KekRing(str(kek["kid"]), keys)
        signing: list[SigningKey | _RetiredSigningKey] = []
        for item in document["signing"]:
            created = datetime.fromisoformat(item["created"])
            if "ed25519" in item:
                private = Ed25519PrivateKey.from_private_bytes(_unb64(item["ed25519"]))
                signing.append(SigningKey(kid=item["kid"], private=private, created=created))
            else:
                public = Ed25519PublicKey.from_public_bytes(_unb64(item["public"]))
                signing.append(_RetiredSigningKey(
                    kid=item["kid"], public=public, created=created,
                    retired=datetime.fromisoformat(item["retired"]),
                ))
        if len({key.kid for key in signing}) != len(signing):
            raise ValueError("a signing key id appears twice")
        self.signing: tuple[SigningKey | _RetiredSigningKey, ...] = tuple(signing)
        self.active_signing = str(document["active_signing"])
        active = [k for k in signing if k.kid == self.active_signing]
        if not active or not isinstance(active[0], SigningKey):
            raise ValueError("the active signing key must hold its private key")

    @property
    def signing_key(self) -> SigningKey:
        for key in self.signing:
            if isinstance(key, SigningKey) and key.kid == self.active_signing:
                return key
        raise AssertionError("checked at construction")  # pragma: no cover


class KeyStore(_NoCopy):
    """A project key store in a folder of its own (never inside a memory store).

    Build it with :meth:`create` (once, ``memory keys init``) or :meth:`open`; both check that
    the store can seal, open and sign before returning, so a broken store fails at once.
    A long-running handle notices when another process rotates the store (keystore.json is
    replaced) and reads it again before it wraps a new secret or signs a receipt, and when
    another process destroys a subject whose keys it holds (it stops using them).
    """

    def __init__(
        self, path: Path, document: dict[str, Any], stamp: Stamp | None = None
    ) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._cache: dict[tuple[str, str, str], SubjectKeys] = {}
        self._files: dict[tuple[str, str, str], Path] = {}
        self.anchors = Anchors(path)
        """What the memory store's writer cannot roll back (ADR 0047)."""
        self._epoch_fd: int | None = None
        """A read-only descriptor of subjects.lock, opened once it exists: its size is the
        destroy epoch (an ``lseek`` is far cheaper than a ``stat`` of the path)."""
        self._state = self._load(document, stamp)

    def __repr__(self) -> str:
        return f"<KeyStore {self.path} (keys hidden)>"

    # -- construction ---------------------------------------------------------------------

    @classmethod
    def create(cls, path: str | os.PathLike[str]) -> KeyStore:
        """Create a new key store at ``path``; refuse to overwrite an existing one."""
        require_locks()  # before anything is written: never a half-made key store
        root = Path(path)
        if (root / KEYSTORE_FILE).exists():
            raise KeyStoreError(
                f"A key store already exists at {root}; it was left as it is. "
                "Use it, or choose another folder."
            )
        if root.exists() and any(root.iterdir()):
            raise KeyStoreError(
                f"{root} is not empty. A key store needs a folder of its own, outside the "
                "memory store."
            )
        make_private_dir(root)
        make_private_dir(root / SUBJECTS_DIR)
        signing = new_signing_entry(datetime.now(UTC))
        document: dict[str, Any] = {
            "format": FORMAT,
            "name_key": _b64(secrets.token_bytes(32)),
            "kek": new_kek_entry(),
            "signing": [signing],
            "active_signing": signing["kid"],
        }
        if not create_private_once(root / KEYSTORE_FILE, json.dumps(document).encode()):
            raise KeyStoreError(f"A key store was created at {root} concurrently; use that one.")
        store = cls(root, document, _stamp_of(os.stat(root / KEYSTORE_FILE)))
        store.anchors.create()
        return store

    @classmethod
    def open(cls, path: str | os.PathLike[str], *, allow_readable: bool = False) -> KeyStore:
        """Open the key store at ``path``, or explain how to create one.

        A key store that other users can read or write (a folder or file with any group or
        other permission bit) is refused, as ssh refuses such a private key, unless
        ``allow_readable`` says the operator chose it.
        """
        require_locks()
        root = Path(path)
        if not allow_readable:
            refuse_open_permissions(root)
        document, stamp = read_document(root)
        store = cls(root, document, stamp)
        if not store.anchors.path.exists():
            raise KeyStoreError(
                f"The key store at {root} has no {ANCHORS_FILE}: it was removed, or the key "
                "store was made by a version before ADR 0047. Restore the key store (all of "
                "it) from your key backup; without the anchors no memory opens."
            )
        return store

    def _load(self, document: Mapping[str, Any], stamp: Stamp | None) -> _State:
        try:
            state = _State(document, stamp)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise KeyStoreError(
                f"The key store at {self.path} is damaged (keystore.json is not readable). "
                "Restore it from your key backup; a lost key store cannot be recreated."
            ) from exc
        self._self_test(state)
        return state

    def _self_test(self, state: _State) -> None:
        probe = os.urandom(16)
        try:
            state.ring.self_test()
            signer = state.signing_key
            signer.public.verify(signer.private.sign(probe), probe)
        except Exception as exc:
            raise KeyStoreError(f"The key store at {self.path} failed its self-test.") from exc

    def _adopt(self, document: Mapping[str, Any], stamp: Stamp | None) -> _State:
        """Make ``document`` (just read or written) this handle's keys; return them."""
        state = self._load(document, stamp)
        with self._lock:
            self._state = state
        return state

    def _refresh(self) -> _State:
        """Read keystore.json again if another process replaced it (a rotation); return keys."""
        state = self._state
        try:
            stamp = _stamp_of(os.stat(self.path / KEYSTORE_FILE))
        except OSError:
            return state  # keep the keys in hand; a missing file is reported where it matters
        if stamp == state.stamp:
            return state
        return self._adopt(*read_document(self.path))

    @contextmanager
    def _subjects_lock(self, *, exclusive: bool) -> Iterator[None]:
        with file_lock(self.path / SUBJECTS_LOCK, exclusive=exclusive):
            yield

    # -- subjects -------------------------------------------------------------------------

    def _subject_file(self, tenant: str, app: str, subject: str) -> Path:
        cache_key = (tenant, app, subject)
        file = self._files.get(cache_key)
        if file is None:  # the naming key never changes, so neither does a subject's file
            name = hmac.new(
                self._state.name_key, associated_data("subject", tenant, app, subject),
                hashlib.sha256,
            ).hexdigest()[:40]
            file = self._files.setdefault(cache_key, self.path / SUBJECTS_DIR / f"{name}.json")
        return file

    def anchor_name(self, tenant: str, app: str, subject: str) -> str:
        """The name the anchors give a subject: its file's (an HMAC, no id in it)."""
        return self._subject_file(tenant, app, subject).stem

    def anchor_scope(self, tenant: str, app: str) -> str:
        """The name the anchors give one tenant and app (an HMAC, no id in it)."""
        return hmac.new(
            self._state.name_key, associated_data("scope", tenant, app), hashlib.sha256
        ).hexdigest()[:40]

    def _epoch(self) -> Epoch:
        """The size of subjects.lock now: it grows by one byte whenever a subject is destroyed."""
        fd = self._epoch_fd
        if fd is None:
            try:
                fd = os.open(self.path / SUBJECTS_LOCK, os.O_RDONLY)
            except FileNotFoundError:
                return None  # no subject was ever written or destroyed here
            except OSError as exc:
                raise KeyStoreError(
                    f"The key store at {self.path} cannot be read (subjects.lock). Check its "
                    "permissions."
                ) from exc
            with self._lock:
                if self._epoch_fd is None:
                    self._epoch_fd = fd
                    weakref.finalize(self, os.close, fd)
                else:  # another thread opened it first
                    os.close(fd)
                    fd = self._epoch_fd
        return os.lseek(fd, 0, os.SEEK_END)

    def subject_keys(
        self, tenant: str, app: str, subject: str, *, create: bool
    ) -> SubjectKeys | None:
        """Return the keys of ``subject`` in ``tenant``/``app``.

        With ``create=False`` a subject that has no key (never written, or destroyed) gives
        ``None``; with ``create=True`` a new random secret is made and stored wrapped. Keys
        this handle read before are used only while the subject file still holds them: a
        subject destroyed by any process since gives ``None`` (or a fresh secret), never the
        destroyed keys (one ``lseek`` per call while nothing was destroyed; ADR 0039).
        """
        cache_key = (tenant, app, subject)
        with self._lock:
            cached = self._cache.get(cache_key)
        if cached is not None:
            guard = cached._guard
            if guard is None or guard.alive():
                return cached
            with self._lock:
                if self._cache.get(cache_key) is cached:
                    del self._cache[cache_key]
        file = self._subject_file(tenant, app, subject)
        if not create and not os.access(file, os.F_OK):
            return None  # the common miss (a pseudonym key nobody has), without raising
        epoch = self._epoch()  # before the file is read: a destroy after this moves it again
        label = f"subject {file.stem[:8]}"
        secret = self._read_subject(file)
        if secret is None:
            if not create:
                return None
            secret = secrets.token_bytes(32)
            # Shared lock: a rotation cannot finish (and destroy the KEK this wraps under)
            # between reading the active KEK and the file appearing.
            with self._subjects_lock(exclusive=False):
                record = self._refresh().ring.wrap(secret, file.stem)
                created = create_private_once(file, json.dumps(record).encode())
            if not created:
                secret = self._read_subject(file)  # another writer won
                if secret is None:
                    raise KeyStoreError(f"The key store at {self.path} lost a subject key.")
        keys = SubjectKeys(secret, label)
        keys._guard = guard = _Guard(self, file, secret, epoch)
        with self._lock:
            current = self._cache.get(cache_key)
            if current is not None and current._guard and current._guard.same_secret(guard):
                return current  # another thread read the same secret first
            self._cache[cache_key] = keys
        return keys

    def _read_subject(self, file: Path) -> bytes | None:
        """The secret in ``file``, or ``None`` if there is none; reads a rotated store again."""
        for attempt in range(2):
            try:
                data = file.read_bytes()
            except FileNotFoundError:
                return None
            except OSError as exc:
                raise KeyStoreError(
                    f"A subject key in {self.path} cannot be read. Restore the key store "
                    "from backup."
                ) from exc
            try:
                return self._state.ring.unwrap(json.loads(data), file.stem)
            except ValueError:
                break
            except _RecordError as exc:
                if not exc.unknown_kek or attempt:
                    break
                # Wrapped under a KEK this handle has not seen: another process rotated the
                # store. Read keystore.json and the subject file again.
                self._refresh()
        raise KeyStoreError(
            f"A subject key in {self.path} does not open under this key store's "
            "key-encryption keys. Restore the key store from backup."
        )

    def destroy_subject(self, tenant: str, app: str, subject: str) -> bool:
        """Destroy the subject's secret for good; return whether one existed.

        Every handle of it stops working, in this process and in every other one that read it
        (ADR 0039): the file is removed, then the destroy epoch moves. Run again after an
        interruption, it announces the destroy again.
        """
        cache_key = (tenant, app, subject)
        with self._subjects_lock(exclusive=False):  # a rotation never writes it back
            file = self._subject_file(tenant, app, subject)
            existed = remove_durably(file)
            try:
                # After the removal: a handle that sees the epoch move reads no file.
                announce_destroy(self.path / SUBJECTS_LOCK)
            except OSError as exc:
                raise KeyStoreError(
                    f"A subject key in {self.path} was destroyed, but other open handles could "
                    "not be told (subjects.lock cannot be written). Free disk space or fix its "
                    "permissions, then run the erase again."
                ) from exc
            self.anchors.drop_subject(file.stem)  # the subject's memories' salts go too
        with self._lock:
            cached = self._cache.pop(cache_key, None)
        if cached is not None and cached._guard is not None:
            cached._guard.destroyed = True
        return existed

    # -- rotation -------------------------------------------------------------------------

    def rotate(self, *, progress: Progress | None = None) -> RotationReport:
        """Rotate the key-encryption key and the signing key; finish an interrupted rotation.

        A new KEK becomes active and every subject secret is re-wrapped under it (the secrets
        do not change, so no memory is re-encrypted); then the old KEK is destroyed: no copy
        is left in any file of the key store. A new signing key signs new receipts; the old
        one keeps only its public key, so receipts it signed still verify against
        :meth:`export_public_jwks`. Crash-safe: if interrupted, every subject still opens and
        the next call finishes the same rotation instead of starting another. A second
        rotation running at the same time raises :class:`KeyStoreError`. ADR 0060.
        ``progress(done, total)`` is called after each subject key is re-wrapped (counts
        only); a non-callable ``progress`` raises ``InvalidInputError`` and changes nothing.
        """
        # Imported here: the rotation steps are built on this class's private helpers.
        from mainsdk_memory.keys._rotation import rotate_key_store

        return rotate_key_store(self, progress=progress)

    # -- signing --------------------------------------------------------------------------

    @property
    def signing_key(self) -> SigningKey:
        """The signing key that signs new receipts (the newest, after a rotation)."""
        return self._refresh().signing_key

    def public_keys(self) -> Iterable[tuple[str, Ed25519PublicKey]]:
        """Every signing key's id and public key (old ones too, so old receipts verify)."""
        return [(key.kid, key.public) for key in self._refresh().signing]

    def export_public_pem(self, kid: str | None = None) -> bytes:
        """A signing public key as PEM (SubjectPublicKeyInfo): the active one, or ``kid``'s."""
        if kid is None:
            public = self.signing_key.public
        else:
            found = dict(self.public_keys()).get(kid)
            if found is None:
                raise KeyStoreError(
                    f"No signing key with id {kid!r} in the key store at {self.path}. "
                    "List them with `memory keys export-public --jwks`."
                )
            public = found
        return public.public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo)

    def export_public_jwks(self) -> dict[str, Any]:
        """Every signing public key as a JWK Set (each with its ``kid``)."""
        keys = []
        for kid, public in self.public_keys():
            raw = public.public_bytes(Encoding.Raw, PublicFormat.Raw)
            x = base64.urlsafe_b64encode(raw).rstrip(b"=").decode()
            keys.append({"kty": "OKP", "crv": "Ed25519", "x": x, "kid": kid, "use": "sig"})
        return {"keys": keys}
