"""Describe the machine a benchmark ran on: CPU, cores, memory, disk sync time, Python, OS, date.

Speed numbers mean little without the machine, so every result carries this description. It is
read from ``/proc`` where there is one (Linux) and from :mod:`platform` otherwise.
"""

from __future__ import annotations

import os
import platform
import statistics
import tempfile
import time
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

__all__ = ["describe", "fsync_ms", "load_average"]

_PACKAGES = ("cryptography", "sqlalchemy", "psycopg", "rank-bm25", "snowballstemmer", "numpy")


def _proc_field(path: str, name: str) -> str | None:
    try:
        lines = Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    for line in lines:
        key, _, value = line.partition(":")
        if key.strip() == name:
            return value.strip()
    return None


def _physical_cores() -> int | None:
    """Distinct (physical id, core id) pairs in /proc/cpuinfo; ``None`` if not listed."""
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    pairs = set()
    physical = core = None
    for line in [*text.splitlines(), ""]:
        key, _, value = line.partition(":")
        key = key.strip()
        if key == "physical id":
            physical = value.strip()
        elif key == "core id":
            core = value.strip()
        elif not line.strip():
            if core is not None:
                pairs.add((physical, core))
            physical = core = None
    return len(pairs) or None


def fsync_ms(folder: Path | None = None, rounds: int = 20) -> float:
    """Median time, in ms, to write 4 KiB to a file and ``fsync`` it, in ``folder``.

    Every durable write of the SDK waits for at least one such sync, so this bounds write
    throughput on the machine's disk more than any CPU work does.
    """
    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        path = Path(tmp) / "probe"
        times = []
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            for _ in range(rounds):
                start = time.perf_counter()
                os.pwrite(fd, os.urandom(4096), 0)
                os.fsync(fd)
                times.append((time.perf_counter() - start) * 1000.0)
        finally:
            os.close(fd)
    return round(statistics.median(times), 3)


def load_average() -> list[float] | None:
    """The 1, 5 and 15 minute load averages (other work on the machine skews every time)."""
    try:
        return [round(value, 2) for value in os.getloadavg()]
    except OSError:
        return None


def _versions() -> dict[str, str]:
    found = {}
    for name in _PACKAGES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return found


def describe(workdir: Path | None = None) -> dict[str, Any]:
    """The machine, the interpreter and the date, as a JSON-ready dict."""
    mem_total = _proc_field("/proc/meminfo", "MemTotal")
    ram_gib = None
    if mem_total and mem_total.endswith("kB"):
        ram_gib = round(int(mem_total.split()[0]) / (1024 * 1024), 1)
    return {
        "cpu_model": _proc_field("/proc/cpuinfo", "model name") or platform.processor() or None,
        "logical_cpus": os.cpu_count(),
        "physical_cores": _physical_cores(),
        "usable_cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "ram_gib": ram_gib,
        "fsync_4k_ms": fsync_ms(workdir),
        "load_average_at_start": load_average(),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "os": platform.platform(),
        "date": datetime.now(UTC).replace(microsecond=0).isoformat(),
        "packages": _versions(),
    }
