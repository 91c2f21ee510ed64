"""The plan's Speed section as text: it names the requests a serving estimate times, and prints step times in
plain seconds, never in exponent form."""

from __future__ import annotations

import re

import pytest

from cli_runner import run


def _speed_section(out: str) -> str:
    return out.split("Speed (calibrated prediction", 1)[1].split("Still to check", 1)[0]


def test_a_plan_sized_by_context_says_its_speed_is_timed_at_the_default_request(
        capsys: pytest.CaptureFixture[str]) -> None:
    # Memory at 8,192 tokens a sequence, speed at the default 1,024 + 256 request: the text must say both.
    code, out, _ = run(capsys, "plan", "llama-3.1-70b", "--gpu", "h100", "--context", "8k", "--concurrency", "32")
    assert code == 0
    speed = " ".join(_speed_section(out).split())
    assert ("timed for 32 requests at once of 1,024 prompt + 256 output tokens "
            "(the memory above holds sequences of 8,192 tokens)") in speed


def test_a_plan_sized_by_its_request_names_that_request_only(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "plan", "llama-3.1-8b", "--gpu", "h100", "--prompt", "1000", "--output-tokens", "200",
                       "--concurrency", "64")
    assert code == 0
    speed = " ".join(_speed_section(out).split())
    assert "timed for 64 requests at once of 1,000 prompt + 200 output tokens time to first token" in speed


def test_a_long_training_step_prints_in_plain_seconds(capsys: pytest.CaptureFixture[str]) -> None:
    # LoRA of a 70B on 2 H100 at a 4M-token batch: a step of about 1,500 s, once printed as "1.5e+03 s".
    code, out, _ = run(capsys, "plan", "llama-3.1-70b", "--task", "lora", "--gpu", "h100", "--global-batch", "4M")
    assert code == 0
    step = next(line for line in out.splitlines() if line.strip().startswith("step "))
    assert "e+" not in step
    # the step, its band and its roofline floor (a time's bound) each whole seconds with separators, then its parts
    assert re.match(r"\s*step \d{1,3}(,\d{3})+ s \(\d{1,3}(,\d{3})+ s-\d{1,3}(,\d{3})+ s; floor \d{1,3}(,\d{3})* s\) "
                    r"= compute \d{1,3}(,\d{3})+ s", step), step


def test_a_time_s_roofline_bound_is_a_floor_and_a_rate_s_a_ceiling(capsys: pytest.CaptureFixture[str]) -> None:
    """Stop 54 (qa12): "training time 12.2 days (...; ceiling 6.8 days)" called the roofline's shortest time a
    ceiling; the heading named one bound for rates and times alike."""
    code, out, _ = run(capsys, "plan", "llama-3.1-8b", "--gpu", "h100", "--gpus", "8", "--task", "train",
                       "--tokens", "1e10")
    assert code == 0
    assert "Speed (calibrated prediction, band, roofline bound: a rate's ceiling, a time's floor)" in out
    lines = [line.strip() for line in _speed_section(out).splitlines()]
    rate = next(line for line in lines if line.startswith("training ") and "tok/s" in line)
    assert "; ceiling " in rate and "floor" not in rate, rate
    time_line = next(line for line in lines if line.startswith("training time"))
    assert time_line.count("; floor ") == 2 and "ceiling" not in time_line, time_line  # the time and the GPU-hours
    step = next(line for line in lines if line.startswith("step "))
    assert "; floor " in step and "ceiling" not in step, step
    code, out, _ = run(capsys, "plan", "llama-3.1-8b", "--gpu", "h100", "--prompt", "1000", "--output-tokens", "200",
                       "--concurrency", "64")
    speed = _speed_section(out)
    for label in ("time to first token", "time per output token"):
        line = next(x for x in speed.splitlines() if x.strip().startswith(label))
        assert "; floor " in line and "ceiling" not in line, line
    output = next(x for x in speed.splitlines() if x.strip().startswith("output "))
    assert "; ceiling " in output, output
