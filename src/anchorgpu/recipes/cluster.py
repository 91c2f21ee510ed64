"""Cluster recipes: a SkyPilot task YAML and Kubernetes objects around the engine or training launch.

Serving plans run ``vllm serve`` (a Deployment in Kubernetes); training plans run torchrun with the FSDP
settings, or DeepSpeed when the plan chose ZeRO-1/2 (a Job; an Indexed Job with a headless Service when the
job spans servers). GPUs are asked for by vendor (``nvidia.com/gpu`` or ``amd.com/gpu``), ``/dev/shm`` is a
memory-backed volume (NCCL and dataloaders need more than the container default of 64 MiB).
"""

from __future__ import annotations

import json
import re

from anchorgpu.errors import InvalidWorkload, said
from anchorgpu.planner.plan import Plan
from anchorgpu.recipes._common import Recipe, Target, flag_data, is_training, not_expressible
from anchorgpu.recipes.serving import serving_recipe
from anchorgpu.recipes.training import torchrun_parts, training_recipe, yaml_dump

__all__ = ["k8s_recipe", "skypilot_recipe"]

_VLLM_IMAGE = "vllm/vllm-openai:v{version}"
_TRAIN_IMAGE = "nvcr.io/nvidia/pytorch:25.01-py3"
_ROCM_VLLM_IMAGE = "rocm/vllm:latest"  # AMD: the ROCm builds; the recipe says to pin a tag
_ROCM_TRAIN_IMAGE = "rocm/pytorch:latest"
_SHM = "64Gi"
_MOUNT = "/recipe"


def _inner(plan: Plan, target: Target, outer: str) -> Recipe:
    """The launch inside the cluster recipe ``outer``; its refusal is worded for ``outer``, the kind asked for."""
    lay = plan.layout
    kind = "vllm" if not is_training(plan) else "deepspeed" if lay.zero in (1, 2) and not lay.fsdp else "torchrun-fsdp"
    try:
        return serving_recipe(plan, kind, target) if kind == "vllm" else training_recipe(plan, kind, target)
    except InvalidWorkload as exc:
        prefix = f"--recipe {kind}: "
        if exc.code != "recipe_not_expressible" or not exc.message.startswith(prefix):
            raise
        reason = exc.said.values.get("reason") if exc.said is not None else None  # its own words, said with their id
        raise not_expressible(outer, said("{reason} (in its {kind} launch)",
                                          reason=reason or exc.message.removeprefix(prefix), kind=kind)) from exc


def _name(plan: Plan) -> str:
    """A DNS-1123 name from the model's name (Kubernetes and SkyPilot both accept it)."""
    text = re.sub(r"[^a-z0-9-]+", "-", plan.model.name.lower()).strip("-")[:40].strip("-") or "model"
    return f"anchorgpu-{text}"


def _single_line(command: str) -> str:
    return command.replace(" \\\n  ", " ").replace(" \\\n", " ")


def _accelerator(plan: Plan, kind: str, assumptions: list[str]) -> str:
    if plan.gpu is None:
        raise not_expressible(kind, said("no GPU named in the plan: add --gpu"))
    names: dict[str, str] = flag_data("skypilot_accelerators")["names"]
    name = names.get(plan.gpu.name)
    if name is None:
        name = plan.gpu.name.upper()
        assumptions.append(f"Accelerator name {name}: not in AnchorGPU's list of SkyPilot names; check `sky show-gpus`.")
    return name


def _spans_servers(plan: Plan, target: Target, kind: str) -> None:
    lay = plan.layout
    if not is_training(plan) and lay.tp * lay.pp > target.gpus_per_node:
        raise not_expressible(kind, said("one serving replica spans {value} GPUs over servers of {gpus_per_node}: "
                                         "that needs a Ray cluster per replica, which this recipe does not write "
                                         "(plan TP x PP within one server)", value=lay.tp * lay.pp,
                                         gpus_per_node=target.gpus_per_node))


def _file_commands(files: tuple[tuple[str, str], ...]) -> str:
    """Shell that writes each file (a quoted heredoc: nothing in it is expanded)."""
    return "".join(f"cat > {name} <<'ANCHORGPU_EOF'\n{text}ANCHORGPU_EOF\n" for name, text in files)


