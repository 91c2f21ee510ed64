"""Llama 3.2 Vision (mllama) reads its images only through its cross-attention layers: the self-attention K/V holds
the text (one placeholder token an image), the cross-attention layers hold K/V over the image tiles' tokens, made
once a request. Its plan follows the encoder-decoder rule (tests/planner/test_encdec_request.py): the vision tower's
work costs prefill time but holds no decoder K/V, and every decode step reads the cross-attention K/V.

Figures: llama-3.2-11b-vision's config.json (architectures/data/models): 40 text layers of which 8 cross-attention
(cross_attention_layers 3, 8, ..., 38), 8 KV heads of 4,096 / 32 = 128, so a text token's K/V is 2 x 32 x 8 x 128 x 2 B
= 131,072 B and an image position's 2 x 8 x 8 x 128 x 2 B = 32,768 B; vision image_size 560, patch_size 14,
max_num_tiles 4: (560 / 14)^2 + 1 = 1,601 tokens a tile, one tile at 560x560 and 2 x 2 at 1120x1120. vLLM sizes the
encoder input (the cross-attention cache) as the tiles of the images times the tokens a tile
(vllm-project/vllm@6f0b37b8 vllm/model_executor/models/mllama.py, MllamaMultiModalProcessor.apply).
"""

from __future__ import annotations

import pytest

from cli_runner import run, run_json

TEXT_BYTES_PER_TOKEN = 2 * 32 * 8 * 128 * 2
IMAGE_BYTES_PER_POSITION = 2 * 8 * 8 * 128 * 2
TILE_TOKENS = (560 // 14) ** 2 + 1


@pytest.mark.parametrize(("argv", "images", "tiles"), [
    ((), 1, 1),
    (("--images-per-request", "2", "--image-resolution", "1120x1120"), 2, 4),
])
def test_the_step_reads_text_kv_and_the_cross_attention_kv(capsys: pytest.CaptureFixture[str], argv: tuple[str, ...],
                                                           images: int, tiles: int) -> None:
    doc = run_json(capsys, "plan", "llama-3.2-11b-vision", "--gpu", "h100", "--concurrency", "16", *argv)
    b, perf = doc["breakdown"], doc["performance"]
    cross_tokens = images * tiles * TILE_TOKENS
    # memory: the decoder's own cache holds the 1,280-token text sequence; the image positions sit in the cross cache
    assert b["kv_per_sequence_bytes"] == 1280 * TEXT_BYTES_PER_TOKEN
    assert b["cross_attention_kv_per_sequence_bytes"] == cross_tokens * IMAGE_BYTES_PER_POSITION
    # the request timed: the default 1,024 + 256 text tokens; the images are the encoder's input beside them
    assert perf["encoder_input_tokens"] == cross_tokens
    assert (perf["prompt_tokens"], perf["output_tokens"]) == (1024, 256)
    # saturation holds each sequence at its average length: 1,024 + 128 text tokens and the whole cross cache
    per_seq = (1024 + 128) * TEXT_BYTES_PER_TOKEN + cross_tokens * IMAGE_BYTES_PER_POSITION
    assert perf["saturation_concurrency"] == min(1024, b["kv_cache_capacity_bytes"] // per_seq)
    assert any("cross-attention layers' K/V over the" in a and f"{cross_tokens:,} image positions" in a
               for a in doc["assumptions"])


def test_the_cli_names_the_image_tokens_beside_the_text(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "plan", "llama-3.2-11b-vision", "--gpu", "h100", "--concurrency", "16")
    assert code == 0
    text = " ".join(out.split())
    assert "1,601 encoder input + 1,024 decoder prompt + 256 output tokens" in text
    assert "The 1 image placeholder token of each request sits within" in text
