"""memory-check: a static linter that catches misuse of mainsdk-memory before it ships.

It reads Python code with the standard :mod:`ast` module and never imports or runs it. Each
rule is one module under ``rules/``, registered by its code in :data:`RULES`; its docstring is
its documentation (``docs/rules/<code>.md``). Use it from the command line::

    memory-check src/ --format sarif -o memory-check.sarif

or from Python::

    from mainsdk_memory.checks import check_source
    for diagnostic in check_source(code):
        print(diagnostic.text())
"""

from mainsdk_memory.checks import rules
from mainsdk_memory.checks._cli import main
from mainsdk_memory.checks._config import Config, ConfigError, find_config, load_config
from mainsdk_memory.checks._diagnostic import Diagnostic, Finding, docs_url
from mainsdk_memory.checks._rule import RULES, Module, Rule, Settings, TaintRule
from mainsdk_memory.checks._runner import Report, check_paths, check_source

__all__ = [
    "RULES",
    "Config",
    "ConfigError",
    "Diagnostic",
    "Finding",
    "Module",
    "Report",
    "Rule",
    "Settings",
    "TaintRule",
    "check_paths",
    "check_source",
    "docs_url",
    "find_config",
    "load_config",
    "main",
    "rules",
]
