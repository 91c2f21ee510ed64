"""The text face of ``anchorgpu recommend``: the ranked table, the speed bands under it, the Pareto front, the
rejections, what to check and the assumptions (the per-user limits applied among them). Split from
:mod:`anchorgpu.cli.recommend`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from anchorgpu.cli._app import console
from anchorgpu.planner.held_weights import held_weights
from anchorgpu.planner.inputs import RECOMPUTES
from anchorgpu.units import fmt_duration, fmt_figure

if TYPE_CHECKING:
    from anchorgpu.recommend import Recommendation

__all__ = ["render_recommendation"]


def _money(value: Any) -> str:
    return "-" if value is None else f"${value:,}"


def _rate(value: float | None, digits: int = 0) -> str:
    return "-" if value is None else fmt_figure(value, digits)


def render_recommendation(rec: Recommendation) -> None:
    """Ranked table, Pareto front, rejected options, assumptions."""
    from rich.table import Table

    from anchorgpu.recommend.render import evidence_lines
    from anchorgpu.units import GIB

    out = console()
    if not out.is_terminal:
        out.width = 160
    diffusion = rec.task == "diffusion"
    training = rec.task not in ("inference", "diffusion")
    wl = rec.workload
    head = (f"[bold]{rec.model}[/bold] · {rec.task} · term {rec.term} ({rec.term.hours} h) · "
            f"{rec.evaluated:,} configuration{'' if rec.evaluated == 1 else 's'} evaluated")
    if diffusion:
        head += f" · {wl['images']} image(s) per batch per replica"
    elif not training:
        one = wl.get("one_sequence_context_tokens")
        head += (f" · context {wl['context_tokens']:,}" + (f" ({one:,} at concurrency 1)" if one else "")
                 + " · concurrency "
                 f"{format(wl['concurrency'], ',') if wl['concurrency'] else 'best per offering'}")
    out.print(head)
    if not rec.results:  # one line, not an empty table: what was tried and what to change
        from anchorgpu.recommend.nothing_fits import nothing_fits_line

        out.print(nothing_fits_line(rec.task, rec.evaluated, wl, rec.rejected), style="red", markup=False)
    table = Table(title="Cheapest offerings that fit, cheapest first", pad_edge=False)
    columns = ["#", "offering", "srv×GPU", "layout", "weights" if training else "weights/KV", "GiB/GPU used/usable"]
    if diffusion:
        columns = ["#", "offering", "srv×GPU", "replicas", "weights", "GiB/GPU used/usable"]
    else:
        columns += (["train tok/s", "run time", "run price"] if training
                    else ["conc", "tok/s", "tok/s/user", "TTFT s", "$/M tok"])
    columns += [f"total {rec.term}", "$/GPU-h"]
    left = ("offering", "layout", "weights/KV", "weights")
    for name in columns:
        # a number is never cut: where the table is wider than the screen, the layout (the widest cell, in words)
        # wraps between its parts first, and a numeric cell that still does not fit folds onto a second line, where
        # rich's default ellipsis left "8,122,7… days" and "$27,156…" (stop60_qa26, left 3)
        table.add_column(name, justify="left" if name in left else "right",
                         no_wrap=(name in left and name != "layout") or name == "GiB/GPU used/usable",
                         overflow="ellipsis" if name in left and name != "layout" else "fold")
    for i, o in enumerate(rec.results, 1):
        c = o.config
        layout = (f"TP{c['tp']} PP{c['pp']}" + (f" v{c['virtual_stages']}" if c.get("virtual_stages", 1) > 1 else "")
                  + (f" CP{c['cp']}" if c.get("cp", 1) > 1 else "") + f" DP{c['dp']}"
                  + (f" EP{c['ep']}" if c.get("ep", 1) > 1 else "")
                  + (f" Z{c['zero']}" if c["zero"] else "")
                  + (f" rc:{RECOMPUTES[int(c['recompute'])]}" if c.get("recompute") else "")
                  + (f" mb{c['concurrency']}" if training else "")  # the micro-batch a training row runs
                  + (" off:opt" if c.get("offload", "none") != "none" else ""))  # optimizer state in host memory
        mem = (f"{c['per_gpu_total_bytes'] / GIB:.1f}/{c['budget_bytes'] / GIB:.1f}"
               + (" !" if _HEADROOM_CODES.intersection(o.codes) else ""))  # a headroom plan warns of
        precision = (held_weights(c["weights"], task=rec.task, train_precision=wl.get("train_precision"), short=True)
                     if training or diffusion else f"{c['weights']}/{c['kv_cache']}")  # FP8's as held, as plan's
        row = [str(i), o.offering, f"{o.servers}×{o.gpus // o.servers}", str(c["dp"]) if diffusion else layout,
               precision + (" ↓" if o.lower_precision else ""), mem]
        if diffusion:
            pass
        elif training:
            seconds = c.get("train_time_s")
            price = "over 10 y" if o.run_refused else _money(o.run_usd)  # no quote prices such a run (units.MAX_TERM_HOURS)
            # each run in the unit plan writes it in (11.3 min, 2.5 h, 114.2 days): one decimal of a unit the time
            # reaches keeps two or more digits, where one unit down the column left "0.1 h" for 6 and 9 minutes
            row += [_rate(c["train_tokens_per_s"]), "-" if seconds is None else fmt_duration(seconds), price]
        else:
            row += [str(c["concurrency"]), _rate(c["decode_tokens_per_s_total"]),
                    _rate(c["decode_tokens_per_s_per_user"], 1), _rate(c["prefill_s"], 2),
                    _money(o.usd_per_million_output_tokens)]
        row += [_money(o.total_usd), _money(o.per_gpu_hour_usd)]
        table.add_row(*row)
    if rec.results:
        out.print(table)
    if rec.results and not diffusion:
        _print_bands(out, rec, "train tok/s" if training else "tok/s")
    if training and rec.results and all(o.config.get("train_time_s") is None for o in rec.results):
        out.print("Run time and run price: give --tokens (the tokens to train on, e.g. 1e12 or 300B) to time and price "
                  "the whole run; without it the rows are ranked by the term's total.", markup=False)
    apart = _public_network_line(rec)
    if apart:
        out.print(apart, markup=False)
    short = [f"#{i} {o.offering} {int(o.config['max_model_len_tokens']):,}" for i, o in enumerate(rec.results, 1)
             if o.config.get("max_model_len_tokens")]
    if short:  # sized at the default request, the KV cache short of one whole-window sequence (engine_startup)
        refuses = "; at its default, the window, vLLM refuses to start" if rec.workload.get("engine") == "vllm" else ""
        out.print(f"Maximum length to start the engine with (its KV cache holds no whole-window sequence{refuses}; "
                  "--recipe writes it): " + " · ".join(short) + " tokens", markup=False)
    unquotable = [f"#{i}" for i, o in enumerate(rec.results, 1) if o.run_refused]
    if unquotable:  # the reason is the same for every such row but its hours; the first one's is shown
        first = next(o for o in rec.results if o.run_refused)
        out.print(f"No run price for {', '.join(unquotable)}: {first.run_refused}.", markup=False)
    for line in _row_notes(rec):
        out.print(line, style="yellow", markup=False)
    lowered = [str(i) for i, o in enumerate(rec.results, 1) if o.lower_precision]
    if lowered:
        from anchorgpu.recommend.precision import LOWER_PRECISION_NOTE

        out.print(f"[yellow]↓ Row{'s' if len(lowered) > 1 else ''} {', '.join(lowered)}: {LOWER_PRECISION_NOTE}.[/yellow]")
    if rec.results:
        best = rec.results[0]
        # the run's own term where quote can price it (a run past 10 years has none: candidates.run_refusal), else
        # the term asked: a command that works
        term_text = best.run_term if training and best.run_term else str(rec.term)
        out.print(f"Next: [bold]anchorgpu quote {best.offering} --term {term_text} --quantity {best.servers}[/bold] "
                  "prices it exactly (then `anchorgpu book QUOTE_ID`).")
    if rec.pareto:
        speed = "train tok/s" if training else "tok/s total"
        runs = training and all(o.run_usd is not None for o in rec.pareto)  # the front of whole runs' prices
        out.print(f"[bold]{'Run price' if runs else 'Cost'} vs speed (Pareto front)[/bold]: "
                  + " · ".join(f"{o.offering} x{o.servers} {_money(o.run_usd if runs else o.total_usd)} → "
                               f"{fmt_figure(o.speed, 0)} {speed}" for o in rec.pareto[:8]))
    if rec.rejected:
        out.print(f"[bold]{rejected_heading(rec, training)}[/bold]")
        term = "" if not ranked_by_run(rec, training) else f"{rec.term} total "
        for r in rec.rejected:
            out.print(f"  - {r.offering} x{r.servers} ({term}{_money(r.total_usd)}): {r.reason}", markup=False)
    codes = sorted({code for o in rec.results for code in o.codes} | {code for code, _ in rec.warnings})
    if codes:
        from anchorgpu.planner.warnings import WARNING_CODES

        out.print("[bold]Still to check[/bold]")
        for code in codes:
            check = WARNING_CODES[code].check if code in WARNING_CODES else code
            out.print(f"  - [{code}] {check}", markup=False)
    evidence = evidence_lines(rec)
    if evidence:
        out.print("[bold]Measured runs behind these speeds[/bold]")
        for line in evidence:
            out.print(f"  - {line}", markup=False)
    out.print("[bold]Assumed[/bold]")
    for line in rec.assumptions:
        out.print(f"  - {line}", markup=False)


def ranked_by_run(rec: Recommendation, training: bool) -> bool:
    """Whether the rows are ranked (and a budget held) by the whole run's price: a training answer given the tokens
    to train on (a row timed for the run), not by the term's total."""
    return training and any(o.run_hours is not None or o.run_refused for o in rec.results)


