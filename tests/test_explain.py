"""Error links that work from a wheel: an absolute URL in every message, the page offline.

Every error message ends with its code and the published URL of its section of
docs/errors.md (one base, :mod:`mainsdk_memory._urls`); ``memory explain CODE`` prints that
section from the copy shipped in the package (tests/test_wheel.py checks it in a fresh install)
or, from a checkout, from docs/errors.md itself.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import mainsdk_memory
from mainsdk_memory import InvalidInputError, MemorySDKError
from mainsdk_memory._cli import main
from mainsdk_memory._cli_explain import errors_page, explain, sections
from mainsdk_memory._errors import DOCS
from mainsdk_memory._urls import DOCS_URL, HOME
from mainsdk_memory.checks import docs_url

REPO = Path(__file__).resolve().parents[1]
PAGE = (REPO / "docs" / "errors.md").read_text(encoding="utf-8")


def _codes() -> set[str]:
    return {e.code for e in _errors()}


def test_messages_link_to_the_published_section_of_their_code() -> None:
    error = mainsdk_memory.ConfigurationError("The URL is not usable.")
    assert str(error) == (
        "The URL is not usable. [MAIN-MEM-E070; see "
        "https://github.com/mainsdk/mainsdk-memory/blob/main/docs/errors.md#main-mem-e070]"
    )
    assert DOCS == f"{HOME}/blob/main/docs/errors.md" == f"{DOCS_URL}errors.md"


def _errors() -> list[type[MemorySDKError]]:
    values = [getattr(mainsdk_memory, name) for name in dir(mainsdk_memory)]
    return [v for v in values if isinstance(v, type) and issubclass(v, MemorySDKError)]


def test_every_link_of_a_message_has_its_anchor_on_the_page() -> None:
    for cls in _errors():
        error = cls.__new__(cls)  # some take more than a message; __str__ reads only these
        error.message = cls.default_message
        link = re.search(r"; see (\S+)\]$", str(error))
        assert link, cls
        url, anchor = link.group(1).split("#")
        assert url == DOCS
        assert anchor == cls.code.lower()
        assert f'<a id="{anchor}"></a>' in PAGE, cls.code


def test_rule_links_share_the_base() -> None:
    assert docs_url("MAIN-MEM-0022") == f"{DOCS_URL}rules/MAIN-MEM-0022.md"


def test_in_a_checkout_the_page_is_docs_errors_md() -> None:
    assert errors_page() == PAGE


def test_every_error_code_has_a_section() -> None:
    known = sections(PAGE)
    for code in _codes():
        assert code in known, code
        assert known[code].startswith(f"## {code}\n")
        assert f'<a id="{code.lower()}"></a>' in known[code]
    # a section ends where the next one starts
    assert "## MAIN-MEM-E001" not in known["MAIN-MEM-E000"]


def test_memory_explain_prints_the_section_of_a_code(capsys: pytest.CaptureFixture[str]) -> None:
    for spelling in ("E070", "e070", "MAIN-MEM-E070", "main-mem-e070"):
        assert main(["explain", spelling]) == 0
        out = capsys.readouterr().out
        assert out.startswith("## MAIN-MEM-E070\n")
        assert "`ConfigurationError`" in out
        assert "## MAIN-MEM-E080" not in out
        assert out.endswith(f"Online: {DOCS}#main-mem-e070\n")
    assert explain("0020").startswith("## MAIN-MEM-0020\n")


def test_memory_explain_without_a_code_lists_every_code(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["explain"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert {line.split()[0] for line in lines} >= _codes()
    assert "MAIN-MEM-E070  ConfigurationError" in lines


def test_an_unknown_code_is_a_typed_error_that_says_what_to_do(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(InvalidInputError, match="memory explain"):
        explain("E999")
    assert main(["explain", "E999"]) == 1
    assert "no error code MAIN-MEM-E999" in capsys.readouterr().err
