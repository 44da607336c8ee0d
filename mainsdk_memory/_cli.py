"""The ``memory`` and ``memory-receipt`` command-line tools."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from mainsdk_memory import mcp_server, receipts, tenant
from mainsdk_memory._cli_consolidate import add_consolidate_command
from mainsdk_memory._cli_explain import add_explain_command
from mainsdk_memory._cli_import import add_import_command
from mainsdk_memory._cli_import_jsonl import add_import_jsonl_command
from mainsdk_memory._cli_privacy import add_privacy_commands
from mainsdk_memory._cli_reindex import add_reindex_command
from mainsdk_memory._cli_serve import add_serve_command
from mainsdk_memory._errors import MemorySDKError, ReceiptError
from mainsdk_memory._memory import Memory
from mainsdk_memory._progress import bar
from mainsdk_memory._records import Source
from mainsdk_memory._version import add_version_argument
from mainsdk_memory.drivers.db import upgrade_command
from mainsdk_memory.keys import KeyStore

__all__ = ["main", "receipt_main"]


def _keys_init(args: argparse.Namespace) -> int:
    store = KeyStore.create(args.keys)
    print(f"Created a key store at {store.path} (files are 0600).")
    print("Keep it outside the memory store and out of version control; back it up separately.")
    print(f"Hand receipt verifiers the public key: memory keys export-public --keys {store.path}")
    return 0


def _keys_export_public(args: argparse.Namespace) -> int:
    store = KeyStore.open(args.keys)
    if args.jwks:
        print(json.dumps(store.export_public_jwks(), indent=2))
    else:
        sys.stdout.write(store.export_public_pem().decode("ascii"))
    return 0


def _keys_rotate(args: argparse.Namespace) -> int:
    store = KeyStore.open(args.keys)
    with bar("keys rotate", unit="subject keys") as progress:
        report = store.rotate(progress=progress)
    print(("Finished an interrupted rotation" if report.resumed else "Rotated")
          + f" of the key store at {store.path}.")
    print(f"  key-encryption key {report.kek_active} now wraps all {report.subjects} subject "
          f"keys ({report.rewrapped} re-wrapped; no memory was re-encrypted).")
    for kid in report.kek_retired:
        print(f"  destroyed key-encryption key {kid}")
    for kid in report.signing_retired:
        print(f"  retired signing key {kid}: private key destroyed, public key kept")
    print(f"  new receipts are signed by {report.signing_active}; publish the key set: "
          f"memory keys export-public --keys {store.path} --jwks")
    print("Back up the key store now, and destroy older backups: they still hold the old keys.")
    return 0


def _say(title: str) -> None:
    print(f"\n== {title}")


def _demo(_: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory(prefix="mainsdk-memory-demo-") as tmp:
        root = Path(tmp)
        _say("1. Create a project key store (kept apart from the memory store)")
        KeyStore.create(root / "keys")
        print(f"key store:    {root / 'keys'}")
        print(f"memory store: {root / 'store'}")

        # A fixed clock story: Ada lived in Lisbon from January, moved to Porto in October.
        january = datetime(2026, 1, 10, 9, 0, tzinfo=UTC)
        october = datetime(2026, 10, 1, 9, 0, tzinfo=UTC)
        september = datetime(2026, 9, 15, tzinfo=UTC)

        store = f"local:{root / 'store'}"
        with (
            # The default embedder ships in the package: meaning without a model or a download.
            Memory.open(store, keys=root / "keys", app="concierge") as memory,
            tenant.use("acme"),
        ):
            ada = memory.acting_for("ada", agent="concierge-bot", session="chat-1")

            _say("2. Remember (each memory is sealed under Ada's own key)")
            home = ada.remember(
                "Ada lives in Lisbon.", source=Source.person("ada"), valid_from=january
            )
            ada.remember("Ada prefers WhatsApp over email.", kind="preference",
                         source=Source.person("ada"))
            tea = ada.remember("Ada drinks green tea, no sugar.", kind="preference")
            ada.remember("Refunds go back to the original card.", kind="procedure",
                         about="tenant", labels=["none"])
            ada.pin(tea.id)
            for record in ada.list().items:
                print(f"  {record.id}  {record.kind:<10} {record.trust:<9} {record.text}")

            question = "how do we reach her?"
            _say(f"3. Recall {question!r} (by meaning: no word of it is in the memory)")
            for hit in ada.recall(question, top_k=3):
                print(f"  {hit.score:.2f}  {hit.record.text}")

            _say(f"4. The context block for {question!r} (a user message, never a system one)")
            print(ada.context(question, top_k=2))

            _say("5. Remember what changed: formation makes it the next version")
            moved = ada.remember("Ada moved to Porto.", valid_from=october,
                                 source=Source.person("ada"))
            assert moved.formation is not None  # noqa: S101 - remember always forms here
            print(f"  formation: {moved.formation.outcome} of {moved.formation.target} "
                  f"({moved.formation.reason}); the same memory, version {moved.version}")
            again = ada.remember("Ada moved to Porto.", source=Source.person("ada"))
            assert again.formation is not None  # noqa: S101 - remember always forms here
            print(f"  said again: {again.formation.outcome}, nothing new stored")
            for version in ada.history(home.id):
                until = version.valid_to.date() if version.valid_to else "now"
                print(f"  v{version.version}: {version.text:<22} "
                      f"valid {version.valid_from.date()} .. {until}")
            past = ada.recall("where does Ada live?", as_of=september)
            print(f"  Where did she live in September? {past[0].record.text}")
            now = ada.recall("where does Ada live?")
            print(f"  Where does she live now?         {now[0].record.text}")

            _say("6. Learn from a conversation (offline rules: no model, nothing leaves here)")
            learnt = ada.learn(
                [
                    ("user", "Hi! I'm allergic to peanuts, and I'm flying to Madrid next Friday."),
                    ("assistant", "Noted. Have a good trip!"),
                    ("user", "Thanks, see you!"),
                ],
                at=october,
            )
            for record in learnt:
                outcome = record.formation.outcome if record.formation else "stored"
                print(f"  {outcome:<8} {record.trust:<9} {record.text}")
            print("  (the greetings and thanks formed nothing; 'next Friday' became a date)")

            _say("7. Forget: the agent asks, Ada approves, a signed receipt lists ids only")
            request = ada.forget(home.id)
            print(f"  the agent's request {request.id} is {request.status}")
            receipt = memory.person("ada").approve(request.id)
            print(f"  receipt: {receipt.token[:60]}…")
            print(f"  claims:  {json.dumps(dict(receipt.claims), indent=None)}")

            _say("8. Anyone can verify it with the public key")
            public_pem = KeyStore.open(root / "keys").export_public_pem()
            checked = receipts.verify(receipt.token, public_pem)
            print(f"  verified: memory {checked.memory_id}, erase={checked.erase}, "
                  f"versions {', '.join(checked.version_ids)}")
            tampered = receipt.token[:-4] + ("AAAA" if receipt.token[-4:] != "AAAA" else "BBBB")
            try:
                receipts.verify(tampered, public_pem)
            except ReceiptError:
                print("  a tampered receipt is refused")
            left = ada.recall("Lisbon Porto", top_k=5, mode="text")
            print(f"  recall after forget: {len(left)} match(es)")
    print("\nDone: the temporary store and keys were deleted.")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``memory``."""
    parser = argparse.ArgumentParser(
        prog="memory", description="mainsdk-memory: privacy-first memory for app agents."
    )
    add_version_argument(parser)
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser("demo", help="run a guided tour in a temporary folder")
    demo.set_defaults(run=_demo)
    keys = commands.add_parser("keys", help="manage the project key store")
    key_commands = keys.add_subparsers(dest="keys_command", required=True)
    init = key_commands.add_parser("init", help="create a new key store")
    init.add_argument("--keys", required=True, type=Path, help="folder for the new key store")
    init.set_defaults(run=_keys_init)
    export = key_commands.add_parser("export-public", help="print the receipt-signing public key")
    export.add_argument("--keys", required=True, type=Path, help="the key store folder")
    export.add_argument("--jwks", action="store_true", help="print every key as a JWK Set")
    export.set_defaults(run=_keys_export_public)
    rotate = key_commands.add_parser(
        "rotate", help="new key-encryption and signing keys; finish an interrupted rotation"
    )
    rotate.add_argument("--keys", required=True, type=Path, help="the key store folder")
    rotate.set_defaults(run=_keys_rotate)
    db = commands.add_parser("db", help="manage a SQLite or PostgreSQL memory store")
    db_commands = db.add_subparsers(dest="db_command", required=True)
    db_upgrade = db_commands.add_parser("upgrade", help="create or upgrade the store's schema")
    db_upgrade.add_argument("url", help="the store URL, e.g. postgresql+psycopg://user@host/db")
    db_upgrade.set_defaults(run=lambda args: upgrade_command(args.url))
    serve_mcp = commands.add_parser(
        "mcp", help="serve memory as MCP tools (stdio, or streamable HTTP with bearer tokens)"
    )
    mcp_server.add_arguments(serve_mcp)  # the mcp package is imported only when it runs
    serve_mcp.set_defaults(run=mcp_server.run_from_args)
    add_privacy_commands(commands)
    add_reindex_command(commands)
    add_consolidate_command(commands)
    add_explain_command(commands)
    add_import_command(commands)
    add_import_jsonl_command(commands)
    add_serve_command(commands)
    args = parser.parse_args(argv)
    try:
        return int(args.run(args))
    except MemorySDKError as exc:
        print(f"memory: {exc}", file=sys.stderr)
        return 1


