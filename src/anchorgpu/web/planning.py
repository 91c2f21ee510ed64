"""Planner and recommendation pages: the same options as ``anchorgpu plan`` in a GET form.

The form is a GET (bookmarkable, no side effects); its answer shows the verdict, a stacked per-GPU
memory bar against the GPU's memory, the breakdown, warnings linked to the glossary, assumptions and
the checks still to do.
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response
from markupsafe import Markup
from pydantic import ValidationError

from anchorgpu.api.deps import ClockDep, SettingsDep
from anchorgpu.api.models_ref import load_public_model, server_offline
from anchorgpu.api.planning import planned
from anchorgpu.api.schemas import PlanRequest, RecommendRequest
from anchorgpu.api.schemas_base import TOKENS_ALIAS
from anchorgpu.api.words import PAGE_COMMANDS, answer_words, api_words
from anchorgpu.errors import AnchorError
from anchorgpu.validation import CONTROL_CHARACTER_REASON, pattern_reason
from anchorgpu.web.charts import SEGMENTS, memory_bar, scatter
from anchorgpu.web.form_fields import (
    PLAN_CARRIED,
    PLAN_LABELS,
    RECOMMEND_CARRIED,
    RECOMMEND_LABELS,
    Label,
    carried,
    label_of,
)
from anchorgpu.web.form_values import for_the_task, form_values, not_whole_hint, regrouped_hint, shorthand
from anchorgpu.web.i18n import EnglishMarkup, PageText, page_text
from anchorgpu.web.templating import render

router = APIRouter()

def _bound(bound: object, locale: str) -> object:
    """A field's whole-number bound as the page writes numbers ('86,400', ru '86\xa0400', not pydantic's
    '86400.0'); any other as pydantic gave it.

    >>> _bound(86400.0, "en"), _bound(0.0, "en"), _bound(1024, "ru"), _bound(0.5, "en")
    ('86,400', '0', '1\xa0024', 0.5)
    """
    from babel.numbers import format_decimal

    if isinstance(bound, int | float | Decimal) and not isinstance(bound, bool) and math.isfinite(bound) \
            and bound == int(bound):
        return str(format_decimal(int(bound), locale=locale))
    return bound


def quoted_label(label: str, text: PageText) -> str:
    """A form's label quoted as the page's language quotes: en '“Micro-batch”', ru '«Микро-батч»'."""
    return text.gettext("“%(label)s”", label=label)


def validation_message(exc: ValidationError, text: PageText | None = None,
                       labels: dict[str, Label] | None = None) -> str:
    """One line naming the first bad field, in the page's language, by its label in ``labels`` (the form's; else by
    its name): '“Context (tokens)”: must be at least 1' (ru '«Контекст (токены)»: не меньше 1'). Kinds of error the
    catalogue has no words for keep pydantic's English message."""
    err = exc.errors()[0]
    text = text or PageText("en")
    field = ".".join(str(p) for p in err.get("loc", ())) or "form"
    label = label_of(field, labels or {}, text)
    if label is not None:
        field = quoted_label(label, text)
    ctx = err.get("ctx") or {}
    kind = err.get("type", "")
    if kind == "missing":
        reason = text.gettext("required")
    elif kind in ("greater_than_equal", "greater_than", "less_than_equal", "less_than"):
        bound = _bound(ctx.get({"greater_than_equal": "ge", "greater_than": "gt", "less_than_equal": "le",
                                "less_than": "lt"}[kind]), text.locale)
        reason = {"greater_than_equal": text.gettext("must be at least %(bound)s", bound=bound),
                  "greater_than": text.gettext("must be more than %(bound)s", bound=bound),
                  "less_than_equal": text.gettext("must be at most %(bound)s", bound=bound),
                  "less_than": text.gettext("must be less than %(bound)s", bound=bound)}[kind]
    elif kind in ("int_parsing", "int_from_float", "int_type"):  # 4.2M tokens: what it is, as the CLI says
        name = str(err.get("loc", ("",))[-1]) if err.get("loc") else ""
        reason = not_whole_hint(name, err.get("input"), text) or regrouped_hint(name, err.get("input"), text) \
            or text.gettext("must be a whole number")
    elif kind in ("float_parsing", "float_type", "decimal_parsing") and "," in str(err.get("input", "")):
        # "0,5" as the Russian page writes its numbers: the fields read a decimal point (a comma is "1,000" in English)
        reason = text.gettext("must be a number written with a decimal point, e.g. 0.5")
    elif kind in ("float_parsing", "float_type", "decimal_parsing"):
        reason = text.gettext("must be a number")
    elif kind in ("bool_parsing", "bool_type"):  # a switch typed in the URL ("maybe"): the form's select sends on/off
        reason = text.gettext("must be on or off")
    elif kind == "money" and (said := _said_words(ctx.get("reason", ""), text)) is not None:  # usd_amount's refusal
        reason = said
    elif kind == "finite_number":  # 1e309, inf, nan typed in a decimal field
        reason = text.gettext("must be a finite number")
    elif kind == "string_too_long":
        reason = text.ngettext("at most %(num)d character", "at most %(num)d characters", int(ctx.get("max_length") or 0))
    elif kind == "string_pattern_mismatch" and pattern_reason(ctx.get("pattern")) == CONTROL_CHARACTER_REASON:
        reason = text.gettext("must not contain control characters (a NUL, a tab, a line break)")
    elif kind == "string_pattern_mismatch" and pattern_reason(ctx.get("pattern")):
        reason = text.gettext("expected WIDTHxHEIGHT in pixels, e.g. 1024x1024")
    elif kind == "literal_error":
        expected = str(ctx.get("expected", ""))  # pydantic's English "'a', 'b' or 'c'": the last "or" in the page's words
        first, sep, last = expected.rpartition(" or ")
        choices = text.gettext("%(first)s or %(last)s", first=first, last=last) if sep else expected
        reason = text.gettext("must be one of %(choices)s", choices=choices)
        from anchorgpu.planner.inputs import task_meant

        if err.get("loc", ())[-1:] == ("task",) and (meant := task_meant(err.get("input"))) is not None:
            reason += text.gettext("; did you mean %(task)s?", task=repr(meant))  # serve: 'inference', as the CLI
    else:
        reason = str(err.get("msg", "invalid"))
    return f"{field}: {reason}"


