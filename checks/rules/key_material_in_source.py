"""MAIN-MEM-0025: key material is written in the source code."""

from __future__ import annotations

import ast
import base64
import binascii
import re
from collections.abc import Iterator
from typing import ClassVar

from mainsdk_memory.checks._diagnostic import Finding
from mainsdk_memory.checks._rule import Module, Rule, Severity, register

__all__ = ["KeyMaterialInSource"]

_PEM = re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----\s+[A-Za-z0-9+/=\s:,-]{40,}")
_KEY_NAME = re.compile(r"(?:^|_)(?:keys?|kek|dek|secret|seed)(?:$|_)")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_B64 = re.compile(r"[A-Za-z0-9+/_-]+={0,2}")
_HEX = re.compile(r"[0-9a-fA-F]+")
_KEY_LENGTHS = frozenset({16, 24, 32, 64})
_DECODERS = frozenset(
    {"b64decode", "urlsafe_b64decode", "standard_b64decode", "b16decode", "fromhex",
     "unhexlify", "a2b_base64", "a2b_hex", "encode"}
)
_KEY_CONSUMERS = frozenset(
    {"AESGCM", "AESGCMSIV", "AESOCB3", "AESSIV", "AESCCM", "ChaCha20Poly1305", "Fernet",
     "from_private_bytes", "HMAC"}
)
_KEY_FUNCTIONS = frozenset({"hmac.new", "hmac.digest"})
# A module whose text has none of these cannot hold a finding, so its nodes are not walked.
_QUICK = re.compile(
    r"PRIVATE KEY|kty|AESGCM|AESSIV|AESOCB3|AESCCM|ChaCha20Poly1305|Fernet|HMAC|hmac\.|"
    r"from_private_bytes|b['\"](?:\\x[0-9a-fA-F]{2}|[^'\"\\\n]){16}"
)
_CANDIDATE = re.compile(r"['\"]([A-Za-z0-9+/_=-]{22,})['\"]")


def _key_name(name: str) -> bool:
    return bool(_KEY_NAME.search(_CAMEL.sub("_", name).lower()))


def _target_name(target: ast.expr) -> str | None:
    if isinstance(target, ast.Name):
        return target.id
    if isinstance(target, ast.Attribute):
        return target.attr
    if isinstance(target, ast.Subscript) and isinstance(target.slice, ast.Constant):
        key = target.slice.value
        return key if isinstance(key, str) else None
    return None


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return ""


def _string_constants(nodes: list[ast.AST]) -> dict[str, str]:
    """Names assigned exactly one string literal anywhere in the module (no engine needed)."""
    found: dict[str, str | None] = {}
    for node in nodes:
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
        ):
            name = node.targets[0].id
            value = node.value.value if isinstance(node.value, ast.Constant) else None
            text = value if isinstance(value, str) else None
            found[name] = text if name not in found or found[name] == text else None
    return {name: text for name, text in found.items() if text is not None}


def _decoded_length(text: str) -> int | None:
    """The byte length of a hex or base64 string that looks random, else ``None``."""
    text = text.strip()
    if _HEX.fullmatch(text) and len(text) % 2 == 0 and re.search(r"\d", text) and re.search(
        r"[a-fA-F]", text
    ):
        return len(text) // 2
    if not _B64.fullmatch(text) or not (
        re.search(r"\d", text) and re.search(r"[a-z]", text) and re.search(r"[A-Z]", text)
    ):
        return None
    padded = text + "=" * (-len(text) % 4)
    try:
        if "-" in text or "_" in text:
            return len(base64.urlsafe_b64decode(padded))
        return len(base64.b64decode(padded, validate=True))
    except (binascii.Error, ValueError):
        return None


