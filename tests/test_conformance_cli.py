"""The memory-conformance command: exit 0 when the driver holds, 1 when it lies, 2 on misuse."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mainsdk_memory.conformance._cli import main

ROOT = Path(__file__).resolve().parent.parent


def test_the_local_driver_passes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--driver", "mainsdk_memory.drivers.local:LocalDriver", "--workers", "4"]) == 0
    out = capsys.readouterr().out
    assert "Conformance of driver 'local' (mainsdk_memory.drivers.local:LocalDriver)" in out
    # Every capability but regions.
    assert "PASSED: all 17 declared capabilities hold." in out
    assert "passed        vectors" in out
    assert "passed        relations" in out


def test_a_vector_liar_fails_vectors_only(capsys: pytest.CaptureFixture[str]) -> None:
    spec = "tests.conformance_broken_drivers:VectorKeepingEraseDriver"
    assert main(["--driver", spec, "--workers", "4"]) == 1
    out = capsys.readouterr().out
    assert "failed        vectors             declared True" in out
    assert "vectors.erase_leaves_no_vector_bytes: erase is declared 'hard'" in out
    assert "FAILED: 1 of 17 declared capabilities do not hold: vectors." in out


def test_a_lying_driver_fails_with_json_naming_the_lie(capsys: pytest.CaptureFixture[str]) -> None:
    spec = "tests.conformance_broken_drivers:OverwritingDriver"
    assert main(["--driver", spec, "--json", "--seed", "5", "--workers", "3"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["passed"] is False and report["seed"] == 5 and report["factory"] == spec
    failed = {c["name"]: c for c in report["capabilities"] if c["status"] == "failed"}
    assert list(failed) == ["time_travel"]
    assert "closed versions were overwritten" in failed["time_travel"]["reason"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--driver", "no-colon-here"], "is not 'module:factory'"),
        (["--driver", "no_such_module_here:Factory"], "Cannot import 'no_such_module_here'"),
        (["--driver", "mainsdk_memory.drivers.local:NoSuchDriver"], "has no attribute"),
        (["--driver", "mainsdk_memory.drivers.local:__all__"], "is not callable"),
        ([], "the following arguments are required: --driver"),
        (["--driver", "x:y", "--bogus"], "unrecognized arguments: --bogus"),
        (
            ["--driver", "mainsdk_memory.drivers.local:LocalDriver", "--workers", "0"],
            "--workers must be at least 1",
        ),
    ],
)
def test_usage_errors_exit_2_and_say_why(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert message in captured.err
    assert captured.out == ""


def test_help_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    assert "MODULE:FACTORY" in capsys.readouterr().out


def test_python_dash_m_runs_the_same_command() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mainsdk_memory.conformance", "--driver", "x"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2
    assert "is not 'module:factory'" in done.stderr


def test_the_installed_command_exits_1_for_a_lying_driver() -> None:
    command = Path(sys.executable).parent / "memory-conformance"
    assert command.exists(), "reinstall with pip install -e '.[dev]' to get the command"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [
            str(command),
            "--driver",
            "tests.conformance_broken_drivers:TenantLeakingDriver",
            "--workers",
            "4",
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=300,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    assert "failed        isolation" in done.stdout
    assert "rows leak across tenants" in done.stdout
    assert "FAILED: 1 of 16 declared capabilities do not hold: isolation." in done.stdout
