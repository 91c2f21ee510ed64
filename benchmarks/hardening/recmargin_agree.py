"""Stop 57 recmargin: does each training row of ``recommend`` show the layout ``plan`` chooses on the same GPUs?
(benchmarks/hardening/stop57_recmargin.md)

Run: PYTHONPATH=src python benchmarks/hardening/recmargin_agree.py MODELS GPUS [RECOMMEND AND PLAN FLAGS ...]
  e.g. ``recmargin_agree.py mixtral-8x7b,llama-3.1-70b b200,h100 --task train --tokens 10B``: per model and GPU,
  ``recommend MODEL --gpu GPU --top 99 --json [flags]``, then ``plan MODEL --gpu GPU --gpus N [flags]`` with each
  row's count and network (as ``qa20_sweep.py faces`` does); a row whose split (TP, PP, DP, EP, CP, interleave, ZeRO),
  micro-batch or tokens/s differs is printed with "!!", and a last line counts them. A row marked offloaded (stop 58
  recoffload: ``layout.offload``) is compared with ``plan ... --offload optimizer``, what plan's "What would fit" offers
  on those GPUs; and a row's headroom warnings (``thin_training_headroom``, ``eager_activations_exceed_headroom``) must
  be plan's for the same layout (a row that differs only there is printed with "!h"). Rows on several servers of other
  than 8 GPUs (1-GPU VMs) are not compared: ``plan`` takes a server to hold 8 (README). Another tree: its ``src`` on
  PYTHONPATH.
"""

from __future__ import annotations

import json
import sys

sys.path.insert(0, "benchmarks/hardening")
from qa14_sweep import cli, plan_json  # noqa: E402
from qa20_sweep import _split  # noqa: E402

HEADROOM = {"thin_training_headroom", "eager_activations_exceed_headroom"}


def agree(models: str, gpus: str, flags: list[str]) -> None:
    at = flags.index("--max-servers") if "--max-servers" in flags else len(flags)
    plan_flags = flags[:at] + flags[at + 2:]  # plan has no --max-servers
    rows_seen = differ = skipped = offloaded = room_differ = 0
    for model in models.split(","):
        for gpu in gpus.split(","):
            code, out, err = cli("recommend", model, "--gpu", gpu, "--top", "99", *flags, "--json")
            if code:
                print(f"-- {model} {gpu}: recommend refused: {err.strip()[:160]}")
                continue
            for r in json.loads(out)["results"]:
                if r["servers"] > 1 and r["gpus"] != 8 * r["servers"]:  # plan takes a server to hold 8 GPUs
                    print(f"~~{model:15} {r['offering']:18} {r['gpus']:4} not compared: {r['servers']} servers of "
                          f"{r['gpus'] // r['servers']} GPUs, which plan cannot state")
                    skipped += 1
                    continue
                network = ["--network-gbit-per-gpu", str(r["network_gbit_per_s_per_gpu"])] \
                    if r.get("network_gbit_per_s_per_gpu") else []
                offload = ["--offload", r["layout"]["offload"]] if r["layout"].get("offload") else []
                offloaded += bool(offload)
                p = plan_json(model, "--gpu", r["gpu"], "--gpus", str(r["gpus"]), *plan_flags, *network, *offload)
                if "_code" in p:
                    print(f"!! {model} {r['offering']} {r['gpus']}: plan refused: {p['_err'][:160]}")
                    rows_seen, differ = rows_seen + 1, differ + 1
                    continue
                tps, mb = p["performance"]["train_tokens_per_s"], p["workload"].get("micro_batch")
                same = (_split(p["layout"]) == _split(r["layout"]) and mb == r.get("concurrency")
                        and abs(tps - r["train_tokens_per_s"]) <= 0.5)
                plan_room = sorted(HEADROOM & {w["code"] for w in p["warnings"]})
                row_room = sorted(HEADROOM & set(r["warnings"]))
                rows_seen, differ = rows_seen + 1, differ + (not same)
                room_differ += same and plan_room != row_room
                mark = "!!" if not same else "!h" if plan_room != row_room else ""
                print(f"{mark}{model:15} {r['offering']:18} {r['gpus']:4} recommend "
                      f"{_split(r['layout'])} mb{r.get('concurrency')} {r['train_tokens_per_s']:,.0f}"
                      f"{' ' + ','.join(offload) if offload else ''} {row_room or ''} | plan "
                      f"{_split(p['layout'])} mb{mb} {tps:,.0f} {plan_room or ''}")
    print(f"rows {rows_seen}, differ {differ} (not compared: {skipped}; offloaded {offloaded}; "
          f"same layout, other headroom warnings {room_differ})")


if __name__ == "__main__":
    agree(sys.argv[1], sys.argv[2], sys.argv[3:])
