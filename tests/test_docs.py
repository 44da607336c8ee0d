"""The docs match the code: their Python examples run, their example drivers are the files the
tests run, and every error code has its section."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import mainsdk_memory
from mainsdk_memory import MemorySDKError
from mainsdk_memory.keys import KeyStore

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "docs" / "examples"


def _python_blocks(path: Path) -> str:
    return "\n".join(re.findall(r"```python\n(.*?)```", path.read_text(), flags=re.S))


@pytest.mark.parametrize("doc", ["README.md", "docs/quickstart.md"])
def test_python_examples_run(doc: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    code = _python_blocks(ROOT / doc)
    assert "Memory.open" in code
    monkeypatch.chdir(tmp_path)
    KeyStore.create(tmp_path / "keys")  # what `memory keys init --keys …` does
    monkeypatch.setenv("MEMORY_KEYS", str(tmp_path / "keys"))
    namespace: dict[str, object] = {}
    exec(compile(code, doc, "exec"), namespace)  # noqa: S102 - our own documentation
    assert (tmp_path / "memories").is_dir()
    if doc == "README.md":  # its natural question finds the memory that answers it
        hits = namespace["hits"]
        assert isinstance(hits, list)
        assert hits[0].record.text == "Ada prefers WhatsApp over email."


def test_every_error_code_has_a_section_in_the_errors_page() -> None:
    page = (ROOT / "docs" / "errors.md").read_text()
    errors = [getattr(mainsdk_memory, n) for n in dir(mainsdk_memory)]
    codes = {e.code for e in errors if isinstance(e, type) and issubclass(e, MemorySDKError)}
    assert len(codes) >= 13
    for code in codes:
        assert f'<a id="{code.lower()}"></a>' in page


@pytest.mark.parametrize("doc", ["docs/drivers.md", "docs/conformance.md"])
def test_the_driver_pages_show_the_example_files_base_driver_first(doc: str) -> None:
    """A block headed ``# file: NAME.py`` of a file in docs/examples is that file, verbatim
    (so the page and the driver the tests certify cannot drift), and the page shows writing
    a driver on BaseDriver before the full protocol."""
    text = (ROOT / doc).read_text()
    blocks = dict(re.findall(r"```python\n# file: (\S+\.py)\n(.*?)```", text, flags=re.S))
    shown = {name for name in blocks if (EXAMPLES / name).is_file()}
    assert "dict_driver.py" in shown
    for name in shown:
        assert blocks[name] == (EXAMPLES / name).read_text(), name
    assert text.index("### On `BaseDriver`") < text.index("### The full protocol")
    assert text.index("### On `BaseDriver`") < text.index("# file: dict_driver.py")