def skypilot_recipe(plan: Plan, target: Target) -> Recipe:
    assumptions: list[str] = []
    _spans_servers(plan, target, "skypilot")
    accel = _accelerator(plan, "skypilot", assumptions)
    inner = _inner(plan, target, "skypilot")
    doc: dict[str, object] = {"name": _name(plan),
                              "resources": {"accelerators": f"{accel}:{target.gpus_per_node}"}}
    if is_training(plan):
        if target.nodes > 1:
            parts = torchrun_parts(target, script_args=[], node_rank="$SKYPILOT_NODE_RANK", master_addr="$MASTER_ADDR")
            launch = _relaunch(inner.command, parts)
            run = ("MASTER_ADDR=$(echo \"$SKYPILOT_NODE_IPS\" | head -n1)\n" + _file_commands(inner.files)
                   + _single_line(launch) + "\n")
        else:
            run = _file_commands(inner.files) + _single_line(inner.command) + "\n"
        doc["num_nodes"] = target.nodes
        setup = (f"pip install torch=={flag_data('torchrun_flags')['version']}"
                 + (f" deepspeed=={flag_data('deepspeed_keys')['version']}" if inner.kind == "deepspeed" else "") + "\n")
    else:
        doc["resources"] = {"accelerators": f"{accel}:{target.gpus_per_node}", "ports": 8000}
        doc["num_nodes"] = 1
        version = flag_data("vllm_flags")["version"]
        setup = f"pip install vllm=={version}\n"
        run = _file_commands(inner.files) + _single_line(inner.command) + "\n"
        if plan.layout.dp > 1 and plan.layout.tp * plan.layout.pp * plan.layout.dp > target.gpus_per_node:
            assumptions.append("Launch one task per replica (or use SkyPilot Serve with that many replicas).")
    if plan.gpu is not None and plan.gpu.vendor == "AMD":  # the pip wheels are CUDA builds: run in a ROCm image
        image = _ROCM_TRAIN_IMAGE if is_training(plan) else _ROCM_VLLM_IMAGE
        resources = doc["resources"]
        assert isinstance(resources, dict)
        resources["image_id"] = f"docker:{image}"
        setup = "echo 'the ROCm image brings the framework'\n"
        assumptions.append(f"AMD GPUs: the task runs in {image} (pin the tag that matches your ROCm driver).")
    doc["setup"] = setup
    doc["run"] = run
    text = _task_yaml(doc)
    assumptions.append(f"Inner launch: {inner.kind} ({inner.tool_version}).")
    return Recipe(kind="skypilot", command=f"sky launch -c {_name(plan)} task.yaml", files=(("task.yaml", text),),
                  assumptions=(*assumptions, *inner.assumptions),
                  cannot_set=(*inner.cannot_set, "Cloud, region and disk: SkyPilot picks them unless the task names them."),
                  tool_version=f"skypilot {flag_data('skypilot_task_schema')['version']}")


def _task_yaml(doc: dict[str, object]) -> str:
    """SkyPilot's task YAML, with ``setup`` and ``run`` as literal blocks."""
    blocks = {k: doc.pop(k) for k in ("setup", "run")}
    text = yaml_dump(doc)
    for key, value in blocks.items():
        body = "".join(f"  {line}\n" if line else "\n" for line in str(value).rstrip("\n").split("\n"))
        text += f"{key}: |\n{body}"
    return text


def _relaunch(command: str, parts: list[str]) -> str:
    """The training ``command`` with its torchrun replaced by ``parts`` (the cluster's own rank and address): the
    environment before ``torchrun`` (allocator settings) and the script's arguments after ``train.py`` are kept."""
    flat = _single_line(command)
    env = flat.split("torchrun", 1)[0] if "torchrun" in flat else ""
    args = flat.split(" train.py ", 1)[1] if " train.py " in flat else ""
    return env + " ".join(parts) + (f" {args}" if args else "")


def _mounted(command: str, files: tuple[tuple[str, str], ...]) -> str:
    """``command`` reading its files where the ConfigMap is mounted (``/recipe/NAME``): the container keeps the
    image's working directory, where ``train.py`` is (a working directory on the read-only mount hid it)."""
    for name, _ in files:
        command = re.sub(rf"(?<=\s){re.escape(name)}(?=\s|$)", f"{_MOUNT}/{name}", command)
    return command


def _gpu_resource(plan: Plan) -> str:
    return "amd.com/gpu" if plan.gpu is not None and plan.gpu.vendor == "AMD" else "nvidia.com/gpu"


