"""Dev script: rebuild ``src/anchorgpu/recipes/data/*_flags.json`` from the tools' own released files.

Not run by the tests and never imported by AnchorGPU. It reads the published wheels (``pip download NAME==VER
--no-deps``) with ``ast`` (nothing of them is imported), torch's own launcher parser, and SkyPilot's task
schema from a side environment where ``skypilot`` is installed:

    pip download vllm==0.33.0 sglang==0.5.23 accelerate==1.15.0 --no-deps -d WHEELS
    pip download deepspeed==0.19.8 --no-deps --no-build-isolation -d WHEELS   (from a Python that has torch)
    python tests/recipes/extract_flags.py --wheels WHEELS [--torch-python /work/tfvenv/bin/python]
        [--sky-python SKYVENV/bin/python]

``trtllm_flags.json`` is written by hand (the TensorRT-LLM wheel is GPU-only and several GB): see its source.
Each file records the tool, its version, the files read and the flags (or keys) found.
"""

from __future__ import annotations

import argparse
import ast
import json
import subprocess
import sys
import zipfile
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "src" / "anchorgpu" / "recipes" / "data"


def _wheel(wheels: Path, name: str) -> zipfile.ZipFile:
    found = sorted(wheels.glob(f"{name}-*.whl"))
    if not found:
        sys.exit(f"no {name} wheel in {wheels}")
    return zipfile.ZipFile(found[-1])


def _version(zf: zipfile.ZipFile) -> str:
    meta = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
    for line in zf.read(meta).decode().splitlines():
        if line.startswith("Version:"):
            return line.split(":", 1)[1].strip()
    raise SystemExit("no version")


