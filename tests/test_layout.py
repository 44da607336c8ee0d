"""The core's layout holds: ``Memory`` is the public recipe, its options are defined once,
its private members are its own, and each core module says its one job first."""

from __future__ import annotations

import ast
import inspect
import re
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from pydantic import BaseModel

from mainsdk_memory import (
    AgentLimits,
    ConfigurationError,
    Kind,
    Memory,
    Options,
    RankingSignals,
    Source,
    Trust,
    tenant,
)
from mainsdk_memory._memory import services_of
from mainsdk_memory._options import OPTION_NAMES
from mainsdk_memory._sealing import Contents
from mainsdk_memory.embeddings import HashingEmbedder
from mainsdk_memory.injection import DEFAULT_DETECTOR

REPO = Path(__file__).resolve().parents[1]
MEMORY_MODULE = REPO / "mainsdk_memory" / "_memory.py"
SOURCES = ["mainsdk_memory", "drivers", "keys", "checks", "conformance", "benchmarks", "tests"]


def _private_members_of_memory() -> set[str]:
    tree = ast.parse(MEMORY_MODULE.read_text(encoding="utf-8"))
    memory = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Memory")
    names: set[str] = set()
    for node in ast.walk(memory):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            names.add(node.name)
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "self"
            and isinstance(node.ctx, ast.Store)
        ):
            names.add(node.attr)
    return {name for name in names if name.startswith("_") and not name.startswith("__")}


def _reaches_in(source: str, where: str, private: set[str]) -> list[str]:
    tree = ast.parse(source)
    found = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and node.attr in private
            and not (isinstance(node.value, ast.Name) and node.value.id in {"self", "cls"})
        ):
            found.append(f"{where}:{node.lineno} .{node.attr}")
    return found


def test_no_module_but_memory_touches_its_private_members() -> None:
    private = _private_members_of_memory()
    assert "_services" in private  # what the check looks for is really there
    offenders = []
    for folder in SOURCES:
        for path in sorted((REPO / folder).rglob("*.py")):
            if path != MEMORY_MODULE and "fixtures" not in path.parts:
                source = path.read_text(encoding="utf-8")
                offenders += _reaches_in(source, str(path.relative_to(REPO)), private)
    assert offenders == []


def test_the_check_finds_a_reach_into_memory() -> None:
    private = _private_members_of_memory()
    bad = "def f(memory):\n    return memory._services.driver\n"
    assert _reaches_in(bad, "bad.py", private) == ["bad.py:2 ._services"]
    own = "class X:\n    def f(self):\n        return self._services\n"
    assert _reaches_in(own, "own.py", private) == []


def test_memory_holds_only_its_services() -> None:
    tree = ast.parse(MEMORY_MODULE.read_text(encoding="utf-8"))
    memory = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Memory")
    stored = {
        node.attr
        for node in ast.walk(memory)
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
        and isinstance(node.ctx, ast.Store)
    }
    assert stored == {"_services", "privacy"}


def test_every_core_module_opens_with_its_one_job() -> None:
    for path in sorted((REPO / "mainsdk_memory").glob("*.py")):
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
        assert doc, path.name
        first = doc.splitlines()[0]
        assert first.endswith((".", "?")), (path.name, first)


# -- options ------------------------------------------------------------------------------


def test_open_and_init_take_exactly_the_options() -> None:
    for function in (Memory.open, Memory.__init__):
        parameters = inspect.signature(function).parameters
        assert "options" in parameters
        assert parameters["options"].kind is inspect.Parameter.VAR_KEYWORD
    assert set(OPTION_NAMES) == set(Options.__annotations__)


def test_the_api_reference_documents_every_option() -> None:
    api = (REPO / "docs" / "api.md").read_text(encoding="utf-8")
    section = api.split("## `Memory`", 1)[1].split("\n## ", 1)[0]
    documented = re.findall(r"^- `(\w+)`:", section, flags=re.MULTILINE)
    assert [name for name in documented if name in OPTION_NAMES] == list(OPTION_NAMES)
    assert set(documented) - set(OPTION_NAMES) == {"url", "keys", "app"}


