"""What the measured runs leave uncertain, said under "Still to check" of every plan and recommendation: each caveat's
label and the lines a serving or training estimate carries (the texts are the calibration's, ``caveats`` in
``data/calibration.json``, kept in step with the rows by the tests), said with their figures as values
(:func:`caveat_said`). Pure; stdlib only."""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache

from anchorgpu.errors import Said, said

__all__ = ["ATTENTION_DP_CAVEAT_LABEL", "CP_TRAIN_CAVEAT_LABEL", "ENGINE_CAVEAT_LABEL", "GLOBAL_BATCH_CAVEAT_LABEL",
           "MOE_CAVEAT_LABEL",
           "MOE_TRAIN_CAVEAT_LABEL", "PROMPT_QUEUE_CAVEAT_LABEL", "REQUEST_QUEUE_CAVEAT_LABEL", "SPEED_CAVEAT_LABELS", "TTFT_CAVEAT_LABEL", "serving_caveats", "training_caveats"]

MOE_CAVEAT_LABEL = "Mixture of experts"
"""How the serving assumption that carries the calibration's MoE caveat begins (the CLI shows it under the speeds)."""
MOE_TRAIN_CAVEAT_LABEL = "Mixture-of-experts training"
"""How the training assumption that carries the calibration's MoE training caveat begins."""
CP_TRAIN_CAVEAT_LABEL = "Context parallelism"
"""How the training assumption that says what context-parallel runs showed begins."""
TTFT_CAVEAT_LABEL = "Time to first token"
"""How the serving assumption that says what the time to first token leaves out begins (shown beside the MoE one)."""
ENGINE_CAVEAT_LABEL = "Serving engine"
"""How the serving assumption that says which engines the speeds hold for begins (the same benchmarks on two engines)."""
ATTENTION_DP_CAVEAT_LABEL = "Attention data parallelism"
"""How the serving assumption that says what backs a plan with expert parallelism wider than TP begins."""
GLOBAL_BATCH_CAVEAT_LABEL = "Global batch"
"""How the training assumption that says what the default global batch costs a step (where it costs much) begins."""
PROMPT_QUEUE_CAVEAT_LABEL = "Prompts queue"
"""How the serving assumption that says the prompts outrun the engine's step budget begins (the CLI shows it)."""
REQUEST_QUEUE_CAVEAT_LABEL = "Requests queue"
"""How the serving assumption that says how long the users beyond the engine's saturation wait for admission begins."""
SPEED_CAVEAT_LABELS = (MOE_CAVEAT_LABEL, MOE_TRAIN_CAVEAT_LABEL, CP_TRAIN_CAVEAT_LABEL, TTFT_CAVEAT_LABEL,
                       ENGINE_CAVEAT_LABEL, ATTENTION_DP_CAVEAT_LABEL, GLOBAL_BATCH_CAVEAT_LABEL,
                       PROMPT_QUEUE_CAVEAT_LABEL, REQUEST_QUEUE_CAVEAT_LABEL)


_SAID_LABELS = {MOE_CAVEAT_LABEL: said("Mixture of experts"), MOE_TRAIN_CAVEAT_LABEL: said("Mixture-of-experts training"),
                CP_TRAIN_CAVEAT_LABEL: said("Context parallelism"), TTFT_CAVEAT_LABEL: said("Time to first token"),
                ENGINE_CAVEAT_LABEL: said("Serving engine"),
                ATTENTION_DP_CAVEAT_LABEL: said("Attention data parallelism")}
"""Each caveat line's label with its message id (the English constants above, said)."""

_FIGURE = re.compile(r"(?<![\w.])\d+(?:,\d{3})*(?:\.\d+)*(?:(?=x\b)|(?!\w|\.\d))")
"""A figure in a caveat's text: a number standing alone ('248', '1,000', '0.52' of '0.52x', '7' and '34' of '7-34%'),
not a part of a name or version ('H100', 'Qwen3-14B', '1.2.0rc1', '16k')."""