def rejected_heading(rec: Recommendation, training: bool) -> str:
    """The heading over the rejected options: they are the ones whose term total is at most the first row's. Ranked
    by the run's price that is not "cheaper" (an option that does not fit has no run to price), so it says which price
    was compared."""
    if not ranked_by_run(rec, training):
        return "Cheaper options rejected"
    return (f"Options rejected at no more than #1's {rec.term} total (the rows are ranked by the run's price; "
            "a budget is the run's, as each reason says)")


_HEADROOM_CODES = frozenset(("thin_training_headroom", "eager_activations_exceed_headroom"))
"""A training row's headroom warnings, as plan gives them for its layout: marked '!' beside its memory."""


def _row_notes(rec: Recommendation) -> list[str]:
    """The footnotes of the table's training markers: 'off:opt' (the optimizer state in host memory, where no layout
    without offload fits the GPUs) and '!' (a headroom plan warns of for the same layout), each with its rows."""
    offloaded = [f"#{i}" for i, o in enumerate(rec.results, 1) if o.config.get("offload", "none") != "none"]
    lines = []
    if offloaded:
        lines.append(f"off:opt {', '.join(offloaded)}: optimizer state in host memory (ZeRO-Offload): no layout without "
                     "offload fits those GPUs; the layout and speed are plan --gpus N --offload optimizer's, the host's "
                     "optimizer step priced in (offload_slows_training; host RAM under Assumed).")
    for code in sorted(_HEADROOM_CODES):
        rows = [f"#{i}" for i, o in enumerate(rec.results, 1) if code in o.codes]
        if rows:
            what = ("headroom under what the worst measured run took beyond its plan" if code == "thin_training_headroom"
                    else "headroom short of what an eager (uncompiled) stack keeps")
            lines.append(f"! {', '.join(rows)}: {what}, as plan warns for the same layout ({code}; see Still to check).")
    return lines


