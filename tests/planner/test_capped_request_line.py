"""A request that passes the model's window with one part left at its default is timed with that part shortened
(planner.media.request_within): Llama 3.1 8B's 131,072-token window (registry) holds --prompt 131000 with a 72-token
output, not the default 256. The "Context not given" line said "131,000 + 256 = 131,256 tokens, capped" while the
speed timed 131,000 + 72; it names the shortened part, in plan and in recommend."""

from __future__ import annotations

import pytest

from cli_runner import run_json


@pytest.mark.parametrize(("argv", "part", "default"), [(("--prompt", "131000"), "output", 256),
                                                       (("--output-tokens", "131000"), "prompt", 1024)])
def test_the_line_names_the_default_part_the_window_shortened(capsys: pytest.CaptureFixture[str], argv: tuple[str, ...],
                                                              part: str, default: int) -> None:
    doc = run_json(capsys, "plan", "llama-3.1-8b", *argv, "--gpu", "h100")
    perf = doc["performance"]
    assert perf["prompt_tokens"] + perf["output_tokens"] == 131_072
    timed = perf[f"{part}_tokens"]
    assert timed == 72
    needle = f"the default {default:,}-token {part} shortened to {timed:,} tokens to fit"
    assert any(a.startswith("Context not given") and needle in a for a in doc["assumptions"])
    rec = run_json(capsys, "recommend", "llama-3.1-8b", *argv, "--top", "1")
    assert rec["workload"][f"{part}_tokens"] == timed
    assert any(a.startswith("Context not given") and needle in a for a in rec["assumptions"])


def test_a_request_within_the_window_names_nothing_shortened(capsys: pytest.CaptureFixture[str]) -> None:
    doc = run_json(capsys, "plan", "llama-3.1-8b", "--prompt", "1000", "--output-tokens", "200", "--gpu", "h100")
    assert not any("shortened" in a for a in doc["assumptions"])