def _read_token(argument: str) -> str:
    """The receipt given on the command line: ``-`` (stdin), a token, or a file holding one."""
    if argument == "-":
        return sys.stdin.read().strip()
    path = Path(argument)
    try:
        is_file = path.is_file()
    except OSError:  # a token is longer than a file name may be
        is_file = False
    if not is_file:
        return argument.strip()
    try:
        return path.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise ReceiptError(f"Cannot read the receipt file {argument}: {exc.strerror}.") from exc
    except UnicodeDecodeError:
        raise ReceiptError(
            f"The file {argument} is not text, so it holds no receipt (a compact JWS)."
        ) from None


def receipt_main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``memory-receipt``."""
    parser = argparse.ArgumentParser(
        prog="memory-receipt", description="Verify a mainsdk-memory forget receipt."
    )
    add_version_argument(parser)
    commands = parser.add_subparsers(dest="command", required=True)
    verify = commands.add_parser("verify", help="check a receipt's signature and claims")
    verify.add_argument("receipt", help="the receipt token, a file holding it, or - for stdin")
    verify.add_argument("--key", required=True, type=Path,
                        help="the issuer's public key (PEM or JWK Set file)")
    args = parser.parse_args(argv)
    try:
        token = _read_token(args.receipt)
        try:
            key = args.key.read_bytes()
        except OSError as exc:
            print(f"memory-receipt: cannot read the key file: {exc.strerror}", file=sys.stderr)
            return 2
        receipt = receipts.verify(token, key)
    except ReceiptError as exc:
        print(f"memory-receipt: INVALID: {exc}", file=sys.stderr)
        return 1
    print("valid receipt")
    print(json.dumps(dict(receipt.claims), indent=2, sort_keys=True))
    return 0
