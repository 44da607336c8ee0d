"""The rule pages: one per rule, generated from its docstring, with examples that are tested."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

from mainsdk_memory.checks import RULES, Rule, check_source, docs_url
from mainsdk_memory.checks._docs import example_blocks, index_page, rule_page

DOCS = Path(__file__).resolve().parent.parent / "docs" / "rules"
SECTIONS = ("## What it does", "## Why is this bad?", "## Example", "## Use instead", "## Added in")
CODES = sorted(RULES)


def test_docs_rules_has_exactly_one_page_per_rule_and_an_index() -> None:
    pages = {p.stem for p in DOCS.glob("*.md")} - {"README"}
    assert pages == set(RULES)
    assert (DOCS / "README.md").read_text() == index_page()


@pytest.mark.parametrize("code", CODES)
def test_page_is_generated_from_the_docstring(code: str) -> None:
    page = (DOCS / f"{code}.md").read_text()
    assert page == rule_page(RULES[code]), (
        f"docs/rules/{code}.md is stale: run `memory-check --write-docs docs/rules`"
    )


@pytest.mark.parametrize("code", CODES)
def test_docstring_documents_what_why_examples_and_version(code: str) -> None:
    rule = RULES[code]
    doc = rule.documentation()
    for section in SECTIONS:
        assert section in doc, f"{code} misses {section!r}"
    assert doc.split("## Added in", 1)[1].split()[0] == rule.since
    assert "## How to suppress" in rule_page(rule)
    assert re.fullmatch(r"[a-z]+(-[a-z]+)+", rule.name)


@pytest.mark.parametrize("code", CODES)
def test_each_rule_is_one_module_named_for_it(code: str) -> None:
    rule = RULES[code]
    module = importlib.import_module(rule.__module__)
    assert module.__name__.startswith("mainsdk_memory.checks.rules.")
    assert module.__name__.rsplit(".", 1)[1] == rule.name.replace("-", "_")
    rules_here = [
        v for v in vars(module).values()
        if isinstance(v, type) and issubclass(v, Rule) and v.__module__ == module.__name__
    ]
    assert rules_here == [rule]
    assert (module.__doc__ or "").startswith(f"{code}: ")


@pytest.mark.parametrize("code", CODES)
def test_bad_example_fires_exactly_on_its_flagged_lines(code: str) -> None:
    bad, _ = example_blocks(RULES[code])
    flagged = [n for n, line in enumerate(bad.splitlines(), 1) if "# flagged" in line]
    found = check_source(bad, "example.py")
    assert flagged
    assert [d.line for d in found] == flagged
    assert {d.code for d in found} == {code}


@pytest.mark.parametrize("code", CODES)
def test_good_example_is_silent_for_every_rule(code: str) -> None:
    _, good = example_blocks(RULES[code])
    assert check_source(good, "example.py") == []


def test_every_diagnostic_links_to_its_page() -> None:
    bad, _ = example_blocks(RULES["MAIN-MEM-0022"])
    (diagnostic,) = check_source(bad, "example.py")
    assert diagnostic.url == docs_url("MAIN-MEM-0022")
    assert diagnostic.url.endswith("/docs/rules/MAIN-MEM-0022.md")
    assert diagnostic.text().endswith(f"<{diagnostic.url}>")
    for code in CODES:
        assert docs_url(code).endswith(f"docs/rules/{code}.md")


def test_the_configuration_shown_in_the_index_is_accepted(tmp_path: Path) -> None:
    from mainsdk_memory.checks import load_config
    from mainsdk_memory.checks._runner import resolve_codes

    block = re.findall(r"```toml\n(.*?)```", index_page(), flags=re.S)[0]
    (tmp_path / "pyproject.toml").write_text(block)
    config = load_config(tmp_path / "pyproject.toml")
    assert config.paths == ("src",)
    assert resolve_codes(config.select) == set(RULES)
    assert config.soft_erase_schemes == ("mem0",)
    assert dict(config.per_file_ignores) == {"scripts/*": ("MAIN-MEM-0026",)}
