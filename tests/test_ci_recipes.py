"""memory-check in CI pipelines: the pre-commit hook, the code-scanning recipe, SARIF severities.

The hook in ``.pre-commit-hooks.yaml`` runs a console script the package installs, on Python
files; the workflow and pre-commit snippets of docs/rules/README.md parse and do what the page
says; every rule in the SARIF output carries a ``security-severity`` GitHub can rank by (a
number from 0.0 to 10.0, as a string) and ``tags`` with ``security`` first.
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from mainsdk_memory.checks import RULES, Report, check_source
from mainsdk_memory.checks._output import render
from mainsdk_memory.checks._rule import SECURITY_SEVERITY, Rule

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
RULES_PAGE = REPO / "docs" / "rules" / "README.md"


def _yaml_blocks(path: Path) -> list[Any]:
    return [yaml.safe_load(b) for b in re.findall(r"```yaml\n(.*?)```", path.read_text(), re.S)]


def test_the_pre_commit_hook_runs_memory_check_on_python_files() -> None:
    hooks = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    (hook,) = [h for h in hooks if h["id"] == "memory-check"]
    assert hook["language"] == "python"
    assert hook["types"] == ["python"]
    assert hook["entry"].split()[0] in SCRIPTS  # a command the package installs
    assert SCRIPTS[hook["entry"].split()[0]] == "mainsdk_memory.checks:main"
    assert hook["name"] and hook["description"]


def test_the_code_scanning_workflow_runs_sarif_and_uploads_it() -> None:
    blocks = _yaml_blocks(RULES_PAGE)
    (workflow,) = [b for b in blocks if isinstance(b, dict) and "jobs" in b]
    assert workflow["permissions"]["security-events"] == "write"
    (job,) = workflow["jobs"].values()
    steps = job["steps"]
    runs = [s["run"] for s in steps if "run" in s]
    (check,) = [r for r in runs if r.startswith("memory-check")]
    args = check.split()
    assert args[args.index("--format") + 1] == "sarif"
    sarif_file = args[args.index("--output") + 1]
    upload_action = "github/codeql-action/upload-sarif"
    (upload,) = [s for s in steps if s.get("uses", "").startswith(upload_action)]
    assert upload["with"]["sarif_file"] == sarif_file
    # a finding (exit status 1) does not skip the upload that shows it
    (check_step,) = [s for s in steps if s.get("run", "").startswith("memory-check")]
    assert check_step.get("continue-on-error") is True or upload.get("if") == "always()"
    assert any(r.startswith("pip install mainsdk-memory") for r in runs)


def test_the_pre_commit_snippet_uses_the_hook_this_repository_declares() -> None:
    blocks = _yaml_blocks(RULES_PAGE)
    (config,) = [b for b in blocks if isinstance(b, dict) and "repos" in b]
    (repo,) = config["repos"]
    assert repo["repo"] == tomllib.loads((REPO / "pyproject.toml").read_text())["project"][
        "urls"]["Source"]
    declared = {h["id"] for h in yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())}
    assert {h["id"] for h in repo["hooks"]} <= declared


def _sarif_rules() -> list[dict[str, Any]]:
    report = Report(diagnostics=[], files=0, lines=0)
    log = json.loads(render(report, "sarif"))
    rules: list[dict[str, Any]] = log["runs"][0]["tool"]["driver"]["rules"]
    return rules


def test_every_sarif_rule_has_a_security_severity_in_range() -> None:
    rules = _sarif_rules()
    assert [r["id"] for r in rules] == sorted(RULES)
    for rule in rules:
        severity = rule["properties"]["security-severity"]
        assert isinstance(severity, str) and re.fullmatch(r"\d{1,2}\.\d", severity), rule["id"]
        assert 0.0 <= float(severity) <= 10.0, rule["id"]
        tags = rule["properties"]["tags"]
        assert tags[0] == "security" and len(tags) == len(set(tags)), rule["id"]
        assert all(re.fullmatch(r"[a-z0-9/-]+", t) for t in tags), rule["id"]


def test_the_severities_follow_githubs_bands() -> None:
    """GitHub: critical over 9.0, high 7.0-8.9, medium 4.0-6.9, low 0.1-3.9."""
    bands = {"critical": (9.0, 10.0), "high": (7.0, 8.9), "medium": (4.0, 6.9), "low": (0.1, 3.9)}
    for name, score in SECURITY_SEVERITY.items():
        low, high = bands[name]
        assert low <= float(score) <= high, name


@pytest.mark.parametrize("code", sorted(RULES))
def test_each_rule_of_the_package_sets_its_own_severity(code: str) -> None:
    rule = RULES[code]
    assert "severity" in vars(rule) and "tags" in vars(rule), code
    assert rule.severity in SECURITY_SEVERITY
    page = (REPO / "docs" / "rules" / f"{code}.md").read_text()
    assert f"Severity: {rule.severity}" in page


def test_key_material_is_critical_and_a_file_not_checked_is_low() -> None:
    assert RULES["MAIN-MEM-0025"].severity == "critical"
    assert RULES["MAIN-MEM-0900"].severity == "low"
    assert issubclass(RULES["MAIN-MEM-0025"], Rule)


def test_a_finding_in_sarif_points_at_a_rule_with_its_severity() -> None:
    code = (
        "from mainsdk_memory import Memory\n"
        'memory = Memory.open("local:/srv/memories", app="support")\n'
    )
    diagnostics = check_source(code, path="app.py")
    report = Report(diagnostics=list(diagnostics), files=1, lines=2)
    run = json.loads(render(report, "sarif"))["runs"][0]
    (result,) = run["results"]
    rule = run["tool"]["driver"]["rules"][result["ruleIndex"]]
    assert rule["id"] == result["ruleId"] == "MAIN-MEM-0027"
    assert rule["properties"]["security-severity"] == SECURITY_SEVERITY[
        RULES["MAIN-MEM-0027"].severity]
