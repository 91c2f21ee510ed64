"""The ``anchorgpu recommend --json`` answers of a fixed set of commands, written one file each, to hold a change that
must not move them byte-identical (a dev script, not a test). Serving and training, dense and MoE, vLLM, TensorRT-LLM
and SGLang, with and without ``--gpu``, at several concurrencies, with recipes; the clock is fixed, so two trees'
answers can be compared byte for byte:

    PYTHONPATH=/tmp/base/src .venv/bin/python benchmarks/recommend_dump.py /tmp/before
    .venv/bin/python benchmarks/recommend_dump.py /tmp/after
    diff -r /tmp/before /tmp/after && echo IDENTICAL
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import sys
from datetime import UTC, datetime
from pathlib import Path

import anchorgpu.cli.recommend as cli_recommend
from anchorgpu.cli import main

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


class _FixedClock(datetime):
    @classmethod
    def now(cls, tz=None):  # type: ignore[no-untyped-def, override]
        return NOW


CMDS = [
    "llama-3.1-70b --task inference --context 8192 --concurrency 32 --term 1month",
    "llama-3.1-70b --task inference --context 8192 --concurrency 32 --term 1month --lower-precision",
    "llama-3.1-70b --task inference --context 8192 --term 1month --lower-precision",
    "llama-3.1-70b --task inference --context 8192 --term 2w",
    "llama-3.1-8b --context 4096 --concurrency 1 --term 1h",
    "llama-3.1-8b --context 4096 --concurrency 256 --gpu h100 --term 1month",
    "llama-3.1-8b --context 4096 --concurrency 8 --gpu l40s --engine trtllm",
    "llama-3.1-70b --context 8192 --concurrency 64 --engine trtllm",
    "llama-3.1-70b --context 8192 --concurrency 16 --engine sglang",
    "llama-3.1-70b --context 8192 --engine sglang --gpu h200",
    "llama-3.1-405b --context 8192 --concurrency 32",
    "llama-3.1-405b --context 8192 --concurrency 32 --lower-precision --gpu mi300x",
    "qwen3-30b-a3b --context 8192 --concurrency 64",
    "qwen3-235b-a22b --context 8192 --concurrency 128 --engine sglang",
    "qwen3-235b-a22b --context 8192 --concurrency 32 --engine trtllm",
    "deepseek-v3 --context 8192 --concurrency 64",
    "deepseek-v3 --context 8192 --concurrency 256 --engine sglang --gpu h200",
    "deepseek-v3 --context 4096 --engine trtllm --gpu b200",
    "mixtral-8x7b-v0.1 --context 8192 --concurrency 16 --min-tokens-per-s 30",
    "qwen2.5-7b --context 8192 --concurrency 32 --kv-cache fp8,bf16 --weights bf16,fp8",
    "llama-3.1-70b --context 8192 --concurrency 32 --max-usd 20000 --top 5",
    "gemma-3-27b --context 8192 --concurrency 8",
    "llama-3.1-70b --task inference --context 8192 --concurrency 32 --gpu rtx-4090",
    "llama-3.1-70b --task train --term 1month",
    "llama-3.1-70b --task train --tokens 1e11 --term 1month",
    "llama-3.1-8b --task lora --term 1w",
    "llama-3.1-8b --task qlora --gpu l40s",
    "qwen3-235b-a22b --task train --tokens 3e11",
    "qwen3-30b-a3b --task train --gpu h100 --seq 8k",
    "deepseek-v3 --task train --term 1month",
    "llama-3.1-405b --task train --train-precision fp8 --tokens 1e12",
    "llama-3.1-70b --context 8192 --concurrency 32 --recipe vllm",
    "qwen3-235b-a22b --context 8192 --concurrency 64 --engine sglang --recipe sglang --max-servers 8",
    "llama-3.1-70b --task train --recipe torchrun-fsdp --max-servers 2",
    "llama-3.1-8b --context 32k --concurrency 4 --gpu mi300x --mbu 0.6",
    # no --context: the ladder's sequences sized as plan --concurrency N sizes them (concurrency 1: the model's window;
    # more: the default request, or prompt + output where given)
    "llama-3.1-8b --top 3",
    "llama-3.1-8b --gpu rtx-4090",
    "llama-3.1-8b --top 3 --recipe vllm",
    "llama-3.1-70b --term 1month",
    "llama-3.1-70b --engine trtllm",
    "llama-3.1-70b --engine sglang --gpu h200",
    "qwen3-30b-a3b",
    "deepseek-v3 --gpu h200",
    "qwen2.5-vl-7b",
    "whisper-large-v3",
    "t5-base",
    "llama-3.1-8b --concurrency 64",
    "llama-3.1-8b --concurrency 1 --gpu l40s",
    "llama-3.1-8b --prompt 1000 --output-tokens 200",
    "llama-3.1-8b --prompt 1000 --output-tokens 200 --concurrency 32",
]


# recfast (stop 59): the ladder under per-user limits (floors, TTFT limits, both; dense and MoE, three engines, several
# GPUs), --max-usd, prompt/output requests past the token budget, encoder-decoder and vision, training, diffusion,
# and answers that nothing meets
CMDS += [
    "llama-3.1-70b --context 8192 --term 1month --lower-precision --min-tokens-per-s-per-user 33.3",
    "llama-3.1-70b --context 8192 --term 1month --lower-precision --min-tokens-per-s-per-user 20 --max-ttft-s 2",
    "llama-3.1-70b --context 8192 --term 1month --lower-precision --max-ttft-s 1",
    "llama-3.1-70b --context 8192 --term 1month --lower-precision --top 10",
    "llama-3.1-70b --context 8192 --lower-precision --min-tokens-per-s 50 --max-ttft-s 0.5 --top 10",
    "llama-3.1-8b --context 4096 --min-tokens-per-s-per-user 100",
    "llama-3.1-8b --context 4096 --max-ttft-s 0.2 --engine trtllm",
    "llama-3.1-8b --context 4096 --min-tokens-per-s 60 --max-ttft-s 1 --engine sglang",
    "llama-3.1-70b --context 8192 --engine trtllm --min-tokens-per-s 25 --max-ttft-s 3",
    "llama-3.1-70b --context 8192 --engine sglang --gpu h200 --min-tokens-per-s 30",
    "qwen3-30b-a3b --context 8192 --min-tokens-per-s 50",
    "qwen3-30b-a3b --context 8192 --min-tokens-per-s 40 --max-ttft-s 1 --lower-precision",
    "qwen3-235b-a22b --context 8192 --min-tokens-per-s 20 --max-ttft-s 2",
    "qwen3-235b-a22b --context 8192 --engine trtllm --min-tokens-per-s 30",
    "qwen3-235b-a22b --context 8192 --engine sglang --lower-precision --max-ttft-s 2",
    "deepseek-v3 --context 8192 --gpu h200 --min-tokens-per-s 33.3",
    "deepseek-v3 --context 8192 --gpu b200 --engine trtllm --min-tokens-per-s 20 --max-ttft-s 2",
    "deepseek-v3 --context 4096 --engine sglang --gpu h200 --max-ttft-s 1.5",
    "mixtral-8x7b-v0.1 --context 8192 --max-usd 20000 --min-tokens-per-s 30",
    "mixtral-8x7b-v0.1 --context 8192 --lower-precision --max-ttft-s 1",
    "llama-3.1-405b --context 8192 --lower-precision --min-tokens-per-s 20 --max-ttft-s 4",
    "llama-3.1-405b --context 8192 --gpu mi300x --min-tokens-per-s 15",
    "gemma-3-27b --context 8192 --min-tokens-per-s 40 --max-ttft-s 1",
    "llama-3.1-8b --gpu rtx-4090 --min-tokens-per-s 50",
    "llama-3.1-8b --prompt 1000 --output-tokens 200 --min-tokens-per-s 80 --max-ttft-s 0.5",
    "llama-3.1-8b --prompt 1000 --output-tokens 1 --max-ttft-s 0.5",
    "llama-3.1-8b --prompt 3000 --output-tokens 1 --concurrency 16",
    "llama-3.1-8b --prompt 20000 --output-tokens 50 --min-tokens-per-s 30",
    "llama-3.1-70b --prompt 6000 --output-tokens 100 --lower-precision --max-ttft-s 3",
    "qwen2.5-vl-7b --min-tokens-per-s 40 --max-ttft-s 1",
    "whisper-large-v3 --min-tokens-per-s 40",
    "t5-base --max-ttft-s 0.1",
    "llama-3.1-70b --context 8192 --concurrency 32 --max-usd 5000",
    "llama-3.1-70b --context 32k --lower-precision --min-tokens-per-s 20",
    "qwen2.5-7b --context 8192 --kv-cache fp8,bf16 --weights bf16,fp8 --min-tokens-per-s 70 --max-ttft-s 0.3",
    "llama-3.1-8b --context 4096 --gpu mi300x --mbu 0.6 --min-tokens-per-s 90",
    "llama-3.1-70b --task train --tokens 1e11 --max-usd 100000",
    "qwen3-30b-a3b --task train --tokens 1e10",
    "mixtral-8x7b-v0.1 --task train --term 1month",
    "sd-3.5-large --term 1month",
    "flux.1-dev --term 1w",
    "llama-3.1-70b --context 8192 --min-tokens-per-s 10000",
    "llama-3.1-70b --context 8192 --max-ttft-s 0.0001",
]


def run(argv: list[str]) -> tuple[object, str, str]:
    """Exit code, stdout and stderr of ``anchorgpu ARGV`` in this process, at the fixed clock."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code: object = main(argv)
        except SystemExit as exc:
            code = exc.code
    return code, out.getvalue(), err.getvalue()


if __name__ == "__main__":
    folder = Path(sys.argv[1])
    folder.mkdir(parents=True, exist_ok=True)
    cli_recommend.datetime = _FixedClock  # type: ignore[attr-defined, misc]
    for i, cmd in enumerate(CMDS):
        code, out, err = run(["recommend", *cmd.split(), "--json"])
        (folder / f"{i:02d}.json").write_text(f"# {cmd}\n# exit {code}\n{out}\n# stderr\n{err}", encoding="utf-8")
        print(i, code, len(out), hashlib.sha1(out.encode()).hexdigest()[:10], cmd)
