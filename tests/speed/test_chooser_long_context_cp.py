"""The training chooser (and the recommend sweep, and "What would fit") try context parallelism past 8 where the
sequence is long enough: every power of two that divides it and leaves each GPU 4,096 of its tokens or more
(``train_sizes.train_cp_sizes``). Before, CP stopped at 8: Llama 3.1 8B at 1,048,576 tokens on 1,024 H100 was given TP 8 x
PP 4 x CP 8 x DP 4 at 122,304 tok/s, where ``--cp 64 --tp 8`` by hand runs 489,226 (stop54_qa10 "left" item 2);
Llama 3's own 128K stage ran CP 16 (arXiv:2407.21783 Table 4: TP 8, CP 16, PP 16 on 16,384 H100)."""

from __future__ import annotations

from anchorgpu.architectures import load_model
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, Workload, plan
from anchorgpu.planner.speed.estimate import plan_performance
from anchorgpu.planner.train_sizes import CP_MIN_TOKENS_PER_RANK, train_cp_sizes


def test_sequences_of_32k_and_less_keep_the_sizes_tried_before() -> None:
    """The chooser's answers for ordinary lengths are unchanged (benchmarks/chosen_equivalence.py: no difference
    outside 131,072 tokens over 2,000 configurations)."""
    assert [train_cp_sizes(s) for s in (2048, 8192, 16384, 24576, 32768)] == [
        (1,), (1,), (1, 2, 4), (1, 2, 4), (1, 2, 4, 8)]


def test_long_sequences_try_cp_past_8_each_rank_keeping_4096_tokens() -> None:
    assert 16 in train_cp_sizes(131072)  # Llama 3's 128K stage
    assert train_cp_sizes(1_048_576) == (1, 2, 4, 8, 16, 32, 64, 128, 256)
    for seq in (65536, 131072, 3 * 2**17, 1_048_576, 4_194_304):
        sizes = train_cp_sizes(seq)
        assert all(seq % cp == 0 and seq // cp >= CP_MIN_TOKENS_PER_RANK for cp in sizes)
        assert seq % (2 * sizes[-1]) or seq // (2 * sizes[-1]) < CP_MIN_TOKENS_PER_RANK  # none left out


def test_a_million_tokens_on_1024_h100_chosen_at_least_as_fast_as_cp64_by_hand() -> None:
    model, gpu = load_model("llama-3.1-8b"), get_gpu("h100")
    w = Workload(task="train", seq_tokens=1_048_576, allow_long_context=True)
    chosen = plan(model, w, layout=Layout(gpus=1024), gpu=gpu)
    by_hand = plan(model, w, layout=Layout(gpus=1024, cp=64, tp=8), gpu=gpu)
    assert chosen.fits and by_hand.fits
    assert chosen.layout.cp > 8
    chosen_tps = plan_performance(chosen)["train_tokens_per_s"]
    assert chosen_tps >= plan_performance(by_hand)["train_tokens_per_s"]