def _said_words(line: object, text: PageText) -> str | None:
    from anchorgpu.web.refusals import said_words  # imports this module's page_words where it is used

    return said_words(line, text) if isinstance(line, str) else None


def concept_names(warnings: list[dict[str, Any]], locale: str) -> dict[str, str]:
    """The glossary's name, in the page's language, of each concept the warnings link to ("Тензорный параллелизм")."""
    from anchorgpu.glossary import get_entry

    names: dict[str, str] = {}
    for warning in warnings:
        concept = warning.get("concept")
        if concept and concept not in names:
            try:
                names[concept] = get_entry(concept).term.get("ru" if locale == "ru" else "en")
            except AnchorError:
                continue
    return names


def _decimal_sign(text: PageText) -> str:
    from babel.numbers import get_decimal_symbol

    return str(get_decimal_symbol(text.locale))


def step_parts(text: PageText) -> dict[str, str]:
    """The parts of a training step (``performance.step_time_breakdown_s`` keys) in words."""
    return {"compute": text.gettext("compute"), "tp_comm": text.gettext("TP communication"),
            "pp_bubble": text.gettext("PP bubble"), "pp_p2p": text.gettext("PP transfers"),
            "cp_comm": text.gettext("CP communication"), "dp_sync": text.gettext("DP gradient sync"),
            "fsdp_comm": text.gettext("FSDP gathers"), "ep_alltoall": text.gettext("EP all-to-all"),
            "moe_launch": text.gettext("MoE expert launches"),
            "activation_offload": text.gettext("activation offload to host memory"),
            "optimizer": text.gettext("optimizer step")}


