"""The values the catalog sweep (:func:`~anchorgpu.planner.sweep.sweep`) takes and gives: a rentable server shape,
what to sweep, and every configuration evaluated as parallel columns. Pure; frozen values only."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from anchorgpu.hardware.spec import GpuSpec
from anchorgpu.planner.grid_columns import GridColumns
from anchorgpu.planner.inputs import Overheads, Workload
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.overrides import Overrides

__all__ = ["DEFAULT_INFERENCE_WEIGHTS", "DEFAULT_KV_CACHES", "HardwareShape", "Progress", "SweepResult", "SweepSpec"]


DEFAULT_INFERENCE_WEIGHTS: tuple[str, ...] = ("bf16", "fp8", "int4-awq")
"""Weight formats a serving sweep compares unless told otherwise (16-bit, 8-bit, 4-bit)."""
DEFAULT_KV_CACHES: tuple[str, ...] = ("bf16", "fp8")

Progress = Callable[[int, int], None]


@dataclass(frozen=True, slots=True, kw_only=True)
class HardwareShape:
    """A rentable server shape as the planner sees it: a GPU, how many per server, how servers connect.

    ``network_bytes_per_s`` is the server-to-server bandwidth per GPU, one direction. ``scale_out`` says
    whether a fabric joins servers so that pipeline stages may span them; without one, extra servers only
    add data-parallel replicas.
    """

    id: str
    gpu: GpuSpec
    gpus_per_server: int
    max_servers: int = 4
    network_bytes_per_s: float = field(default_factory=lambda: calibration().network_bytes_per_s)
    scale_out: bool = True


@dataclass(frozen=True, slots=True, kw_only=True)
class SweepSpec:
    """What to sweep. Empty tuples mean the task's defaults (stated in the result's assumptions)."""

    workload: Workload = field(default_factory=Workload)
    weights: tuple[str, ...] = ()
    kv_caches: tuple[str, ...] = ()
    concurrencies: tuple[int, ...] = ()
    # the request: None where not given, plan's defaults (inputs.DEFAULT_PROMPT_TOKENS, DEFAULT_OUTPUT_TOKENS within
    # the context: media.text_request); without a context, each sequence is sized at prompt + output as plan sizes it
    prompt_tokens: int | None = None
    output_tokens: int | None = None
    train_tokens: int | None = None
    global_batch_tokens: int | None = None  # training: tokens per optimizer step (default performance's 2M)
    efficiencies: Overrides = field(default_factory=Overrides)  # --mfu / --mbu replace calibrated constants
    overheads: Overheads = field(default_factory=Overheads)
    # serving over the ladder: each layout also at the most users it runs each at least this many decode tokens/s,
    # each seeing a first token within max_ttft_s (sweep_floor; recommend --min-tokens-per-s-per-user, --max-ttft-s)
    min_tokens_per_s_per_user: float | None = None
    max_ttft_s: float | None = None
    max_pp: int = 8  # serving's deepest pipeline; training tries plan()'s depths (train_sizes.train_pp_sizes)
    zero_stages: tuple[int, ...] = (0, 1, 2, 3)


@dataclass(frozen=True, slots=True, kw_only=True)
class SweepResult:
    """Every configuration evaluated, as parallel numpy columns (one entry per configuration).

    Index columns: ``shape`` (into ``shapes``), ``servers``, ``gpus``, ``tp``, ``pp``, ``dp``, ``zero``, ``ep``, ``cp``,
    ``weights`` (into ``weights``), ``kv_cache`` (into ``kv_caches``), ``concurrency``. Memory columns
    (bytes per GPU): ``weights_bytes``, ``kv_cache_bytes``, ``activations_bytes``, ``other_bytes``,
    ``per_gpu_total_bytes``, ``budget_bytes``, ``fits``; serving: ``engine_reserve_bytes`` (SGLang's memory outside
    mem_fraction_static, NaN under the other engines: a row whose activations exceed it does not fit). Speed columns: ``prefill_s``,
    ``decode_tokens_per_s_per_user``, ``decode_tokens_per_s_total``, ``train_tokens_per_s``,
    ``train_time_s`` (NaN where the task has no such phase); training: ``train_order_tokens_per_s`` (the speed before
    the climb past micro-batch 4, by which plan's chooser orders the layout).
    """

    task: str
    evaluated: int
    shapes: tuple[HardwareShape, ...]
    weights: tuple[str, ...]
    kv_caches: tuple[str, ...]
    context_tokens: int
    prompt_tokens: int
    output_tokens: int
    columns: GridColumns  # a Mapping of name -> column (numpy, one entry per configuration)
    assumptions: tuple[str, ...]
    warnings: tuple[tuple[str, str], ...]
    # a model with an encoder or a vision tower (else 0): ``prompt_tokens`` is the speed prompt plan times, the prompt
    # the sequence holds (an encoder-decoder's decoder prompt; text and image tokens) plus these tokens that stand for
    # the encoder's or tower's prefill work (as ``plan_performance`` takes it); then the positions the cross-attention
    # K/V holds, for an encoder-decoder or cross-attention model (0 where the image tokens are in the context: there
    # every decode step reads the whole speed prompt's K/V, as plan reads it)
    encoder_prefill_equivalent_tokens: int = 0
    encoder_input_tokens: int = 0
    # serving: (concurrency, tokens a sequence is sized at) of each concurrency swept, as plan --concurrency N sizes
    # it; ``context_tokens`` is the first's (with no length given one sequence holds the model's window, more the
    # request timed)
    concurrency_contexts: tuple[tuple[int, int], ...] = ()
    # training: (PP, virtual stages, layout) of each interleaving run at a stated layout (layers no pp x v chunks
    # split: speed.interleave_choice.uneven_interleave), which a row at that PP and depth states as its ``pipeline_layout``
    pipeline_layouts: tuple[tuple[int, int, str], ...] = ()

    def context_at(self, concurrency: int) -> int:
        """The tokens each sequence is sized at when ``concurrency`` run at once (``context_tokens`` where the sweep
        has no such concurrency, or is a training sweep)."""
        contexts = dict(self.concurrency_contexts)
        if concurrency in contexts or not contexts:
            return contexts.get(concurrency, self.context_tokens)
        # a layout's own saturation or floor rung (sweep_saturation, sweep_floor): sized as the ladder's top (at least 2)
        return contexts[max(contexts)]

    def row(self, i: int) -> dict[str, Any]:
        """Configuration ``i`` as plain Python values (names resolved, NaN as None)."""
        values = self.columns.values_at(i)
        shape = self.shapes[values.pop("shape")]
        out: dict[str, Any] = {"shape": shape.id, "gpu": shape.gpu.name}
        for name, value in values.items():
            out[name] = None if value != value else value  # only NaN differs from itself
        out["weights"], out["kv_cache"] = self.weights[out["weights"]], self.kv_caches[out["kv_cache"]]
        for pp, v, text in self.pipeline_layouts:
            if (out["pp"], out.get("virtual_stages")) == (pp, v):
                out["pipeline_layout"] = text
        return out

    def value(self, name: str, i: int) -> Any:
        """Configuration ``i``'s value in one numeric column, as :meth:`row` gives it (NaN as None)."""
        value = self.columns.value_at(name, i)
        return None if value != value else value