@lru_cache(maxsize=256)
def caveat_said(text: str) -> Said:
    """A caveat of calibration.json as said: its message id is the text with each figure (:data:`_FIGURE`) a field
    ``{n0}``, ``{n1}`` … and the figures its values, so a page's translation (``messages.po``, whose id is that
    masked text) takes its numbers from calibration.json as the English does, and a refit that moves only the
    numbers keeps the translation; a refit that changes the words leaves the line English until it is translated.

    >>> line = caveat_said("248 of 273 came within 25% (0.52x to 2.1x); see PR 2148 on H100")
    >>> line == "248 of 273 came within 25% (0.52x to 2.1x); see PR 2148 on H100", line.template
    (True, '{n0} of {n1} came within {n2}% ({n3}x to {n4}x); see PR {n5} on H100')
    >>> caveat_said("a burst of 1,000 on vLLM 0.11.0").template
    'a burst of {n0:,} on vLLM {n1}'
    """
    values: dict[str, object] = {}

    def field(match: re.Match[str]) -> str:
        name, figure = f"n{len(values)}", match.group()
        whole = figure.replace(",", "")
        if whole.isdigit() and f"{int(whole):,}" == figure:  # a count ('1,000' as 1000 with ','): a page agrees its noun
            values[name] = int(whole)
            return "{" + name + (":,}" if "," in figure else "}")
        values[name] = figure  # a decimal ('0.52'): a page writes it the page's way; a version ('0.11.0') as it is
        return "{" + name + "}"

    return Said(_FIGURE.sub(field, text.replace("{", "{{").replace("}", "}}")), values)


@lru_cache(maxsize=64)
def _caveat_line(label: str, text: str) -> str:
    """``'{label}: {text}.'``, said where the label has an id (memoised: the same for every plan under a calibration)."""
    said_label = _SAID_LABELS.get(label)
    if said_label is None:
        return f"{label}: {text}."
    return said("{label}: {caveat}.", label=said_label, caveat=caveat_said(text))


def serving_caveats(caveats: Mapping[str, str], *, moe: bool, engine: str, wide_ep: bool = False) -> list[str]:
    """The caveat lines of a serving estimate: the MoE one for a mixture of experts, the time to first token's, the
    planned engine's (TensorRT-LLM's or SGLang's own, ``engine_trtllm`` / ``engine_sglang``, else vLLM's), and with
    ``wide_ep`` (expert parallelism wider than TP: attention data parallelism) what backs that timing.

    >>> serving_caveats({"moe": "m", "ttft": "t", "engine": "v", "engine_trtllm": "x"}, moe=False, engine="trtllm")
    ['Time to first token: t.', 'Serving engine: x.']
    >>> serving_caveats({"engine": "v", "engine_sglang": "s"}, moe=False, engine="sglang")
    ['Serving engine: s.']
    >>> serving_caveats({"attention_dp": "a"}, moe=True, engine="vllm", wide_ep=True)
    ['Attention data parallelism: a.']
    """
    found = (("moe", MOE_CAVEAT_LABEL) if moe else None, ("ttft", TTFT_CAVEAT_LABEL),
             (f"engine_{engine}" if engine in ("trtllm", "sglang") else "engine", ENGINE_CAVEAT_LABEL),
             ("attention_dp", ATTENTION_DP_CAVEAT_LABEL) if wide_ep else None)
    return [_caveat_line(label, caveats[key]) for key, label in filter(None, found) if caveats.get(key)]


def training_caveats(caveats: Mapping[str, str], *, moe: bool, cp: bool = False) -> list[str]:
    """The caveat lines of a training estimate: the MoE training one for a mixture of experts, the context-parallel
    one for a layout with ``--cp`` above 1.

    >>> training_caveats({"moe_train": "m"}, moe=True), training_caveats({"moe_train": "m"}, moe=False)
    (['Mixture-of-experts training: m.'], [])
    >>> training_caveats({"cp_train": "c"}, moe=False, cp=True)
    ['Context parallelism: c.']
    """
    found = (("moe_train", MOE_TRAIN_CAVEAT_LABEL) if moe else None, ("cp_train", CP_TRAIN_CAVEAT_LABEL) if cp else None)
    return [_caveat_line(label, caveats[key]) for key, label in filter(None, found) if caveats.get(key)]
