"""What ``pip install mainsdk-memory`` costs: wheel, install time and size, load, RSS, latency.

Not a test (``tests/test_install.py`` checks that the fresh install answers the README's
question). Issue 14 asks for the default embedder's install size and time from a clean venv;
this measures them for the whole package, with no extras::

    .venv/bin/python -m benchmarks.install                  # ~1 min on 2 cores
    .venv/bin/python -m benchmarks.install --json benchmarks/results/install.json
    .venv/bin/python -m benchmarks.install --wheel /tmp/wheels/mainsdk_memory-0.1.0-py3-none-any.whl

Steps, each timed on its own:

1. **Build** the wheel with ``pip wheel --no-deps`` from a clean copy of the checkout's
   packaged files (``pyproject.toml``, ``README.md`` and the package folders; no ``build/``
   left over from an earlier build can leak into it), unless ``--wheel`` names one.
2. **Venv**: ``python -m venv`` in a temporary folder (with pip, from ``ensurepip``).
3. **Install** the wheel with that venv's pip and the machine's pip configuration and cache,
   as a user would: where each distribution came from (a local wheel folder, a package
   index, pip's cache) is read from ``pip install --report`` and pip's own log lines.
4. **Size**: ``du`` of the venv's ``site-packages`` before and after, and per distribution.
5. **Use**, in fresh processes of that venv: ``import mainsdk_memory``; then the README's
   example on the default install (``Memory.open`` with no embedder option): open, remember
   the README's two memories, the first recall (it loads ``StaticEmbedder``'s table), then
   the time of further recalls and of embedding one query, and peak RSS (``VmHWM``); the same
   with ``embedder=None`` beside it, so the table's share of the RSS shows.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.machine import describe, load_average

__all__ = ["PACKAGED", "build_wheel", "main", "measure"]

REPO = Path(__file__).resolve().parents[1]
#: What the wheel is built from (pyproject.toml's package-dir and readme; docs/ for the errors
#: page the package ships).
PACKAGED = ("pyproject.toml", "README.md", "mainsdk_memory", "drivers", "keys", "checks",
            "conformance", "docs")

#: Run inside the fresh venv: the README's example on the default install, timed, with RSS.
PROBE = r'''
import json, statistics, subprocess, sys, time
from pathlib import Path

started = time.perf_counter()
import mainsdk_memory
from mainsdk_memory import Memory, Source, tenant
imported = time.perf_counter() - started


def peak_mib():
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) / 1024.0, 1)
    return None


root, which = Path(sys.argv[1]), sys.argv[2]
after_import = peak_mib()
subprocess.run([str(Path(sys.executable).parent / "memory"), "keys", "init", "--keys",
                str(root / "keys")], check=True, capture_output=True)
options = {} if which == "default" else {"embedder": None}
started = time.perf_counter()
memory = Memory.open(f"local:{root / 'memories'}", keys=root / "keys", app="support", **options)
opened = time.perf_counter() - started
queries = ["how do we reach her?", "where does she live?", "what does she prefer?",
           "best way to contact Ada", "which city is her home?"] * 20
with tenant.use("acme"):
    ada = memory.acting_for("ada", agent="support-bot", session="chat-1")
    writes = []
    for text, kind, source in (("Ada lives in Lisbon.", "fact", Source.person("ada")),
                               ("Ada prefers WhatsApp over email.", "preference", None)):
        t = time.perf_counter()
        ada.remember(text, kind=kind, **({} if source is None else {"source": source}))
        writes.append(time.perf_counter() - t)
    t = time.perf_counter()
    hits = ada.recall("how do we reach her?")
    first_recall = time.perf_counter() - t
    times = []
    for query in queries:
        t = time.perf_counter()
        ada.recall(query)
        times.append(time.perf_counter() - t)
embed = []
if memory.embedder is not None:
    for query in queries:
        t = time.perf_counter()
        memory.embedder.embed([query])
        embed.append(time.perf_counter() - t)
memory.close()


def ms(samples, q):
    ordered = sorted(samples)
    return round(ordered[max(0, -(-len(ordered) * q // 100) - 1)] * 1000.0, 3)


print(json.dumps({
    "module": mainsdk_memory.__file__,
    "embedder": None if memory.embedder is None else memory.embedder.name,
    "import_s": round(imported, 3),
    "open_s": round(opened, 3),
    "remember_ms": [round(w * 1000.0, 2) for w in writes],
    "first_recall_ms": round(first_recall * 1000.0, 2),
    "recall_p50_ms": ms(times, 50), "recall_p95_ms": ms(times, 95),
    "embed_query_p50_ms": ms(embed, 50) if embed else None,
    "embed_query_p95_ms": ms(embed, 95) if embed else None,
    "first_hit": hits[0].record.text if hits else None,
    "rss_after_import_mib": after_import,
    "peak_rss_mib": peak_mib(),
}))
'''


def _run(command: list[str], **kwargs: Any) -> tuple[float, subprocess.CompletedProcess[str]]:
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False, **kwargs)  # noqa: S603
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{done.stdout[-3000:]}\n"
                           f"{done.stderr[-3000:]}")
    return seconds, done


def build_wheel(out: Path, source: Path = REPO) -> tuple[Path, float]:
    """A wheel of ``source`` (no dependencies) in ``out``, built from a clean copy; seconds."""
    with tempfile.TemporaryDirectory(prefix="mainsdk-wheel-src-") as folder:
        copy = Path(folder)
        for name in PACKAGED:
            path = source / name
            if path.is_dir():
                shutil.copytree(path, copy / name,
                                ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
            else:
                shutil.copy2(path, copy / name)
        out.mkdir(parents=True, exist_ok=True)
        seconds, _ = _run([sys.executable, "-m", "pip", "wheel", "--no-deps",
                           "--disable-pip-version-check", "-q", "-w", str(out), str(copy)])
    wheels = sorted(out.glob("mainsdk_memory-*.whl"), key=lambda p: p.stat().st_mtime)
    return wheels[-1], seconds


def _du_mib(path: Path) -> float:
    _, done = _run(["du", "-sk", str(path)])
    return round(int(done.stdout.split()[0]) / 1024.0, 1)


def _origin(url: str) -> str:
    if url.startswith("file://"):
        return f"local file ({Path(url.removeprefix('file://')).parent})"
    match = re.match(r"https?://([^/]+)/", url)
    return match[1] if match else url


def measure(wheel: Path, workdir: Path) -> dict[str, Any]:
    """Venv, install, size and use of ``wheel`` under ``workdir`` (see the module docstring)."""
    venv = workdir / "venv"
    venv_s, _ = _run([sys.executable, "-m", "venv", str(venv)])
    python = venv / "bin" / "python"
    site = Path(_run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"]
                     )[1].stdout.strip())
    before = _du_mib(site)
    report = workdir / "pip-report.json"
    install_s, done = _run([str(python), "-m", "pip", "install", "--disable-pip-version-check",
                            "--report", str(report), str(wheel)])
    cached = sorted(set(re.findall(r"Using cached (\S+)", done.stdout)))
    log = [line.strip() for line in done.stdout.splitlines()
           if line.strip().startswith(("Using cached", "Downloading", "Processing"))]
    installed = json.loads(report.read_text(encoding="utf-8"))["install"]
    distributions = []
    for item in installed:
        name = item["metadata"]["name"]
        url = item["download_info"]["url"]
        file = url.rsplit("/", 1)[-1]
        distributions.append({
            "name": name, "version": item["metadata"]["version"],
            "from": "the wheel built here" if name == "mainsdk-memory" else _origin(url),
            "pip_cache": any(file.split("#")[0] == c.split("/")[-1] for c in cached),
        })
    after = _du_mib(site)
    sizes = {}
    for child in sorted(site.iterdir()):
        if child.is_dir() and not child.name.endswith((".dist-info", "__pycache__")):
            sizes[child.name] = _du_mib(child)
    use = {}
    for which in ("default", "text-only"):
        folder = workdir / which
        folder.mkdir()
        seconds, ran = _run([str(python), "-I", "-c", PROBE, str(folder), which], cwd=workdir)
        use[which] = {**json.loads(ran.stdout.strip().splitlines()[-1]),
                      "process_s": round(seconds, 2)}
    return {
        "venv_s": round(venv_s, 2),
        "install_s": round(install_s, 2),
        "distributions": distributions,
        "pip_log": log,
        "site_packages_mib": {"empty_venv": before, "after_install": after,
                              "added": round(after - before, 1)},
        "largest_mib": dict(sorted(sizes.items(), key=lambda kv: -kv[1])[:10]),
        "use": use,
    }


def main(argv: list[str] | None = None) -> int:
    """Build (or take) the wheel, install it in a fresh venv, print and optionally save."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.install",
                                     description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--wheel", type=Path, default=None, help="an already built wheel")
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    args = parser.parse_args(argv)
    machine = describe()
    with tempfile.TemporaryDirectory(prefix="mainsdk-install-") as folder:
        work = Path(folder)
        if args.wheel is None:
            wheel, build_s = build_wheel(work / "wheels")
        else:
            wheel, build_s = args.wheel, None
        result: dict[str, Any] = {
            "wheel": wheel.name, "wheel_mib": round(wheel.stat().st_size / 2**20, 2),
            "build_s": None if build_s is None else round(build_s, 2),
            "pip_config": os.environ.get("PIP_CONFIG_FILE") or "the machine's (pip config list)",
            **measure(wheel, work),
        }
    machine["load_average_at_end"] = load_average()
    result["machine"] = machine
    print(json.dumps(result, indent=1))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
