"""Peak resident memory of one process that opens a store and recalls from it.

Run by :mod:`benchmarks.speed` in a fresh interpreter so nothing else of the benchmark counts::

    python -m benchmarks.rss --url local:PATH --keys KEYS --person P --agent A --queries '["q"]'
    python -m benchmarks.rss ... --embedder hashing-384     # hybrid recall: vectors opened too
    python -m benchmarks.rss ... --embedder default         # Memory.open with no embedder option

``--embedder none`` (the default) opens with ``embedder=None`` (text only); ``default`` leaves
the option out, as ``pip install mainsdk-memory`` users do (``StaticEmbedder``, ADR 0083).
``--ranking relevance`` passes ``ranking="relevance"`` to each recall.

Prints one JSON line: peak RSS (``VmHWM`` from /proc/self/status, else ``ru_maxrss``) after the
imports, and after the recalls (the driver then holds every row of the person in memory).
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path

__all__ = ["main", "peak_rss_mib"]


def peak_rss_mib() -> float:
    """This process's peak resident set size so far, in MiB."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024.0, 1)
    except OSError:
        pass
    # ru_maxrss is in KiB on Linux, bytes on macOS.
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(peak / (1024.0 * 1024.0 if sys.platform == "darwin" else 1024.0), 1)


def main(argv: list[str] | None = None) -> int:
    """Open, recall, print the peaks as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--keys", required=True)
    parser.add_argument("--person", required=True)
    parser.add_argument("--agent", required=True)
    parser.add_argument("--queries", required=True, help="a JSON list of query strings")
    parser.add_argument("--embedder", choices=["none", "hashing-384", "default"],
                        default="none",
                        help="none: embedder=None (text only); hashing-384: the stand-in "
                             "(hybrid recall: every vector of the person is opened and kept); "
                             "default: no embedder option (the default StaticEmbedder)")
    parser.add_argument("--ranking", choices=["signals", "relevance"], default=None,
                        help="what each recall passes as ranking= (default: nothing)")
    args = parser.parse_args(argv)

    from benchmarks.stores import APP, TENANT, stand_in_embedder
    from mainsdk_memory import Memory, tenant

    options: dict[str, object] = {}
    if args.embedder == "none":
        options["embedder"] = None
    elif args.embedder == "hashing-384":
        options["embedder"] = stand_in_embedder()
    recall_options = {} if args.ranking is None else {"ranking": args.ranking}
    after_import = peak_rss_mib()
    started = time.perf_counter()
    with Memory.open(args.url, keys=args.keys, app=APP, **options) as memory, \
            tenant.use(TENANT):
        opened_s = time.perf_counter() - started
        handle = memory.acting_for(args.person, agent=args.agent)
        for query in json.loads(args.queries):
            handle.recall(query, top_k=10, **recall_options)
        embedder = memory.embedder
    print(json.dumps({
        "embedder": None if embedder is None else embedder.name,
        "after_import_mib": after_import,
        "peak_mib": peak_rss_mib(),
        "open_s": round(opened_s, 3),
        "open_and_recall_s": round(time.perf_counter() - started, 2),
    }))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