def _public_network_line(rec: Recommendation) -> str | None:
    """One line under a training table whose rows spread GPUs over servers joined only by their public uplink
    (several 1-GPU VMs; warning ``training_over_public_network``): the link each was timed over, and that ``plan``
    on as many GPUs plans one server instead; None where no row does."""
    rows: dict[tuple[str, float], list[str]] = {}
    first = None
    for i, o in enumerate(rec.results, 1):
        if "training_over_public_network" in o.codes and o.network_gbit_per_s_per_gpu is not None:
            rows.setdefault((o.offering, o.network_gbit_per_s_per_gpu), []).append(f"#{i}")
            first = first or o
    if first is None:
        return None
    links = "; ".join(f"{', '.join(at)} {offering} {gbit:g} Gb/s a GPU" for (offering, gbit), at in rows.items())
    return (f"Separate servers, not one machine: {links} -- each server's public uplink (no fabric) carries every "
            f"training step's gradients. `anchorgpu plan {rec.model} --task {rec.task} --gpu {first.gpu} --gpus "
            f"{first.gpus}` plans one server of {first.gpus} GPUs linked inside it, a different machine.")


def _print_bands(out: Any, rec: Recommendation, unit: str) -> None:
    """One line under the table: each result's speed band and, beside it, its roofline ceiling (a bound, never the
    answer), as the JSON's ``*_low``/``*_high``/``*_ceiling`` give them."""
    from anchorgpu.recommend.render import headline_band

    # speeds timed with the user's --mfu/--mbu have no band (the JSON's low = high): measured runs fell around the
    # calibrated model, not around these, so no range of no width is shown as if they had (as plan and the page)
    user = rec.efficiencies.mfu is not None or rec.efficiencies.mbu is not None
    parts = []
    for i, o in enumerate(rec.results, 1):
        low, high, top = headline_band(rec, o)
        band = "" if user or low is None or high is None else f"{_rate(low)}–{_rate(high)}"
        ceiling = "" if top is None else f"ceiling {_rate(top)}"
        if band or ceiling:
            parts.append(f"#{i} " + ", ".join(x for x in (band, ceiling) if x))
    if parts:
        head = ("roofline ceiling (a bound, never the answer; no band: timed with your efficiencies, which no "
                "measured run brackets)" if user else
                "band (where measured runs fell) and roofline ceiling (a bound, never the answer)")
        out.print(f"{unit}: {head}: " + " · ".join(parts), markup=False)
