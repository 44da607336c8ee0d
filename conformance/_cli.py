"""The ``memory-conformance`` command: run the suite on a driver given as ``module:factory``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from mainsdk_memory._version import add_version_argument

from ._runner import DEFAULT_SEED, FactoryError, load_factory, run_suite

__all__ = ["main"]

EXIT_PASSED = 0
EXIT_FAILED = 1
EXIT_USAGE = 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="memory-conformance",
        description=(
            "Check that a mainsdk-memory driver does what its Capabilities declare. Exit status: "
            "0 when every declared capability holds, 1 when one does not, 2 on a usage error."
        ),
    )
    parser.add_argument(
        "--driver",
        required=True,
        metavar="MODULE:FACTORY",
        help=(
            "a callable that takes an empty folder (pathlib.Path) and returns a driver on a new "
            "store there, e.g. mainsdk_memory.drivers.local:LocalDriver"
        ),
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument(
        "--workers",
        type=int,
        default=1,
        metavar="N",
        help="run N checks at once, each on its own store (default 1; the factory must be "
        "thread-safe)",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=DEFAULT_SEED,
        help=f"seed of the synthetic data (default {DEFAULT_SEED}); a seed reproduces a run",
    )
    add_version_argument(parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the suite as the command line asks; return the exit status."""
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exit_:  # argparse has printed the usage
        return EXIT_PASSED if exit_.code == 0 else EXIT_USAGE
    try:
        factory = load_factory(args.driver)
    except FactoryError as exc:
        print(f"memory-conformance: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.workers < 1:
        print("memory-conformance: --workers must be at least 1", file=sys.stderr)
        return EXIT_USAGE
    report = run_suite(factory, seed=args.seed, name=args.driver, workers=args.workers)
    print(report.to_json_text() if args.json else report.summary())
    return EXIT_PASSED if report.passed else EXIT_FAILED
