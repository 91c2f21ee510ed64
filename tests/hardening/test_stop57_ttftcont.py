"""Stop 57, ttftcont: the prompt-queue line names the engine's own step budget (benchmarks/hardening/
stop57_ttftcont.md).

``plan --engine sglang`` or ``--engine trtllm`` past the step budget said "(max_num_batched_tokens)" and suggested
only ``--max-num-batched-tokens N``, vLLM's flag. This tool's ``--max-num-batched-tokens`` plans each engine's own
budget (planner.engine_limits.engine_limits): vLLM's ``max_num_batched_tokens`` (``vllm serve
--max-num-batched-tokens``), SGLang's ``chunked_prefill_size`` (``--chunked-prefill-size``, with
``--max-prefill-tokens`` past its default of 16,384: sgl-project/sglang@001067ff python/sglang/srt/server_args.py,
schedule_policy.py ``PrefillAdder``), TensorRT-LLM's ``max_num_tokens`` (``trtllm-serve --max_num_tokens``:
NVIDIA/TensorRT-LLM tensorrt_llm/commands/serve.py). llama-3.1-8b on one H100, 4,000 / 10 (stop56_qa16.md L2):
every engine's budget there is 8,192 tokens; 64 users need 64 x 401 = 25,664 a step, 32 need 12,832.
"""

from __future__ import annotations

import pytest

from anchorgpu.planner.speed.assumption_lines import prompt_queue_line
from cli_runner import run_json

_8B_PROMPTS = ("llama-3.1-8b", "--gpu", "h100", "--gpus", "1", "--prompt", "4000", "--output-tokens", "10")


def _queue_line(capsys: pytest.CaptureFixture[str], *extra: str) -> str | None:
    perf = run_json(capsys, "plan", *_8B_PROMPTS, *extra)["performance"]
    found = [a for a in perf["assumptions"] if a.startswith("Prompts queue")]
    assert len(found) <= 1, found
    return found[0] if found else None


@pytest.mark.parametrize(("engine", "budget", "launch"), [
    ("vllm", "vLLM's step budget of 8,192 tokens (max_num_batched_tokens)",
     "vllm serve --max-num-batched-tokens 25664"),
    ("sglang", "SGLang's step budget of 8,192 tokens (chunked_prefill_size)",
     "sglang.launch_server --chunked-prefill-size 25664 and --max-prefill-tokens 25664"),
    ("trtllm", "TensorRT-LLM's step budget of 8,192 tokens (max_num_tokens)", "trtllm-serve --max_num_tokens 25664"),
])
def test_the_prompt_queue_line_names_the_engines_own_step_budget(capsys: pytest.CaptureFixture[str], engine: str,
                                                                 budget: str, launch: str) -> None:
    line = _queue_line(capsys, "--concurrency", "64", "--engine", engine)
    assert line is not None and f"over {budget}:" in line, line
    assert line.endswith(f"or --max-num-batched-tokens 25664 ({launch}) keeps the steps within the budget"), line
    others = {"vllm": "max_num_batched_tokens", "sglang": "chunked_prefill_size", "trtllm": "max_num_tokens"}
    assert not any(name in line for e, name in others.items() if e != engine), line
    # this tool's flag sets that engine's budget: at the budget the line names, no queue
    assert _queue_line(capsys, "--concurrency", "64", "--engine", engine, "--max-num-batched-tokens", "25664") is None


def test_sglang_needs_its_prefill_batch_bound_raised_only_past_its_default() -> None:
    """12,832 tokens a step (32 users) is within SGLang's max_prefill_tokens default of 16,384: the chunk alone."""
    line = prompt_queue_line(32, 1, 4000, 10, 8192, 1.2, "sglang")
    assert line is not None and line.endswith(
        "or --max-num-batched-tokens 12832 (sglang.launch_server --chunked-prefill-size 12832) keeps the steps within "
        "the budget"), line
    assert "--max-prefill-tokens" in (prompt_queue_line(41, 1, 4000, 10, 8192, 1.2, "sglang") or "")  # 16,441
