"""Stop 53, an adversarial pass over the HTTP API, its docs and the pages (branch qa9; benchmarks/hardening/
stop53_qa3.md): every key an answer carries is in the OpenAPI document with a description, the GPU answer explains
the training stacks' source keys, the CLI's recommend JSON and the API's carry the same keys, and a decimal comma
typed into a page's decimal field is answered in words that say what to type.
"""

from __future__ import annotations

import html
import json
import re
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from referencing import Registry, Resource

from cli_runner import run_json
from hardening.conftest import Served

_SUFFIXES = ("_low", "_high", "_ceiling")


def _components(served: Served) -> dict[str, Any]:
    schemas: dict[str, Any] = served.client.get("/openapi.json").json()["components"]["schemas"]
    return schemas


def _undocumented(components: dict[str, Any], schema: str, answer: dict[str, Any]) -> list[str]:
    """Keys of ``answer`` that ``schema`` does not list, or lists without a description."""
    properties = components[schema]["properties"]
    return [key for key in answer if not (properties.get(key) or {}).get("description")]


def _validator(served: Served, path: str, method: str) -> Draft202012Validator:
    document = served.client.get("/openapi.json").json()
    content = document["paths"][path][method]["responses"]["200"]["content"]
    schema = json.loads(json.dumps(next(iter(content.values()))["schema"]).replace('"#/components', '"urn:api#/components'))
    registry = Registry().with_resource("urn:api", Resource.from_contents(
        {"$schema": "https://json-schema.org/draft/2020-12/schema", "components": document["components"]}))
    return Draft202012Validator({"$schema": "https://json-schema.org/draft/2020-12/schema", **schema}, registry=registry)


# 1. every key of an answer is documented (GPU, plan and its performance section, recommend, compare, glossary) -----


def test_every_key_of_a_gpu_answer_is_documented(sqlite_served: Served) -> None:
    """Before: memory_physical_bytes, memory_unit, fp4_formats, pcie_gen, pcie_bandwidth_bytes_per_s,
    compute_capability, rocm_gfx_target, uncertain_fields, indicative_price_usd_per_gpu_hour, source_details and notes
    were on every GPU and in no schema."""
    components = _components(sqlite_served)
    for gpu in sqlite_served.client.get("/v1/gpus").json()["data"]:
        assert _undocumented(components, "GpuOut", gpu) == [], gpu["name"]


@pytest.mark.parametrize("body", [
    {"model": "llama-3.1-8b", "gpu": "h100", "recipe": "vllm"},
    {"model": "qwen3-235b-a22b", "gpu": "h100", "gpus": 8, "tp": 8, "ep": 4, "engine": "trtllm"},
    {"model": "llama-3.1-70b", "gpu": "h100", "task": "train", "gpus": 32, "tokens": 10**10, "network_gbit_per_gpu": 100},
    {"model": "llama-3.1-8b"},
])
def test_every_key_of_a_plan_answer_is_documented(sqlite_served: Served, body: dict[str, Any]) -> None:
    """Before: budget_bytes, max_context_tokens, checkpoint_bytes, workload, precision, suggestions, breakdown and
    recipe at the top, and calibration_version, decode_bound, kv_reservation, prefill_s, decode_tokens_per_s_total,
    train_predicted_mfu and network_gbit_per_s_per_gpu under performance, were in no schema."""
    components = _components(sqlite_served)
    answer = sqlite_served.client.post("/v1/plan", json=body).json()
    assert _undocumented(components, "PlanOut", answer) == []
    described = components["PlanOut"]["properties"]["performance"]["properties"]
    performance = answer["performance"] or {}
    bases = {next((k[: -len(s)] for s in _SUFFIXES if k.endswith(s)), k) for k in performance}
    assert sorted(b for b in bases if not (described.get(b) or {}).get("description")) == []
    assert not list(_validator(sqlite_served, "/v1/plan", "post").iter_errors(answer))


def test_every_key_of_a_recommend_answer_is_documented(sqlite_served: Served) -> None:
    """Before: workload, term_hours and evaluated were in no schema."""
    answer = sqlite_served.client.post("/v1/recommend", json={"model": "llama-3.1-8b", "max_ttft_s": 0.5, "top": 2}).json()
    assert _undocumented(_components(sqlite_served), "RecommendOut", answer) == []
    assert not list(_validator(sqlite_served, "/v1/recommend", "post").iter_errors(answer))


def test_every_key_of_a_gpu_comparison_is_documented(sqlite_served: Served) -> None:
    """Before: price_notes, workload and fits (always null here) were in no schema; a, b without a description."""
    components = _components(sqlite_served)
    answer = sqlite_served.client.get("/v1/gpus/compare", params={"a": "h100", "b": "mi355x"}).json()
    assert _undocumented(components, "GpuComparisonOut", answer) == []
    assert _undocumented(components, "PredictedSpeedOut", answer["predicted"][0]) == []


