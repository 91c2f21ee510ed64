"""The training chooser times a layout's recompute levels only when its fastest level reaches the front of the
search (``chooser_order.fastest_first``): the same order as timing every candidate and sorting, for a fraction of the
timing (Qwen3-235B-A22B on 256 H100: about 2,800 candidates, a few hundred timed). With a bound on each layout's
speed (``training.tokens_per_s_bound``) it times the layout itself only when the bound reaches the front: the same
candidates in the same order, a few dozen timed."""

from __future__ import annotations

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.errors import InvalidWorkload
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, Workload
from anchorgpu.planner.speed import chooser_order, layouts
from anchorgpu.planner.speed.training import tokens_per_s_bound, training_step


@pytest.mark.parametrize(("name", "gpus", "gpu"), [("llama-3.1-70b", 512, "h100"), ("qwen3-30b-a3b", 8, "b200"),
                                                  ("qwen3-235b-a22b", 256, "h100")])
def test_the_search_meets_the_candidates_in_the_order_of_a_full_sort(name: str, gpus: int, gpu: str) -> None:
    model, device = load_model(name), get_gpu(gpu)
    w = Workload(task="train", seq_tokens=4096)
    batch = 4 * 2**20
    pairs, levels = layouts._candidates(model, w, Layout(gpus=gpus), gpus, 4096, batch)
    candidates = [(lay, mb, rc) for lay, mb in pairs for rc in levels]
    timed: list[int] = []

    def speed(lay, mb, rc):  # type: ignore[no-untyped-def]
        timed.append(1)
        return training_step(model, device, lay, seq_tokens=4096, micro_batch=mb,
                             global_batch_tokens=max(batch, lay.dp * mb * 4096), recompute=rc).tokens_per_s

    full = []
    for i, (lay, mb, rc) in enumerate(candidates):
        try:
            full.append((-speed(lay, mb, rc), i))
        except InvalidWorkload:
            continue
    full.sort()
    timed.clear()
    search = chooser_order.fastest_first(pairs, levels, speed)
    first = [next(search)[1] for _ in range(20)]
    assert first == [i for _, i in full[:20]]
    assert len(timed) < len(full) / 2  # far fewer timed than candidates


CASES = [("llama-3.1-70b", 512, "h100", 4096), ("qwen3-30b-a3b", 8, "b200", 4096), ("qwen3-235b-a22b", 256, "h100", 4096),
         ("deepseek-v2-lite", 64, "mi300x", 8192), ("jamba-1.5-mini", 16, "a100-80gb-sxm", 4096),
         ("gpt-oss-20b", 32, "h200", 65536), ("llama-3.1-8b", 16, "l40s", 131072)]


@pytest.mark.parametrize(("name", "gpus", "gpu", "seq"), CASES)
def test_the_bound_is_never_below_the_speed_and_keeps_the_order(name: str, gpus: int, gpu: str, seq: int) -> None:
    model, device = load_model(name), get_gpu(gpu)
    w = Workload(task="train", seq_tokens=seq)
    batch = 4 * 2**20
    pairs, levels = layouts._candidates(model, w, Layout(gpus=gpus), gpus, seq, batch)
    assert len(set(pairs)) == len(pairs) and len(set(levels)) == len(levels)  # each candidate once
    candidates = [(lay, mb, rc) for lay, mb in pairs for rc in levels]
    timed: list[int] = []

    def speed(lay, mb, rc):  # type: ignore[no-untyped-def]
        timed.append(1)
        return training_step(model, device, lay, seq_tokens=seq, micro_batch=mb,
                             global_batch_tokens=max(batch, lay.dp * mb * seq), recompute=rc).tokens_per_s

    def bound(lay, mb):  # type: ignore[no-untyped-def]
        return tokens_per_s_bound(model, device, lay, seq_tokens=seq, micro_batch=mb,
                                  global_batch_tokens=max(batch, lay.dp * mb * seq))

    for lay, mb, rc in candidates:
        try:
            exact = speed(lay, mb, rc)
        except InvalidWorkload:
            with pytest.raises(InvalidWorkload):
                speed(lay, mb, "none")
            continue
        if rc == "none":
            assert bound(lay, mb) >= exact
    assert list(chooser_order.fastest_first(pairs, levels, speed, bound)) == list(chooser_order.fastest_first(pairs, levels, speed))
    timed.clear()
    search = chooser_order.fastest_first(pairs, levels, speed)
    first = [next(search, None) for _ in range(20)]
    without = len(timed)
    timed.clear()
    search = chooser_order.fastest_first(pairs, levels, speed, bound)
    assert [next(search, None) for _ in range(20)] == first
    assert len(timed) <= without


STATES = [("llama-3.1-70b", 16, "h100", {}), ("qwen3-235b-a22b", 64, "h200", {}),
          ("llama-3.1-8b", 8, "a100-80gb-sxm", {"train_stack": "pytorch", "global_batch_tokens": 65536}),
          ("llama-3.1-70b", 32, "b200", {"train_precision": "fp4"}), ("mixtral-8x7b-v0.1", 16, "h100", {"train_precision": "fp8"}),
          ("qwen3-30b-a3b", 8, "l40s", {"seq_tokens": 32768}), ("deepseek-v2-lite", 8, "mi300x", {"optimizer": "adamw-8bit"})]


@pytest.mark.parametrize(("name", "gpus", "gpu", "asked"), STATES)
def test_a_layouts_model_states_do_not_read_its_micro_batch_or_recompute(name: str, gpus: int, gpu: str,
                                                                        asked: dict[str, object]) -> None:
    """The premise of ``layouts._states_outgrow``: a full-training plan's weights, gradients and optimizer state are
    the same at every micro-batch and recompute level of a layout, and the rest of its total is never negative."""
    from anchorgpu.planner import plan

    model, device = load_model(name), get_gpu(gpu)
    w = Workload(task="train", **{"seq_tokens": 4096, **asked})
    pairs, levels = layouts._candidates(model, w, Layout(gpus=gpus), gpus, w.seq_tokens or 4096, 2**24)
    planned = 0
    for offload in ("none", "optimizer"):
        for lay in list(dict.fromkeys(lay for lay, _ in pairs))[::3]:
            states = set()
            for mb in (1, 2, 4):
                for rc in levels:
                    layout = Layout(gpus=gpus, tp=lay.tp, pp=lay.pp, dp=lay.dp, ep=lay.ep, cp=lay.cp,
                                    virtual_stages=lay.virtual_stages, zero=lay.zero,
                                    offload=None if offload == "none" else offload)
                    try:
                        p = plan(model, _with(w, mb, rc), layout=layout, gpu=device, suggest=False)
                    except InvalidWorkload:
                        continue
                    planned += 1
                    g = p.per_gpu
                    states.add((g.weights_bytes, g.gradients_bytes, g.optimizer_bytes))
                    assert g.activations_bytes >= 0 and g.overhead_bytes >= 0 and g.kv_cache_bytes >= 0
            assert len(states) <= 1, (lay, states)
    assert planned >= 20


def _with(w: Workload, mb: int, rc: str) -> Workload:
    from anchorgpu.planner._frozen import evolve

    return evolve(w, micro_batch=mb, recompute=rc)
