"""The request an encoder-decoder (Whisper, T5) is timed with stays within the model's own limits.

Figures: Whisper large-v3's config (max_source_positions 1,500 encoder frames, max_target_positions 448 decoder
tokens); its 4-token decoder prompt and 1,500 padded frames are what vLLM sends (vllm-project/vllm@00a23257
vllm/model_executor/models/whisper.py get_generation_prompt, get_num_audio_tokens). T5-base: n_positions absent, a
512-token encoder length and decoder window (registry note); the decoder starts from one start token.
"""

from __future__ import annotations

from typing import Any

import pytest

from cli_runner import run, run_json

ENGINES = ("vllm", "sglang", "trtllm")


def _perf(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    return run_json(capsys, "plan", *argv, "--gpu", "h100")


@pytest.mark.parametrize("engine", ENGINES)
def test_whisper_default_request_fits_its_decoder_window(capsys: pytest.CaptureFixture[str], engine: str) -> None:
    doc = _perf(capsys, "whisper-large-v3", "--engine", engine)
    perf = doc["performance"]
    # 30 s of audio in the encoder; the decoder's 4-token prompt + the default 256-token answer within its 448
    assert perf["encoder_input_tokens"] == 1500
    assert (perf["prompt_tokens"], perf["output_tokens"]) == (4, 256)
    assert perf["prompt_tokens"] + perf["output_tokens"] <= 448
    assert any("1,500 encoder frames" in a and "448-token window" in a for a in doc["assumptions"])


def test_many_whisper_users_hold_a_sequence_shorter_than_the_window(capsys: pytest.CaptureFixture[str]) -> None:
    """With users and no length each holds the decoder's request (4 + 256 = 260 tokens); the speed line called that
    the decoder's "260-token window" where the window is 448."""
    doc = _perf(capsys, "whisper-large-v3", "--concurrency", "16")
    line = next(a for a in doc["assumptions"] if a.startswith("Speed: each request is 1,500 encoder frames"))
    assert "within a 260-token decoder sequence (its window 448)" in line and "260-token window" not in line


@pytest.mark.parametrize("model", ["t5-base", "flan-t5-xl"])
def test_t5_default_request_reads_its_encoder_length(capsys: pytest.CaptureFixture[str], model: str) -> None:
    perf = _perf(capsys, model)["performance"]
    assert perf["encoder_input_tokens"] == 512  # the default 1,024-token prompt, at most the encoder's 512
    assert (perf["prompt_tokens"], perf["output_tokens"]) == (1, 256)


def test_decode_reads_the_cross_attention_cache(capsys: pytest.CaptureFixture[str]) -> None:
    # saturation holds sequences at their average length: the decoder's own 4 + 128 tokens AND the 1,500 encoder
    # positions' cross K/V (245,760,000 B, test_images), each 163,840 B per position (2 · 32 layers · 1,280 · 2 B)
    doc = _perf(capsys, "whisper-large-v3")
    per_seq = 245_760_000 + (4 + 128) * 163_840
    assert doc["performance"]["saturation_concurrency"] == min(1024, doc["breakdown"]["kv_cache_capacity_bytes"]
                                                               // per_seq)


def test_t5_prompt_and_output_are_held_to_their_own_limits(capsys: pytest.CaptureFixture[str]) -> None:
    # 400 in the encoder (of 512) and 400 out of the decoder (of 512): each fits, though their sum passes 512
    perf = _perf(capsys, "t5-base", "--prompt", "400", "--output-tokens", "400")["performance"]
    assert (perf["encoder_input_tokens"], perf["output_tokens"]) == (400, 400)


@pytest.mark.parametrize(("argv", "needle"), [
    (("whisper-large-v3", "--prompt", "500"), "limit of 448 tokens"),
    (("whisper-large-v3", "--prompt", "100", "--output-tokens", "400"), "limit of 448 tokens"),
    (("t5-base", "--prompt", "1000"), "encoder input of 512 tokens"),
    (("t5-base", "--output-tokens", "600"), "decoder window of 512 tokens"),
])
def test_requests_past_the_limits_are_one_line_exit_2(capsys: pytest.CaptureFixture[str], argv: tuple[str, ...],
                                                      needle: str) -> None:
    code, out, err = run(capsys, "plan", *argv, "--gpu", "h100")
    assert code == 2 and out == ""
    assert needle in err and len(err.strip().splitlines()) == 1


def test_the_cli_names_the_encoder_input(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "plan", "whisper-large-v3", "--gpu", "h100")
    assert code == 0
    assert "1,500 encoder input + 4 decoder prompt + 256 output tokens" in " ".join(out.split())


def test_t5_decoder_window_holds_its_start_token_and_the_output(capsys: pytest.CaptureFixture[str]) -> None:
    """The decoder's window (t5-base: 512, registry) holds its one start token before the output, as Whisper's holds
    its 4-token prompt: --context 256 timed 1 + 256 decoder tokens against sequences of 256, and --output-tokens 512
    1 + 512 against the 512 window, while --context 256 --output-tokens 256 was refused."""
    perf = _perf(capsys, "t5-base", "--context", "256")["performance"]
    assert perf["prompt_tokens"] + perf["output_tokens"] == 256  # 1 + 255, was 1 + 256
    rec = run_json(capsys, "recommend", "t5-base", "--context", "256", "--top", "1")["workload"]
    assert rec["prompt_tokens"] + rec["output_tokens"] == 256
    for cmd in ("plan", "recommend"):
        code, out, err = run(capsys, cmd, "t5-base", "--output-tokens", "512", "--gpu", "h100")
        assert code == 2 and out == "" and "1-token decoder start + output 512 tokens" in err
    assert _perf(capsys, "t5-base", "--output-tokens", "511")["performance"]["output_tokens"] == 511


def test_whisper_sized_by_its_output_holds_its_decoder_prompt_not_a_text_prompt(
        capsys: pytest.CaptureFixture[str]) -> None:
    """--output-tokens 300 alone: the decoder holds its 4-token task prompt + 300 = 304 tokens. The sizing took the
    text default, 1,024 + 300 = 1,324 capped at the 448-token window, and said so, while the speed timed 4 + 300."""
    doc = _perf(capsys, "whisper-large-v3", "--output-tokens", "300")
    perf = doc["performance"]
    assert (perf["prompt_tokens"], perf["output_tokens"]) == (4, 300)
    assert doc["workload"]["context_tokens"] == 304
    assert any(a.startswith("Context not given") and "4 + 300 = 304 tokens" in a for a in doc["assumptions"])
    assert not any("1,024 + 300" in a for a in doc["assumptions"])
    rec = run_json(capsys, "recommend", "whisper-large-v3", "--output-tokens", "300", "--top", "1")["workload"]
    assert (rec["context_tokens"], rec["prompt_tokens"], rec["output_tokens"]) == (304, 4, 300)


def test_t5_sized_by_its_prompt_holds_the_decoder_start_token_too(capsys: pytest.CaptureFixture[str]) -> None:
    """--prompt 300 --output-tokens 100: the encoder reads 300 tokens; the decoder holds its start token and the 100
    output tokens, 101. The memory and the launch held 100 ("the memory above holds sequences of 100 tokens",
    --max-model-len 100) while the speed timed 1 + 100, and vLLM refuses a request whose decoder prompt and
    max_tokens pass max_model_len."""
    doc = run_json(capsys, "plan", "t5-base", "--prompt", "300", "--output-tokens", "100", "--gpu", "h100",
                   "--recipe", "vllm")
    perf = doc["performance"]
    assert (perf["encoder_input_tokens"], perf["prompt_tokens"], perf["output_tokens"]) == (300, 1, 100)
    assert doc["workload"]["context_tokens"] == perf["prompt_tokens"] + perf["output_tokens"] == 101
    rec = run_json(capsys, "recommend", "t5-base", "--prompt", "300", "--output-tokens", "100", "--top", "1")
    assert rec["workload"]["context_tokens"] == 101


@pytest.mark.parametrize(("argv", "decoder", "encoder"), [(("--prompt", "300", "--output-tokens", "100"), 101, 300),
                                                          (("--output-tokens", "300"), 301, 512),
                                                          (("--prompt", "50", "--output-tokens", "100"), 101, 50)])
def test_t5_launch_admits_the_encoder_prompt_as_well_as_the_decoder(
        capsys: pytest.CaptureFixture[str], argv: tuple[str, ...], decoder: int, encoder: int) -> None:
    """vLLM holds a text encoder-decoder's encoder prompt to --max-model-len too (vllm-project/vllm
    vllm/engine/llm_engine.py _validate_model_input: only Whisper's padded audio prompt is let through): the launch
    gave --max-model-len 100 for 300-token prompts, which vLLM refuses. The memory still holds the decoder's own."""
    doc = run_json(capsys, "plan", "t5-base", *argv, "--gpu", "h100", "--recipe", "vllm")
    assert doc["workload"]["context_tokens"] == decoder
    assert doc["performance"]["encoder_input_tokens"] == encoder
    assert f"--max-model-len {max(decoder, encoder)} " in doc["recipe"]["command"]
    rec = run_json(capsys, "recommend", "t5-base", *argv, "--top", "1", "--recipe", "vllm")["results"][0]
    assert f"--max-model-len {max(decoder, encoder)} " in rec["recipe"]["command"]


@pytest.mark.parametrize(("model", "decoder_prompt", "window", "encoder"), [("whisper-large-v3", 4, 448, 1500),
                                                                           ("t5-base", 1, 512, 512)])
def test_many_users_of_an_encoder_decoder_are_sized_at_its_decoders_request(
        capsys: pytest.CaptureFixture[str], model: str, decoder_prompt: int, window: int, encoder: int) -> None:
    """--concurrency 64, no length: the decoder of each sequence holds its own prompt (Whisper's 4 task tokens,
    T5's start token) + the default 256-token answer. The line read "1,024 prompt + 256 output = 448 tokens, not the
    model's whole 448-token window" (a sum that is not one, and the window itself) and the cache held the window."""
    doc = _perf(capsys, model, "--concurrency", "64")
    perf = doc["performance"]
    assert doc["workload"]["context_tokens"] == decoder_prompt + 256 < window
    assert (perf["prompt_tokens"], perf["output_tokens"], perf["encoder_input_tokens"]) == (decoder_prompt, 256,
                                                                                          encoder)
    line = next(a for a in doc["assumptions"] if a.startswith("Context not given"))
    assert f"the decoder's {decoder_prompt}-token prompt + 256 output = {decoder_prompt + 256} tokens" in line
    assert "1,024 prompt" not in line
    rec = run_json(capsys, "recommend", model, "--top", "1")["workload"]
    assert (rec["context_tokens"], rec.get("one_sequence_context_tokens")) == (decoder_prompt + 256, window)
