"""``anchorgpu plan ... --json`` starts fast because it loads only what it uses (issue 4: cold start < 0.5 s).

Timing is left to ``benchmarks/run.py`` (a loaded CI machine makes timed tests flaky); these tests pin the
cause instead: which modules the plan command imports, and that the lazy package ``__init__``s still give
every public name.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys

import pytest

PLAN_ARGV = ["plan", "llama-3.1-8b", "--gpu", "h100", "--json"]

# Heavy libraries and unrelated areas the plan command must not load.
NOT_ON_THE_PLAN_PATH = (
    "rich", "pydantic", "numpy", "huggingface_hub", "sqlalchemy", "fastapi", "jinja2", "tomllib",
    "anchorgpu.hardware.compare", "anchorgpu.hardware.resident_fit", "anchorgpu.architectures.diffusion",
    "anchorgpu.planner.sweep",
    "anchorgpu.cli.booking", "anchorgpu.cli.commerce", "anchorgpu.cli.db", "anchorgpu.cli.glossary", "anchorgpu.cli.hardware",
    "anchorgpu.cli.models", "anchorgpu.cli.recommend", "anchorgpu.cli.serve", "anchorgpu.catalog",
    "anchorgpu.store", "anchorgpu.config", "statistics",
)


def _modules_after(code: str) -> tuple[set[str], str]:
    probe = code + "\nimport sys, json\nprint(json.dumps(sorted(sys.modules)))\n"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60)
    *output, last = done.stdout.strip().splitlines()
    return set(json.loads(last)), "\n".join(output)


def test_plan_json_loads_no_heavy_library_and_no_other_command() -> None:
    loaded, output = _modules_after(f"from anchorgpu.cli import main\nassert main({PLAN_ARGV!r}) == 0")
    assert json.loads(output)["fits"] is True
    offenders = sorted(m for m in loaded if any(m == bad or m.startswith(bad + ".") for bad in NOT_ON_THE_PLAN_PATH))
    assert offenders == []


@pytest.mark.parametrize("argv", [["recommend", "llama-3.1-70b", "--task", "train", "--json"],
                                  ["recommend", "llama-3.1-8b", "--json"]])
def test_recommend_json_loads_no_masked_arrays_no_statistics_and_no_rich(argv: list[str]) -> None:
    # np.unique without return_index/return_inverse imports numpy.ma (~17 ms) for its masked-array check; the sweep
    # takes distinct values another way (planner.sweep_grid.distinct); statistics is the calibration report's
    # (speed.evidence imports it where it takes a median); --json renders no table
    loaded, output = _modules_after(f"from anchorgpu.cli import main\nassert main({argv!r}) == 0")
    assert json.loads(output)["results"]
    assert sorted(m for m in loaded if m.split(".")[0] in ("rich", "statistics") or m == "numpy.ma"
                  or m.startswith("numpy.ma.")) == []


def test_a_training_recommend_loads_no_serving_sweep_module() -> None:
    # the serving columns, the ladder, SGLang's and attention DP's sweep modules are imported where the serving
    # sweep runs (planner.sweep): a training recommend never reads them
    loaded, _ = _modules_after("from anchorgpu.cli import main\n"
                               "assert main(['recommend', 'llama-3.1-70b', '--task', 'train', '--json']) == 0")
    serving = {"anchorgpu.planner.sweep_serving", "anchorgpu.planner.sweep_ladder", "anchorgpu.planner.sweep_sglang",
               "anchorgpu.planner.sweep_attention_dp", "anchorgpu.planner.sweep_serving_memory",
               "anchorgpu.planner.sweep_serving_ticks", "anchorgpu.planner.sweep_serving_lookups",
               "anchorgpu.planner.sweep_serving_limits", "anchorgpu.planner.sweep_serving_pairs"}
    assert "anchorgpu.planner.sweep_training" in loaded
    assert sorted(loaded & serving) == []


def test_the_sweep_still_gives_its_batch_ladder() -> None:
    from anchorgpu.planner import sweep, sweep_ladder

    assert sweep.BATCH_LADDER == sweep_ladder.BATCH_LADDER
    with pytest.raises(AttributeError, match="no attribute"):
        sweep.no_such_name  # noqa: B018


def test_a_model_is_built_from_its_one_config_file_only() -> None:
    # The registry index resolves the name; only that model's config.json is read and parsed.
    loaded, _ = _modules_after("from anchorgpu.architectures import load_model\nload_model('llama-3.1-8b')")
    assert "anchorgpu.architectures.diffusion" not in loaded


def test_importing_a_pure_package_loads_only_its_records() -> None:
    loaded, _ = _modules_after("import anchorgpu.architectures, anchorgpu.hardware")
    assert {"anchorgpu.architectures.spec", "anchorgpu.hardware.spec"} <= loaded
    assert not loaded & {"anchorgpu.architectures.families", "anchorgpu.architectures.registry",
                         "anchorgpu.hardware.loader", "anchorgpu.hardware.compare", "tomllib"}


@pytest.mark.parametrize("package", ["anchorgpu.architectures", "anchorgpu.hardware", "anchorgpu.planner"])
def test_every_public_name_of_a_lazy_package_resolves(package: str) -> None:
    module = importlib.import_module(package)
    for name in module.__all__:
        assert getattr(module, name) is not None, name
    assert set(module.__all__) <= set(dir(module))
    with pytest.raises(AttributeError, match="no attribute"):
        module.no_such_name  # noqa: B018


def test_the_cli_still_lists_every_command_in_its_help() -> None:
    done = subprocess.run([sys.executable, "-c", "from anchorgpu.cli import main; main(['--help'])"],
                          capture_output=True, text=True, timeout=60)
    for command in ("plan", "model", "gpus", "recommend", "offerings", "quote", "book", "glossary", "serve"):
        assert f" {command} " in done.stdout, command


@pytest.mark.parametrize(("given", "expected"), [(None, "1"), ("4", "4")])
def test_the_console_script_runs_one_blas_thread_unless_told(given: str | None, expected: str) -> None:
    # numpy's OpenBLAS starts a thread pool at import (~70 ms of CPU on 2 CPUs) that the planner never uses
    code = ("import os, sys\nsys.argv = ['anchorgpu', 'version']\nfrom anchorgpu.cli import entry\n"
            "try:\n    entry()\nexcept SystemExit:\n    pass\nprint(os.environ.get('OPENBLAS_NUM_THREADS'))\n")
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if given is not None:
        env["OPENBLAS_NUM_THREADS"] = given
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60, env=env)
    assert done.stdout.strip().splitlines()[-1] == expected
