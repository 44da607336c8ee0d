"""How fast memory-check reads a large tree: lines per second, stated, not asserted.

Writes a synthetic project of about 100,000 lines into a temporary folder — every module uses
mainsdk-memory (stores, handles, tenants, prompts, logging, web calls), so the data-flow engine
runs on all of it, the worst case — then times ``check_paths`` on it (parse, index, every rule)
and prints lines per second: wall clock as a user sees it, and CPU time of one process (which a
busy machine does not inflate) beside the CPU time of ``ast.parse`` alone, the floor. Run it
with::

    .venv/bin/python benchmarks/memory_check_speed.py [--lines 100000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import ast
import tempfile
import time
from pathlib import Path

from mainsdk_memory.checks import Config, check_paths
from mainsdk_memory.checks import _runner as runner

MODULE = '''"""Synthetic module {index}: an agent that uses memory."""

import logging
import os

import httpx
from mainsdk_memory import Memory, ScopedMemory, Source, tenant

log = logging.getLogger(__name__)
memory = Memory.open("local:/srv/memories", keys=os.environ["MEMORY_KEYS"], app="app{index}")


class Agent{index}:
    """Answers questions with what it remembers."""

    def __init__(self, handle: ScopedMemory) -> None:
        self.handle = handle
        self.notes: list[str] = []

    def facts(self, question: str) -> str:
        hits = self.handle.recall(question, top_k=5)
        lines = [f"- {{hit.record.text}}" for hit in hits if hit.score > 0.2]
        return "\\n".join(lines)

    def prompt(self, question: str) -> list[dict[str, str]]:
        block = self.handle.context(question)
        return [
            {{"role": "system", "content": "You answer briefly."}},
            {{"role": "user", "content": block + "\\n\\n" + question}},
        ]

    def learn(self, url: str) -> None:
        page = httpx.get(url, timeout=5).text
        self.handle.remember(page[:500], kind="note", source=Source.web(url))
        log.info("learned from %s", url)

'''

FUNCTION = '''
def helper_{index}_{n}(person: str, question: str, limit: int = 3) -> str:
    """Helper {n}."""
    with tenant.use("acme"):
        handle = memory.acting_for(person, agent="bot-{n}")
        agent = Agent{index}(handle)
        text = agent.facts(question)
        if len(text) > limit:
            text = text[:limit]
        else:
            text = text.strip()
        parts = []
        for word in text.split():
            parts.append(word.upper())
        summary = " ".join(parts)
        receipt = handle.forget("mem_aaaaaaaaaaaaaaaaaaaaaaaaaa") if limit < 0 else None
        return summary if receipt is None else receipt.token

'''


def write_tree(root: Path, target_lines: int) -> int:
    """Write modules until about ``target_lines`` lines; return the exact count."""
    lines = 0
    index = 0
    while lines < target_lines:
        package = root / f"pkg{index // 50}"
        package.mkdir(exist_ok=True)
        text = MODULE.format(index=index) + "".join(
            FUNCTION.format(index=index, n=n) for n in range(12)
        )
        (package / f"agent_{index}.py").write_text(text)
        lines += text.count("\n")
        index += 1
    return lines


def main() -> None:
    """Write the tree, check it ``--repeat`` times, print the best lines per second."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="memory-check-bench-") as tmp:
        root = Path(tmp)
        lines = write_tree(root, args.lines)
        best = float("inf")
        for _ in range(args.repeat):
            start = time.perf_counter()
            report = check_paths([root], Config(root=root))
            best = min(best, time.perf_counter() - start)
        # CPU time of one process is what a busy machine cannot inflate: the same check with
        # workers off, and parsing alone (the floor), measured with time.process_time
        runner._PARALLEL_MIN_FILES = 10**9
        start = time.process_time()
        check_paths([root], Config(root=root))
        single = time.process_time() - start
        sources = [path.read_text() for path in sorted(root.rglob("*.py"))]
        start = time.process_time()
        for source in sources:
            ast.parse(source)
        parse_only = time.process_time() - start
        print(f"memory-check: {report.files} files, {report.lines} lines "
              f"({lines} written), {len(report.diagnostics)} diagnostics")
        print(f"wall clock, best of {args.repeat} (workers on): {best:.2f} s, "
              f"{report.lines / best:,.0f} lines per second")
        print(f"CPU time, one process: {single:.2f} s, "
              f"{report.lines / single:,.0f} lines per second")
        print(f"CPU time, ast.parse alone: {parse_only:.2f} s, "
              f"{report.lines / parse_only:,.0f} lines per second")

if __name__ == "__main__":
    main()