def apply_change(values: dict[str, Any], change: str) -> str | None:
    """The planner URL of ``values`` with a suggestion's CLI change applied (``--gpus 4 --tp 4``), or None when
    the change names an option the form does not have.

    >>> apply_change({"model": "llama-3.1-70b", "gpu": "h100-sxm", "gpus": "1"}, "--gpus 4 --tp 4")
    '/plan?model=llama-3.1-70b&gpu=h100-sxm&gpus=4&tp=4'
    """
    from urllib.parse import urlencode

    words = change.split()
    changed = {k: v for k, v in values.items() if v not in (None, "", False)}
    i = 0
    while i < len(words):
        flag = words[i]
        if not flag.startswith("--"):
            return None
        name = flag[2:].replace("-", "_")
        if name not in PlanRequest.model_fields:
            return None
        if i + 1 < len(words) and not words[i + 1].startswith("--"):
            changed[name] = words[i + 1]
            i += 2
        else:
            changed[name] = "on"
            i += 1
    flat = {k: (",".join(map(str, v)) if isinstance(v, list) else ("on" if v is True else v)) for k, v in changed.items()}
    return "/plan?" + urlencode(flat)


PLAN_FIELDS = frozenset(PlanRequest.model_fields)
RECOMMEND_FIELDS = frozenset(RecommendRequest.model_fields)


def page_words(message: str, fields: frozenset[str] = PLAN_FIELDS) -> str:
    """A planner line (written for the CLI) as the planner and recommend pages say it: each ``--flag`` that is a field
    of the page's form named as the field, as the API names it (the form's inputs, its URL's parameters and its own
    "context: must be at least 1" are those names): ``max_num_seqs 256``, not ``--max-num-seqs 256``.

    >>> page_words("--recipe vllm: the plan does not fit; plan with --gpus 4 --tp 4 first")
    'recipe vllm: the plan does not fit; plan with gpus 4 tp 4 first'
    """
    return api_words(message, fields, PAGE_COMMANDS)


_MARK = "\x00"
"""Brackets a field's name in a refusal being rewritten, for :func:`page_refusal` to put its label there."""


def page_refusal(message: str, fields: frozenset[str], labels: dict[str, Label], text: PageText) -> Markup:
    """A refusal of the planner (written for the CLI) as the page says it: in the page's language where the catalogue
    has all its words (:func:`anchorgpu.web.refusals.said_words`), else the English line marked as such; each
    ``--flag`` that is a field of the form named by the label the form shows for it, quoted, in the page's language
    (marked as such inside an English sentence); a field with no label of its own (one carried from a link) by its
    name, as :func:`page_words`.

    >>> str(page_refusal("--global-batch 1,000 tokens is less than one sequence", PLAN_FIELDS, PLAN_LABELS,
    ...                  PageText("en")))
    '“Global batch (tokens)” 1,000 tokens is less than one sequence'
    >>> str(page_refusal("--gpus 8 is not a multiple of --cp 3 <", PLAN_FIELDS, PLAN_LABELS, PageText("ru")))
    '<span lang="ru">«Число GPU»</span> 8 is not a multiple of <span lang="ru">«CP»</span> 3 &lt;'
    """
    from anchorgpu.web.refusals import said_words

    translated = said_words(message, text) if text.locale != "en" else None
    # a CLI command inside the line is the page that takes its fields, named in the line's language
    commands = PAGE_COMMANDS if translated is None else {
        "plan": text.gettext("the Planner page"), "recommend": text.gettext("the Recommend page")}
    said = api_words((translated or message).replace(_MARK, ""), fields, commands,
                     say=lambda name: f"{_MARK}{name}{_MARK}" if name in labels else name,
                     joiner="with" if translated is None else text.pgettext("the Planner page with its fields", "with"))
    out = Markup("")
    for i, part in enumerate(said.split(_MARK)):
        if i % 2 == 0:
            out += part  # escaped
            continue
        quoted = quoted_label(label_of(part, labels, text) or part, text)
        mark = text.locale != "en" and translated is None  # the page's words inside an English sentence
        out += Markup('<span lang="{}">{}</span>').format(text.locale, quoted) if mark else quoted
    return out if translated is not None else EnglishMarkup(out)


def _choices() -> dict[str, Any]:
    from anchorgpu.architectures import model_infos
    from anchorgpu.hardware import list_gpus
    from anchorgpu.planner import WEIGHT_FORMATS

    return {
        "models": [i.name for i in model_infos()],
        "gpus_known": [(g.name, g.display_name, g.memory_bytes) for g in list_gpus()],
        "weight_formats": list(WEIGHT_FORMATS),
    }


