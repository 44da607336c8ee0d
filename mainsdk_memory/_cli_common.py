"""What the ``memory`` commands share: the arguments naming a memory store."""

from __future__ import annotations

import argparse
from pathlib import Path

__all__ = ["store_arguments"]


def store_arguments(parser: argparse.ArgumentParser) -> None:
    """``--store``, ``--keys`` and ``--app``: the memory store a command opens."""
    parser.add_argument("--store", required=True, help="the memory store URL (local:PATH, …)")
    parser.add_argument("--keys", required=True, type=Path, help="the key store folder")
    parser.add_argument("--app", required=True, help="the app whose memory this is")