def _pod_spec(plan: Plan, name: str, image: str, command: list[str], gpus: int, *, port: int | None,
              config_map: bool) -> dict[str, object]:
    container: dict[str, object] = {
        "name": "main", "image": image, "command": command,
        "resources": {"limits": {_gpu_resource(plan): gpus}},
        "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}]
        + ([{"name": "recipe", "mountPath": _MOUNT, "readOnly": True}] if config_map else []),
    }
    if port is not None:
        container["ports"] = [{"containerPort": port}]
        container["readinessProbe"] = {"httpGet": {"path": "/health", "port": port}, "periodSeconds": 10}
    volumes: list[dict[str, object]] = [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": _SHM}}]
    if config_map:
        volumes.append({"name": "recipe", "configMap": {"name": f"{name}-recipe"}})
    return {"containers": [container], "volumes": volumes}


def k8s_recipe(plan: Plan, target: Target) -> Recipe:
    assumptions: list[str] = [f"/dev/shm: a {_SHM} memory-backed volume."]
    _spans_servers(plan, target, "k8s")
    if plan.gpu is None:
        raise not_expressible("k8s", said("no GPU named in the plan: add --gpu"))
    inner = _inner(plan, target, "k8s")
    name = _name(plan)
    labels = {"app": name}
    docs: list[dict[str, object]] = []
    if inner.files:
        docs.append({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"{name}-recipe"},
                     "data": dict(inner.files)})
    command = ["/bin/sh", "-c", _mounted(_single_line(inner.command), inner.files)]
    if not is_training(plan):
        lay = plan.layout
        separate = lay.dp > 1 and lay.tp * lay.pp * lay.dp > target.gpus_per_node
        replicas = lay.dp if separate else 1
        gpus = lay.tp * lay.pp * (1 if separate else lay.dp)
        image = _VLLM_IMAGE.format(version=flag_data("vllm_flags")["version"])
        if plan.gpu.vendor == "AMD":
            image = _ROCM_VLLM_IMAGE
            assumptions.append(f"AMD GPUs: {image}, a ROCm build of vLLM; pin the tag that matches your ROCm driver.")
        pod = _pod_spec(plan, name, image, command, gpus, port=8000, config_map=bool(inner.files))
        docs.append({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "labels": labels},
                     "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                              "template": {"metadata": {"labels": labels}, "spec": pod}}})
        docs.append({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
                     "spec": {"selector": labels, "ports": [{"port": 8000, "targetPort": 8000}]}})
        assumptions.append(f"Image {image}; {replicas} pod(s) of {gpus} GPU(s).")
    else:
        image = _TRAIN_IMAGE
        if plan.gpu.vendor == "AMD":
            image = _ROCM_TRAIN_IMAGE
            assumptions.append(f"AMD GPUs: {image}; pin the tag that matches your ROCm driver.")
        if target.nodes > 1:
            parts = torchrun_parts(target, script_args=[], node_rank="$JOB_COMPLETION_INDEX",
                                   master_addr=f"{name}-0.{name}")
            command = ["/bin/sh", "-c", _mounted(_single_line(_relaunch(inner.command, parts)), inner.files)]
            docs.append({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
                         "spec": {"clusterIP": "None", "selector": {"job-name": name},
                                  "ports": [{"port": 29500, "name": "rendezvous"}]}})
        pod = _pod_spec(plan, name, image, command, target.gpus_per_node, port=None, config_map=bool(inner.files))
        pod["restartPolicy"] = "Never"
        spec: dict[str, object] = {"backoffLimit": 0, "template": {"metadata": {"labels": labels}, "spec": pod}}
        if target.nodes > 1:
            pod["subdomain"] = name
            spec.update({"completions": target.nodes, "parallelism": target.nodes, "completionMode": "Indexed"})
        docs.append({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "labels": labels},
                     "spec": spec})
        assumptions.append(f"Image {image} with the training script in it (or mounted); {target.nodes} pod(s) of "
                           f"{target.gpus_per_node} GPU(s).")
    text = "---\n".join(json.dumps(d, indent=2) + "\n" for d in docs)
    return Recipe(kind="k8s", command="kubectl apply -f anchorgpu.yaml", files=(("anchorgpu.yaml", text),),
                  assumptions=(*assumptions, f"Inner launch: {inner.kind} ({inner.tool_version}).", *inner.assumptions),
                  cannot_set=(*inner.cannot_set, "Node selection (GPU model labels), image pull secrets and the "
                                                 "model cache volume are the cluster's."),
                  tool_version="Kubernetes API apps/v1, batch/v1, v1")
