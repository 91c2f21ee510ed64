"""Encoder-decoder models (T5, Whisper): the encoder and the decoder counted, the decoder planned as the model.

The :class:`ModelSpec` describes the decoder (its layers, heads and KV cache per generated token); its
:class:`~anchorgpu.architectures.spec.EncoderSpec` describes the encoder and the cross-attention K/V every
decoder layer keeps per encoder position. ``towers`` splits ``params_total`` into encoder, decoder and the
shared embeddings. Pure; stdlib only.
"""

from __future__ import annotations

from dataclasses import replace

from anchorgpu.architectures._build import Tally
from anchorgpu.architectures._config import ConfigReader
from anchorgpu.architectures.families._blocks import MAX_LAYERS, Core, Parser, assemble_dense, gqa
from anchorgpu.architectures.spec import EncoderSpec, ModelSpec

_ACTIVE = "params_active counts what one generated token passes through (the decoder); the encoder runs once per input"


def _total(t: Tally) -> int:
    return t.breakdown().total


def _t5(r: ConfigReader, name: str, source: str) -> ModelSpec:
    """T5 / Flan-T5: shared embeddings, relative position biases in the first block of each stack, RMS-style
    norms without bias, a plain or gated (``gated-gelu``) feed-forward. transformers 5 always ties the LM head
    to the shared embeddings (``T5Config`` forces ``tie_word_embeddings``)."""
    d = r.size("d_model", default=512)
    d_kv = r.size("d_kv", default=64)
    heads = r.size("num_heads", default=8)
    ffn = r.size("d_ff", default=2048)
    enc_layers = r.size("num_layers", default=6, maximum=MAX_LAYERS)
    dec_layers = r.size("num_decoder_layers", default=enc_layers, maximum=MAX_LAYERS)
    vocab = r.size("vocab_size", default=32128)
    buckets = r.size("relative_attention_num_buckets", default=32)
    proj = r.text("feed_forward_proj", default="relu")
    gated = proj.startswith("gated-")
    ctx = r.size("n_positions", default=512)  # relative positions set no hard limit; T5 was trained on 512
    enc = Core(hidden=d, layers=enc_layers, heads=heads, kv_heads=heads, head_dim=d_kv, vocab=vocab, context=ctx)
    dec = replace(enc, layers=dec_layers)
    t = Tally()
    t.table("embeddings", vocab, d)
    shared = _total(t)
    # encoder: self-attention, feed-forward, two norms per block, relative bias table once, final norm
    gqa(t, enc)
    t.table("other", buckets, heads)  # the encoder's relative-position bias table
    _t5_ffn(t, d, ffn, enc_layers, gated)
    t.vector("norms", d, count=2 * enc_layers + 1)
    encoder = _total(t) - shared
    gqa(t, dec)
    gqa(t, dec)  # EncDecAttention: q, k, v, o of the same shapes
    t.table("position_embeddings", buckets, heads)
    _t5_ffn(t, d, ffn, dec_layers, gated)
    t.vector("norms", d, count=3 * dec_layers + 1)
    decoder = _total(t) - shared - encoder
    t.notes.append(f"encoder-decoder: {enc_layers} encoder and {dec_layers} decoder blocks; position_embeddings is the "
                   "decoder's relative attention bias table, other the encoder's; the LM head is tied to the shared "
                   "embeddings (transformers 5)")
    if not r.has("n_positions"):
        t.notes.append("n_positions is not in the config: a 512-token context (T5's training length) is assumed; "
                       "its relative positions set no hard limit")
    spec = assemble_dense(t, r, dec, name, source, tied=True, ffn=ffn, windows=(None,) * dec_layers, gated=gated,
                          model_type="t5")
    encoder_spec = EncoderSpec(modality="text", num_layers=enc_layers, hidden_size=d, params=encoder, fixed_tokens=0,
                               max_tokens=ctx, cross_kv_values_per_token=2 * dec_layers * heads * d_kv)
    return replace(spec, encoder=encoder_spec, params_active=spec.params_active - encoder, notes=(*spec.notes, _ACTIVE),
                   towers=(("shared_embeddings", shared), ("encoder", encoder), ("decoder", decoder)))


def _t5_ffn(t: Tally, d: int, ffn: int, layers: int, gated: bool) -> None:
    if gated:
        t.linear("mlp", "gate", d, ffn, count=layers)  # wi_0
        t.linear("mlp", "up", d, ffn, count=layers)  # wi_1
    else:
        t.linear("mlp", "up", d, ffn, count=layers)  # wi
    t.linear("mlp", "down", ffn, d, count=layers)  # wo


