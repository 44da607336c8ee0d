"""Test embedders shared by the test files (imported by module name, like ``_postgres``)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


class ModelEmbedder:
    """An embedder that says it runs a model, and records every text it is given."""

    name = "recording-model/1"
    dimensions = 4
    uses_model = True

    def __init__(self) -> None:
        self.seen: list[str] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.seen.extend(texts)
        return np.tile(np.array([0.5, 0.5, 0.5, 0.5], dtype=np.float32), (len(texts), 1))
