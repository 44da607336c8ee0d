"""Formation at write: accuracy per outcome on a labelled set, and what formation costs a write.

Not a test. Issue 15's measures, reported in docs/benchmarks.md:

- **Accuracy** on :mod:`benchmarks.formation_set` (held out: written for measurement, never
  tuned on; the thresholds were chosen on ``tools/formation_dev_set.py``, written
  separately, which ``--set dev`` runs). Each case goes through the public API on a fresh
  ``local:`` store with the default embedder: as one agent, for a person of its own, the
  held memories are remembered with ``formation=False`` (they are what is held), then the
  new sentence with formation on. A case is right when ``record.formation.outcome`` is the
  expected one and, except for ``novel``, ``formation.target`` is the expected memory.
  Targets: duplicate ≥ 0.95, novel ≥ 0.95, overall ≥ 0.85.
- **Speed** (``--speed``): at 10,000 memories of one person (LoCoMo turns, bulk-loaded with
  the SDK's own sealing and the default embedder's vectors, as :mod:`benchmarks.speed`
  does), ``remember`` with formation and with ``formation=False`` on the same store,
  interleaved one for one (the texts are new LoCoMo turns, different for each call).
  Target: p50 with formation ≤ 2x without, on local and PostgreSQL.

::

    .venv/bin/python -m benchmarks.formation                 # ~30 s
    .venv/bin/python -m benchmarks.formation --set dev --misses
    .venv/bin/python -m benchmarks.formation --speed --drivers local,postgresql --json out.json
"""

from __future__ import annotations

import argparse
import importlib
import json
import platform
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mainsdk_memory import Memory, tenant
from mainsdk_memory.keys import KeyStore

TENANT = "bench"
AGENT = "bench-bot"
#: Issue 15's targets.
TARGETS = {"duplicate": 0.95, "novel": 0.95, "overall": 0.85}
SETS = {"held-out": "benchmarks.formation_set", "dev": "tools.formation_dev_set"}


def accuracy(set_name: str = "held-out", *, misses: bool = False) -> dict[str, Any]:
    """Run every case of the set through ``remember`` and score the outcomes."""
    module = importlib.import_module(SETS[set_name])
    outcomes: tuple[str, ...] = module.OUTCOMES
    right: Counter[str] = Counter()
    total: Counter[str] = Counter()
    confusion: Counter[tuple[str, str]] = Counter()
    wrong: list[dict[str, Any]] = []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="formation-") as folder:
        tmp = Path(folder)
        KeyStore.create(tmp / "keys")
        memory = Memory.open(f"local:{tmp / 'store'}", keys=tmp / "keys", app="bench")
        try:
            with tenant.use(TENANT):
                for number, case in enumerate(module.CASES):
                    handle = memory.acting_for(f"person-{number}", agent=AGENT)
                    held = [handle.remember(text, formation=False).id for text in case.existing]
                    record = handle.remember(case.new)
                    formed = record.formation
                    assert formed is not None  # formation ran
                    expected = None if case.target is None else held[case.target]
                    good = formed.outcome == case.outcome and (
                        case.outcome == "novel" or formed.target == expected
                    )
                    total[case.outcome] += 1
                    right[case.outcome] += good
                    confusion[(case.outcome, formed.outcome)] += 1
                    if not good and misses:
                        wrong.append(
                            {
                                "case": case.name,
                                "expected": case.outcome,
                                "got": formed.outcome,
                                "reason": formed.reason,
                                "right_target": formed.target == expected,
                            }
                        )
        finally:
            memory.close()
    per = {name: round(right[name] / total[name], 3) for name in outcomes if total[name]}
    overall = sum(right.values()) / max(1, sum(total.values()))
    return {
        "set": SETS[set_name],
        "cases": sum(total.values()),
        "per_outcome": per,
        "counts": {name: [right[name], total[name]] for name in outcomes},
        "overall": round(overall, 3),
        "confusion": {f"{a}->{b}": n for (a, b), n in sorted(confusion.items())},
        "targets": {
            name: {"target": goal, "value": per.get(name, overall) if name != "overall"
                   else round(overall, 3),
                   "met": (per.get(name, 0.0) if name != "overall" else overall) >= goal}
            for name, goal in TARGETS.items()
        },
        "seconds": round(time.perf_counter() - started, 1),
        **({"misses": wrong} if misses else {}),
    }