class _NoModel:
    """A model that is never called: ``open`` only keeps it."""

    def complete(self, messages: object, *, schema: object = None) -> str:
        raise AssertionError("no model call is expected here")


def test_open_accepts_every_option(tmp_path: Path, keys_path: Path) -> None:
    values: dict[str, object] = {
        "schemas": (),
        "clock": None,
        "labels": None,
        "detector": DEFAULT_DETECTOR,
        "audit": None,
        "limits": AgentLimits(),
        "retention": {"personal": timedelta(days=30)},
        "max_text_chars": 100,
        "embedder": HashingEmbedder(),
        "allow_readable_keys": False,
        "signals": RankingSignals(pin_weight=0.2),
        "language": "german",
        "formation": False,
        "model": _NoModel(),
    }
    assert set(values) == set(OPTION_NAMES)
    with Memory.open(f"local:{tmp_path / 'store'}", keys=keys_path, app="app", **values) as m:
        assert m.embedder is values["embedder"]
        assert m.retention["personal"] == timedelta(days=30)
        with tenant.use("acme"):
            ada = m.acting_for("ada", agent="bot")
            first = ada.remember("Ada is vegetarian.")
            assert ada.remember("Ada is vegetarian.").id != first.id  # formation=False
            assert first.formation is None
        assert services_of(m).settings.model is values["model"]


def test_an_unknown_or_bad_option_is_refused_before_anything_is_made(
    tmp_path: Path, keys_path: Path
) -> None:
    store = tmp_path / "store"
    with pytest.raises(ConfigurationError, match="no option 'embeder'"):
        Memory.open(f"local:{store}", keys=keys_path, app="app", embeder=None)  # type: ignore[call-arg]
    with pytest.raises(ConfigurationError, match="max_text_chars"):
        Memory.open(f"local:{store}", keys=keys_path, app="app", max_text_chars=0)
    assert not store.exists()


class _Pet(BaseModel):
    name: str


def test_one_shot_iterables_as_options_are_read_once(tmp_path: Path, keys_path: Path) -> None:
    url = f"local:{tmp_path / 'store'}"
    with Memory.open(url, keys=keys_path, app="app", labels=iter(["personal", "pets"]),
                     schemas=(model for model in [_Pet])) as memory, tenant.use("acme"):
        assert memory.labels == frozenset({"personal", "pets"})
        record = memory.acting_for("ada", agent="bot").remember("Ada's cat.", data=_Pet(name="Io"))
    with Memory.open(url, keys=keys_path, app="app",
                     schemas=(model for model in [_Pet])) as memory, tenant.use("acme"):
        assert isinstance(memory.acting_for("ada", agent="bot").get(record.id).data, _Pet)


def test_a_versions_plaintext_never_shows_in_its_repr() -> None:
    contents = Contents(
        text="Ada's PIN is 4711.", kind=Kind.FACT, labels=("personal",), source=Source.agent("b"),
        trust=Trust.INFERRED, agent="b", author="b", confirmed_by=None, data={"pin": "4711"},
        data_type="x:Y", session=None, session_token=None, session_only=False,
        valid_from=datetime(2026, 1, 1, tzinfo=UTC), recorded_at=datetime(2026, 1, 1, tzinfo=UTC),
    )
    assert "4711" not in repr(contents) and "PIN" not in repr(contents)


def test_a_write_returns_the_record_a_read_returns(tmp_path: Path, keys_path: Path) -> None:
    lisbon = timezone(timedelta(hours=1))
    at = datetime(2026, 3, 1, 12, 0, tzinfo=lisbon)
    with Memory.open(f"local:{tmp_path / 's'}", keys=keys_path, app="app") as memory, \
            tenant.use("acme"):
        bot = memory.acting_for("ada", agent="bot", session="s1")
        written = bot.remember("Ada called at noon.", source=Source.tool("phone", at=at),
                               data=_Pet(name="Io"))
        assert written == bot.get(written.id)
        revised = bot.revise(written.id, "Ada called at one.", source=Source.tool("phone", at=at))
        assert revised == bot.get(written.id)
