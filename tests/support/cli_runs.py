"""Running the ``dnnmap`` command in-process and checking a refusal (exit 2, ``error:`` naming what is wrong)."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner, Result

from dnnmap.cli.main import app

runner = CliRunner()


def run(*args: str | Path) -> Result:
    return runner.invoke(app, [str(a) for a in args])


def assert_user_error(result: Result, *fragments: str) -> None:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    for fragment in fragments:
        assert fragment in result.stderr, result.stderr
