"""The ``memory`` command: the demo, and key-store set-up that never prints a secret."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
from pathlib import Path

BIN = Path(sys.executable).parent


def _memory(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "memory"), *args], capture_output=True, text=True, timeout=120, check=False
    )


def test_demo_walks_through_every_step_and_cleans_up() -> None:
    result = _memory("demo")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    for step in ("Create a project key store", "Remember", "Recall", "context block",
                 "Remember what changed", "Learn from a conversation", "Forget", "verify"):
        assert step in out
    assert "formation: supersession of mem_" in out  # the move is the next version
    assert "said again: duplicate, nothing new stored" in out
    assert "<memory-data>" in out and "</memory-data>" in out
    # The natural question, printed as run, finds the WhatsApp memory by meaning (top 3).
    recall = out.split("== 3. Recall 'how do we reach her?'")[1].split("== 4.")[0]
    assert "Ada prefers WhatsApp over email." in recall
    assert "Where did she live in September? Ada lives in Lisbon." in out
    assert "Where does she live now?         Ada moved to Porto." in out
    learnt = out.split("== 6. Learn from a conversation")[1].split("== 7.")[0]
    assert "I'm allergic to peanuts." in learnt and "2026-10-09" in learnt
    assert "Thanks" not in learnt.split("(the greetings")[0]  # chit-chat formed nothing
    assert "a tampered receipt is refused" in out
    assert "recall after forget: 0 match(es)" in out
    demo_dir = next(line.split()[-1] for line in out.splitlines() if "key store:" in line)
    assert not Path(demo_dir).exists()


def test_keys_init_creates_a_private_store_once(tmp_path: Path) -> None:
    created = _memory("keys", "init", "--keys", str(tmp_path / "keys"))
    assert created.returncode == 0, created.stderr
    keystore = tmp_path / "keys" / "keystore.json"
    assert stat.S_IMODE(keystore.stat().st_mode) == 0o600
    secret = json.loads(keystore.read_text())["kek"]["key"]
    again = _memory("keys", "init", "--keys", str(tmp_path / "keys"))
    assert again.returncode == 1 and "already exists" in again.stderr
    public = _memory("keys", "export-public", "--keys", str(tmp_path / "keys"))
    assert public.returncode == 0 and public.stdout.startswith("-----BEGIN PUBLIC KEY-----")
    for result in (created, again, public):
        assert secret not in result.stdout + result.stderr
        assert "PRIVATE" not in result.stdout + result.stderr


def test_export_public_without_a_key_store_explains_what_to_do(tmp_path: Path) -> None:
    result = _memory("keys", "export-public", "--keys", str(tmp_path / "missing"))
    assert result.returncode == 1
    assert "memory keys init" in result.stderr