def speed(drivers: Sequence[str], *, memories: int = 10_000, calls: int = 200) -> dict[str, Any]:
    """``remember`` p50/p95 with and without formation at ``memories`` per person."""
    from benchmarks import locomo
    from benchmarks.stores import Workspace

    dataset = locomo.load(locomo.data_dir() / "locomo10.json")
    held = [turn.memory_text for c in dataset.conversations[:8] for turn in c.turns]
    # The texts remembered while timing come from the two conversations not held, so each
    # is new to the store (as a conversation's next turn is), not a copy of a held one.
    fresh = [turn.memory_text for c in dataset.conversations[8:] for turn in c.turns]
    corpus = [held[i % len(held)] + ("" if i < len(held) else f" ({i // len(held)})")
              for i in range(memories)]
    out: dict[str, Any] = {"memories": memories, "calls_each": calls}
    with tempfile.TemporaryDirectory(prefix="formation-speed-") as folder:
        workspace = Workspace(Path(folder))
        try:
            for driver in drivers:
                out[driver] = _speed_on(workspace, driver, corpus, fresh, calls)
        finally:
            workspace.close()
    return out


def _speed_on(
    workspace: Any, driver: str, corpus: list[str], fresh: list[str], calls: int
) -> dict[str, Any]:
    """One driver's interleaved timings (see :func:`speed`)."""
    from benchmarks.speed import latency, seal_rows, seal_vectors
    from benchmarks.stores import SteppingClock, bulk_load
    from mainsdk_memory.embeddings import StaticEmbedder

    url = workspace.new_url(driver)
    memory = Memory.open(url, keys=workspace.keys, app="bench", clock=SteppingClock())
    on: list[float] = []
    off: list[float] = []
    outcomes: Counter[str] = Counter()
    try:
        person = "scale-person"
        with tenant.use(TENANT):
            rows = seal_rows(memory, person, corpus)
            vectors = seal_vectors(memory, person, rows, corpus, StaticEmbedder())
            bulk_load(memory, rows, vectors)
            workspace.settle(url)
            handle = memory.acting_for(person, agent=AGENT)
            for text in fresh[:20]:  # warm: caches, the vector stack, the connection
                handle.remember(text)
            for i in range(calls):
                for formation, times in ((True, on), (False, off)):
                    text = fresh[20 + 2 * i + (0 if formation else 1)]
                    started = time.perf_counter()
                    record = handle.remember(text, formation=formation)
                    times.append(time.perf_counter() - started)
                    if formation and record.formation is not None:
                        outcomes[record.formation.outcome] += 1
    finally:
        memory.close()
        workspace.release(url)
    with_f, without = latency(on), latency(off)
    ratio = float(with_f["p50_ms"]) / max(1e-9, float(without["p50_ms"]))
    return {
        "with_formation": with_f,
        "without": without,
        "ratio_p50": round(ratio, 2),
        "target_met": ratio <= 2.0,
        "outcomes": dict(outcomes),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", choices=sorted(SETS), default="held-out")
    parser.add_argument("--misses", action="store_true")
    parser.add_argument("--speed", action="store_true")
    parser.add_argument("--drivers", default="local")
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    result: dict[str, Any] = {
        "machine": {"python": platform.python_version(), "platform": platform.platform()},
        "accuracy": accuracy(args.set, misses=args.misses),
    }
    if args.speed:
        result["speed"] = speed(args.drivers.split(","), memories=args.memories)
    text = json.dumps(result, indent=2)
    if args.json:
        args.json.write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
