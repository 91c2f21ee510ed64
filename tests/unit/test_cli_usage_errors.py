"""Click/Typer usage errors reach the user as one line, each sentence once (found by QA-CLI)."""

from __future__ import annotations

import pytest

from anchorgpu.cli import main


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["plna", "llama-3.1-8b"], "error: No such command 'plna'. Did you mean 'plan'?\n"),
        (["plan"], "error: Missing argument 'MODEL'.\n"),
    ],
)
def test_a_usage_error_is_one_line_that_says_did_you_mean_once(
    capsys: pytest.CaptureFixture[str], argv: list[str], expected: str,
) -> None:
    assert main(argv) == 2
    assert capsys.readouterr().err == expected
