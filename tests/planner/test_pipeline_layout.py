"""An explicit pipeline layout (``--pipeline-layout``, Megatron-Core's ``--pipeline-model-parallel-layout``): parsed as
Megatron-LM parses it (megatron/core/transformer/pipeline_parallel_layer_layout.py), refused in one line when
malformed, and planned with the layers of its busiest rank.

DeepSeek-V3's layout at PP 8 x VP 4, ``Et|(tt|)*30L``, is the one Megatron-LM's DeepSeek-V3 GB200 reproduce guide
(docs/discussions/deepseek-v3-gb200-optimization, commit 32ea0afdbf6bd87380a8cb0b9eafb4eda18a9fd9) runs.
"""

from __future__ import annotations

import json

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.errors import InvalidWorkload
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, Workload, plan
from anchorgpu.planner.pipeline_layout import parse_pipeline_layout
from anchorgpu.planner.report import plan_to_json
from anchorgpu.planner.speed.estimate import plan_performance
from cli_runner import run

DSV3_PP8_VP4 = "Et|(tt|)*30L"


def _parse(text: str, pp: int = 8, v: int | None = None, layers: int = 61):  # type: ignore[no-untyped-def]
    return parse_pipeline_layout(text, pp=pp, virtual_stages=v, num_layers=layers, model_name="deepseek-v3")


def test_chunks_are_dealt_round_robin_over_the_ranks() -> None:
    lay = _parse(DSV3_PP8_VP4)
    # chunk 0: E and one layer; chunks 1-30: two layers; chunk 31: the loss alone
    assert lay.chunk_layers == (1, *[2] * 30, 0) and lay.virtual_stages == 4
    # rank r holds chunks r, r+8, r+16, r+24: rank 0 1+2+2+2, rank 7 2+2+2+0, the rest 8
    assert lay.rank_layers == (7, 8, 8, 8, 8, 8, 8, 6) and lay.busiest_rank_layers == 8
    assert (lay.embedding_chunk, lay.loss_chunk) == (0, 31)


def test_repeats_and_cosmetic_commas_expand_as_megatron_does() -> None:
    assert _parse("Et*4|(t*4|)*14tL", pp=4, v=4).rank_layers == (16, 16, 16, 13)
    assert _parse("Et*3,|t,t|tL", pp=3, layers=6).chunk_layers == (3, 2, 1)
    assert _parse("Et*7|(t*8|)*6t*6L", pp=2, v=4).rank_layers == (31, 30)


@pytest.mark.parametrize(("text", "pp", "v", "wrong"), [
    ("Et|(tt|)*30X", 8, None, "unknown symbol 'X'"),
    ("Et|(tt|)*30L", 8, 2, "32 chunks, not pp 8 x 2 virtual stages = 16"),
    ("Et|(tt|)*29L", 8, None, "31 chunks do not divide over the 8 pipeline ranks"),
    ("Et|(tt|)*30tL", 8, None, "62 transformer layers (t), not the 61 layers of deepseek-v3"),
    ("tE|(tt|)*30L", 8, None, "the embedding E must open the first chunk"),
    ("Et|(tt|)*30LE", 8, None, "the embedding E must open the first chunk"),
    ("Et|(tt|)*29tL|t", 8, None, "the loss L must close the last chunk"),
    ("Et|(tt|*30L", 8, None, "a '(' is never closed (unbalanced parentheses)"),
    ("Et|tt|)*30L", 8, None, "a ')' closes no '(' (unbalanced parentheses)"),
    ("E((t|)*2)*2L", 8, None, "nested parentheses"),
    ("Et|(tt|)L", 8, None, "needs a repeat count"),
    ("*2Et|(tt|)*30L", 8, None, "'*' needs a symbol before it and a count after it"),
    ("Et|(tt|)*30L*", 8, None, "'*' needs a symbol before it and a count after it"),
    ("Et*3|(tt|)*29,m|L", 16, 2, "'m' places a multi-token-prediction layer"),
])
def test_each_malformed_layout_is_one_line_naming_it(text: str, pp: int, v: int | None, wrong: str) -> None:
    with pytest.raises(InvalidWorkload) as refused:
        _parse(text, pp, v)
    message = str(refused.value)
    assert message.startswith(f"--pipeline-layout {text!r}: ") and wrong in message and "\n" not in message


DSV3_WORK = Workload(task="train", seq_tokens=4096, micro_batch=1, recompute="none", global_batch_tokens=2**23,
                     train_precision="fp8")


