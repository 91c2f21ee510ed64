"""A layout whose counts do not add up is refused in the flags' own words (``--gpus 8 but --tp 4 x --pp 1 x --dp 3 =
12 GPUs``), as the other refusals name their flags; and the step's assumption writes its micro-batches with thousands
separators and a plural that agrees."""

from __future__ import annotations

import pytest

from anchorgpu.errors import InvalidWorkload
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, Workload, plan
from anchorgpu.planner._examples import llama_3_1_8b
from anchorgpu.planner.speed.training_lines import step_line
from cli_runner import run


@pytest.mark.parametrize(("layout", "message"), [
    (Layout(gpus=8, tp=4, pp=1, dp=3), "--gpus 8 but --tp 4 x --pp 1 x --dp 3 = 12 GPUs: give --gpus 12"),
    (Layout(gpus=10, tp=4), "--gpus 10 is not a multiple of --tp 4 x --pp 1 = 4: give --gpus as a multiple of 4"),
    (Layout(gpus=12, tp=2, pp=2, cp=2, dp=2), "--gpus 12 but --tp 2 x --pp 2 x --cp 2 x --dp 2 = 16 GPUs"),
    (Layout(gpus=3, cp=2), "--gpus 3 is not a multiple of --cp 2"),
])
def test_a_layout_that_does_not_add_up_is_refused_by_its_flags(layout: Layout, message: str) -> None:
    with pytest.raises(InvalidWorkload) as refused:
        plan(llama_3_1_8b(), Workload(task="train", seq_tokens=4096), gpu=get_gpu("h100"), layout=layout)
    assert message in refused.value.message
    assert "gpus=" not in refused.value.message and "·" not in refused.value.message


def test_the_cli_says_it_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "plan", "llama-3.1-8b", "--task", "train", "--gpu", "h100", "--gpus", "8", "--tp", "4",
                       "--pp", "1", "--dp", "3")
    assert code != 0
    assert "--gpus 8 but --tp 4 x --pp 1 x --dp 3 = 12 GPUs" in err


def test_the_step_line_writes_micro_batches_with_separators() -> None:
    many = step_line(61_035_157, 1, 2048, 125_000_001_536, "bf16", 0.67, 4096)
    assert many.startswith("step = 61,035,157 micro-batches of 1 x 2,048 tokens")
    assert "(es)" not in many
    assert step_line(1, 2, 2048, 4096, "bf16", 0.67, 4096).startswith("step = 1 micro-batch of 2 x 2,048 tokens")
