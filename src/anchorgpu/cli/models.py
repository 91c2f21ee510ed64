"""``anchorgpu model`` and ``anchorgpu models``: one model's architecture, and the registry.

    anchorgpu model MODEL [--json] [--kv-cache bf16|fp16|fp8|nvfp4]
    anchorgpu models [--json] [--family NAME] [--by-family]

MODEL is a registry name or alias (``llama-3.1-70b``), a path to a ``config.json`` or its folder, or a
Hugging Face Hub id (``org/name``; offline: exit 2). Bad config → exit 2; unknown name → exit 3.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import typer

from anchorgpu.cli._app import app, console, emit_json

if TYPE_CHECKING:
    from anchorgpu.architectures import DiffusionPipelineSpec, ModelSpec

_BREAKDOWN_LABELS = {
    "embeddings": "token embeddings",
    "position_embeddings": "position embeddings",
    "attention": "attention",
    "mlp": "dense MLP",
    "experts": "routed experts",
    "shared_experts": "shared experts",
    "router": "router",
    "norms": "norms",
    "head": "LM head (untied)",
    "other": "other",
    "recurrent": "SSM / linear-attention mixers",
    "towers": "vision tower + projector",
}


def _count(n: int) -> str:
    """``70.55 B (70,553,706,496)``: a short figure, then the exact count."""
    for scale, unit in ((10**12, "T"), (10**9, "B"), (10**6, "M"), (10**3, "K")):
        if n >= scale:
            return f"{n / scale:.2f} {unit} ({n:,})"
    return f"{n:,}"


def _bytes(n: int) -> str:
    from anchorgpu.units import fmt_bytes

    return f"{fmt_bytes(n)} ({n:,} B)"


def _wide_console() -> Any:
    out = console()
    if not out.is_terminal:
        out.width = 120
    return out


def _esc(text: str) -> str:
    """Escape Rich markup (names like "FLUX.1 [dev]" and sources like "[models/x.json]" are literal text)."""
    from rich.markup import escape

    return escape(text)


def _kv_note(doc: dict[str, Any]) -> str:
    line = _bytes(doc["kv_bytes_per_token"]) + f" at {doc['kv_cache_dtype']}"
    if doc["attention"] == "mla":
        line += " (MLA: one compressed latent per layer)"
    if doc["sliding_window_layers"]:
        windows = "/".join(f"{w:,}" for w in doc["sliding_windows"])
        line += (
            f"; {doc['sliding_window_layers']} of {doc['layers']} layers use a {windows}-token sliding window, "
            f"so a full {doc['context_length']:,}-token sequence needs {_bytes(doc['kv_bytes_per_sequence_at_context'])}"
        )
    return line


def _shipped_note(doc: dict[str, Any]) -> str:
    """The precision the checkpoint ships in, as ``plan`` uses it by default."""
    q = doc.get("shipped_quantization")
    if not q:
        return f"{doc.get('shipped_weights', 'bf16')} (16-bit weights; no quantization_config)"
    kept = ", ".join(["embeddings"] + ([] if q["head_quantized"] else ["lm_head"]) + q["unquantized_groups"])
    return f"{q['format']} via quantization_config {q['method']}: {q['description']}; 16-bit: {kept}"


def _mlp_width(doc: dict[str, Any]) -> str:
    gated = " (gated)" if doc["gated_mlp"] else ""
    experts = doc["experts"]
    if experts is None:
        return f"{doc['intermediate_size']:,}{gated}"
    expert = f"experts {experts['expert_intermediate_size']:,}{gated}"
    dense_layers = doc["layers"] - experts["moe_layers"]
    if dense_layers == 0:
        return f"{expert}; no dense MLP layers"
    return f"{expert}; dense {doc['intermediate_size']:,} on {dense_layers} layer(s)"


def _show_language(doc: dict[str, Any]) -> None:
    from rich.table import Table

    out = _wide_console()
    shape = Table(title=_esc(f"{doc['display_name']} — {doc['family']} ({doc['model_type']})"), show_header=False)
    shape.add_column("", style="bold")
    shape.add_column("")
    experts = doc["experts"]
    rows: list[tuple[str, str]] = [
        ("layers", str(doc["layers"])),
        ("hidden size", f"{doc['hidden_size']:,}"),
        ("MLP width", _mlp_width(doc)),
        ("attention heads", str(doc["heads"])),
        ("KV heads", str(doc["kv_heads"])),
        ("head dim", str(doc["head_dim"])),
        ("attention", doc["attention"].upper()),
        ("vocabulary", f"{doc['vocab_size']:,}"),
        ("context length", f"{doc['context_length']:,} tokens"),
        ("experts", "none (dense)" if experts is None else
         f"{experts['num_experts']} routed, top-{experts['experts_per_token']}, {experts['shared']} shared, "
         f"on {experts['moe_layers']} of {doc['layers']} layers"),
        ("embeddings", "tied to the LM head" if doc["tie_word_embeddings"] else "untied"),
        ("params total", _count(doc["params_total"])),
        ("params active / token", _count(doc["params_active"])),
        ("  of which in matmuls", _count(doc["params_active_matmul"]) + " (embedding lookups left out)"),
        ("KV cache / token", _kv_note(doc)),
        ("shipped weights", _shipped_note(doc)),
    ]
    if doc.get("recurrent") is not None:
        rec = doc["recurrent"]
        rows.insert(rows.index(("KV cache / token", _kv_note(doc))) + 1, (
            "recurrent state / seq", f"{_bytes(doc['state_bytes_per_sequence'])} at any length "
            f"({doc['recurrent_layers']} {rec['mixer']} layers; KV on {doc['attention_layers']} attention layers)"))
    if len(doc.get("towers") or {}) > 1:  # multimodal and encoder-decoder models: every tower, and how images count
        rows.append(("towers", ", ".join(f"{k.replace('_', ' ')} {_count(v)}" for k, v in doc["towers"].items())))
    if doc.get("image_tokens") is not None:
        img = doc["image_tokens"]
        width, height = img["native_resolution"]
        rows.append(("image tokens", f"{img['tokens_per_image_at_native']:,} per {width}x{height} image ({img['rule']} "
                                     "rule" + ("" if img["in_context"] else ", read by cross-attention") + ")"))
    if doc.get("encoder") is not None:
        enc = doc["encoder"]
        rows.append(("encoder", f"{enc['layers']} layers ({enc['modality']}); cross-attention K/V "
                                f"{_bytes(enc['cross_kv_bytes_per_encoder_token'])} per encoder position"))
    if doc["mla"] is not None:
        mla = doc["mla"]
        rows.insert(7, ("MLA", f"kv_lora_rank {mla['kv_lora_rank']}, q_lora_rank {mla['q_lora_rank']}, "
                               f"rope dim {mla['qk_rope_head_dim']}, v head dim {mla['v_head_dim']}"))
    for label, value in rows:
        shape.add_row(label, _esc(value))
    out.print(shape)

    parts = Table(title="parameters by component")
    parts.add_column("component")
    parts.add_column("parameters", justify="right")
    parts.add_column("share", justify="right")
    total = doc["params_total"]
    for key, label in _BREAKDOWN_LABELS.items():
        value = doc["breakdown"][key]
        if value:
            parts.add_row(label, f"{value:,}", f"{100 * value / total:.1f}%")
    parts.add_row("total", f"{total:,}", "100.0%", style="bold")
    out.print(parts)
    for note in doc["notes"]:
        out.print(f"note: {note}", markup=False)
    out.print(f"source: {doc['source']}", markup=False)


def _show_pipeline(doc: dict[str, Any]) -> None:
    from rich.table import Table

    out = _wide_console()
    table = Table(title=_esc(f"{doc['display_name']} — diffusion pipeline ({doc['family']})"))
    for col, justify in (("component", "left"), ("role", "left"), ("architecture", "left"), ("parameters", "right")):
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    for c in doc["components"]:
        table.add_row(_esc(c["name"]), c["role"], _esc(c["architecture"]), _count(c["params"]))
    table.add_row("total", "", "", _count(doc["params_total"]), style="bold")
    out.print(table)
    width, height = doc["default_resolution"]
    ch, lh, lw = doc["latent_shape"]
    out.print(
        f"VAE: {doc['vae_latent_channels']} latent channels, {doc['vae_scale_factor']}x downscale, scaling factor "
        f"{doc['vae_scaling_factor']}; at {width}x{height} the latent is {ch}x{lh}x{lw} and the denoiser sees "
        f"{doc['denoiser_tokens']:,} tokens (patch {doc['patch_size']}); default {doc['default_steps']} steps",
        markup=False,
    )
    for c in doc["components"]:
        out.print(f"source ({c['name']}): {c['source']}", markup=False)
    for note in doc["notes"]:
        out.print(f"note: {note}", markup=False)


@app.command("model")
def model_command(
    model: str = typer.Argument(..., help="Registry name or alias, path to config.json (or its folder), or Hub id."),
    json_out: bool = typer.Option(False, "--json", help="Print the JSON contract instead of tables."),
    kv_cache: str | None = typer.Option(None, "--kv-cache", help="KV-cache precision for kv_bytes_per_token: bf16, "
                                        "fp16, fp8 or nvfp4 (default: the checkpoint's, else bf16)."),
    offline: bool = typer.Option(False, "--offline", help="Never contact the Hugging Face Hub (also HF_HUB_OFFLINE=1)."),
) -> None:
    """Show a model's architecture, exact parameter counts and KV-cache bytes per token."""
    from anchorgpu.architectures import kv_bytes_per_value, load_model, model_to_json

    if kv_cache is not None:
        kv_bytes_per_value(kv_cache)  # validate before any file or network access
    spec: ModelSpec | DiffusionPipelineSpec = load_model(model, offline=offline)
    doc = model_to_json(spec, kv_cache=kv_cache)
    if json_out:
        emit_json(doc)
    elif doc["kind"] == "diffusion":
        _show_pipeline(doc)
    else:
        _show_language(doc)