def _add_argument_strings(tree: ast.AST) -> set[str]:
    """Every option string given positionally to ``*.add_argument(...)``."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument":
            for arg in node.args:
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and arg.value.startswith("-"):
                    out.add(arg.value)
    return out


def _class_fields(tree: ast.AST, names: tuple[str, ...]) -> set[str]:
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name in names:
            for item in node.body:
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name) \
                        and not item.target.id.startswith("_"):
                    out.add(item.target.id)
    return out


def _literal(tree: ast.AST, name: str) -> list[str]:
    """The values of ``NAME = Literal["a", "b", ...]`` or ``NAME = ["a", "b", ...]``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets) and node.value is not None:
                value = node.value.slice if isinstance(node.value, ast.Subscript) else node.value
                elts = value.elts if isinstance(value, ast.Tuple | ast.List) else [value]
                return [e.value for e in elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    raise SystemExit(f"no {name}")


def _field_choices(tree: ast.AST, field: str) -> list[str]:
    """``choices=[...]`` of the ``A[..., Arg(...)]`` field called ``field``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == field:
            for call in ast.walk(node.annotation):
                if isinstance(call, ast.Call):
                    for kw in call.keywords:
                        if kw.arg == "choices" and isinstance(kw.value, ast.List):
                            return [e.value for e in kw.value.elts if isinstance(e, ast.Constant)]
    raise SystemExit(f"no choices for {field}")


def vllm(wheels: Path) -> dict[str, object]:
    zf = _wheel(wheels, "vllm")
    files = ["vllm/engine/arg_utils.py", "vllm/entrypoints/common/cli_args.py"]
    flags = _add_argument_strings(ast.parse(zf.read(files[0])))
    front = ast.parse(zf.read(files[1]))
    flags |= _add_argument_strings(front)
    flags |= {"--" + f.replace("_", "-") for f in _class_fields(front, ("BaseFrontendArgs", "FrontendArgs"))}
    return {"tool": "vllm", "command": "vllm serve", "version": _version(zf),
            "source": f"vllm {_version(zf)} wheel from PyPI: {', '.join(files)} (EngineArgs.add_cli_args option "
                      "strings; FrontendArgs fields become --kebab-case flags)",
            "flags": sorted(flags),
            "values": {
                "--kv-cache-dtype": _literal(ast.parse(zf.read("vllm/config/cache.py")), "CacheDType"),
                "--dtype": _literal(ast.parse(zf.read("vllm/config/model.py")), "ModelDType"),
                "--quantization": _literal(ast.parse(zf.read("vllm/model_executor/layers/quantization/__init__.py")),
                                           "QuantizationMethods"),
            },
            "values_source": "vllm/config/cache.py CacheDType, vllm/config/model.py ModelDType, "
                             "vllm/model_executor/layers/quantization/__init__.py QuantizationMethods"}


def sglang(wheels: Path) -> dict[str, object]:
    zf = _wheel(wheels, "sglang")
    prefix = "sglang/srt/arg_groups/fields/"
    flags: set[str] = set(_add_argument_strings(ast.parse(zf.read("sglang/srt/server_args.py"))))
    for name in sorted(n for n in zf.namelist() if n.startswith(prefix) and n.endswith(".py")):
        for node in ast.walk(ast.parse(zf.read(name))):
            if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
                    and isinstance(node.annotation, ast.Subscript) and isinstance(node.annotation.value, ast.Name)
                    and node.annotation.value.id == "A"):
                continue
            meta = node.annotation.slice.elts[1] if isinstance(node.annotation.slice, ast.Tuple) else None
            cli = "--" + node.target.id.replace("_", "-")
            aliases: list[str] = []
            if isinstance(meta, ast.Call):
                kw = {k.arg: k.value for k in meta.keywords}
                if isinstance(kw.get("no_cli"), ast.Constant) and kw["no_cli"].value is True:
                    continue
                if isinstance(kw.get("cli_name"), ast.Constant):
                    cli = str(kw["cli_name"].value)  # type: ignore[union-attr]
                if isinstance(kw.get("aliases"), ast.List):
                    aliases = [e.value for e in kw["aliases"].elts if isinstance(e, ast.Constant)]  # type: ignore[union-attr]
            flags |= {cli, *aliases}
    return {"tool": "sglang", "command": "python -m sglang.launch_server", "version": _version(zf),
            "source": f"sglang {_version(zf)} wheel from PyPI: sglang/srt/arg_groups/fields/*.py (A[...] fields, "
                      "cli_name and aliases, no_cli skipped) and sglang/srt/server_args.py add_argument",
            "flags": sorted(flags),
            "values": {
                "--kv-cache-dtype": _field_choices(ast.parse(zf.read(prefix + "model.py")), "kv_cache_dtype"),
                "--dtype": _field_choices(ast.parse(zf.read(prefix + "model.py")), "dtype"),
                "--quantization": _literal(ast.parse(zf.read("sglang/srt/arg_groups/choices.py")),
                                           "QUANTIZATION_CHOICES"),
            },
            "values_source": "sglang/srt/arg_groups/fields/model.py kv_cache_dtype and dtype choices, "
                             "sglang/srt/arg_groups/choices.py QUANTIZATION_CHOICES"}


def accelerate(wheels: Path) -> dict[str, object]:
    zf = _wheel(wheels, "accelerate")
    cfg = "accelerate/commands/config/config_args.py"
    launch = "accelerate/commands/launch.py"
    keys = _class_fields(ast.parse(zf.read(cfg)), ("BaseConfig", "ClusterConfig"))
    launch_flags = _add_argument_strings(ast.parse(zf.read(launch)))
    nested = sorted(f.lstrip("-").replace("-", "_") for f in launch_flags
                    if f.startswith(("--fsdp_", "--parallelism_config_")))
    return {"tool": "accelerate", "command": "accelerate launch", "version": _version(zf),
            "source": f"accelerate {_version(zf)} wheel from PyPI: {cfg} (BaseConfig and ClusterConfig fields: the "
                      f"config YAML's top-level keys) and {launch} (launch flags; fsdp_config and "
                      "parallelism_config keys are the launch flags of the same name)",
            "config_keys": sorted(keys), "nested_keys": nested, "flags": sorted(launch_flags)}


def _pydantic_keys(tree: ast.AST, names: tuple[str, ...]) -> set[str]:
    """Field names of pydantic models, with their ``alias=`` spellings (ZeRO-3's ``stage3_*`` keys)."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name in names:
            for item in node.body:
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    out.add(item.target.id)
                    if isinstance(item.value, ast.Call):
                        out |= {str(k.value.value) for k in item.value.keywords
                                if k.arg == "alias" and isinstance(k.value, ast.Constant)}
    return out


def deepspeed(wheels: Path) -> dict[str, object]:
    import tarfile

    found = sorted(wheels.glob("deepspeed-*.tar.gz"))
    if not found:
        sys.exit(f"no deepspeed sdist in {wheels}")
    version = found[-1].name.removeprefix("deepspeed-").removesuffix(".tar.gz")
    root = f"deepspeed-{version}/deepspeed/runtime/"
    with tarfile.open(found[-1]) as tf:
        def tree(rel: str) -> ast.AST:
            member = tf.extractfile(root + rel)
            assert member is not None
            return ast.parse(member.read())

        top = {node.value.value for node in ast.walk(tree("constants.py"))
               if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
               and isinstance(node.value.value, str) and len(node.targets) == 1
               and isinstance(node.targets[0], ast.Name) and node.targets[0].id.isupper()
               and not node.targets[0].id.endswith(("_DEFAULT", "_FORMAT"))
               and node.value.value.replace("_", "").isalnum() and node.value.value.islower()}
        for rel in ("config.py", "zero/config.py"):  # keys read as param_dict.get("...")
            top |= {node.args[0].value for node in ast.walk(tree(rel))
                    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "param_dict"
                    and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)}
        zero = _pydantic_keys(tree("zero/config.py"), ("DeepSpeedZeroConfig",))
        offload = _pydantic_keys(tree("zero/offload_config.py"),
                                 ("DeepSpeedZeroOffloadParamConfig", "DeepSpeedZeroOffloadOptimizerConfig"))
    return {"tool": "deepspeed", "version": version,
            "source": f"deepspeed {version} sdist from PyPI: deepspeed/runtime/constants.py (top-level key strings), "
                      "deepspeed/runtime/zero/config.py (DeepSpeedZeroConfig fields and aliases), "
                      "deepspeed/runtime/zero/offload_config.py (offload_param / offload_optimizer fields)",
            "config_keys": sorted(top), "zero_optimization_keys": sorted(zero), "offload_keys": sorted(offload)}


def torchrun(python: str) -> dict[str, object]:
    code = ("import json, torch; from torch.distributed.run import get_args_parser; p = get_args_parser(); "
            "print(json.dumps([torch.__version__.split('+')[0], sorted(s for a in p._actions for s in a.option_strings)]))")
    version, flags = json.loads(subprocess.run([python, "-c", code], check=True, capture_output=True, text=True).stdout)
    return {"tool": "torchrun", "command": "torchrun", "version": version,
            "source": f"torch {version}: torch.distributed.run.get_args_parser() option strings",
            "flags": flags}


def skypilot(python: str) -> dict[str, object]:
    code = ("import json, sky; from sky.utils import schemas; "
            "print(json.dumps([sky.__version__, schemas.get_task_schema(), schemas.get_resources_schema()]))")
    version, schema, resources = json.loads(
        subprocess.run([python, "-c", code], check=True, capture_output=True, text=True).stdout)
    return {"tool": "skypilot", "version": version,
            "source": f"skypilot {version}: sky.utils.schemas.get_task_schema() (the task YAML's JSON schema) and "
                      "get_resources_schema() (its resources section, which SkyPilot checks on its own)",
            "schema": schema, "resources_schema": resources}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--wheels", type=Path, required=True)
    ap.add_argument("--torch-python")
    ap.add_argument("--sky-python")
    args = ap.parse_args()
    out = {"vllm_flags": vllm(args.wheels), "sglang_flags": sglang(args.wheels),
           "accelerate_keys": accelerate(args.wheels),
           "deepspeed_keys": deepspeed(args.wheels)}
    if args.torch_python:
        out["torchrun_flags"] = torchrun(args.torch_python)
    if args.sky_python:
        out["skypilot_task_schema"] = skypilot(args.sky_python)
    for name, doc in out.items():
        (DATA / f"{name}.json").write_text(json.dumps(doc, indent=1, sort_keys=False) + "\n", encoding="utf-8")
        print(name, doc["version"])


if __name__ == "__main__":
    main()
