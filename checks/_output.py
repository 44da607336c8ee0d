"""Write a report as text lines, JSON, or SARIF 2.1.0 for code-scanning UIs."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mainsdk_memory._version import version
from mainsdk_memory.checks._diagnostic import DOCS_BASE_URL, docs_url
from mainsdk_memory.checks._rule import RULES, SECURITY_SEVERITY, Rule
from mainsdk_memory.checks._runner import FILE_NOT_CHECKED, Report

__all__ = ["FORMATS", "render"]

FORMATS = ("text", "json", "sarif")
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
TOOL_VERSION = version()


def render(report: Report, fmt: str, rules: Sequence[type[Rule]] | None = None) -> str:
    """The report in ``fmt`` (one of :data:`FORMATS`), ending with a newline when not empty."""
    if fmt == "text":
        return "".join(d.text() + "\n" for d in report.diagnostics)
    if fmt == "json":
        return json.dumps(_json(report), indent=2) + "\n"
    if fmt == "sarif":
        return json.dumps(_sarif(report, rules), indent=2) + "\n"
    raise ValueError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")


def _json(report: Report) -> dict[str, Any]:
    return {
        "tool": "memory-check",
        "version": TOOL_VERSION,
        "files": report.files,
        "lines": report.lines,
        "exit_code": report.exit_code,
        "diagnostics": [
            {
                "path": d.path,
                "line": d.line,
                "column": d.col,
                "end_line": d.end_line,
                "end_column": d.end_col,
                "code": d.code,
                "message": d.message,
                "url": d.url,
            }
            for d in report.diagnostics
        ],
    }


def _sarif_rule(rule: type[Rule]) -> dict[str, Any]:
    return {
        "id": rule.code,
        "name": "".join(part.title() for part in rule.name.split("-")),
        "shortDescription": {"text": rule.summary()},
        "fullDescription": {"text": rule.summary()},
        "help": {"text": f"See {docs_url(rule.code)}", "markdown": rule.documentation()},
        "helpUri": docs_url(rule.code),
        "defaultConfiguration": {"level": "error"},
        # GitHub code scanning ranks findings by security-severity (a CVSS-like score)
        "properties": {
            "tags": list(rule.tags),
            "security-severity": SECURITY_SEVERITY[rule.severity],
        },
    }


def _sarif(report: Report, rules: Sequence[type[Rule]] | None) -> dict[str, Any]:
    chosen = list(rules) if rules is not None else list(RULES.values())
    used = {d.code for d in report.diagnostics}
    codes = sorted({r.code for r in chosen} | used)
    index = {code: i for i, code in enumerate(codes)}
    results = []
    for d in report.diagnostics:
        region: dict[str, int] = {"startLine": d.line, "startColumn": d.col}
        if d.end_line is not None and d.end_col is not None:
            region["endLine"] = d.end_line
            region["endColumn"] = d.end_col
        results.append({
            "ruleId": d.code,
            "ruleIndex": index[d.code],
            "level": "error",
            "message": {"text": f"{d.message} ({d.url})"},
            "locations": [{
                "physicalLocation": {
                    "artifactLocation": {
                        "uri": Path(d.path).as_posix(),
                        "uriBaseId": "%SRCROOT%",
                    },
                    "region": region,
                }
            }],
        })
    not_checked = [d for d in report.diagnostics if d.code == FILE_NOT_CHECKED]
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {
                "driver": {
                    "name": "memory-check",
                    "version": TOOL_VERSION,
                    "informationUri": DOCS_BASE_URL,
                    "rules": [_sarif_rule(RULES[code]) for code in codes],
                }
            },
            "originalUriBaseIds": {"%SRCROOT%": {"uri": Path.cwd().as_uri() + "/"}},
            "invocations": [{
                "executionSuccessful": not not_checked,
                "exitCode": report.exit_code,
            }],
            "results": results,
        }],
    }