@router.get("/plan", response_class=HTMLResponse)
def planner_page(request: Request, settings: SettingsDep) -> Response:
    """The planner form, and its answer when a model is given."""
    values = for_the_task(form_values(request))
    text = page_text(request)
    kind = values.pop("recipe", None)  # the launch is written beside the plan, its refusal shown there; the plan is
    # planned for it (launch_reach, its engine and stack), as POST /v1/plan, unless refused before planning
    context: dict[str, Any] = {"form": values, **_choices(), "segments": SEGMENTS, "step_parts": step_parts(text),
                               "carried": carried(values, PLAN_CARRIED)}
    if "model" not in values:
        return render(request, "plan.html", context)
    from anchorgpu.web.launch import launch_kind

    launch_error: str | None = None
    try:
        plan_request = PlanRequest.model_validate(values, strict=False)  # form values are text; the API is strict
        if kind:
            kind, launch_error = launch_kind(plan_request, str(kind), text)
        planned_values = {**values, "recipe": kind} if kind and not launch_error else values
        planned_request = plan_request.model_copy(update={"recipe": planned_values.get("recipe")})
        plan_result, result = planned(planned_request, offline=server_offline(settings))
    except ValidationError as exc:
        context["error"] = validation_message(exc, text, PLAN_LABELS)
        return render(request, "plan.html", context, status_code=422)
    except AnchorError as exc:
        context["error"] = page_refusal(exc.said or exc.message, PLAN_FIELDS, PLAN_LABELS, text)
        return render(request, "plan.html", context, status_code=exc.http_status)
    gpu = result.get("gpu") or {}
    if gpu.get("name"):
        values["gpu"] = gpu["name"]  # an alias in the URL selects its canonical GPU in the form
    from anchorgpu.web.refusals import answer_lines

    # its advice in the form's names, and its assumptions, checks and warnings in the page's language where said
    context["result"] = answer_lines(result, answer_words(result, PLAN_FIELDS, PAGE_COMMANDS), text, PLAN_FIELDS)
    context["concept_names"] = concept_names(result.get("warnings") or [], text.locale)
    context["bar"] = memory_bar(result["per_gpu"], gpu.get("memory_bytes"), budget_bytes=result.get("budget_bytes"),
                                decimal_sign=_decimal_sign(text))
    context["budget_bytes"] = result.get("budget_bytes")
    context["recommend_query"] = request.url.query
    from urllib.parse import urlencode

    from anchorgpu.web.launch import RECIPE_KINDS, launch_for_plan

    context["recipe_kinds"] = RECIPE_KINDS
    context["launch_query"] = urlencode([(k, v) for k, v in request.query_params.multi_items() if k != "recipe"])
    context["launch_kind"] = kind
    if kind:
        context["launch"], context["launch_error"] = ((None, launch_error) if launch_error
                                                      else launch_for_plan(plan_result, str(kind), text))
    suggestions = result.get("suggestions") or []  # the CLI's changes, which the links apply to the form
    context["suggestion_links"] = [apply_change(planned_values, s["change"]) for s in suggestions]
    context["precision_changes"] = [("--weights" in s["change"] or "--kv-cache" in s["change"]) for s in suggestions]
    context["suggestion_speeds"] = any(s.get("train_tokens_per_s") for s in suggestions)
    keeps = [i for i, lowers in enumerate(context["precision_changes"]) if not lowers]
    context["example_suggestion"] = keeps[0] if keeps else 0  # "what would be needed": precision kept when it can be
    from anchorgpu.web.plan_compare import formats_side_by_side, gpus_that_fit, most_gpus_tried

    offline = server_offline(settings)
    if gpu.get("name") and result.get("workload", {}).get("task") != "diffusion":
        context["format_rows"] = formats_side_by_side(planned_values, (result.get("precision") or {}).get("weights", ""),
                                                      offline=offline, text=text)
    elif not gpu.get("name"):
        context["fit_rows"] = gpus_that_fit(planned_values, offline=offline)
        context["most_gpus_tried"] = most_gpus_tried(str(result.get("workload", {}).get("task") or "inference"))
    return render(request, "plan.html", context)


def _speed(row: dict[str, Any]) -> float | None:
    for key in ("decode_tokens_per_s_total", "train_tokens_per_s"):
        value = row.get(key)
        if value is not None:
            return float(value)
    return None


