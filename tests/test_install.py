"""A fresh venv with ``pip install mainsdk-memory`` and no extras answers the README's question.

Issue 14's "done when": the wheel built from this checkout is installed with no extras into a
new virtual environment (its dependencies from the package index, through pip's cache), and
the README's example, run there in an isolated interpreter (nothing of the checkout on its
path), finds "Ada prefers WhatsApp over email." first for ``recall("how do we reach her?")``
with ``Memory.open`` given no embedder option. Not a timed test: it needs the package index
(CI has it) and takes about a minute, most of it creating the venv and installing.

The wheel is built with ``pip wheel --no-deps`` (pip alone, no ``build`` package) from a copy
of the files the wheel is made of, so a stale ``build/`` folder in the checkout cannot leak
into it and nothing is written into the checkout.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from benchmarks.install import build_wheel

#: The README's "Sixty seconds", on the default install (no embedder option).
README_EXAMPLE = r'''
import importlib.util, json, subprocess, sys
from pathlib import Path

import mainsdk_memory
from mainsdk_memory import Memory, Source, tenant

root = Path(sys.argv[1])
memory_cli = Path(sys.executable).parent / "memory"
subprocess.run([str(memory_cli), "keys", "init", "--keys", str(root / "keys")], check=True,
               capture_output=True)
memory = Memory.open(f"local:{root / 'memories'}", keys=root / "keys", app="support")
with tenant.use("acme"):
    ada = memory.acting_for("ada", agent="support-bot", session="chat-1")
    home = ada.remember("Ada lives in Lisbon.", source=Source.person("ada"))
    ada.remember("Ada prefers WhatsApp over email.", kind="preference")
    hits = ada.recall("how do we reach her?")
    block = ada.context("how do we reach her?")
memory.close()
print(json.dumps({
    "module": mainsdk_memory.__file__,
    "embedder": None if memory.embedder is None else memory.embedder.name,
    "torch": importlib.util.find_spec("torch") is not None,
    "hits": [hit.record.text for hit in hits],
    "context_has_whatsapp": "WhatsApp" in block,
}))
'''


def _run(command: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        command, capture_output=True, text=True, check=False, timeout=600, cwd=cwd
    )
    assert done.returncode == 0, f"{command}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


def _wheel(tmp_path: Path) -> Path:
    wheel, _seconds = build_wheel(tmp_path / "wheels")  # the install benchmark's own build
    return wheel


def test_a_fresh_install_without_extras_answers_the_readme_question(tmp_path: Path) -> None:
    wheel = _wheel(tmp_path)
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", str(venv)])
    python = venv / "bin" / "python"
    # No extras; dependencies from the package index as pip is configured here (its cache too).
    _run([str(python), "-m", "pip", "install", "--disable-pip-version-check", "-q", str(wheel)])
    work = tmp_path / "work"
    work.mkdir()
    # -I: nothing of the checkout (PYTHONPATH, the current folder, user site) on the path.
    done = _run([str(python), "-I", "-c", README_EXAMPLE, str(work)], cwd=work)
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert Path(found["module"]).is_relative_to(venv), found["module"]  # the installed copy
    assert found["torch"] is False  # no extras: no torch, no model
    assert found["embedder"], "Memory.open with no embedder option opened without one"
    assert found["hits"], "recall found nothing"
    assert found["hits"][0] == "Ada prefers WhatsApp over email.", found["hits"]
    assert found["context_has_whatsapp"] is True
