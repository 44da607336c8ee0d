"""The rule pages of docs/rules/, generated from the rules' docstrings.

``memory-check --explain CODE`` prints a page; ``memory-check --write-docs docs/rules``
writes them all, with an index. A test keeps the committed pages equal to what this module
generates, and runs each page's bad and good examples.
"""

from __future__ import annotations

import re
from pathlib import Path

from mainsdk_memory.checks._rule import RULES, SECURITY_SEVERITY, Rule

__all__ = ["example_blocks", "index_page", "rule_page", "write_pages"]

_BLOCK = re.compile(r"```python\n(.*?)```", re.S)

_USAGE = """
## Running it

```text
memory-check [PATHS...] [--format text|json|sarif] [--output FILE] [--select CODES]
             [--ignore CODES] [--config PYPROJECT] [--quiet]
memory-check --list-rules | --explain CODE | --write-docs FOLDER
```

- Output lines are `path:line:col: CODE message <docs URL>`; `--format sarif` writes SARIF
  2.1.0 for code-scanning UIs, `--format json` one object with every diagnostic.
- Exit status: 0 clean, 1 with findings, 2 for a usage error or a file that could not be read
  or parsed (reported as MAIN-MEM-0900, never a crash).
- `--select` and `--ignore` take codes or prefixes (`MAIN-MEM-002`), comma-separated.
- Configuration lives under `[tool.memory-check]` in the nearest pyproject.toml above the first
  path:

```toml
[tool.memory-check]
paths = ["src"]                               # checked when no path is given
select = ["MAIN-MEM"]                         # default: every rule
ignore = []
exclude = ["src/generated"]
per-file-ignores = { "scripts/*" = ["MAIN-MEM-0026"] }
soft-erase-schemes = ["mem0"]                 # MAIN-MEM-0020
soft-erase-drivers = ["VendorArchiveDriver"]  # MAIN-MEM-0020
untrusted-calls = ["myapp.scraper.fetch_page"]  # MAIN-MEM-0023
```

- On one line: `# memory-check: ignore[MAIN-MEM-0022] <why it is safe>`.
- It reads code with Python's `ast` module and never imports or runs it.

## In CI: code scanning and pre-commit

Each rule in the SARIF output carries `properties.security-severity` (the score in the table
above: critical 9.5, high 8.0, medium 5.5, low 3.0) and `properties.tags` (`security`, the
area, the CWE), which GitHub code scanning uses to rank and file its alerts. This workflow
checks every push and pull request and uploads the findings to the repository's Security tab:

```yaml
# .github/workflows/memory-check.yml
name: memory-check
on: [push, pull_request]
permissions:
  contents: read
  security-events: write  # upload-sarif writes the code-scanning alerts
jobs:
  memory-check:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-python@v5
        with:
          python-version: "3.12"
      - run: pip install mainsdk-memory
      - name: memory-check
        # exit status 1 (findings) must not skip the upload that shows them
        run: memory-check --format sarif --output memory-check.sarif
        continue-on-error: true
      - uses: github/codeql-action/upload-sarif@v3
        with:
          sarif_file: memory-check.sarif
          category: memory-check
```

Leave out `continue-on-error` (and keep the upload with `if: always()`) to fail the job on a
finding as well. Before a commit, with [pre-commit](https://pre-commit.com), the hook this
repository declares in `.pre-commit-hooks.yaml` checks the staged Python files:

```yaml
# .pre-commit-config.yaml
repos:
  - repo: https://github.com/mainsdk/mainsdk-memory
    rev: v0.1.0  # the release you pin: its tag, or a commit sha
    hooks:
      - id: memory-check
```

pre-commit names the files, and a file given by name is always checked, whatever `paths` and
`exclude` say (`per-file-ignores` still apply): leave files out with the hook's own `exclude:`
regular expression.
"""


def _suppress_section(rule: type[Rule]) -> str:
    if not rule.suppressible:
        return (
            "## How to suppress\n\n"
            "It cannot be suppressed. Fix the file, or leave it out of the check with `exclude`\n"
            "under `[tool.memory-check]` in pyproject.toml.\n"
        )
    code = rule.code
    return (
        "## How to suppress\n\n"
        "On one line, when you have checked that it is safe, say why in the same comment:\n\n"
        "```text\n"
        f"# memory-check: ignore[{code}] <why this is safe>\n"
        "```\n\n"
        "For some files, or the whole project, in pyproject.toml:\n\n"
        "```toml\n"
        "[tool.memory-check]\n"
        f'per-file-ignores = {{ "scripts/*" = ["{code}"] }}\n'
        f'ignore = ["{code}"]\n'
        "```\n\n"
        f"or on the command line: `memory-check --ignore {code}`.\n"
    )


def rule_page(rule: type[Rule]) -> str:
    """The Markdown page of one rule: its docstring, a header, and how to suppress it."""
    source = f"{rule.__module__}.{rule.__qualname__}"
    return (
        f"<!-- Generated from the docstring of {source} by "
        "`memory-check --write-docs docs/rules`; edit the docstring, not this page. -->\n\n"
        f"# {rule.code}: {rule.summary().rstrip('.')}\n\n"
        f"Rule name: `{rule.name}`. Severity: {rule.severity} (SARIF security-severity "
        f"{SECURITY_SEVERITY[rule.severity]}).\n\n"
        f"{rule.documentation()}\n"
        f"{_suppress_section(rule)}"
    )


def index_page() -> str:
    """The list of every rule, linking to its page."""
    rows = "".join(
        f"| [{code}]({code}.md) | `{rule.name}` | {rule.severity} | {rule.summary()} |\n"
        for code, rule in sorted(RULES.items())
    )
    return (
        "<!-- Generated by `memory-check --write-docs docs/rules`; edit the rules' docstrings. -->"
        "\n\n# memory-check rules\n\n"
        "`memory-check [PATHS...]` reads Python code with the standard `ast` module, without\n"
        "importing or running it, and reports these mistakes in how code uses mainsdk-memory.\n"
        "Every diagnostic links to its page here.\n\n"
        "| Code | Name | Severity | What it reports |\n| --- | --- | --- | --- |\n"
        f"{rows}"
        f"{_USAGE}"
    )


def example_blocks(rule: type[Rule]) -> tuple[str, str]:
    """The bad example (under "Example") and the good one (under "Use instead")."""
    doc = rule.documentation()
    bad_section = doc.split("## Example", 1)[1].split("\n## ", 1)[0]
    good_section = doc.split("## Use instead", 1)[1].split("\n## ", 1)[0]
    return _BLOCK.findall(bad_section)[0], _BLOCK.findall(good_section)[0]


def write_pages(folder: Path) -> list[Path]:
    """Write every rule's page and the index into ``folder``; return the paths written."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for code, rule in sorted(RULES.items()):
        page = folder / f"{code}.md"
        page.write_text(rule_page(rule), encoding="utf-8")
        written.append(page)
    index = folder / "README.md"
    index.write_text(index_page(), encoding="utf-8")
    written.append(index)
    return written
