"""The training chooser times a ZeRO-2 candidate only once its ZeRO-1 twin (the same layout, micro-batch and
recompute) has gone by without fitting (``chooser_order.zero1_twins``, ``chooser_order.fastest_first``'s ``twins``).
That keeps the search's order only because on Megatron's stack a twin is never slower at any level: the premise is
checked here over a sample, and so is the order (the same candidates in the same order as the search without twins),
with far fewer ZeRO-2 timings."""

from __future__ import annotations

import itertools

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.errors import InvalidWorkload
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, Workload
from anchorgpu.planner.speed import chooser_order, layouts
from anchorgpu.planner.speed.flops import train_kind
from anchorgpu.planner.speed.train_layout import TrainLayout
from anchorgpu.planner.speed.training import tokens_per_s_bound, training_step

BATCH_TOKENS = 4 * 2**20
CASES = [("llama-3.1-70b", 512, "h100", 4096, "train"), ("llama-3.1-8b", 16, "a100-40gb-sxm", 8192, "train"),
         ("qwen3-235b-a22b", 256, "h100", 4096, "train"), ("mixtral-8x7b-v0.1", 64, "b200", 4096, "train"),
         ("deepseek-v2-lite", 64, "mi300x", 32768, "train"), ("qwen3-8b", 32, "l40s", 4096, "lora")]


def _search(name: str, gpus: int, gpu: str, seq: int, task: str):  # type: ignore[no-untyped-def]
    model, device = load_model(name), get_gpu(gpu)
    w = Workload(task=task, seq_tokens=seq)  # Megatron's stack, the default
    blocks: list[tuple[int, int, int]] = []
    pairs, levels = layouts._candidates(model, w, Layout(gpus=gpus), gpus, seq, BATCH_TOKENS, zero2_blocks=blocks)
    twin_of = chooser_order.zero1_twins(blocks)
    twins = {g: t for g in range(len(pairs)) if (t := twin_of(g)) is not None}
    kind = train_kind(task)
    timed: list[tuple[TrainLayout, int, str]] = []

    def speed(lay: TrainLayout, mb: int, rc: str) -> float:
        timed.append((lay, mb, rc))
        return training_step(model, device, lay, seq_tokens=seq, micro_batch=mb, recompute=rc,  # type: ignore[arg-type]
                             global_batch_tokens=max(BATCH_TOKENS, lay.dp * mb * seq), kind=kind).tokens_per_s

    def bound(lay: TrainLayout, mb: int) -> float:
        return tokens_per_s_bound(model, device, lay, seq_tokens=seq, micro_batch=mb, kind=kind,
                                  global_batch_tokens=max(BATCH_TOKENS, lay.dp * mb * seq))

    return pairs, levels, speed, bound, timed, twins


def test_each_zero2_pair_has_its_zero1_twin_first() -> None:
    pairs, _, _, _, _, twins = _search("llama-3.1-70b", 64, "h100", 4096, "train")
    assert twins and len(twins) == sum(lay.zero == 2 for lay, _ in pairs)
    for g, t in twins.items():
        (lay, mb), (twin, twin_mb) = pairs[g], pairs[t]
        assert t < g and lay.zero == 2 and twin.zero == 1 and twin_mb == mb
        assert (twin.tp, twin.cp, twin.pp, twin.dp, twin.ep, twin.virtual_stages) == (
            lay.tp, lay.cp, lay.pp, lay.dp, lay.ep, lay.virtual_stages)


@pytest.mark.parametrize(("name", "gpus", "gpu", "seq", "task"), CASES)
def test_a_zero1_twin_is_never_slower_on_megatron(name: str, gpus: int, gpu: str, seq: int, task: str) -> None:
    pairs, levels, speed, _, _, twins = _search(name, gpus, gpu, seq, task)
    for g, t in twins.items():
        for rc in levels:
            try:
                zero2 = speed(*pairs[g], rc)
            except InvalidWorkload:
                continue
            assert speed(*pairs[t], rc) >= zero2


@pytest.mark.parametrize(("name", "gpus", "gpu", "seq", "task"), CASES)
def test_twins_keep_the_order_and_time_a_zero2_level_only_after_its_twin(name: str, gpus: int, gpu: str, seq: int,
                                                                        task: str) -> None:
    pairs, levels, speed, bound, timed, twins = _search(name, gpus, gpu, seq, task)
    n = len(levels)
    plain = [i for _, i, *_ in itertools.islice(chooser_order.fastest_first(pairs, levels, speed, bound), 200)]
    zero2_plain = sum(lay.zero == 2 for lay, _, _ in timed)
    timed.clear()
    index = {(id(lay), mb): g for g, (lay, mb) in enumerate(pairs)}
    met: set[int] = set()
    found = []
    zero2_timed = 0
    for _, i, *_ in chooser_order.fastest_first(pairs, levels, speed, bound, twins.get):
        for lay, mb, rc in timed:  # a ZeRO-2 level timed: its twin's level was met first (planned, and did not fit)
            g = index[(id(lay), mb)]
            if g in twins:
                assert twins[g] * n + levels.index(rc) in met  # type: ignore[arg-type]
        zero2_timed += sum(lay.zero == 2 for lay, _, _ in timed)
        timed.clear()
        found.append(i)
        met.add(i)
        if len(found) == len(plain):
            break
    assert found == plain
    assert zero2_timed <= zero2_plain


def test_a_skipped_zero2_layout_is_not_timed_at_its_twins_levels_and_the_rest_keep_their_order() -> None:
    pairs, levels, speed, bound, timed, twins = _search("llama-3.1-70b", 512, "h100", 4096, "train")
    plain = list(itertools.islice(chooser_order.fastest_first(pairs, levels, speed, bound, twins.get), 100))
    skipped_lay = next(lay for _, _, lay, _, _ in plain if lay.zero == 2)  # a ZeRO-2 layout the search meets
    skipped: set[int] = set()
    found = []
    for entry in chooser_order.fastest_first(pairs, levels, speed, bound, twins.get, skipped):
        if entry[2] is skipped_lay:
            skipped.add(id(skipped_lay))  # as the chooser does once a layout's states outgrow the GPU
        timed.clear()
        found.append(entry)
        if len(found) == len(plain):
            break
        assert all(lay is not skipped_lay or rc == "none" for lay, _, rc in timed)
    kept = [e[1] for e in plain if e[2] is not skipped_lay]
    assert [e[1] for e in found if e[2] is not skipped_lay][:len(kept)] == kept
