"""The data-flow engine behind MAIN-MEM-0022, 0023 and 0029: what it follows, what it does not."""

from __future__ import annotations

import textwrap

from mainsdk_memory.checks import check_source
from mainsdk_memory.checks._flow import scheme_of
from mainsdk_memory.checks._knowledge import canonical

HEADER = """\
import os
from mainsdk_memory import Memory, ScopedMemory, tenant
memory = Memory.open("local:/srv/m", keys=os.environ["K"], app="a")
"""


def _found(body: str) -> list[tuple[int, str]]:
    source = HEADER + textwrap.dedent(body)
    return [(d.line - 3, d.code) for d in check_source(source, "engine.py")]


def test_a_helper_taints_only_the_calls_that_pass_it_recalled_text() -> None:
    found = _found("""
        def bullet(text: str) -> str:
            return f"- {text}"
        def ask(handle: ScopedMemory, q: str) -> list[dict[str, str]]:
            safe = bullet("Be brief.")
            unsafe = bullet(handle.context(q))
            return [{"role": "system", "content": safe},
                    {"role": "developer", "content": unsafe}]
    """)
    assert found == [(8, "MAIN-MEM-0022")]


def test_text_carried_round_a_loop_is_followed() -> None:
    found = _found("""
        def ask(handle: ScopedMemory, q: str) -> dict[str, str]:
            prompt = ""
            for hit in handle.recall(q):
                prompt += hit.record.text
            return {"role": "system", "content": prompt}
    """)
    assert found == [(6, "MAIN-MEM-0022")]


def test_branches_and_handlers_are_joined() -> None:
    found = _found("""
        def ask(handle: ScopedMemory, q: str, fancy: bool) -> dict[str, str]:
            text = "plain"
            try:
                if fancy:
                    text = handle.context(q)
            except ValueError:
                text = "error"
            return {"role": "system", "content": text}
    """)
    assert found == [(9, "MAIN-MEM-0022")]


def test_a_comprehension_variable_does_not_leak_into_the_function() -> None:
    found = _found("""
        def ask(handle: ScopedMemory, q: str) -> dict[str, str]:
            hit = "a constant"
            texts = [hit.record.text for hit in handle.recall(q)]
            del texts
            return {"role": "system", "content": hit}
    """)
    assert found == []


def test_walrus_nested_functions_and_inherited_attributes() -> None:
    found = _found("""
        class Base:
            def __init__(self, handle: ScopedMemory) -> None:
                self.handle = handle
        class Bot(Base):
            def ask(self, q: str) -> object:
                if (block := self.handle.context(q)):
                    def build() -> dict[str, str]:
                        return {"role": "system", "content": block}
                    return build()
                return None
    """)
    assert found == [(9, "MAIN-MEM-0022")]


def test_names_from_private_modules_are_canonical() -> None:
    assert canonical("mainsdk_memory._memory.Memory") == "mainsdk_memory.Memory"
    assert canonical("mainsdk_memory.drivers._protocol.Capabilities") == (
        "mainsdk_memory.drivers.Capabilities"
    )
    assert canonical("requests.get") == "requests.get"
    source = (
        "import os\nfrom mainsdk_memory._memory import Memory as M\n"
        'm = M.open("local:/x", keys=os.environ["K"], app="a")\n'
        'h = m.acting_for("ada", agent="b")\n'
    )
    assert [(d.line, d.code) for d in check_source(source)] == [(4, "MAIN-MEM-0028")]


def test_the_message_names_the_earliest_recall() -> None:
    source = HEADER + textwrap.dedent("""
        def ask(handle: ScopedMemory, q: str) -> dict[str, str]:
            first = handle.get("mem_aaaaaaaaaaaaaaaaaaaaaaaaaa").text
            second = handle.context(q)
            return {"role": "system", "content": first + second}
    """)
    (diagnostic,) = check_source(source)
    assert "from get() on line 6" in diagnostic.message


def test_store_url_schemes() -> None:
    assert scheme_of("local:./m") == "local"
    assert scheme_of("postgresql+psycopg://db/x") == "postgresql"
    assert scheme_of("MEM0:support") == "mem0"
    assert scheme_of("no-scheme") is None


def test_recursion_reaches_a_fixed_point() -> None:
    found = _found("""
        def send(text: str, depth: int) -> object:
            if depth:
                return send(text, depth - 1)
            return {"role": "system", "content": text}
        def ask(handle: ScopedMemory, q: str) -> object:
            return send(handle.context(q), 3)
    """)
    assert found == [(5, "MAIN-MEM-0022")]
