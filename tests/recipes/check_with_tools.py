"""Dev script: check recipes with the tools' own classes where they import (not part of the test run).

    .venv/bin/python tests/recipes/check_with_tools.py write DIR        # the recipes of a few plans, + manifest.json
    PY -m ... check-deepspeed DIR   # a Python where deepspeed imports: deepspeed.runtime.config.DeepSpeedConfig
    PY ... check-accelerate DIR     # accelerate: ClusterConfig.from_yaml_file and `accelerate launch` validation
    PY ... check-skypilot DIR       # skypilot: sky.Task.from_yaml

DeepSpeed and accelerate need torch; SkyPilot pins uvicorn below the project's, so each runs in a side
environment. Every check also feeds a misspelt key and expects the tool to refuse it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

PLANS: dict[str, tuple[str, dict[str, Any], dict[str, Any], tuple[str, ...]]] = {
    # name: (model, workload, layout + gpu, kinds)
    "serve-70b-h100x8": ("llama-3.1-70b", {"context_tokens": 8192, "concurrency": 32}, {"gpus": 8, "gpu": "h100"},
                         ("skypilot",)),
    "train-8b-fsdp-16": ("llama-3.1-8b", {"task": "train", "global_batch_tokens": 2**21}, {"gpus": 16, "fsdp": True,
                                                                                           "gpu": "h100"},
                         ("deepspeed", "accelerate", "skypilot")),
    "train-8b-zero2-offload": ("llama-3.1-8b", {"task": "train"}, {"gpus": 8, "zero": 2, "offload": "optimizer",
                                                                   "gpu": "h100"}, ("deepspeed", "accelerate")),
    "train-70b-zero3-params": ("llama-3.1-70b", {"task": "train", "recompute": "full"},
                               {"gpus": 8, "zero": 3, "offload": "params", "gpu": "h200"}, ("deepspeed", "accelerate")),
    "train-8b-bf16true-zero1": ("llama-3.1-8b", {"task": "train", "train_precision": "bf16-true"},
                                {"gpus": 8, "zero": 1, "pp": 1, "gpu": "h100"}, ("deepspeed", "accelerate")),
    "train-8b-bf16true-offload": ("llama-3.1-8b", {"task": "train", "train_precision": "bf16-true"},
                                  {"gpus": 1, "zero": 0, "pp": 1, "offload": "optimizer", "gpu": "l40s"},
                                  ("deepspeed", "accelerate")),
    "lora-70b-fp8": ("llama-3.1-70b", {"task": "lora", "train_precision": "fp8"}, {"gpus": 8, "fsdp": True,
                                                                                     "gpu": "h100"}, ("accelerate",)),
}


def write(folder: Path) -> None:
    from anchorgpu.architectures import load_model
    from anchorgpu.hardware import get_gpu
    from anchorgpu.planner import Layout, Workload, plan
    from anchorgpu.recipes import build_recipe

    folder.mkdir(parents=True, exist_ok=True)
    manifest: list[dict[str, Any]] = []
    for name, (model, work, lay, kinds) in PLANS.items():
        lay = dict(lay)
        gpu = get_gpu(lay.pop("gpu"))
        p = plan(load_model(model), Workload(**work), layout=Layout(**lay), gpu=gpu)
        for kind in kinds:
            recipe = build_recipe(p, kind)
            for file, text in recipe.files:
                path = folder / f"{name}.{kind}.{file}"
                path.write_text(text, encoding="utf-8")
                # accelerate's ds_config.json (a bf16 optimizer state) is checked as DeepSpeed's own config
                checked = "deepspeed" if file == "ds_config.json" else kind
                manifest.append({"file": path.name, "kind": checked, "dp": p.layout.dp, "gpus": p.layout.gpus,
                                 "command": recipe.command})
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=1), encoding="utf-8")
    print(f"{len(manifest)} files in {folder}")


def _entries(folder: Path, kind: str) -> list[dict[str, Any]]:
    return [e for e in json.loads((folder / "manifest.json").read_text()) if e["kind"] == kind]


def check_deepspeed(folder: Path) -> None:
    import deepspeed.runtime.config as dsc

    dsc.dist.get_rank = lambda *a, **k: 0  # no process group here: the data-parallel size comes from the mpu below

    class Mpu:
        def __init__(self, dp: int) -> None:
            self.dp = dp

        def get_data_parallel_world_size(self) -> int:
            return self.dp

    for e in _entries(folder, "deepspeed"):
        cfg = json.loads((folder / e["file"]).read_text())
        c = dsc.DeepSpeedConfig(cfg, mpu=Mpu(e["dp"]))
        print("deepspeed ok", e["file"], c.train_batch_size, c.gradient_accumulation_steps, c.zero_optimization_stage)
        bad = {**cfg, "zero_optimization": {**cfg["zero_optimization"], "overlapp_comm": True}}
        try:
            dsc.DeepSpeedConfig(bad, mpu=Mpu(e["dp"]))
        except Exception as err:  # noqa: BLE001 - any refusal will do
            print("  misspelt key refused:", type(err).__name__)
        else:
            raise SystemExit("deepspeed accepted a misspelt key")


def check_accelerate(folder: Path) -> None:
    from accelerate.commands.config.config_args import ClusterConfig
    from accelerate.commands.launch import _validate_launch_command, launch_command_parser

    script = folder / "train.py"
    script.write_text("print('hello')\n")
    for e in _entries(folder, "accelerate"):
        path = folder / e["file"]
        cfg = ClusterConfig.from_yaml_file(str(path))
        # the launch's own flags, as a server's shell expands them (NODE_RANK=1 and MASTER_ADDR=10.0.0.1 here)
        words = e["command"].replace("\\\n", " ").replace("$NODE_RANK", "1").replace("$MASTER_ADDR", "10.0.0.1").split()
        flags = words[words.index("accelerate_config.yaml") + 1:-1]
        args = launch_command_parser().parse_args(["--config_file", str(path), *flags, str(script)])
        args, _, _ = _validate_launch_command(args)
        assert int(args.num_processes) == e["gpus"], (args.num_processes, e)
        if cfg.num_machines > 1:
            assert (args.machine_rank, args.main_process_ip, args.main_process_port) == (1, "10.0.0.1", 29500), args
        print("accelerate ok", e["file"], cfg.distributed_type, args.num_processes, args.mixed_precision,
              f"machine_rank {args.machine_rank} main_process_ip {args.main_process_ip}")


def check_skypilot(folder: Path) -> None:
    import sky

    for e in _entries(folder, "skypilot"):
        task = sky.Task.from_yaml(str(folder / e["file"]))
        print("skypilot ok", e["file"], task.num_nodes, task.resources)


if __name__ == "__main__":
    action, where = sys.argv[1], Path(sys.argv[2])
    {"write": write, "check-deepspeed": check_deepspeed, "check-accelerate": check_accelerate,
     "check-skypilot": check_skypilot}[action](where)