def test_every_key_of_a_glossary_entry_is_described(sqlite_served: Served) -> None:
    components = _components(sqlite_served)
    answer = sqlite_served.client.get("/v1/glossary", params={"limit": 3}).json()
    assert _undocumented(components, "GlossaryList", answer) == []
    assert _undocumented(components, "GlossaryEntryOut", answer["data"][0]) == []


def test_the_docs_describe_the_new_request_fields(sqlite_served: Served) -> None:  # control: already so
    components = _components(sqlite_served)
    recommend = components["RecommendRequest"]["properties"]
    assert "a token every 50 ms" in recommend["min_tokens_per_s_per_user"]["description"]
    assert recommend["max_ttft_s"]["description"] and "limits" in components["RecommendOut"]["properties"]
    assert "training_stacks" in components["GpuOut"]["properties"]


# 2. the GPU answer explains the training stacks' source keys ---------------------------------------------------------


@pytest.mark.parametrize(("gpu", "key"), [("mi355x", "S33"), ("h100", "S32")])
def test_source_details_explain_the_training_sources(sqlite_served: Served, capsys: pytest.CaptureFixture[str],
                                                     gpu: str, key: str) -> None:
    """Before: training_sources named S33 (S32) and source_details described the datasheet keys only; the CLI's
    table explained it, its JSON and the API did not."""
    answer = sqlite_served.client.get(f"/v1/gpus/{gpu}").json()
    assert key in answer["training_sources"] and answer["source_details"][key] != "(unknown source key)"
    assert set(answer["sources"]) <= set(answer["source_details"])
    assert run_json(capsys, "gpus", "show", gpu)["source_details"][key] == answer["source_details"][key]


# 3. the CLI's recommend JSON and the API's carry the same keys -------------------------------------------------------


def test_a_training_recommend_has_the_same_keys_on_the_cli_and_the_api(sqlite_served: Served,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """Before: the API wrote "limits": null on a training answer (RecommendOut's default), the CLI left the key out."""
    cli = run_json(capsys, "recommend", "llama-3.1-8b", "--task", "train", "--train-precision", "fp4", "--top", "2")
    api = sqlite_served.client.post("/v1/recommend", json={"model": "llama-3.1-8b", "task": "train",
                                                           "train_precision": "fp4", "top": 2}).json()
    assert set(cli) == set(api) and cli["limits"] is None
    assert [r["train_tokens_per_s"] for r in cli["results"]] == [r["train_tokens_per_s"] for r in api["results"]]


def test_a_serving_recommend_with_limits_agrees(sqlite_served: Served, capsys: pytest.CaptureFixture[str]) -> None:
    # control: already so
    cli = run_json(capsys, "recommend", "llama-3.1-8b", "--min-tokens-per-s", "50", "--max-ttft-s", "0.5", "--top", "3")
    api = sqlite_served.client.post("/v1/recommend", json={"model": "llama-3.1-8b", "min_tokens_per_s_per_user": 50,
                                                           "max_ttft_s": 0.5, "top": 3}).json()
    assert cli["limits"] == api["limits"] and cli["limits"]["dropped"]["min_tokens_per_s_per_user"]["offerings"] > 0
    assert [r["decode_tokens_per_s_per_user"] for r in cli["results"]] == [
        r["decode_tokens_per_s_per_user"] for r in api["results"]]


# 4. a decimal comma in a page's decimal field ------------------------------------------------------------------------


def _page_error(text: str) -> str:
    match = re.search(r'id="recommend-error"[^>]*>(.*?)</div>', text, re.S)
    assert match, text[:300]
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", match.group(1))).split())


@pytest.mark.parametrize(("lang", "words"), [("en", "“Max time to first token, s”: must be a number written with a decimal "
                                                    "point, e.g. 0.5"),
                                             ("ru", "«Первый токен не позже, с»: должно быть числом с десятичной точкой, "
                                                    "например 0.5")])
def test_a_decimal_comma_is_answered_with_what_to_type(sqlite_served: Served, lang: str, words: str) -> None:
    """Before: "0,5" (as the Russian page writes its own figures) was answered "должно быть числом" (must be a number)."""
    page = sqlite_served.client.get("/recommend", params={"model": "llama-3.1-8b", "max_ttft_s": "0,5", "lang": lang})
    assert page.status_code == 422 and _page_error(page.text).startswith(words)


def test_a_word_in_a_decimal_field_keeps_its_message(sqlite_served: Served) -> None:  # control
    page = sqlite_served.client.get("/recommend", params={"model": "llama-3.1-8b", "max_ttft_s": "abc", "lang": "ru"})
    assert _page_error(page.text).startswith("«Первый токен не позже, с»: должно быть числом ")