@app.command("models")
def models_command(
    json_out: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
    family: str | None = typer.Option(None, "--family", help="Only this family (case-insensitive, e.g. 'Llama 3.1', 'qwen3')."),
    by_family: bool = typer.Option(False, "--by-family", help="One row per family: its models, types, sizes and shipped formats."),
) -> None:
    """List the built-in model registry (language models and diffusion pipelines)."""
    from anchorgpu.architectures import ModelSpec, load_model, model_infos
    from anchorgpu.architectures.serialize import shipped_weights
    from anchorgpu.errors import InvalidInput

    infos = list(model_infos())
    if family is not None:
        wanted = family.strip().lower()
        infos = [i for i in infos if i.family.lower() == wanted or i.family.lower().startswith(wanted)]
        if not infos:
            families = sorted({i.family for i in model_infos()})
            raise InvalidInput(f"--family {family!r} matches no registry family; families: {', '.join(families)}")
    rows: list[dict[str, Any]] = []
    for info in infos:
        spec = load_model(info.name)
        language = spec if isinstance(spec, ModelSpec) else None
        rows.append(
            {
                "name": info.name,
                "display_name": info.display_name,
                "family": info.family,
                "kind": info.kind,
                "hub_id": info.hub_id or None,
                "aliases": list(info.aliases),
                "params_total": spec.params_total,
                "params_active": spec.params_total if language is None else language.params_active,
                "context_length": None if language is None else language.max_context_tokens,
                "model_type": "diffusion_pipeline" if language is None else language.model_type,
                "shipped_weights": shipped_weights(spec),
            }
        )
    if by_family:
        _show_families(_families(rows), json_out=json_out)
        return
    if json_out:
        emit_json(rows)
        return
    from rich.table import Table

    table = Table(title=f"AnchorGPU model registry ({len(rows)} entries)")
    for col in ("name", "family", "type", "params total", "active / token", "context", "shipped weights"):
        table.add_column(col, justify="right" if col in ("params total", "active / token", "context") else "left")
    for r in rows:
        table.add_row(
            _esc(r["name"]), _esc(r["family"]), r["model_type"], f"{r['params_total'] / 1e9:,.2f} B",
            f"{r['params_active'] / 1e9:,.2f} B", "" if r["context_length"] is None else f"{r['context_length']:,}",
            r["shipped_weights"],
        )
    out = _wide_console()
    out.print(table)
    groups = _families(rows)
    quantized = [f for f in groups if f["shipped_weights"] != ["bf16"]]
    out.print(f"{len(groups)} families; shipped in other than bf16: " + ("; ".join(
        f"{f['family']}: {', '.join(f['shipped_weights'])}" for f in quantized) or "none")
        + ". One row per family: anchorgpu models --by-family", markup=False)


