"""Training on an offering's GPUs where no layout without offload fits them: optimizer state in host memory.

``plan --gpus N`` on such GPUs plans the closest layout and offers first, under "What would fit", ``--offload
optimizer`` on the same GPUs (:func:`~anchorgpu.planner.closest_layout.offload_suggestions`: the chooser run around the
offload, ZeRO-Offload's placement). ``recommend`` says the same of an offering and server count whose sweep kept no
configuration: :func:`offloaded_rows` plans ``plan --gpus N --offload optimizer`` for it (the same call: the layout
chooser, the plan's memory, its speed with the optimizer step on the host priced in) and, where that fits the GPUs and
the offloaded state fits the servers' RAM, gives a row shaped like the sweep's, marked ``offload``, instead of a
rejection. Offerings where a layout without offload fits are left as they are: the offload is the way to run a job on
GPUs too small for it, not a speed-up. Only the optimizer state is offloaded: with the parameters in host memory too
(``--offload params``, plan's second step) every micro-batch fetches them over the host link, and more servers of the
same offering, which the sweep already tries, are the answer an engineer reaches for first.

Only groups ``plan`` can state are planned: one server, or servers of :data:`SERVER_GPUS` joined by a fabric (plan times
a layout on 8-GPU servers and lets pipeline stages span them; several 1-GPU VMs, or servers joined only by their public
uplinks, are another machine), on the network the row is timed over (``plan --network-gbit-per-gpu``). Pure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.catalog import Offering
from anchorgpu.errors import InvalidWorkload, said
from anchorgpu.planner._frozen import evolve
from anchorgpu.planner.inputs import RECOMPUTES, Layout, Offload, PrecisionPlan
from anchorgpu.planner.plan import plan
from anchorgpu.planner.speed.serving_setup import SERVER_GPUS
from anchorgpu.recommend.shapes import crosses_network, network_gbit_per_s_per_gpu
from anchorgpu.units import fmt_bytes

if TYPE_CHECKING:
    from anchorgpu.planner.sweep_types import HardwareShape, SweepResult, SweepSpec

__all__ = ["OFFLOAD", "Offloaded", "offload_line", "offloaded_rows"]

OFFLOAD: Offload = "optimizer"
"""What recommend offloads where nothing else fits: the optimizer state (ZeRO-Offload), as plan's first offload."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Offloaded:
    """What planning the offload gave one offering and server count: the row where it runs (``row``), else why not
    where the GPUs would hold it (``short``: the servers' RAM does not hold the offloaded state), else neither."""

    row: dict[str, Any] | None = None
    short: str | None = None
    assumption: str | None = None  # plan's line on how the optimizer step on the host was timed


def _plannable(shape: HardwareShape, servers: int) -> bool:
    """Whether ``plan --gpus N`` states ``servers`` of ``shape``: one server, or servers of the GPUs plan takes a
    server to hold joined by a fabric (without one the sweep adds servers only as data-parallel replicas, which
    plan's chooser does not hold to)."""
    return servers == 1 or (shape.gpus_per_server == SERVER_GPUS and shape.scale_out)


def offloaded_rows(model: ModelSpec, spec: SweepSpec, result: SweepResult, offerings: Sequence[Offering],
                   kept: Mapping[tuple[int, int], int]) -> dict[tuple[int, int], Offloaded]:
    """Each (shape, servers) group of a training sweep that kept no configuration (not in ``kept``) and that plan can
    state, planned with the optimizer state offloaded (:func:`_offloaded`); ``offerings`` in the sweep's shapes'
    order. Empty for a serving sweep."""
    if result.task == "inference":
        return {}
    out: dict[tuple[int, int], Offloaded] = {}
    for s, shape in enumerate(result.shapes):
        for servers in range(1, shape.max_servers + 1):
            if (s, servers) in kept or not _plannable(shape, servers):
                continue
            found = _offloaded(model, spec, result, shape, offerings[s], servers)
            if found.row is not None or found.short is not None:
                out[(s, servers)] = found
    return out


def _offloaded(model: ModelSpec, spec: SweepSpec, result: SweepResult, shape: HardwareShape, offering: Offering,
               servers: int) -> Offloaded:
    """``plan --gpu G --gpus N --offload optimizer`` (with the row's network between servers) for ``servers`` of
    ``offering``, each weight format swept, the fastest that fits kept: as a sweep row where the offloaded state fits
    the servers' RAM."""
    from anchorgpu.planner.speed.estimate import plan_performance

    gpus = shape.gpus_per_server * servers
    w = evolve(spec.workload, global_batch_tokens=spec.global_batch_tokens)
    if crosses_network(offering, servers):  # timed over the offering's network, as the sweep times the row
        w = evolve(w, network_gbit_per_s_per_gpu=network_gbit_per_s_per_gpu(offering))
    best: Offloaded = Offloaded()
    best_speed = 0.0
    for weights in result.weights:
        try:
            p = plan(model, w, precision=PrecisionPlan(weights=weights), layout=Layout(gpus=gpus, offload=OFFLOAD),
                     gpu=shape.gpu, overheads=spec.overheads, suggest=False, efficiencies=spec.efficiencies)
        except InvalidWorkload:
            continue
        if not p.fits or p.layout.offload != OFFLOAD or p.budget_bytes is None:
            continue
        host_bytes = host_bytes_per_gpu(p.breakdown) * shape.gpus_per_server
        if host_bytes > offering.ram_bytes:
            if best.row is None:
                best = Offloaded(short=said("with the optimizer state in host memory (plan --offload {offload}) its "
                                            "GPUs hold it, but each server would keep {host} of that state and the "
                                            "gradients its update reads in {ram} of RAM", offload=OFFLOAD,
                                            host=fmt_bytes(host_bytes), ram=fmt_bytes(offering.ram_bytes)))
            continue
        try:
            perf = plan_performance(p, train_tokens=spec.train_tokens, mfu=spec.efficiencies.mfu,
                                    mbu=spec.efficiencies.mbu)
        except InvalidWorkload:
            continue
        speed = perf.get("train_tokens_per_s")
        if not speed or speed <= best_speed:
            continue
        best_speed = float(speed)
        line = next((a for a in perf["assumptions"] if a.startswith(f"--offload {OFFLOAD}")), None)
        best = Offloaded(row=_row(p, perf, shape, servers, host_bytes), assumption=line)
    return best


