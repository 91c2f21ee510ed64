"""The training sweep behind ``recommend`` tries the pipeline depths and the ZeRO stages with pipeline stages that
``plan``'s layout chooser tries (train_sizes.train_pp_sizes, speed.layouts.sharded_with_stages), so on the same GPUs its
best row is plan's choice. Before, the sweep stopped at PP 8 and priced FSDP with pipeline stages on Megatron, which
the chooser never tries (Megatron-FSDP runs no pipeline stages): on 16 H100 servers recommend answered Llama 3.1 405B
with DP 128 FSDP at 24,588 tok/s where plan chooses TP 8 x PP 16 at 25,190, and on 11 it answered TP 4 PP 2 DP 11 FSDP
at 9,195 tok/s, a layout plan's chooser does not run."""

from __future__ import annotations

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.catalog import load_catalog
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, Workload, plan
from anchorgpu.planner.inputs import RECOMPUTES
from anchorgpu.planner.speed.estimate import plan_performance
from anchorgpu.planner.sweep import sweep
from anchorgpu.planner.sweep_types import SweepSpec
from anchorgpu.planner.train_sizes import train_pp_sizes
from anchorgpu.recommend import shapes_from_catalog


def _h100_sweep(model_name: str, servers: int, **workload: object):  # type: ignore[no-untyped-def]
    shapes = tuple(s for s in shapes_from_catalog(load_catalog().offerings, max_servers=servers)
                   if s.id == "h100-sxm-8x-bm")
    return sweep(load_model(model_name), shapes, SweepSpec(workload=Workload(task="train", **workload)))  # type: ignore[arg-type]


def _best_row(result, gpus: int) -> dict:  # type: ignore[no-untyped-def,type-arg]
    rows = [result.row(i) for i in range(result.evaluated)]
    return max((r for r in rows if r["gpus"] == gpus and r["fits"] and r["splits_batch"]),
               key=lambda r: r["train_tokens_per_s"])


@pytest.mark.parametrize(("servers", "train_stack"), [(16, "megatron"), (11, "megatron"), (16, "pytorch")])
def test_the_best_row_on_n_servers_is_plans_choice_on_their_gpus(servers: int, train_stack: str) -> None:
    """Llama 3.1 405B (126 layers) on whole H100 servers: the sweep's fastest row that fits is the layout ``plan``
    chooses for the same GPUs, at the same speed (on 128 GPUs: TP 8 x PP 16, past the old PP 8 cap)."""
    model, gpu = load_model("llama-3.1-405b"), get_gpu("h100")
    best = _best_row(_h100_sweep("llama-3.1-405b", servers, train_stack=train_stack), 8 * servers)
    p = plan(model, Workload(task="train", train_stack=train_stack), gpu=gpu, layout=Layout(gpus=8 * servers))
    lay = p.layout
    assert (best["tp"], best["pp"], best["dp"], best["zero"], best["cp"]) == (lay.tp, lay.pp, lay.dp, lay.zero, lay.cp)
    assert (best["concurrency"], RECOMPUTES[best["recompute"]]) == (p.workload.micro_batch, p.workload.recompute)
    assert best["train_tokens_per_s"] == pytest.approx(plan_performance(p)["train_tokens_per_s"], rel=1e-9)
    if servers == 16:
        assert (best["tp"], best["pp"]) == (8, 16)


def test_pipeline_depths_past_eight_are_swept_where_the_layers_allow() -> None:
    """The grid's depths are the chooser's: on 16 servers Llama 3.1 405B gets PP 16, 32 and 64 (126 layers);
    Llama 3.1 8B (32 layers) PP 16 and 32, never 64."""
    big = _h100_sweep("llama-3.1-405b", 16)
    assert {int(p) for p in big.columns["pp"]} == set(train_pp_sizes(126, gpus=128)) == {1, 2, 4, 8, 16, 32, 64}
    small = _h100_sweep("llama-3.1-8b", 16)
    assert {int(p) for p in small.columns["pp"]} == {1, 2, 4, 8, 16, 32}


@pytest.mark.parametrize(("train_stack", "with_stages"), [("megatron", False), ("pytorch", True)])
def test_fsdp_with_pipeline_stages_only_on_the_stack_that_runs_it(train_stack: str, with_stages: bool) -> None:
    """FSDP (ZeRO-3) with pipeline stages: torchtitan runs FSDP2 under torch.distributed.pipelining (its Llama 3.1 405B
    on 512 H100, FSDP 8 x TP 8 x PP 8); Megatron-FSDP runs no pipeline stages (NVIDIA/Megatron-LM issue #1455).
    The sweep prices such rows only on the PyTorch stack, and each is what ``plan`` chooses for its layout."""
    result = _h100_sweep("llama-3.1-8b", 1, train_stack=train_stack)
    staged = [result.row(i) for i in range(result.evaluated)
              if int(result.columns["zero"][i]) == 3 and int(result.columns["pp"][i]) > 1]
    assert bool(staged) is with_stages
    model, gpu = load_model("llama-3.1-8b"), get_gpu("h100")
    fitting = [r for r in staged if r["fits"]]
    assert bool(fitting) is with_stages
    for row in fitting[:4]:
        given = Layout(gpus=row["gpus"], tp=row["tp"], pp=row["pp"], dp=row["dp"], zero=3, cp=row["cp"])
        p = plan(model, Workload(task="train", train_stack=train_stack), gpu=gpu, layout=given)
        assert (p.workload.micro_batch, p.workload.recompute, p.layout.virtual_stages) == (
            row["concurrency"], RECOMPUTES[row["recompute"]], row["virtual_stages"]), row
        assert row["train_tokens_per_s"] == pytest.approx(plan_performance(p)["train_tokens_per_s"], rel=1e-9)
