"""Measure on one GPU what the speed and memory model predicts (dev script; needs torch + transformers).

Runs on a machine with a CUDA GPU; writes one JSON file of measurements. Nothing here is imported by
the product. `benchmarks/device/compare.py` puts the planner's predictions beside these figures.

What it measures, each as the GPU's own time (CUDA events) unless said otherwise:
- gemm: BF16 (and FP8 where torch._scaled_mm runs) matrix products over the shapes a Llama-3.1-8B
  layer multiplies, from 1 to 16,384 rows: achieved TFLOP/s.
- hbm: a large read (sum) and a large copy: achieved bytes/s.
- decode: one decode step of a Llama model (random BF16 weights, our own minimal implementation,
  KV cache filled to the context) captured in a CUDA graph, so no host launch cost is counted; per batch.
  The same step run eagerly at batch 1, to show what the host adds without graphs.
- prefill: one forward over a whole prompt (flash attention through SDPA), per prompt length.
- train: full training steps of transformers' LlamaForCausalLM (random init, SDPA attention) in the
  planner's mixed precision (BF16 weights and gradients, FP32 master weights and AdamW moments), per
  model, micro-batch and recompute: tokens/s, peak allocated and reserved memory, memory the forward pass
  adds (activations and logits).
- lora: LoRA fine-tuning steps of the same transformers model, frozen BF16 base, PEFT's adapters written out
  (rank 16, alpha 32, on q/k/v/o/gate/up/down; FP32 adapters with the input cast to them, as peft's
  autocast_adapter_dtype does), torch AdamW on the adapters: tokens/s and memory by phase.

Usage: python h200_measure.py OUT.json [--quick] [--device cpu] [--configs DIR]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
import traceback
from pathlib import Path

import torch
import torch.nn.functional as F

HERE = Path(__file__).resolve().parent
DEFAULT_CONFIGS = HERE.parents[1] / "src" / "anchorgpu" / "architectures" / "data" / "models"

RESULTS: dict = {
    "meta": {},
    "gemm": [],
    "hbm": [],
    "decode": [],
    "prefill": [],
    "train": [],
    "width": [],
    "experts": [],
    "moe_layer": [],
    "lora": [],
    "errors": [],
}
OUT_PATH: Path | None = None
DEADLINE = math.inf


def save() -> None:
    if OUT_PATH is not None:
        OUT_PATH.write_text(json.dumps(RESULTS, indent=1))


def left_s() -> float:
    return DEADLINE - time.time()


def log(*a: object) -> None:
    print(*a, flush=True)


def err(where: str, e: BaseException) -> None:
    RESULTS["errors"].append({"where": where, "error": f"{type(e).__name__}: {e}"[:500]})
    log("ERROR", where, type(e).__name__, str(e)[:300])
    save()


def timed(fn, warmup: int = 3, iters: int = 10, dev: str = "cuda") -> float:
    """Mean seconds per call, by CUDA events (or wall clock on the CPU)."""
    for _ in range(warmup):
        fn()
    if dev == "cuda":
        torch.cuda.synchronize()
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iters):
            fn()
        end.record()
        torch.cuda.synchronize()
        return start.elapsed_time(end) / 1e3 / iters
    t0 = time.perf_counter()
    for _ in range(iters):
        fn()
    return (time.perf_counter() - t0) / iters


# --------------------------------------------------------------------------- gemm and hbm


def measure_gemm(dev: str, quick: bool) -> None:
    shapes = [("qkv", 6144, 4096), ("o", 4096, 4096), ("gate_up", 28672, 4096), ("down", 4096, 14336)]
    rows = [1, 8, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384]
    if quick:
        shapes, rows = shapes[:1], [1, 64]
    big = 8192 if not quick else 256
    cases = [(f"square{big}", big, big, big)] + [(n, m, nn, k) for n, nn, k in shapes for m in rows]
    for name, m, n, k in cases:
        if left_s() < 60:
            return
        try:
            a = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
            b = torch.randn(n, k, device=dev, dtype=torch.bfloat16)
            s = timed(lambda a=a, b=b: a @ b.t(), dev=dev, iters=20 if m < 4096 else 10)
            row = {
                "what": name,
                "m": m,
                "n": n,
                "k": k,
                "dtype": "bf16",
                "s": s,
                "tflops": 2 * m * n * k / s / 1e12,
                "weight_read_tb_s": n * k * 2 / s / 1e12,
            }
            RESULTS["gemm"].append(row)
            if dev == "cuda" and hasattr(torch, "_scaled_mm") and m % 16 == 0:
                try:
                    a8 = a.to(torch.float8_e4m3fn)
                    b8 = b.to(torch.float8_e4m3fn)
                    one = torch.tensor(1.0, device=dev)
                    s8 = timed(
                        lambda a8=a8, b8=b8, one=one: torch._scaled_mm(
                            a8, b8.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16
                        ),
                        dev=dev,
                        iters=20 if m < 4096 else 10,
                    )
                    RESULTS["gemm"].append(
                        {
                            "what": name,
                            "m": m,
                            "n": n,
                            "k": k,
                            "dtype": "fp8",
                            "s": s8,
                            "tflops": 2 * m * n * k / s8 / 1e12,
                            "weight_read_tb_s": n * k / s8 / 1e12,
                        }
                    )
                except Exception as e:  # noqa: BLE001
                    err(f"gemm fp8 {name} {m}", e)
            del a, b
        except Exception as e:  # noqa: BLE001
            err(f"gemm {name} {m}", e)
    save()


def measure_hbm(dev: str, quick: bool) -> None:
    n_bytes = (8 << 30) if not quick else (64 << 20)
    try:
        x = torch.empty(n_bytes // 2, device=dev, dtype=torch.bfloat16).normal_()
        y = torch.empty_like(x)
        s_copy = timed(lambda x=x, y=y: y.copy_(x), dev=dev, iters=10)
        s_sum = timed(lambda x=x: x.sum(dtype=torch.float32), dev=dev, iters=10)
        RESULTS["hbm"] = [
            {"what": "copy", "bytes": 2 * n_bytes, "s": s_copy, "tb_s": 2 * n_bytes / s_copy / 1e12},
            {"what": "read (sum)", "bytes": n_bytes, "s": s_sum, "tb_s": n_bytes / s_sum / 1e12},
        ]
        del x, y
    except Exception as e:  # noqa: BLE001
        err("hbm", e)
    save()


def measure_width(dev: str, quick: bool) -> None:
    """A Llama layer's four products (QKV with 8 KV heads of 128, output, gate+up, down; FFN 3.5x) at per-GPU widths
    from 512 to 8,192, for 1,024 and 8,192 rows: how the products' efficiency falls with the width."""
    widths = [512, 1024, 2048, 4096, 8192] if not quick else [256]
    for m in [1024, 8192] if not quick else [64]:
        for h in widths:
            if left_s() < 45:
                return
            try:
                ffn = int(3.5 * h) // 128 * 128
                kv = min(1024, h // 4)
                shapes = [(h + 2 * kv, h), (h, h), (2 * ffn, h), (h, ffn)]
                x = {k: torch.randn(m, k, device=dev, dtype=torch.bfloat16) for k in {h, ffn}}
                ws = [torch.randn(n, k, device=dev, dtype=torch.bfloat16) for n, k in shapes]

                def layer(ws: list = ws, x: dict = x) -> None:
                    for w in ws:
                        x[w.shape[1]] @ w.t()

                sec = timed(layer, dev=dev, iters=10)
                flops = sum(2 * m * n * k for n, k in shapes)
                RESULTS["width"].append({"rows": m, "width": h, "ffn": ffn, "s": sec, "tflops": flops / sec / 1e12})
            except Exception as e:  # noqa: BLE001
                err(f"width {h} rows {m}", e)
    save()


def measure_experts(dev: str, quick: bool) -> None:
    """Routed experts' products with equal rows an expert (uniform routing), batched over the experts (torch.bmm,
    and torch._grouped_mm where it runs): time against rows an expert, for three MoE models' expert shapes."""
    models = [("qwen3-30b-a3b", 128, 2048, 768), ("gpt-oss-120b", 128, 2880, 2880), ("deepseek-v3", 256, 7168, 2048)]
    rows_list = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
    if quick:
        models, rows_list = [("tiny", 4, 64, 32)], [1, 8]
    for name, e, h, f in models:
        try:
            w_gu = torch.randn(e, h, 2 * f, device=dev, dtype=torch.bfloat16)
            w_d = torch.randn(e, f, h, device=dev, dtype=torch.bfloat16)
            w_cm = None
        except Exception as ex:  # noqa: BLE001
            err(f"experts {name} weights", ex)
            continue
        for r in rows_list:
            if left_s() < 30:
                break
            try:
                x = torch.randn(e, r, h, device=dev, dtype=torch.bfloat16)
                y = torch.randn(e, r, f, device=dev, dtype=torch.bfloat16)

                def bmm(
                    x: torch.Tensor = x, y: torch.Tensor = y, a: torch.Tensor = w_gu, b: torch.Tensor = w_d
                ) -> None:
                    torch.bmm(x, a)
                    torch.bmm(y, b)

                row = {
                    "model": name,
                    "experts": e,
                    "hidden": h,
                    "ffn": f,
                    "rows": r,
                    "bmm_s": timed(bmm, dev=dev, iters=10),
                    "flops": 2 * e * r * (h * 2 * f + f * h),
                    "weight_bytes": e * (h * 2 * f + f * h) * 2,
                }
                if dev == "cuda" and hasattr(torch, "_grouped_mm"):
                    try:
                        if w_cm is None:  # the grouped kernel takes each expert's weight column-major
                            w_cm = (
                                w_gu.transpose(1, 2).contiguous().transpose(1, 2),
                                w_d.transpose(1, 2).contiguous().transpose(1, 2),
                            )
                        xs, ys = x.reshape(e * r, h), y.reshape(e * r, f)
                        offs = torch.arange(1, e + 1, device=dev, dtype=torch.int32) * r

                        def grouped(
                            xs: torch.Tensor = xs, ys: torch.Tensor = ys, offs: torch.Tensor = offs, w: tuple = w_cm
                        ) -> None:
                            torch._grouped_mm(xs, w[0], offs=offs)
                            torch._grouped_mm(ys, w[1], offs=offs)

                        row["grouped_s"] = timed(grouped, dev=dev, iters=10)
                    except Exception as ex:  # noqa: BLE001
                        err(f"grouped_mm {name} {r}", ex)
                RESULTS["experts"].append(row)
                log("experts", row)
            except Exception as ex:  # noqa: BLE001
                err(f"experts {name} {r}", ex)
        w_gu = w_d = w_cm = None
        if dev == "cuda":
            torch.cuda.empty_cache()
    save()


def routed_mlp(x: torch.Tensor, router: torch.Tensor, w_gu: torch.Tensor, w_d: torch.Tensor, k: int,
               renormalise: bool = False) -> torch.Tensor:
    """A dropless MoE layer's routed part on tokens ``x`` (t x h), every step on the device (no host sync, so a CUDA
    graph can hold it): router product, top-k (its weights renormalised to sum to one where the model does so),
    sort of the token copies by expert, per-expert offsets, two grouped products with the activation between, and
    the weighted combine back to the tokens."""
    t, e, f = x.shape[0], router.shape[0], w_d.shape[1]
    weights, ids = torch.topk(torch.softmax((x @ router.t()).float(), dim=-1), k, dim=-1)
    if renormalise:
        weights = weights / weights.sum(-1, keepdim=True)
    flat = ids.reshape(-1)
    order = torch.argsort(flat)
    counts = torch.zeros(e, device=x.device, dtype=torch.int32).scatter_add_(
        0, flat.to(torch.int64), torch.ones_like(flat, dtype=torch.int32)
    )
    offs = torch.cumsum(counts, 0, dtype=torch.int32)
    xp = x.index_select(0, order // k)
    g, u = torch._grouped_mm(xp, w_gu, offs=offs).split(f, dim=-1)
    y = torch._grouped_mm(F.silu(g) * u, w_d, offs=offs)
    out = torch.empty_like(y)
    out.index_copy_(0, order, y)
    return (out.view(t, k, -1) * weights.unsqueeze(-1).to(out.dtype)).sum(1)


def moe_layer_fns(x: torch.Tensor, router: torch.Tensor, w_gu: torch.Tensor, w_d: torch.Tensor, k: int) -> tuple:
    """A dropless MoE layer's routed part (:func:`routed_mlp`, top-k weights as the softmax gives them) and its two
    grouped products alone with the same rows spread evenly over the experts. Returns (whole layer, products)."""
    t = x.shape[0]
    e = router.shape[0]
    f = w_d.shape[1]

    def layer() -> torch.Tensor:
        return routed_mlp(x, router, w_gu, w_d, k)

    rows = t * k
    even = torch.arange(1, e + 1, device=x.device, dtype=torch.int32) * (rows // e) if rows >= e else None
    xs = torch.randn(rows, x.shape[1], device=x.device, dtype=x.dtype)
    ys = torch.randn(rows, f, device=x.device, dtype=x.dtype)
    offs_fixed = even if even is not None else torch.full((e,), rows, device=x.device, dtype=torch.int32)

    def products() -> None:
        torch._grouped_mm(xs, w_gu, offs=offs_fixed)
        torch._grouped_mm(ys, w_d, offs=offs_fixed)

    return layer, products


def graph_replay_s(fn, iters: int = 20) -> float:
    """Seconds per call of ``fn`` replayed from a CUDA graph (no host launches counted)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    return timed(graph.replay, warmup=5, iters=iters)


def measure_moe_layer(dev: str, quick: bool) -> None:
    """A whole routed MoE layer against its grouped products alone, both replayed from CUDA graphs, by tokens in
    the step: what routing, the sort, the gather and the combine add beyond the products."""
    if dev != "cuda" or not hasattr(torch, "_grouped_mm"):
        return
    models = [("qwen3-30b-a3b", 128, 8, 2048, 768), ("gpt-oss-120b", 128, 4, 2880, 2880)]
    for name, e, k, h, f in models:
        try:
            router = torch.randn(e, h, device=dev, dtype=torch.bfloat16)
            w_gu = torch.randn(e, 2 * f, h, device=dev, dtype=torch.bfloat16).transpose(1, 2)
            w_d = torch.randn(e, h, f, device=dev, dtype=torch.bfloat16).transpose(1, 2)
        except Exception as ex:  # noqa: BLE001
            err(f"moe layer {name} weights", ex)
            continue
        for t in [1, 8, 32, 128, 512, 2048, 8192] if not quick else [16]:
            if left_s() < 30:
                break
            try:
                x = torch.randn(t, h, device=dev, dtype=torch.bfloat16)
                layer, products = moe_layer_fns(x, router, w_gu, w_d, k)
                row = {
                    "model": name,
                    "experts": e,
                    "k": k,
                    "hidden": h,
                    "ffn": f,
                    "tokens": t,
                    "layer_s": graph_replay_s(layer),
                    "products_s": graph_replay_s(products),
                    "layer_eager_s": timed(layer, iters=10),
                }
                RESULTS["moe_layer"].append(row)
                log("moe_layer", row)
            except Exception as ex:  # noqa: BLE001
                err(f"moe layer {name} {t}", ex)
            save()
        router = w_gu = w_d = None
        torch.cuda.empty_cache()


# --------------------------------------------------------------------------- a minimal Llama for decode/prefill


class Llama:
    """Random BF16 weights with a Llama's shapes; decode over a filled KV cache, prefill with SDPA."""

    def __init__(self, cfg: dict, dev: str, max_batch: int, context: int, fp8: bool = False) -> None:
        self.h = cfg["hidden_size"]
        self.heads = cfg["num_attention_heads"]
        self.kv = cfg.get("num_key_value_heads", self.heads)
        self.hd = cfg.get("head_dim") or self.h // self.heads
        self.ffn = cfg["intermediate_size"]
        self.layers = cfg["num_hidden_layers"]
        self.vocab = cfg["vocab_size"]
        self.dev = dev
        self.fp8 = fp8
        bf = torch.bfloat16
        q_out = (self.heads + 2 * self.kv) * self.hd

        def w(n: int, k: int) -> torch.Tensor:
            t = torch.empty(n, k, device=dev, dtype=bf).normal_(std=0.02)
            return t.to(torch.float8_e4m3fn) if fp8 else t

        # a mixture of experts (Qwen3-MoE, Mixtral): every layer's MLP is routed over experts (moe_mlp)
        self.experts = cfg.get("num_experts") or cfg.get("num_local_experts") or 0
        self.top_k = cfg.get("num_experts_per_tok", 0)
        self.expert_ffn = cfg.get("moe_intermediate_size") or self.ffn
        self.qk_norm = str(cfg.get("model_type", "")).startswith("qwen3")  # Qwen3 normalises q and k per head

        def mlp() -> dict:
            if not self.experts:
                return dict(gu=w(2 * self.ffn, self.h), d=w(self.h, self.ffn))
            e, f = self.experts, self.expert_ffn
            return dict(router=w(e, self.h),  # grouped-product layouts, as measure_moe_layer's
                        egu=torch.empty(e, 2 * f, self.h, device=dev, dtype=bf).normal_(std=0.02).transpose(1, 2),
                        ed=torch.empty(e, self.h, f, device=dev, dtype=bf).normal_(std=0.02).transpose(1, 2))

        self.w = [
            dict(
                qkv=w(q_out, self.h),
                o=w(self.h, self.heads * self.hd),
                n1=torch.ones(self.h, device=dev, dtype=bf),
                n2=torch.ones(self.h, device=dev, dtype=bf),
                qn=torch.ones(self.hd, device=dev, dtype=bf),
                kn=torch.ones(self.hd, device=dev, dtype=bf),
                **mlp(),
            )
            for _ in range(self.layers)
        ]
        self.emb = torch.empty(self.vocab, self.h, device=dev, dtype=bf).normal_(std=0.02)
        self.head = (
            self.emb
            if cfg.get("tie_word_embeddings")
            else torch.empty(self.vocab, self.h, device=dev, dtype=bf).normal_(std=0.02)
        )
        self.one = torch.tensor(1.0, device=dev)
        self.max_batch = max_batch
        self.context = context
        if context:
            self.k = [
                torch.empty(max_batch, self.kv, context, self.hd, device=dev, dtype=bf).normal_()
                for _ in range(self.layers)
            ]
            self.v = [torch.empty_like(k).normal_() for k in self.k]

    def mm(self, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        if not self.fp8:
            return x @ w.t()
        m = x.shape[0]
        pad = (-m) % 16
        xx = F.pad(x, (0, 0, 0, pad)) if pad else x
        out = torch._scaled_mm(
            xx.to(torch.float8_e4m3fn), w.t(), scale_a=self.one, scale_b=self.one, out_dtype=torch.bfloat16
        )
        return out[:m] if pad else out

    @staticmethod
    def norm(x: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-5)).to(x.dtype) * g

    def rope(self, x: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        half = self.hd // 2
        inv = 1.0 / (500000.0 ** (torch.arange(half, device=x.device, dtype=torch.float32) / half))
        ang = pos.float()[:, None] * inv[None, :]
        cos, sin = ang.cos().to(x.dtype).unsqueeze(-2), ang.sin().to(x.dtype).unsqueeze(-2)
        x1, x2 = x[..., :half], x[..., half:]
        return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)

    def mlp(self, x: torch.Tensor, w: dict) -> torch.Tensor:
        """The layer's MLP on tokens ``x`` (t x h): dense, or routed (:func:`routed_mlp`, Qwen3-MoE's and Mixtral's
        renormalised top-k weights)."""
        if not self.experts:
            g, u = self.mm(x, w["gu"]).chunk(2, dim=-1)
            return self.mm(F.silu(g) * u, w["d"])
        return routed_mlp(x, w["router"], w["egu"], w["ed"], self.top_k, renormalise=True)

    def qk(self, q: torch.Tensor, k: torch.Tensor, w: dict) -> tuple[torch.Tensor, torch.Tensor]:
        return (self.norm(q, w["qn"]), self.norm(k, w["kn"])) if self.qk_norm else (q, k)

    def decode_step(self, tok: torch.Tensor, batch: int) -> torch.Tensor:
        """One token for each of `batch` sequences, attending to the whole filled cache."""
        x = self.emb[tok]
        pos = torch.full((batch,), self.context - 1, device=self.dev)
        for i, w in enumerate(self.w):
            hdn = self.norm(x, w["n1"])
            qkv = self.mm(hdn, w["qkv"])
            q, k, v = qkv.split([self.heads * self.hd, self.kv * self.hd, self.kv * self.hd], dim=-1)
            q, k = self.qk(q.view(batch, self.heads, self.hd), k.view(batch, self.kv, self.hd), w)
            q = self.rope(q, pos).unsqueeze(2)
            k = self.rope(k, pos)
            kc, vc = self.k[i][:batch], self.v[i][:batch]
            kc[:, :, -1].copy_(k)
            vc[:, :, -1].copy_(v.view(batch, self.kv, self.hd))
            att = F.scaled_dot_product_attention(q, kc, vc, enable_gqa=self.kv != self.heads)
            x = x + self.mm(att.reshape(batch, self.heads * self.hd), w["o"])
            x = x + self.mlp(self.norm(x, w["n2"]), w)
        return (self.norm(x, self.w[-1]["n2"]) @ self.head.t()).argmax(-1)

    def prefill(self, tokens: int, batch: int = 1) -> torch.Tensor:
        t = tokens * batch
        x = self.emb[torch.zeros(t, dtype=torch.long, device=self.dev)]
        pos = torch.arange(tokens, device=self.dev).repeat(batch)
        for w in self.w:
            hdn = self.norm(x, w["n1"])
            qkv = self.mm(hdn, w["qkv"])
            q, k, v = qkv.split([self.heads * self.hd, self.kv * self.hd, self.kv * self.hd], dim=-1)
            q, k = self.qk(q.view(t, self.heads, self.hd), k.view(t, self.kv, self.hd), w)
            q = self.rope(q, pos).view(batch, tokens, self.heads, self.hd)
            k = self.rope(k, pos).view(batch, tokens, self.kv, self.hd)
            v = v.view(batch, tokens, self.kv, self.hd)
            att = F.scaled_dot_product_attention(
                q.transpose(1, 2),
                k.transpose(1, 2),
                v.transpose(1, 2),
                is_causal=True,
                enable_gqa=self.kv != self.heads,
            )
            x = x + self.mm(att.transpose(1, 2).reshape(t, self.heads * self.hd), w["o"])
            x = x + self.mlp(self.norm(x, w["n2"]), w)
        last = x.view(batch, tokens, self.h)[:, -1]
        return (self.norm(last, self.w[-1]["n2"]) @ self.head.t()).argmax(-1)


def measure_decode(
    name: str, cfg: dict, dev: str, batches: list[int], context: int, fp8: bool = False, compiled: bool = False
) -> None:
    if left_s() < 90:
        return
    try:
        model = Llama(cfg, dev, max(batches), context, fp8=fp8)
        if compiled:  # inductor fuses the norms, rotary and activation into a few kernels, as engines do
            model.decode_step = torch.compile(model.decode_step, dynamic=False)
    except Exception as e:  # noqa: BLE001
        err(f"decode build {name}", e)
        return
    with torch.no_grad():
        for b in batches:
            if left_s() < 60:
                break
            try:
                tok = torch.zeros(b, dtype=torch.long, device=dev)
                row = {
                    "model": name,
                    "batch": b,
                    "context": context,
                    "weights": "fp8" if fp8 else "bf16",
                    "layers": model.layers,
                    "compiled": compiled,
                }
                if dev == "cuda":
                    try:
                        row["graph_s"] = graph_replay_s(lambda tok=tok, b=b: model.decode_step(tok, b), iters=30)
                    except Exception as e:  # noqa: BLE001
                        err(f"decode graph {name} b{b}", e)
                        torch.cuda.synchronize()
                if b == 1 or dev != "cuda" or "graph_s" not in row:
                    row["eager_s"] = timed(lambda tok=tok, b=b: model.decode_step(tok, b), warmup=3, iters=10, dev=dev)
                RESULTS["decode"].append(row)
                log("decode", row)
            except Exception as e:  # noqa: BLE001
                err(f"decode {name} b{b}", e)
            save()
    model = None
    if dev == "cuda":
        torch.cuda.empty_cache()


def measure_prefill(name: str, cfg: dict, dev: str, lengths: list[tuple[int, int]], compiled: bool = False) -> None:
    if left_s() < 90:
        return
    try:
        model = Llama(cfg, dev, 0, 0)
        if compiled:  # norms, rotary and activation fused, as an engine's kernels are
            model.prefill = torch.compile(model.prefill, dynamic=False)
    except Exception as e:  # noqa: BLE001
        err(f"prefill build {name}", e)
        return
    with torch.no_grad():
        for tokens, batch in lengths:
            if left_s() < 60:
                break
            try:
                s = timed(lambda tokens=tokens, batch=batch: model.prefill(tokens, batch), warmup=2, iters=5, dev=dev)
                row = {"model": name, "tokens": tokens, "batch": batch, "s": s, "compiled": compiled}
                RESULTS["prefill"].append(row)
                log("prefill", row)
            except Exception as e:  # noqa: BLE001
                err(f"prefill {name} {tokens}x{batch}", e)
            save()
    model = None
    if dev == "cuda":
        torch.cuda.empty_cache()


# --------------------------------------------------------------------------- training with transformers


def hf_model(cfg: dict, dev: str) -> torch.nn.Module:
    """transformers' causal LM of config ``cfg`` on ``dev``: random BF16 weights, SDPA attention, no KV cache."""
    from transformers import AutoConfig, AutoModelForCausalLM

    conf = AutoConfig.for_model(
        cfg["model_type"], **{k: v for k, v in cfg.items() if k not in ("architectures", "model_type")}
    )
    conf._attn_implementation = "sdpa"
    with torch.device(dev):
        model = AutoModelForCausalLM.from_config(conf, attn_implementation="sdpa", dtype=torch.bfloat16)
    model.to(dtype=torch.bfloat16)
    model.config.use_cache = False
    return model


def record_oom(kind: str, row: dict, rec: dict, e: BaseException, dev: str) -> None:
    """A ``kind`` row that ran out of memory: what was measured before, the error and the peak reached."""
    row.update(rec)
    row.update(fits=False, error=str(e)[:400])
    if dev == "cuda":
        row["peak_allocated_bytes"] = torch.cuda.max_memory_allocated()
    RESULTS[kind].append(row)
    log(f"{kind} OOM", row)


def measured_steps(fwd, ids: torch.Tensor, update, dev: str, steps: int, row: dict, rec: dict) -> None:
    """A training step of ``fwd`` on ``ids`` (loss on the same tokens, backward, then ``update()``), run once to warm
    up, once measured by phase into ``rec`` (memory in use before the step, what the forward pass adds, the peak of
    each phase), then ``steps`` times for its speed; ``row`` gets the memory and speed fields."""

    def phase_peak(record: dict | None, key: str) -> None:
        if record is not None and dev == "cuda":
            torch.cuda.synchronize()
            record[key] = torch.cuda.max_memory_allocated()
            torch.cuda.reset_peak_memory_stats()

    def step(record: dict | None = None) -> None:
        if record is not None and dev == "cuda":
            torch.cuda.synchronize()
            record["states_bytes"] = torch.cuda.memory_allocated()
            torch.cuda.reset_peak_memory_stats()
        out = fwd(input_ids=ids, labels=ids)
        if record is not None and dev == "cuda":
            torch.cuda.synchronize()
            record["forward_adds_bytes"] = torch.cuda.memory_allocated() - record["states_bytes"]
        phase_peak(record, "peak_forward_bytes")
        out.loss.backward()
        del out
        phase_peak(record, "peak_backward_bytes")
        update()
        phase_peak(record, "peak_optimizer_bytes")

    step()
    if dev == "cuda":
        torch.cuda.synchronize()
    step(rec)
    row.update(rec)
    if dev == "cuda":
        row["peak_allocated_bytes"] = max(
            rec[k] for k in ("peak_forward_bytes", "peak_backward_bytes", "peak_optimizer_bytes")
        )
        row["peak_reserved_bytes"] = torch.cuda.max_memory_reserved()
        free1, total = torch.cuda.mem_get_info()
        row["device_used_bytes"] = total - free1
        row["reserved_now_bytes"] = torch.cuda.memory_reserved()
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    if dev == "cuda":
        torch.cuda.synchronize()
    s = (time.perf_counter() - t0) / steps
    row.update(step_s=s, tokens_per_s=ids.numel() / s, fits=True)


def run_case(kind: str, label: str, row: dict, rec: dict, dev: str, body) -> None:
    """One training case of ``kind``: ``body()`` builds its model and measures it into ``row`` (what was measured
    before an out-of-memory error goes into ``rec``). Its tensors live in ``body``'s frame, gone when it returns or
    its error has been recorded, so the cache emptied after it holds nothing of this case."""
    try:
        if dev == "cuda":
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats()
        body()
        RESULTS[kind].append(row)
        log(kind, row)
    except torch.cuda.OutOfMemoryError as e:
        record_oom(kind, row, rec, e, dev)
    except Exception as e:  # noqa: BLE001
        err(label, e)
    finally:
        if dev == "cuda":
            torch.cuda.empty_cache()
        save()


def measure_train(
    name: str, cfg: dict, dev: str, seq: int, micro: int, recompute: bool, steps: int, compiled: bool = False
) -> None:
    if left_s() < 120:
        return
    row: dict = {
        "model": name,
        "seq": seq,
        "micro_batch": micro,
        "recompute": "full" if recompute else "none",
        "stack": "transformers (sdpa) + torch AdamW (fused, one per parameter), bf16 weights/grads, "
        "fp32 master+moments" + (", torch.compile" if compiled else ""),
    }
    rec: dict = {}

    def body() -> None:
        if dev == "cuda":
            free0, total = torch.cuda.mem_get_info()
            row["device_used_before_bytes"] = total - free0
        model = hf_model(cfg, dev)
        if recompute:
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        model.train()
        params = [p for p in model.parameters() if p.requires_grad]
        row["params"] = sum(p.numel() for p in params)
        master = [p.detach().float() for p in params]
        for m in master:
            m.requires_grad_(True)
        # one AdamW per parameter, stepped as its gradient is converted: one FP32 gradient exists at a time,
        # as in a framework that keeps 16-bit gradients (the planner's 2 + 2 + 12 bytes per parameter)
        opts = [torch.optim.AdamW([m], lr=1e-5, fused=dev == "cuda") for m in master]
        for m, o in zip(master, opts, strict=True):  # allocate the moments now: a real run holds them
            m.grad = torch.zeros_like(m)
            o.step()
            m.grad = None
        ids = torch.randint(0, cfg["vocab_size"], (micro, seq), device=dev)
        fwd = torch.compile(model) if compiled else model

        def update() -> None:
            for p, m, o in zip(params, master, opts, strict=True):
                m.grad = p.grad.float()
                p.grad = None
                o.step()
                m.grad = None
                p.data.copy_(m.data)

        measured_steps(fwd, ids, update, dev, steps, row, rec)

    run_case("train", f"train {name} mb{micro} rc{recompute} compiled{compiled}", row, rec, dev, body)


LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


class LoraLinear(torch.nn.Module):
    """A frozen Linear plus a LoRA adapter as peft's ``Linear.forward`` runs it: FP32 A and B (peft keeps adapters
    in FP32 under a 16-bit base, ``autocast_adapter_dtype=True``), the input cast to their dtype, no dropout
    (peft's default 0.0), the sum cast back to the base's dtype."""

    def __init__(self, base: torch.nn.Linear, rank: int, alpha: int) -> None:
        super().__init__()
        self.base = base
        dev = base.weight.device
        self.lora_a = torch.nn.Parameter(torch.empty(rank, base.in_features, device=dev, dtype=torch.float32))
        self.lora_b = torch.nn.Parameter(torch.empty(base.out_features, rank, device=dev, dtype=torch.float32))
        torch.nn.init.kaiming_uniform_(self.lora_a, a=math.sqrt(5))
        torch.nn.init.normal_(self.lora_b, std=1e-3)  # peft starts B at 0; any value times the same memory
        self.scale = alpha / rank

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.base(x)
        xa = x.to(self.lora_a.dtype)
        return (out + (xa @ self.lora_a.t()) @ self.lora_b.t() * self.scale).to(out.dtype)


def add_lora(model: torch.nn.Module, rank: int = 16, alpha: int = 32) -> list[torch.nn.Parameter]:
    """Freeze ``model`` and wrap every target Linear in :class:`LoraLinear`; the adapters' parameters."""
    for p in model.parameters():
        p.requires_grad_(False)
    wrapped = []
    for module in list(model.modules()):
        for child_name, child in list(module.named_children()):
            if child_name in LORA_TARGETS and isinstance(child, torch.nn.Linear):
                lora = LoraLinear(child, rank, alpha)
                setattr(module, child_name, lora)
                wrapped += [lora.lora_a, lora.lora_b]
    return wrapped


def measure_lora(name: str, cfg: dict, dev: str, seq: int, micro: int, recompute: bool, steps: int) -> None:
    if left_s() < 60:
        return
    row: dict = {
        "model": name, "seq": seq, "micro_batch": micro, "recompute": "full" if recompute else "none",
        "lora_rank": 16, "lora_targets": list(LORA_TARGETS),
        "stack": "transformers (sdpa), frozen bf16 base, peft-style fp32 LoRA adapters, torch AdamW (fused)",
    }
    rec: dict = {}

    def body() -> None:
        model = hf_model(cfg, dev)
        adapters = add_lora(model)
        row["adapter_params"] = sum(p.numel() for p in adapters)
        if recompute:
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        model.train()
        opt = torch.optim.AdamW(adapters, lr=1e-4, fused=dev == "cuda")
        for p in adapters:  # allocate the moments now: a real run holds them
            p.grad = torch.zeros_like(p)
        opt.step()
        opt.zero_grad(set_to_none=True)
        ids = torch.randint(0, cfg["vocab_size"], (micro, seq), device=dev)

        def update() -> None:
            opt.step()
            opt.zero_grad(set_to_none=True)

        measured_steps(model, ids, update, dev, steps, row, rec)

    run_case("lora", f"lora {name} mb{micro} seq{seq} rc{recompute}", row, rec, dev, body)


# --------------------------------------------------------------------------- main


def main() -> int:
    global OUT_PATH, DEADLINE
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--configs", default=str(DEFAULT_CONFIGS))
    ap.add_argument("--budget-s", type=float, default=420)
    ap.add_argument("--only", default="gemm,hbm,decode,prefill,train")
    a = ap.parse_args()
    OUT_PATH = Path(a.out)
    DEADLINE = time.time() + a.budget_s
    dev = a.device
    only = set(a.only.split(","))
    cfgs = {p.stem: json.loads(p.read_text()) for p in Path(a.configs).glob("*.json")}
    meta = RESULTS["meta"]
    meta.update(
        torch=torch.__version__,
        python=sys.version.split()[0],
        started=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    )
    try:
        import transformers

        meta["transformers"] = transformers.__version__
    except Exception:  # noqa: BLE001
        pass
    if dev == "cuda":
        p = torch.cuda.get_device_properties(0)
        meta.update(gpu=p.name, sms=p.multi_processor_count, memory_bytes=p.total_memory, cuda=torch.version.cuda)
        torch.backends.cuda.matmul.allow_tf32 = True
    save()
    log("meta", meta)
    small = dict(  # a two-layer toy of Llama's shapes for --quick
        cfgs["llama-3.2-1b"],
        num_hidden_layers=2,
        hidden_size=256,
        intermediate_size=512,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=64,
        vocab_size=1024,
    )
    if a.quick:
        models_decode = [("tiny", small, [1, 4], 64)]
        models_prefill = [("tiny", small, [(64, 1)])]
        train_cases = [("tiny", small, 64, 2, False), ("tiny", small, 64, 2, True)]
    else:
        models_decode = [
            ("llama-3.1-8b", cfgs["llama-3.1-8b"], [1, 8, 32, 64, 128, 256], 1100),
            ("llama-3.2-1b", cfgs["llama-3.2-1b"], [1, 64], 1100),
        ]
        models_prefill = [("llama-3.1-8b", cfgs["llama-3.1-8b"], [(1024, 1), (4096, 1), (8192, 1), (1024, 8)])]
        train_cases = [
            ("llama-3.1-8b", cfgs["llama-3.1-8b"], 4096, 1, True),
            ("llama-3.1-8b", cfgs["llama-3.1-8b"], 4096, 2, True),
            ("llama-3.2-1b", cfgs["llama-3.2-1b"], 4096, 1, False),
            ("llama-3.2-1b", cfgs["llama-3.2-1b"], 4096, 2, False),
            ("llama-3.2-1b", cfgs["llama-3.2-1b"], 4096, 4, False),
            ("llama-3.2-3b", cfgs["llama-3.2-3b"], 4096, 2, False),
            ("llama-3.2-3b", cfgs["llama-3.2-3b"], 4096, 4, True),
        ]
    if "gemm" in only:
        measure_gemm(dev, a.quick)
    if "hbm" in only:
        measure_hbm(dev, a.quick)
    if "width" in only:
        measure_width(dev, a.quick)
    if "experts" in only:
        measure_experts(dev, a.quick)
    if "moe_layer" in only:
        measure_moe_layer(dev, a.quick)
    if "decode" in only:
        for name, cfg, batches, ctx in models_decode:
            measure_decode(name, cfg, dev, batches, ctx)
        if dev == "cuda" and not a.quick:
            measure_decode("llama-3.1-8b", cfgs["llama-3.1-8b"], dev, [1, 64], 1100, fp8=True)
    if "decode_compiled" in only and dev == "cuda" and not a.quick:
        measure_decode("llama-3.1-8b", cfgs["llama-3.1-8b"], dev, [1, 64], 1100, compiled=True)
    if "prefill_compiled" in only and dev == "cuda" and not a.quick:
        measure_prefill("llama-3.1-8b", cfgs["llama-3.1-8b"], dev, [(1024, 1), (4096, 1), (8192, 1)], compiled=True)
    if "prefill" in only:
        for name, cfg, lengths in models_prefill:
            measure_prefill(name, cfg, dev, lengths)
    if "moe" in only:  # whole MoE models (every layer routed, on the device): decode steps and prefills
        if a.quick:
            tiny = dict(small, model_type="qwen3_moe", num_experts=8, num_experts_per_tok=2, moe_intermediate_size=128)
            moe_cases = [("tiny-moe", tiny, [1, 4], 64, [(64, 1)])]
        else:
            moe_cases = [("qwen3-30b-a3b", cfgs["qwen3-30b-a3b"], [1, 8, 32, 128, 256], 1100, [(2048, 1), (8192, 1)]),
                         ("mixtral-8x7b-v0.1", cfgs["mixtral-8x7b-v0.1"], [1, 8, 32, 64], 1100, [(2048, 1), (8192, 1)])]
        for name, cfg, batches, ctx, lengths in moe_cases:
            measure_decode(name, cfg, dev, batches, ctx)
            measure_prefill(name, cfg, dev, lengths)
        if dev == "cuda" and not a.quick:  # fused by inductor, as engines' kernels are (one compile per shape)
            measure_decode("qwen3-30b-a3b", cfgs["qwen3-30b-a3b"], dev, [1, 64], 1100, compiled=True)
            measure_prefill("qwen3-30b-a3b", cfgs["qwen3-30b-a3b"], dev, [(8192, 1)], compiled=True)
    if "lora" in only:
        if a.quick:
            lora_cases = [("tiny", small, 64, 2, False), ("tiny", small, 64, 2, True)]
        else:
            lora_cases = [("llama-3.1-8b", cfgs["llama-3.1-8b"], 4096, 1, False),
                          ("llama-3.1-8b", cfgs["llama-3.1-8b"], 4096, 2, False),
                          ("llama-3.1-8b", cfgs["llama-3.1-8b"], 8192, 1, True),
                          ("llama-3.1-8b", cfgs["llama-3.1-8b"], 2048, 4, True),
                          ("llama-3.2-3b", cfgs["llama-3.2-3b"], 4096, 4, False),
                          ("llama-3.2-1b", cfgs["llama-3.2-1b"], 8192, 2, False)]
        for name, cfg, seq, micro, rc in lora_cases:
            measure_lora(name, cfg, dev, seq, micro, rc, steps=3 if not a.quick else 1)
    if "train" in only:
        for name, cfg, seq, micro, rc in train_cases:
            measure_train(name, cfg, dev, seq, micro, rc, steps=3 if not a.quick else 1)
        if dev == "cuda" and not a.quick and "compile" in only and left_s() > 200:
            measure_train("llama-3.2-1b", cfgs["llama-3.2-1b"], dev, 4096, 4, False, steps=3, compiled=True)
    meta["ended"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    save()
    log("done; errors:", len(RESULTS["errors"]))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception:  # noqa: BLE001
        traceback.print_exc()
        save()
        sys.exit(1)