def _dsv3(**layout: object):  # type: ignore[no-untyped-def]
    return plan(load_model("deepseek-v3"), DSV3_WORK, gpu=get_gpu("gb200"), suggest=False,
                layout=Layout(gpus=256, tp=1, pp=8, dp=32, ep=32, zero=1, **layout))  # type: ignore[arg-type]


def test_a_layout_lets_virtual_stages_that_do_not_divide_the_layers_plan() -> None:
    with pytest.raises(InvalidWorkload, match="--virtual-stages 4: --pp 8 x 4 does not divide the 61 layers"):
        _dsv3(virtual_stages=4)
    p = _dsv3(pipeline_layout=DSV3_PP8_VP4)  # the virtual stages follow from its 32 chunks
    assert p.layout.virtual_stages == 4 and p.fits
    assert sum("Pipeline layout Et|(tt|)*30L" in line for line in p.assumptions) == 1
    assert plan_to_json(p)["layout"]["pipeline_layout"] == DSV3_PP8_VP4
    assert any(line.startswith("pipeline layout Et|(tt|)*30L") for line in plan_performance(p)["assumptions"])
    assert _dsv3(virtual_stages=4, pipeline_layout=DSV3_PP8_VP4).per_gpu == p.per_gpu


def test_a_layout_needs_pp_and_training() -> None:
    with pytest.raises(InvalidWorkload, match="needs --pp"):
        plan(load_model("deepseek-v3"), DSV3_WORK, layout=Layout(gpus=256, ep=32, pipeline_layout=DSV3_PP8_VP4),
             gpu=get_gpu("gb200"), suggest=False, choose_layout=False)
    with pytest.raises(InvalidWorkload, match="does not apply to inference"):
        plan(load_model("deepseek-v3"), Workload(), layout=Layout(gpus=8, pp=8, pipeline_layout=DSV3_PP8_VP4))


LLAMA_WORK = Workload(task="train", seq_tokens=4096, micro_batch=1, recompute="selective", global_batch_tokens=2**22)


def _llama(pipeline_layout: str | None):  # type: ignore[no-untyped-def]
    return plan(load_model("llama-3.1-8b"), LLAMA_WORK, gpu=get_gpu("h100"), suggest=False,
                layout=Layout(gpus=8, tp=1, pp=4, dp=2, zero=1, virtual_stages=2, pipeline_layout=pipeline_layout))


def test_the_busiest_rank_of_a_layout_sets_memory_and_speed() -> None:
    """Llama 3.1 8B's 32 layers in 8 chunks over 4 ranks: four a chunk is the even split (8 a rank), and a layout
    that gives ranks 2 and 3 eleven layers each holds more and runs slower than it."""
    none, even = _llama(None), _llama("Et*4|(t*4|)*6t*4L")
    uneven = _llama("Et*2|t*2|t*6|t*6|t*2|t*3|t*5|t*6L")
    assert _parse("Et*2|t*2|t*6|t*6|t*2|t*3|t*5|t*6L", pp=4, layers=32).rank_layers == (4, 5, 11, 12)
    assert even.per_gpu == none.per_gpu  # the even layout is what the planner assumes without one
    assert plan_performance(even)["train_tokens_per_s"] == plan_performance(none)["train_tokens_per_s"]
    assert uneven.per_gpu.weights_bytes > even.per_gpu.weights_bytes
    assert uneven.per_gpu.activations_bytes > even.per_gpu.activations_bytes
    assert plan_performance(uneven)["train_tokens_per_s"] < plan_performance(even)["train_tokens_per_s"]


def test_the_cli_refuses_a_bad_layout_with_exit_2_and_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "plan", "deepseek-v3", "--task", "train", "--gpu", "gb200", "--gpus", "256", "--tp",
                       "1", "--pp", "8", "--ep", "32", "--pipeline-layout", "Et|(tt|)*29L")
    assert code == 2 and err.strip().count("\n") == 0 and "31 chunks do not divide over the 8" in err


def test_the_cli_plans_with_a_layout(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "plan", "deepseek-v3", "--task", "train", "--gpu", "gb200", "--gpus", "256", "--tp",
                         "1", "--pp", "8", "--ep", "32", "--zero", "1", "--micro-batch", "1", "--recompute", "none",
                         "--seq", "4096", "--pipeline-layout", DSV3_PP8_VP4, "--json")
    body = json.loads(out)
    assert code == 0, err
    assert body["layout"]["pipeline_layout"] == DSV3_PP8_VP4 and body["layout"]["virtual_stages"] == 4