def _whisper_attention(t: Tally, c: Core) -> None:
    """q, v and out projections with biases, k without (Whisper's attention)."""
    q = c.heads * c.head_dim
    t.linear("attention", "q", c.hidden, q, count=c.layers, bias=True)
    t.linear("attention", "k", c.hidden, q, count=c.layers)
    t.linear("attention", "v", c.hidden, q, count=c.layers, bias=True)
    t.linear("attention", "o", q, c.hidden, count=c.layers, bias=True)


def _whisper(r: ConfigReader, name: str, source: str) -> ModelSpec:
    """Whisper: a convolutional audio front-end and encoder over log-mel frames, a text decoder cross-attending
    to it; LayerNorms with bias everywhere, learned positions on both sides, ``proj_out`` tied by default."""
    d = r.size("d_model", default=384)
    enc_layers = r.size("encoder_layers", default=4, maximum=MAX_LAYERS)
    dec_layers = r.size("decoder_layers", default=4, maximum=MAX_LAYERS)
    enc_heads = r.size("encoder_attention_heads", default=6)
    dec_heads = r.size("decoder_attention_heads", default=6)
    for key, heads in (("encoder_attention_heads", enc_heads), ("decoder_attention_heads", dec_heads)):
        if d % heads:
            raise r.fail(key, f"must divide d_model ({d}), got {heads}")
    enc_ffn = r.size("encoder_ffn_dim", default=1536)
    dec_ffn = r.size("decoder_ffn_dim", default=1536)
    mels = r.size("num_mel_bins", default=80)
    frames = r.size("max_source_positions", default=1500)
    ctx = r.size("max_target_positions", default=448)
    vocab = r.size("vocab_size", default=51865)
    tied = r.flag("tie_word_embeddings", default=True)
    enc = Core(hidden=d, layers=enc_layers, heads=enc_heads, kv_heads=enc_heads, head_dim=d // enc_heads, vocab=vocab,
               context=frames)
    dec = Core(hidden=d, layers=dec_layers, heads=dec_heads, kv_heads=dec_heads, head_dim=d // dec_heads, vocab=vocab,
               context=ctx)
    t = Tally()
    t.table("other", mels * 3 + 1, d)  # conv1: kernel 3 over the mel bins, bias
    t.table("other", d * 3 + 1, d)  # conv2
    t.table("other", frames, d)  # the encoder's (fixed, sinusoidal-initialised) position table
    _whisper_attention(t, enc)
    t.linear("mlp", "up", d, enc_ffn, count=enc_layers, bias=True)
    t.linear("mlp", "down", enc_ffn, d, count=enc_layers, bias=True)
    t.vector("norms", 2 * d, count=2 * enc_layers + 1)
    encoder = _total(t)
    t.table("embeddings", vocab, d)
    if not tied:
        t.table("head", vocab, d)
    t.table("position_embeddings", ctx, d)
    _whisper_attention(t, dec)
    _whisper_attention(t, dec)  # encoder_attn
    t.linear("mlp", "up", d, dec_ffn, count=dec_layers, bias=True)
    t.linear("mlp", "down", dec_ffn, d, count=dec_layers, bias=True)
    t.vector("norms", 2 * d, count=3 * dec_layers + 1)
    decoder = _total(t) - encoder
    t.notes.append(f"other: the encoder's two audio convolutions and its position table; {frames:,} encoder frames per "
                   "30 s of audio")
    spec = assemble_dense(t, r, dec, name, source, tied=tied, ffn=dec_ffn, windows=(None,) * dec_layers, gated=False,
                          model_type="whisper")
    encoder_spec = EncoderSpec(modality="audio", num_layers=enc_layers, hidden_size=d, params=encoder,
                               fixed_tokens=frames, max_tokens=frames,
                               cross_kv_values_per_token=2 * dec_layers * dec_heads * (d // dec_heads))
    return replace(spec, encoder=encoder_spec, params_active=spec.params_active - encoder, notes=(*spec.notes, _ACTIVE),
                   towers=(("audio_encoder", encoder), ("decoder", decoder)))


FAMILY_NAMES: dict[str, str] = {"t5": "T5", "whisper": "Whisper"}

PARSERS: dict[str, Parser] = {"t5": _t5, "whisper": _whisper}

READS: dict[str, frozenset[str]] = {"t5": frozenset({"num_decoder_layers"}),
                                    "whisper": frozenset({"encoder_layers", "decoder_layers"})}

CLASSES: dict[str, str] = {"T5ForConditionalGeneration": "t5", "WhisperForConditionalGeneration": "whisper"}
