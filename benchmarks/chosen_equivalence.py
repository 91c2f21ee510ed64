"""Equivalence check for the training layout chooser: ``benchmarks/equivalence.py`` over open layouts at the GPU
counts a search is slow at (8-1,024 GPUs, and none: the fewest that hold the job), where that sample keeps its open
layouts to 16 GPUs or fewer. Same inputs, byte-identical answers, before and after a change to the search.

Each configuration leaves part of the layout to the chooser (everything but the GPU count, or a few knobs kept:
TP, PP, ZeRO / FSDP, micro-batch, recompute, EP, interleaving) for training, LoRA or QLoRA of a dense model, a
mixture of experts, MLA, a hybrid or a multimodal one on NVIDIA and AMD GPUs, and each line holds the whole plan with
its ``performance`` section: the chosen layout, the sentence that says why (with the candidates' count) and every
figure. The same ``write`` and ``compare`` as ``equivalence.py``:

    git -C /work/main archive HEAD src | (mkdir -p /tmp/base && tar -x -C /tmp/base)
    .venv/bin/python benchmarks/chosen_equivalence.py write /tmp/chosen-before.jsonl --tree /tmp/base
    .venv/bin/python benchmarks/chosen_equivalence.py write /tmp/chosen-after.jsonl
    .venv/bin/python benchmarks/chosen_equivalence.py compare /tmp/chosen-before.jsonl /tmp/chosen-after.jsonl

About a minute per 2,000 configurations (``--count``, default 2,000) on one core.
"""

from __future__ import annotations

import random
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import equivalence  # noqa: E402  (beside this file)

MODELS = ("llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b", "qwen3-8b", "gemma-2-9b", "mixtral-8x7b-v0.1",
          "qwen3-30b-a3b", "qwen3-235b-a22b", "gpt-oss-120b", "deepseek-v2-lite", "deepseek-v3", "jamba-1.5-mini",
          "nemotron-h-8b", "qwen2.5-vl-7b", "llama-4-scout-17b-16e")
GPUS = ("h100-sxm", "h100-sxm", "h200", "b200", "a100-80gb-sxm", "a100-40gb-sxm", "l40s", "mi300x", "mi355x", "h20")
FP8 = ("h100-sxm", "h200", "b200", "mi300x", "mi355x", "h20")
COUNTS = (None, 8, 16, 32, 64, 128, 256, 512, 1024)


def chosen_configurations(count: int, seed: int) -> Iterator[dict[str, Any]]:
    """``count`` training configurations with open layouts: the same for the same (count, seed) on every tree."""
    rng = random.Random(seed)
    for i in range(count):
        task = rng.choice(("train", "train", "train", "lora", "qlora"))
        model = rng.choice(MODELS)
        gpus, gpu = rng.choice(COUNTS), rng.choice(GPUS)
        layout: dict[str, Any] = {"gpus": gpus} if gpus else {}
        w: dict[str, Any] = {"task": task, "seq_tokens": rng.choice((None, 2048, 4096, 4096, 8192, 32768, 131072))}
        if rng.random() < 0.3:  # a few knobs kept as given
            for name, values in (("tp", (1, 2, 4, 8)), ("pp", (1, 2, 4)), ("zero", (0, 1, 3)), ("ep", (2, 8))):
                if rng.random() < 0.25:
                    layout[name] = rng.choice(values)
            if layout.get("pp", 1) > 1 and rng.random() < 0.5:
                layout["virtual_stages"] = rng.choice((2, 4))
            if rng.random() < 0.1:
                layout["fsdp"] = True
            if not gpus and any(k in layout for k in ("tp", "pp")):
                layout["gpus"] = 64
        if rng.random() < 0.2:
            w["micro_batch"] = rng.choice((1, 2))
        if rng.random() < 0.2:
            w["recompute"] = rng.choice(("none", "selective", "full"))
        w["global_batch_tokens"] = rng.choice((None, None, 2**20, 2**24))
        w["train_precision"] = rng.choice(("mixed", "mixed", "mixed", "fp8")) if gpu in FP8 else "mixed"
        w["optimizer"] = rng.choice(("adamw", "adamw", "adamw-8bit"))
        if rng.random() < 0.1:
            w["train_stack"] = "pytorch"
        if rng.random() < 0.05:
            layout["offload"] = "optimizer"
        if rng.random() < 0.05 and gpus and task == "train" and "recompute" not in w:
            w["offload_activation_layers"] = 2
            layout["pp"] = 1
        yield {"i": i, "model": model, "gpu": gpu, "precision": {},
               "workload": {k: v for k, v in w.items() if v is not None}, "layout": layout,
               "performance": {}, "suggest": rng.random() < 0.5}


def main(argv: list[str] | None = None) -> int:
    return equivalence.main(argv, description=__doc__.split("\n\n")[0], count=2000, seed=41,
                            sample=chosen_configurations, sweeps=False)


if __name__ == "__main__":
    raise SystemExit(main())
