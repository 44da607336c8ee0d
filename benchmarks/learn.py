"""``learn`` on a held-out conversation set: extraction recall and precision, and its speed.

Not a test. Issue 16's measures, reported in docs/benchmarks.md:

- **Extraction** on :mod:`benchmarks.learn_set` (held out: written for measurement by an
  author who had not read the extractor nor its tuning set, never tuned on). Each
  conversation goes through the public API on a real store (``local:`` by default, in a
  temporary folder, the default embedder, formation on): a fresh person, an agent handle with
  a session (``memory.acting_for(person, agent="bench", session="s1")``), then
  ``handle.learn(messages, at=conversation["at"], extractor=...)``.

  A labelled fact is **found** when a returned record's text contains every one of its
  ``must`` strings (case-insensitive). **Precision** counts the returned records: right when
  the record matches a labelled fact of its conversation, a false positive when it matches
  none; a ``duplicate`` outcome of a record already counted in the same call counts neither
  way. Recall is reported overall, per labelled kind and per labelled role (the turn the fact
  is in); precision overall, per the record's kind and per the role of the turn it came from
  (its ``source.ref``, ``turn:N``). Also: the memories formed from chit-chat-only
  conversations (there should be none), whether a found fact came from its labelled turn with
  its labelled kind, the trust of the records per role, and the formation outcomes.
- **Speed**: ``learn`` timed call by call (``time.perf_counter`` around each call, formation
  and the store's writes included) over the whole set, ``--rounds`` times after one warm-up
  call, each round on fresh persons of the same store: turns per second and milliseconds per
  1,000 turns, for all turns and for the user's turns only (and ms per memory returned),
  with the machine (CPU model and cores from ``/proc/cpuinfo``, load average at the start and
  the end). The first, scored pass is timed too and reported apart (it pays the imports and
  the first-use caches). The timed calls on chit-chat-only conversations are also reported
  apart: they remember nothing, so they time reading, checking and extracting alone. The
  result names the learning modules measured (a hash of each).

::

    .venv/bin/python -m benchmarks.learn                        # the set, 3 timed rounds
    .venv/bin/python -m benchmarks.learn --misses --json out.json
    .venv/bin/python -m benchmarks.learn --quick                # 3 conversations, 1 round

The exit status is 0 whatever the scores; non-zero only when the run itself fails.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.learn_set import CONVERSATIONS, KINDS, QUICK, ROLES
from benchmarks.machine import describe, load_average
from mainsdk_memory import Memory, tenant

__all__ = ["Returned", "main", "returned", "run", "score", "speed_of", "table"]

TENANT = "bench"
AGENT = "bench"
SESSION = "s1"
SCHEMA = 1
#: What a record's ``source.kind`` says of the role of its turn, when its ref names none.
_ROLE_OF_SOURCE = {"person": "user", "agent": "assistant", "model": "assistant", "tool": "tool",
                   "mcp": "tool", "web": "tool", "import": "tool"}

Learn = Callable[[Any, dict[str, Any]], Sequence[Any]]
"""How one conversation is learnt: ``(handle, conversation) -> records``."""


@dataclass(frozen=True, slots=True)
class Returned:
    """What the scoring reads of one returned record."""

    id: str
    text: str
    kind: str
    trust: str
    outcome: str | None
    target: str | None
    turn: int | None
    """The message it came from (``source.ref`` ``turn:N``), if the record says."""
    source: str


def returned(record: Any) -> Returned:
    """The scored view of a :class:`~mainsdk_memory.MemoryRecord`."""
    formation = record.formation
    ref = record.source.ref or ""
    turn = int(ref[5:]) if ref.startswith("turn:") and ref[5:].isdigit() else None
    return Returned(
        id=record.id,
        text=record.text,
        kind=str(record.kind),
        trust=str(record.trust),
        outcome=None if formation is None else formation.outcome,
        target=None if formation is None else formation.target,
        turn=turn,
        source=record.source.kind,
    )


def _matches(text: str, must: Sequence[str]) -> bool:
    folded = text.casefold()
    return all(part.casefold() in folded for part in must)


def _ratio(part: int, whole: int) -> float | None:
    return None if whole == 0 else round(part / whole, 3)


def _role_of(record: Returned, messages: Sequence[dict[str, Any]]) -> str:
    if record.turn is not None and 0 <= record.turn < len(messages):
        return str(messages[record.turn]["role"])
    return _ROLE_OF_SOURCE.get(record.source, "unknown")


def score(
    conversations: Sequence[dict[str, Any]],
    results: Sequence[Sequence[Returned]],
    *,
    misses: bool = False,
) -> dict[str, Any]:
    """Recall and precision of ``results`` (one list of records per conversation)."""
    assert len(conversations) == len(results)
    labelled: Counter[str] = Counter()
    found: Counter[str] = Counter()
    counted: Counter[str] = Counter()
    right: Counter[str] = Counter()
    outcomes: Counter[str] = Counter()
    trust: dict[str, Counter[str]] = {}
    same_turn = same_kind = duplicates = chit_records = 0
    missed: list[dict[str, Any]] = []
    wrong: list[dict[str, Any]] = []
    for conversation, records in zip(conversations, results, strict=True):
        facts = conversation["facts"]
        messages = conversation["messages"]
        hit: list[Returned | None] = [None] * len(facts)
        seen: set[str] = set()
        for record in records:
            outcomes[record.outcome or "none"] += 1
            if record.outcome == "duplicate" and (record.id in seen or record.target in seen):
                duplicates += 1  # the same memory again: neither right nor wrong
                continue
            seen.add(record.id)
            role = _role_of(record, messages)
            trust.setdefault(role, Counter())[record.trust] += 1
            good = [i for i, fact in enumerate(facts) if _matches(record.text, fact["must"])]
            for key in ("all", f"kind:{record.kind}", f"role:{role}"):
                counted[key] += 1
                right[key] += bool(good)
            for i in good:  # the record from the labelled turn, if there is one
                held = hit[i]
                if held is None or (held.turn != facts[i]["turn"]
                                    and record.turn == facts[i]["turn"]):
                    hit[i] = record
            if not good:
                chit_records += not facts
                if misses:
                    wrong.append({"conversation": conversation["name"], "turn": record.turn,
                                  "role": role, "kind": record.kind, "text": record.text})
        for fact, best in zip(facts, hit, strict=True):
            keys = ("all", f"kind:{fact['kind']}", f"role:{fact['role']}")
            for key in keys:
                labelled[key] += 1
                found[key] += best is not None
            if best is None:
                if misses:
                    missed.append({"conversation": conversation["name"], "turn": fact["turn"],
                                   "role": fact["role"], "kind": fact["kind"],
                                   "must": list(fact["must"]),
                                   "formed_from_turn": [r.text for r in records
                                                        if r.turn == fact["turn"]]})
                continue
            same_turn += best.turn == fact["turn"]
            same_kind += best.kind == fact["kind"]

    def block(key: str) -> dict[str, Any]:
        return {
            "recall": _ratio(found[key], labelled[key]),
            "found": found[key],
            "labelled": labelled[key],
            "precision": _ratio(right[key], counted[key]),
            "right": right[key],
            "records": counted[key],
        }

    chit = [c for c in conversations if not c["facts"]]
    out: dict[str, Any] = {
        "conversations": len(conversations),
        "labelled_facts": labelled["all"],
        "overall": block("all"),
        "per_kind": {kind: block(f"kind:{kind}") for kind in
                     [*KINDS, *sorted({k[5:] for k in counted if k.startswith("kind:")}
                                      - set(KINDS))]},
        "per_role": {role: block(f"role:{role}") for role in
                     [*ROLES, *sorted({k[5:] for k in counted if k.startswith("role:")}
                                      - set(ROLES))]},
        "chit_chat": {
            "conversations": len(chit),
            "turns": sum(len(c["messages"]) for c in chit),
            "memories_formed": chit_records,
        },
        "found_from_labelled_turn": same_turn,
        "found_with_labelled_kind": same_kind,
        "duplicates_not_counted": duplicates,
        "outcomes": dict(sorted(outcomes.items())),
        "trust_per_role": {role: dict(sorted(c.items())) for role, c in sorted(trust.items())},
    }
    if misses:
        out["missed"] = missed
        out["false_positives"] = wrong
    return out


def _learn(extractor: str) -> Learn:
    def learn(handle: Any, conversation: dict[str, Any]) -> Sequence[Any]:
        records: Sequence[Any] = handle.learn(
            conversation["messages"], at=conversation["at"], extractor=extractor
        )
        return records

    return learn


def speed_of(
    times: Sequence[float], conversations: Sequence[dict[str, Any]], formed: Sequence[int]
) -> dict[str, Any]:
    """Turns per second and ms per 1,000 turns (all turns, user turns) of timed calls.

    ``times[i]`` is one call on ``conversations[i % len(conversations)]``, which returned
    ``formed[i]`` records.
    """
    turns = users = 0
    for i in range(len(times)):
        messages = conversations[i % len(conversations)]["messages"]
        turns += len(messages)
        users += sum(1 for message in messages if message["role"] == "user")
    seconds = sum(times)
    per_call = sorted(t * 1000.0 for t in times)
    return {
        "calls": len(times),
        "turns": turns,
        "user_turns": users,
        "seconds": round(seconds, 3),
        "turns_per_s": round(turns / seconds, 1),
        "user_turns_per_s": round(users / seconds, 1),
        "ms_per_1000_turns": round(seconds * 1000.0 / turns * 1000, 1),
        "ms_per_1000_user_turns": round(seconds * 1000.0 / users * 1000, 1),
        "records": sum(formed),
        "ms_per_record": round(seconds * 1000.0 / sum(formed), 2) if sum(formed) else None,
        "per_call_ms": {
            "p50": round(statistics.median(per_call), 2),
            "p95": round(per_call[min(len(per_call) - 1, int(0.95 * len(per_call)))], 2),
            "max": round(per_call[-1], 2),
        },
    }


def run(
    conversations: Sequence[dict[str, Any]],
    *,
    driver: str = "local",
    extractor: str = "rules",
    rounds: int = 3,
    misses: bool = False,
    learn: Learn | None = None,
) -> dict[str, Any]:
    """Score ``conversations`` once, then time ``rounds`` more passes, on one fresh store."""
    from benchmarks.stores import Workspace

    call = learn or _learn(extractor)
    results: list[list[Returned]] = []
    first: list[float] = []
    timed: list[float] = []
    formed: list[int] = []
    with tempfile.TemporaryDirectory(prefix="learn-") as folder:
        workspace = Workspace(Path(folder))
        url = workspace.new_url(driver)
        memory = Memory.open(url, keys=workspace.keys, app="bench")
        try:
            with tenant.use(TENANT):
                for number, conversation in enumerate(conversations):
                    handle = memory.acting_for(f"person-{number}", agent=AGENT, session=SESSION)
                    started = time.perf_counter()
                    records = call(handle, conversation)
                    first.append(time.perf_counter() - started)
                    results.append([returned(record) for record in records])
                if rounds:
                    warm = memory.acting_for("warm-up", agent=AGENT, session=SESSION)
                    call(warm, conversations[0])
                for round_ in range(rounds):
                    for number, conversation in enumerate(conversations):
                        handle = memory.acting_for(
                            f"speed-{round_}-{number}", agent=AGENT, session=SESSION
                        )
                        started = time.perf_counter()
                        formed.append(len(call(handle, conversation)))
                        timed.append(time.perf_counter() - started)
        finally:
            memory.close()
            workspace.release(url)
            workspace.close()
    speed: dict[str, Any] = {"driver": driver, "rounds": rounds,
                             "first_pass": speed_of(first, conversations,
                                                    [len(r) for r in results])}
    if timed:
        speed["timed"] = speed_of(timed, conversations, formed)
        size = len(conversations)
        per_round = [speed_of(timed[r * size:(r + 1) * size], conversations,
                              formed[r * size:(r + 1) * size])["ms_per_1000_turns"]
                     for r in range(rounds)]
        speed["ms_per_1000_turns_per_round"] = per_round
        # Chit-chat forms nothing: these calls are reading, checking and extracting alone.
        chit = [i for i in range(len(timed)) if not conversations[i % size]["facts"]]
        if chit:
            speed["timed_chit_chat_only"] = speed_of(
                [timed[i] for i in chit], [conversations[i % size] for i in chit],
                [formed[i] for i in chit])
    return {"accuracy": score(conversations, results, misses=misses), "speed": speed}


def _cell(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def table(result: dict[str, Any]) -> str:
    """The result as readable Markdown tables."""
    accuracy, speed = result["accuracy"], result["speed"]
    lines = [
        f"learn, extractor {result['extractor']!r}, on {speed['driver']}: "
        f"{accuracy['conversations']} conversations, {accuracy['labelled_facts']} labelled "
        f"facts ({result['set']['turns']} turns, {result['set']['user_turns']} of the user's)",
        "",
        "| | recall | found / labelled | precision | right / records |",
        "|---|---|---|---|---|",
    ]
    rows = [("overall", accuracy["overall"])]
    rows += [(f"kind {k}", v) for k, v in accuracy["per_kind"].items()]
    rows += [(f"role {k}", v) for k, v in accuracy["per_role"].items()]
    for name, row in rows:
        lines.append(
            f"| {name} | {_cell(row['recall'])} | {row['found']} / {row['labelled']} | "
            f"{_cell(row['precision'])} | {row['right']} / {row['records']} |"
        )
    chit = accuracy["chit_chat"]
    found = accuracy["overall"]["found"]
    lines += [
        "",
        f"Chit-chat only: {chit['memories_formed']} memories formed from "
        f"{chit['conversations']} conversations ({chit['turns']} turns).",
        f"Found facts from their labelled turn: {accuracy['found_from_labelled_turn']} / "
        f"{found}; with their labelled kind: {accuracy['found_with_labelled_kind']} / {found}. "
        f"Duplicates not counted: {accuracy['duplicates_not_counted']}.",
        f"Outcomes: {accuracy['outcomes']}. Trust per role: {accuracy['trust_per_role']}.",
        "",
        "| speed | calls | turns | turns/s | ms / 1,000 turns | user turns/s | "
        "ms / 1,000 user turns | per call p50 / p95 ms | ms per memory |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    labels = {"timed": f"timed, {speed['rounds']} round{'s' * (speed['rounds'] != 1)}",
              "timed_chit_chat_only": "of which chit-chat only (nothing to remember)",
              "first_pass": "first (scored) pass"}
    for name, label in labels.items():
        if name not in speed:
            continue
        s = speed[name]
        lines.append(
            f"| {label} | {s['calls']} | {s['turns']} | {s['turns_per_s']} | "
            f"{s['ms_per_1000_turns']} | {s['user_turns_per_s']} | "
            f"{s['ms_per_1000_user_turns']} | {s['per_call_ms']['p50']} / "
            f"{s['per_call_ms']['p95']} | "
            f"{'n/a' if s['ms_per_record'] is None else s['ms_per_record']} |"
        )
    if "ms_per_1000_turns_per_round" in speed:
        rounds = speed["ms_per_1000_turns_per_round"]
        lines.append(f"\nms per 1,000 turns, round by round: {rounds}")
    machine = result["machine"]
    lines += [
        "",
        f"Machine: {machine['cpu_model']}, {machine['logical_cpus']} logical CPUs "
        f"({machine['physical_cores']} physical cores listed, {machine['usable_cpus']} usable), "
        f"{machine['ram_gib']} GiB, {machine['python']}, {machine['os']}; load average "
        f"{machine['load_average_at_start']} at the start, {machine['load_average_at_end']} at "
        f"the end; {machine['date']}.",
    ]
    return "\n".join(lines)


def _code_versions() -> dict[str, str]:
    """Which extractor was measured: the first 12 hex digits of each learning module's SHA-256."""
    package = Path(__file__).resolve().parents[1] / "mainsdk_memory"
    versions = {}
    for name in ("_learning.py", "_extract.py", "_dates.py"):
        path = package / name
        if path.is_file():
            versions[name] = hashlib.sha256(path.read_bytes()).hexdigest()[:12]
    return versions


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help=f"only {', '.join(QUICK)}, one timed round (the smoke test)")
    parser.add_argument("--driver", choices=("local", "sqlite", "postgresql"), default="local")
    parser.add_argument("--extractor", choices=("rules", "auto", "model"), default="rules",
                        help="'rules' (default): the offline extractor; 'model' needs a model")
    parser.add_argument("--rounds", type=int, default=None,
                        help="timed passes over the set after the scored one (default 3; 1 quick)")
    parser.add_argument("--misses", action="store_true",
                        help="list the facts missed and the false positives")
    parser.add_argument("--json", type=Path, help="also write the result to this file")
    args = parser.parse_args(argv)
    conversations = [c for c in CONVERSATIONS if not args.quick or c["name"] in QUICK]
    rounds = args.rounds if args.rounds is not None else (1 if args.quick else 3)
    machine = describe()
    started = time.perf_counter()
    outcome = run(conversations, driver=args.driver, extractor=args.extractor, rounds=rounds,
                  misses=args.misses)
    machine["load_average_at_end"] = load_average()
    result: dict[str, Any] = {
        "schema": SCHEMA,
        "benchmark": "learn",
        "command": "python -m benchmarks.learn" + (" " + " ".join(argv) if argv else ""),
        "quick": args.quick,
        "extractor": args.extractor,
        "set": {
            "module": "benchmarks.learn_set",
            "conversations": len(conversations),
            "chit_chat_only": sum(1 for c in conversations if not c["facts"]),
            "labelled_facts": sum(len(c["facts"]) for c in conversations),
            "turns": sum(len(c["messages"]) for c in conversations),
            "user_turns": sum(1 for c in conversations for m in c["messages"]
                              if m["role"] == "user"),
        },
        **outcome,
        "code": _code_versions(),
        "seconds": round(time.perf_counter() - started, 1),
        "machine": machine,
    }
    if args.json:
        args.json.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n",
                             encoding="utf-8")
    print(table(result))
    if args.misses:
        accuracy = result["accuracy"]
        print(f"\nMissed ({len(accuracy['missed'])}):")
        for miss in accuracy["missed"]:
            print(f"  {miss['conversation']} turn {miss['turn']} ({miss['role']}, "
                  f"{miss['kind']}): {miss['must']}; formed from that turn: "
                  f"{miss['formed_from_turn']}")
        print(f"\nFalse positives ({len(accuracy['false_positives'])}):")
        for wrong in accuracy["false_positives"]:
            print(f"  {wrong['conversation']} turn {wrong['turn']} ({wrong['role']}, "
                  f"{wrong['kind']}): {wrong['text']!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
