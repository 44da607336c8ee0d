"""The quickstart's shell steps run as written, in order, and what the key-store and driver pages
promise about sharing a key store and trying PostgreSQL holds."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mainsdk_memory import Memory, MemoryNotFound, Source, tenant

ROOT = Path(__file__).resolve().parent.parent
QUICKSTART = ROOT / "docs" / "quickstart.md"
BIN = Path(sys.executable).parent  # where this environment installed `memory` and friends


def _blocks(path: Path) -> list[tuple[str, str]]:
    """Every fenced block of ``path`` tagged bash or python, in page order: (language, code)."""
    return re.findall(r"```(bash|python)\n(.*?)```", path.read_text(), flags=re.S)


def _fake_venv(folder: Path) -> None:
    """``folder/.venv/bin`` with the commands the page calls, run by this environment."""
    bin_dir = folder / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    commands = {"python": sys.executable, "memory": BIN / "memory",
                "memory-receipt": BIN / "memory-receipt"}
    for name, target in commands.items():
        if not Path(target).is_file():
            pytest.skip(f"{name} is not installed next to {sys.executable}")
        wrapper = bin_dir / name
        wrapper.write_text(f'#!/bin/sh\nexec "{target}" "$@"\n')
        wrapper.chmod(0o755)


def test_the_quickstart_runs_top_to_bottom_in_one_shell(tmp_path: Path) -> None:
    """Steps 2 to 5 pasted into one shell, with steps 3 and 4 saved as ``quickstart.py`` as
    the page says: the receipt the script writes verifies with the key the page exports."""
    blocks = _blocks(QUICKSTART)
    install = [code for lang, code in blocks if lang == "bash" and "pip install" in code]
    assert len(install) == 1  # step 1 installs this checkout; the test runs it installed
    text = QUICKSTART.read_text()
    assert "as `quickstart.py`" in text
    assert "continues the script of step 3" in text
    script = "\n".join(code for lang, code in blocks if lang == "python")
    shell = [code for lang, code in blocks if lang == "bash" and code not in install]
    assert any(".venv/bin/python quickstart.py" in code for code in shell)

    # Every variable a shell step reads is set by a step before it, or by the shell itself.
    assigned = {"HOME", "PATH"}
    for code in shell:
        used = set(re.findall(r"\$\{?([A-Z_][A-Z0-9_]*)", code))
        assert used <= assigned | set(re.findall(r"^\s*(?:export\s+)?([A-Z_][A-Z0-9_]*)=",
                                                 code, flags=re.M)), code
        assigned |= set(re.findall(r"^\s*(?:export\s+)?([A-Z_][A-Z0-9_]*)=", code, flags=re.M))

    home = tmp_path / "home"
    home.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    _fake_venv(work)
    (work / "quickstart.py").write_text(script)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_")}
    env["HOME"] = str(home)
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("the quickstart's shell steps are bash")
    ran = subprocess.run(
        [bash, "-euo", "pipefail", "-c", "\n".join(shell)],
        cwd=work, env=env, capture_output=True, text=True, timeout=300, check=False,
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "valid receipt" in ran.stdout
    assert '"op": "forget"' in ran.stdout
    assert (home / ".config" / "myapp" / "memory-keys" / "keystore.json").is_file()
    assert (work / "receipt.jws").read_text().count(".") == 2  # a compact JWS
    assert (work / "memories").is_dir()


def test_stores_sharing_a_key_store_share_an_erasure(tmp_path: Path, keys_path: Path) -> None:
    """docs/keys.md: an erase through one store destroys the person's keys for every store on
    that key store (same tenant and app), whatever its driver; another app keeps its own."""
    pytest.importorskip("sqlalchemy")
    first = Memory.open(f"local:{tmp_path / 'a'}", keys=keys_path, app="support")
    second = Memory.open(f"sqlite:///{tmp_path / 'b.db'}", keys=keys_path, app="support")
    other_app = Memory.open(f"local:{tmp_path / 'c'}", keys=keys_path, app="billing")
    try:
        with tenant.use("acme"):
            said = Source.person("ada")
            first.acting_for("ada", agent="bot").remember("Ada prefers WhatsApp.", source=said)
            kept = second.acting_for("ada", agent="bot").remember("Ada lives in Porto.",
                                                                  source=said)
            billing = other_app.acting_for("ada", agent="bot").remember("Ada pays by card.",
                                                                        source=said)
            second.acting_for("bob", agent="bot").remember("Bob lives in Faro.",
                                                           source=Source.person("bob"))
            before = second.acting_for("ada", agent="bot")
            assert before.get(kept.id).text == "Ada lives in Porto."

            assert first.privacy.erase("ada").claims["key"] == "destroyed"

            # The second store was never told, and yet nothing of Ada opens there any more.
            ada = second.acting_for("ada", agent="bot")
            for handle in (ada, before):
                with pytest.raises(MemoryNotFound):
                    handle.get(kept.id)
                assert handle.recall("Porto") == []
            assert list(ada.list().items) == []
            assert list(second.person("ada").list().items) == []
            assert second.privacy.export("ada")["memories"] == []
            # Its unopenable rows go with an erase there; the key was already gone.
            there = second.privacy.erase("ada")
            assert there.claims["key"] == "absent"
            assert list(there.memory_ids) == [kept.id]
            # Another person of that store, and the same person in another app, keep theirs.
            bob = second.acting_for("bob", agent="bot")
            assert [h.record.text for h in bob.recall("Faro")] == ["Bob lives in Faro."]
            assert other_app.acting_for("ada", agent="bot").get(billing.id).text == (
                "Ada pays by card."
            )
    finally:
        for store in (first, second, other_app):
            store.close()


def _drivers_block(start: str) -> str:
    """The first python block of docs/drivers.md that starts with ``start``."""
    for lang, code in _blocks(ROOT / "docs" / "drivers.md"):
        if lang == "python" and code.startswith(start):
            return code
    raise AssertionError(f"no python block starting with {start!r} in docs/drivers.md")


@pytest.fixture
def short_folder() -> Iterator[Path]:
    """A folder with a short path: PostgreSQL's socket lives in it (a socket path is short)."""
    folder = Path(tempfile.mkdtemp(prefix="mm-try-"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_the_local_postgresql_recipe_gives_a_url_the_driver_takes(
    short_folder: Path, keys_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/drivers.md "Try it with a local PostgreSQL": the pgserver snippet, as printed,
    prints a URL that ``memory db upgrade`` and ``Memory.open`` accept."""
    pytest.importorskip("pgserver")
    pytest.importorskip("psycopg")
    snippet = _drivers_block("import pgserver")
    monkeypatch.chdir(short_folder)
    namespace: dict[str, object] = {}
    printed: list[str] = []
    namespace["print"] = lambda *args: printed.append(" ".join(map(str, args)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pgserver warns when XDG_RUNTIME_DIR is unset
        try:
            exec(compile(snippet, "docs/drivers.md", "exec"), namespace)  # noqa: S102
        except Exception as exc:  # no PostgreSQL here: say why, as tests/_postgres.py does
            if os.environ.get("CI") == "true":
                raise
            pytest.skip(f"pgserver could not start PostgreSQL: {exc}")
    server: Any = namespace["server"]
    try:
        (url,) = printed
        assert url.startswith("postgresql://")
        upgraded = subprocess.run([str(BIN / "memory"), "db", "upgrade", url], capture_output=True,
                                  text=True, timeout=120, check=False)
        assert upgraded.returncode == 0, upgraded.stdout + upgraded.stderr
        memory = Memory.open(url, keys=keys_path, app="try")
        try:
            with tenant.use("acme"):
                ada = memory.acting_for("ada", agent="bot")
                record = ada.remember("Ada prefers WhatsApp.", source=Source.person("ada"))
                assert ada.get(record.id).text == "Ada prefers WhatsApp."
        finally:
            memory.close()
    finally:
        server.cleanup_mode = "delete"  # the page leaves it running; the test does not
        server.cleanup()