def host_bytes_per_gpu(breakdown: Mapping[str, int]) -> int:
    """What a GPU's rank keeps in host memory with its optimizer offloaded: the optimizer state (with the partition it
    updates: the master, or bf16-true's own bf16 copy) and that partition's gradient in its dtype, fp32 beside an fp32
    master, bf16 under bf16-true (plan's ``offloaded_optimizer_bytes`` and ``offloaded_gradients_bytes``; the sources:
    :func:`~anchorgpu.planner.training_states.update_partition_bytes`), and under DeepSpeed ZeRO-Offload its pinned bf16
    buffer of the partition (``offloaded_bf16_buffer_bytes``, :func:`~anchorgpu.planner.training_states.zero_runs_deepspeed`)
    and its pinned gradient staging buffer of the largest parameter (``offloaded_gradient_staging_bytes``,
    :func:`~anchorgpu.planner.deepspeed_zero.offload_staging_bytes`)."""
    return (int(breakdown.get("offloaded_optimizer_bytes", 0)) + int(breakdown.get("offloaded_gradients_bytes", 0))
            + int(breakdown.get("offloaded_bf16_buffer_bytes", 0))
            + int(breakdown.get("offloaded_gradient_staging_bytes", 0)))


def _row(p: Any, perf: Mapping[str, Any], shape: HardwareShape, servers: int, host_bytes: int) -> dict[str, Any]:
    """The plan as a row of the training sweep (its keys, as :meth:`SweepResult.row` gives them), with the offload:
    ``offload``, ``offloaded_optimizer_bytes`` (a GPU's share in host memory) and ``host_bytes_per_server`` (a server's
    ranks' state and gradients, :func:`host_bytes_per_gpu`)."""
    lay, per_gpu, wl = p.layout, p.per_gpu, p.workload
    total = per_gpu.total_bytes
    row: dict[str, Any] = {
        "shape": shape.id, "gpu": shape.gpu.name, "servers": servers, "gpus": lay.gpus, "tp": lay.tp, "pp": lay.pp,
        "dp": lay.dp, "zero": lay.zero, "ep": lay.ep, "cp": lay.cp, "weights": p.precision.weights,
        "kv_cache": p.precision.kv_cache, "weights_bytes": per_gpu.weights_bytes, "kv_cache_bytes": 0,
        "activations_bytes": per_gpu.activations_bytes,
        "other_bytes": total - per_gpu.weights_bytes - per_gpu.activations_bytes, "per_gpu_total_bytes": total,
        "budget_bytes": p.budget_bytes, "fits": True, "splits_batch": True, "concurrency": wl.micro_batch or 1,
        "prefill_s": None, "decode_tokens_per_s_per_user": None, "decode_tokens_per_s_total": None,
        "train_tokens_per_s": perf["train_tokens_per_s"], "train_time_s": perf.get("train_time_s"),
        "recompute": RECOMPUTES.index(wl.recompute or "none"), "virtual_stages": lay.virtual_stages,
        "offload": lay.offload, "offloaded_optimizer_bytes": int(p.breakdown.get("offloaded_optimizer_bytes", 0)),
        "offloaded_gradients_bytes": int(p.breakdown.get("offloaded_gradients_bytes", 0)),
        "host_bytes_per_server": host_bytes,
    }
    row["train_order_tokens_per_s"] = row["train_tokens_per_s"]
    if lay.pipeline_layout is not None:
        row["pipeline_layout"] = lay.pipeline_layout.text
    return row


def offload_line(marked: Sequence[tuple[int, Mapping[str, Any], str]], timed: str | None) -> str | None:
    """The assumption under a training answer with offloaded rows (``marked``: each row's number in the results, its
    config and its offering's RAM in words): what they run, that plan states them so, and how the host's optimizer
    step was timed (``timed``: plan's own line, of the first). None where none is shown.

    >>> print(offload_line([(2, {"gpus": 64, "host_bytes_per_server": 2**40}, "2.00 TiB")], None))
    Optimizer state in host memory (ZeRO-Offload) on #2: no layout without offload fits those GPUs, so each row is the layout plan --gpus N --offload optimizer chooses on them (plan's first 'What would fit'); its speed and run price include the optimizer step on the host. Host RAM a server (the state and the gradients its update reads): #2 1.00 TiB of 2.00 TiB.
    """
    if not marked:
        return None
    rows = ", ".join(f"#{i}" for i, _, _ in marked)
    ram = "; ".join(f"#{i} {fmt_bytes(int(c['host_bytes_per_server']))} of {total}" for i, c, total in marked)
    return (f"Optimizer state in host memory (ZeRO-Offload) on {rows}: no layout without offload fits those GPUs, so "
            f"each row is the layout plan --gpus N --offload {OFFLOAD} chooses on them (plan's first 'What would fit'); "
            f"its speed and run price include the optimizer step on the host. Host RAM a server (the state and "
            f"the gradients its update reads): {ram}."
            + (f" As plan says for #{marked[0][0]}: {timed}" if timed else ""))