@register
class KeyMaterialInSource(Rule):
    """Key material is written in the source code.

    ## What it does

    Reports, anywhere in a module:

    - a PEM private key (`-----BEGIN ... PRIVATE KEY-----` followed by its body);
    - a JSON Web Key with a private part written out (a dict literal with `"kty"` and a
      string literal under `"d"`);
    - a literal that decodes (base64, base64url or hex) to 16, 24, 32 or 64 random-looking
      bytes, or a bytes literal of that length, assigned to or passed as a name that says key,
      keys, kek, dek, secret or seed (`SEALING_KEY = "..."`, `secret=b"..."`);
    - any literal passed, directly or through `b64decode`/`fromhex`/`.encode()`, as the key of
      `AESGCM`, `ChaCha20Poly1305`, `Fernet`, `HMAC`, `hmac.new` or `...from_private_bytes`.

    ## Why is this bad?

    Every memory is sealed under a key derived from the project key store, and every receipt
    is signed by the project key. A key in the source is in every clone, fork, CI log, wheel and
    container image of the code, forever: rotating it does not un-publish the old one, and
    whoever has it can open sealed memories or forge receipts. Keys belong in the key store
    (`memory keys init`), outside the repository.

    ## Example

    ```python
    import base64

    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    SEALING_KEY = "HdfFouX4vfDV8tvzEGN+IJN1ucvkEh7OW9B5IhvbxN4="  # flagged
    aead = AESGCM(base64.b64decode(SEALING_KEY))
    ```

    ## Use instead

    ```python
    import os

    from mainsdk_memory import Memory

    # the key store is created once with `memory keys init` and kept outside the repository
    memory = Memory.open("local:/srv/memories", keys=os.environ["MEMORY_KEYS"], app="support")
    ```

    ## Limits

    Random-looking means at least one digit, one lower-case and one upper-case letter for
    base64 (a digit and a letter for hex), so words are not mistaken for keys; a key of all one
    character is not found. Keys in files other than Python source (`.env`, JSON) are not read.

    ## Added in

    0.1.0
    """

    code: ClassVar[str] = "MAIN-MEM-0025"
    name: ClassVar[str] = "key-material-in-source"
    severity: ClassVar[Severity] = "critical"
    tags: ClassVar[tuple[str, ...]] = ("security", "keys", "external/cwe/cwe-321")
    needs_memory: ClassVar[bool] = False

    def check(self, module: Module) -> Iterator[Finding]:
        """One walk over the module's literals and the places they are used as keys."""
        if not _QUICK.search(module.source) and not any(
            _decoded_length(m.group(1)) in _KEY_LENGTHS
            for m in _CANDIDATE.finditer(module.source)
        ):
            return
        seen: set[tuple[int, int]] = set()
        constants: dict[str, str] | None = None
        for node in module.nodes():
            found: list[tuple[ast.AST, str]] = []
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                if "PRIVATE KEY-----" in node.value and _PEM.search(node.value):
                    found.append((node, "a PEM private key"))
            elif isinstance(node, ast.Dict):
                literal = {
                    k.value: v for k, v in zip(node.keys, node.values, strict=True)
                    if isinstance(k, ast.Constant)
                }
                private = literal.get("d")
                if "kty" in literal and isinstance(private, ast.Constant) and isinstance(
                    private.value, str
                ) and private.value:
                    found.append((node, "a private JSON Web Key"))
            elif isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if any((name := _target_name(t)) and _key_name(name) for t in targets):
                    found.extend(self._named_key(node.value))
            elif isinstance(node, ast.Call):
                for keyword in node.keywords:
                    if keyword.arg and _key_name(keyword.arg):
                        found.extend(self._named_key(keyword.value))
                last = node.func.attr if isinstance(node.func, ast.Attribute) else (
                    node.func.id if isinstance(node.func, ast.Name) else ""
                )
                if (last in _KEY_CONSUMERS or _dotted(node.func) in _KEY_FUNCTIONS) and (
                    node.args
                ):
                    if constants is None:
                        constants = _string_constants(module.nodes())
                    found.extend(self._consumed_key(node.args[0], constants))
            for where, what in found:
                position = (getattr(where, "lineno", 0), getattr(where, "col_offset", 0))
                if position not in seen:
                    seen.add(position)
                    yield self.at(
                        where,
                        self.code,
                        f"{what} is written in the source; keep keys in the key store "
                        "(memory keys init) outside the repository, and rotate this one",
                    )

    @staticmethod
    def _unwrap(node: ast.expr) -> ast.expr | None:
        """What a chain of decoders (``b64decode(...)``, ``fromhex(...)``, ``.encode()``)
        starts from, or ``None`` if a call in it is not a decoder."""
        while isinstance(node, ast.Call):
            func = node.func
            last = func.attr if isinstance(func, ast.Attribute) else (
                func.id if isinstance(func, ast.Name) else ""
            )
            if last not in _DECODERS:
                return None
            if last == "encode" and isinstance(func, ast.Attribute):
                node = func.value
            elif node.args:
                node = node.args[0]
            else:
                return None
        return node

    @classmethod
    def _literal(cls, node: ast.expr) -> ast.Constant | None:
        inner = cls._unwrap(node)
        return inner if isinstance(inner, ast.Constant) else None

    def _named_key(self, value: ast.expr) -> Iterator[tuple[ast.AST, str]]:
        literal = self._literal(value)
        if literal is None:
            return
        if isinstance(literal.value, bytes) and len(literal.value) in _KEY_LENGTHS:
            yield literal, f"a {len(literal.value)}-byte key"
        elif isinstance(literal.value, str):
            length = _decoded_length(literal.value)
            if length in _KEY_LENGTHS:
                yield literal, f"a {length}-byte key"

    def _consumed_key(
        self, value: ast.expr, constants: dict[str, str]
    ) -> Iterator[tuple[ast.AST, str]]:
        literal = self._literal(value)
        if literal is not None and isinstance(literal.value, str | bytes) and len(
            literal.value
        ) >= 16:
            yield literal, "a key literal"
            return
        inner = self._unwrap(value)
        if inner is None:
            return
        if (
            isinstance(inner, ast.Name)
            and not _key_name(inner.id)  # a key-named constant is reported where it is written
            and len(constants.get(inner.id, "")) >= 16
        ):
            yield inner, "a key held in a constant"
