"""The ``memory-check`` command: check paths, print diagnostics, exit 0, 1 or 2."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from mainsdk_memory._version import add_version_argument
from mainsdk_memory.checks._config import Config, ConfigError, find_config, load_config
from mainsdk_memory.checks._docs import rule_page, write_pages
from mainsdk_memory.checks._output import FORMATS, render
from mainsdk_memory.checks._rule import RULES
from mainsdk_memory.checks._runner import Report, check_paths, resolve_codes

__all__ = ["main"]

USAGE_ERROR = 2


def _codes(values: Sequence[str] | None) -> list[str]:
    return [c for value in values or () for c in value.split(",") if c.strip()]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="memory-check",
        description=(
            "Find misuse of mainsdk-memory in Python code before it ships: recalled text in "
            "system prompts, soft-erase drivers holding personal data, untrusted text "
            "remembered as trusted, and more. Reads code with ast; never imports or runs it."
        ),
        epilog="Exit status: 0 clean, 1 findings, 2 usage error or a file that was not checked.",
    )
    parser.add_argument("paths", nargs="*", type=Path,
                        help="files or folders (default: `paths` in [tool.memory-check], or .)")
    parser.add_argument("--format", choices=FORMATS, default="text", help="output format")
    parser.add_argument("--select", action="append", metavar="CODES",
                        help="only these codes or prefixes, comma-separated")
    parser.add_argument("--ignore", action="append", metavar="CODES",
                        help="skip these codes or prefixes, comma-separated")
    parser.add_argument("--config", type=Path, metavar="PYPROJECT",
                        help="use this pyproject.toml instead of the nearest one")
    parser.add_argument("--output", "-o", type=Path, metavar="FILE",
                        help="write the report to FILE instead of standard output")
    parser.add_argument("--list-rules", action="store_true", help="list the rules and exit")
    parser.add_argument("--explain", metavar="CODE", help="print a rule's documentation")
    parser.add_argument("--write-docs", type=Path, metavar="FOLDER",
                        help="write every rule's page (docs/rules) and exit")
    parser.add_argument("--quiet", "-q", action="store_true", help="no summary on stderr")
    add_version_argument(parser)
    return parser


def _config(args: argparse.Namespace) -> Config:
    if args.config is not None:
        return load_config(args.config)
    start = args.paths[0] if args.paths else Path.cwd()
    found = find_config(start)
    return load_config(found) if found else Config(root=Path.cwd().resolve())


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``memory-check`` with ``argv`` (default: the command line); return the exit status."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.list_rules:
        for code, rule in sorted(RULES.items()):
            print(f"{code}  {rule.name:40}  {rule.summary()}")
        return 0
    if args.explain:
        explained = RULES.get(args.explain.strip().upper())
        if explained is None:
            parser.error(f"no rule {args.explain!r}; see --list-rules")
        sys.stdout.write(rule_page(explained))
        return 0
    if args.write_docs:
        for path in write_pages(args.write_docs):
            sys.stderr.write(f"wrote {path}\n")
        return 0
    try:
        config = _config(args)
        select, ignore = _codes(args.select), _codes(args.ignore)
        resolve_codes([*select, *ignore, *config.select, *config.ignore])
    except (ConfigError, ValueError) as exc:
        parser.error(str(exc))
    if args.paths:
        paths = list(args.paths)
        missing = [str(p) for p in paths if not p.exists()]
        if missing:
            parser.error(f"no such file or folder: {', '.join(missing)}")
    elif config.paths:
        # configured folders that do not exist (yet) are skipped, and said so
        paths = [config.root / p for p in config.paths if (config.root / p).exists()]
        for skipped in sorted(set(config.paths) - {str(p.relative_to(config.root))
                                                   for p in paths}):
            sys.stderr.write(f"memory-check: skipping {skipped!r} from [tool.memory-check] "
                             "paths: it does not exist\n")
        if not paths:
            parser.error("none of the [tool.memory-check] paths exist")
    else:
        paths = [Path(".")]
    report = check_paths(paths, config, select=select, ignore=ignore)
    chosen = [RULES[c] for c in sorted(resolve_codes(select or config.select or ["ALL"]))]
    text = render(report, args.format, chosen)
    if args.output:
        args.output.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    if not args.quiet:
        _summary(report)
    return report.exit_code


def _summary(report: Report) -> None:
    count = len(report.diagnostics)
    if count:
        noun = "diagnostic" if count == 1 else "diagnostics"
        sys.stderr.write(f"memory-check: {count} {noun} in {report.files} files.\n")
    else:
        sys.stderr.write(f"memory-check: {report.files} files checked, all clean.\n")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