@router.get("/recommend", response_class=HTMLResponse)
def recommend_page(request: Request, settings: SettingsDep, clock: ClockDep) -> Response:
    """Cheapest offerings that fit, as a table and a cost-vs-speed scatter."""
    from anchorgpu.api.planning import run_recommend

    allowed = set(RecommendRequest.model_fields)
    values = {k: v for k, v in form_values(request).items() if k in allowed}
    for name in ("term", "max_usd", "min_tokens_per_s_per_user", "max_ttft_s", "top", "max_servers", "tokens",
                 "output_tokens"):
        raw = request.query_params.get(name, "").strip()
        if raw:
            values[name] = shorthand(name, raw)
    if request.query_params.get("lower_precision", "").strip().lower() in ("1", "true", "on", "yes"):
        values["lower_precision"] = True
    if "tokens" not in values and request.query_params.get(TOKENS_ALIAS, "").strip():  # a link from before stop 59
        values["tokens"] = shorthand("tokens", request.query_params[TOKENS_ALIAS].strip())  # (the API's alias too)
    text = page_text(request)
    context: dict[str, Any] = {"form": values, **_choices(), "plan_query": request.url.query,
                               "carried": carried(values, RECOMMEND_CARRIED)}
    if "model" not in values:
        return render(request, "recommend.html", context)
    values = for_the_task(values)
    try:
        result = run_recommend(RecommendRequest.model_validate(values, strict=False), offline=server_offline(settings), now=clock())
    except ValidationError as exc:
        context["error"] = validation_message(exc, text, RECOMMEND_LABELS)
        return render(request, "recommend.html", context, status_code=422)
    except AnchorError as exc:
        context["error"] = page_refusal(exc.said or exc.message, RECOMMEND_FIELDS, RECOMMEND_LABELS, text)
        return render(request, "recommend.html", context, status_code=exc.http_status)
    diffusion = result.get("workload", {}).get("task") == "diffusion"
    training = not diffusion and values.get("task", "inference") != "inference"
    context["diffusion"] = diffusion
    charted = [(rank, f"{r['servers']}× {r['offering']}", float(r["total_usd"]), speed)
               for rank, r in enumerate(result["results"], start=1) if (speed := _speed(r)) is not None and r.get("total_usd") is not None]
    points = [(label, cost, speed) for _, label, cost, speed in charted]
    from anchorgpu.web.refusals import answer_lines, page_line, planner_refusal

    # its advice in the form's names, and its assumptions and warnings in the page's language where said
    context["result"] = answer_lines(result, answer_words(result, RECOMMEND_FIELDS, PAGE_COMMANDS), text,
                                     RECOMMEND_FIELDS)

    context["rejected_reasons"] = [planner_refusal(r["reason"], text) for r in result.get("rejected", [])[:10]]
    context["training"] = training
    context["user_efficiencies"] = values.get("mfu") is not None or values.get("mbu") is not None  # no band then
    from urllib.parse import urlencode

    from anchorgpu.web.launch import RECIPE_KINDS

    context["recipe_kinds"] = RECIPE_KINDS
    context["launch_query"] = urlencode([(k, v) for k, v in request.query_params.multi_items() if k != "recipe"])
    context["launch_kind"] = values.get("recipe")
    if any(r.get("max_model_len_tokens") for r in result["results"]):
        # a row whose KV cache holds no whole window gives the maximum length to start the engine with: the page
        # names the window (the model's, which short_launch_length compares with) and the engine's option
        from anchorgpu.web.launch import LENGTH_FLAGS

        engine = result["workload"]["engine"]
        context["engine"] = engine
        context["length_flag"] = LENGTH_FLAGS[engine]
        context["window_tokens"] = load_public_model(values["model"], offline=server_offline(settings)).max_context_tokens
    context["chart"] = scatter(points, x_label=f"Total for {result['term']}, USD", x_prefix="$", ranks=[c[0] for c in charted],
                               decimal_sign=_decimal_sign(text),
                               y_label="Training tokens/s" if training else "Output tokens/s (all users)") if points else None
    context["speed_unit"] = text.gettext("images/s") if diffusion else text.gettext("tokens/s")
    from anchorgpu.web.checks import recommend_checks

    context["checks"] = [(code, page_line(check, text, None), rows) for code, check, rows in recommend_checks(result)]
    return render(request, "recommend.html", context)