def _families(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows of ``models`` grouped by family, in the order each family first appears in the registry."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault(r["family"], []).append(r)
    return [
        {
            "family": name,
            "models": [m["name"] for m in sorted(members, key=lambda m: m["params_total"])],  # smallest first
            "model_types": sorted({m["model_type"] for m in members}),
            "params_total_min": min(m["params_total"] for m in members),
            "params_total_max": max(m["params_total"] for m in members),
            "shipped_weights": sorted({m["shipped_weights"] for m in members}),
        }
        for name, members in groups.items()
    ]


def _size_range(low: int, high: int) -> str:
    """``0.27-27.43 B``; one figure when the family has one size."""
    return f"{low / 1e9:,.2f} B" if low == high else f"{low / 1e9:,.2f}-{high / 1e9:,.2f} B"


def _show_families(families: list[dict[str, Any]], *, json_out: bool) -> None:
    if json_out:
        emit_json(families)
        return
    from rich.table import Table

    count = sum(len(f["models"]) for f in families)
    table = Table(title=f"AnchorGPU model registry by family ({len(families)} families, {count} entries)")
    for col in ("family", "models", "type", "params total", "shipped weights"):
        table.add_column(col, justify="right" if col == "params total" else "left", overflow="fold")
    for f in families:
        table.add_row(_esc(f["family"]), _esc(", ".join(f["models"])), ", ".join(f["model_types"]),
                      _size_range(f["params_total_min"], f["params_total_max"]), ", ".join(f["shipped_weights"]))
    _wide_console().print(table)
