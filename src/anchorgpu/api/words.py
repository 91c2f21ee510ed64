"""The CLI's words as the HTTP API says them: the planner writes its refusals and its advice (``suggestions[].change``,
``rejected[].reason``, assumption lines) for the CLI, naming its flags (``--train-precision fp4``, ``try --tp 4``);
an API client has no flags, only the fields of its request. :func:`api_words` writes a line the API's way, for a
refusal (``anchorgpu.api.errors``) and for the advice inside an answer (:func:`answer_words`) alike, and for the
planner and recommend pages, whose forms send the same fields (``anchorgpu.web.planning.page_words``):

- ``--flag-name`` that is a field of the request → ``flag_name`` (two flags are named otherwise, see
  ``_RENAMED_FLAGS``); a flag the request has no field for (an engine's own flag, ``--kv-cache-dtype``; a field of
  another route) is kept as it is;
- a negated switch (``--no-sequence-parallel``) whose field the request has → ``sequence_parallel false`` (on a page,
  the field's label and ``off``, as its select says);
- the CLI's command given with its flags (``plan --concurrency N``, `` `anchorgpu plan MODEL --gpus 8` ``) → the route
  that takes them, ``POST /v1/plan with concurrency N`` (on a page: ``the Planner page with …``), when every flag is a
  field of that route (kept otherwise);
- other code in backquotes (`` `anchorgpu model --json` ``) and a clause that names the CLI's flags as the CLI's
  (``CLI --lower-precision or a --weights list, API lower_precision``) are kept.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from typing import Any

from fastapi import Request

__all__ = ["API_COMMANDS", "PAGE_COMMANDS", "answer_words", "api_words", "field_hint", "request_fields"]

_FLAG_NAME = r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*"
_FLAG = re.compile(rf"(?<![\w-])--({_FLAG_NAME})(?![\w-])")
_SPANS = re.compile(
    rf"`anchorgpu (?P<cli>plan|recommend)(?P<cli_args>(?: [^`\s]+)*)`"  # a CLI command line, quoted
    r"|(?P<code>`(?!--)[^`]*`)"  # other code in backquotes: kept
    r"|(?P<cli_clause>\bCLI --[^,;)]*)"  # "CLI --lower-precision or a --weights list": the CLI's, kept
    rf"|(?<![\w`-])(?P<command>plan|recommend)(?P<args>(?: --{_FLAG_NAME}(?![\w-])(?: (?!--)[^\s,;:()`]+)?)+)"
    rf"|(?<![\w-])--(?P<flag>{_FLAG_NAME})(?![\w-])"
)
_RENAMED_FLAGS = {"offload-activations": "offload_activation_layers"}
"""CLI flags whose API field has another name (``plan --offload-activations``). Used only where the request has
that field and no field named as the flag. (``--tokens`` is ``tokens`` on both planning routes, which also accept
``train_tokens``: ``schemas_base.TOKENS_ALIAS``.)"""


API_COMMANDS = {"plan": "POST /v1/plan", "recommend": "POST /v1/recommend"}
"""The CLI's commands as the API names them: the routes that take their options as fields."""
PAGE_COMMANDS = {"plan": "the Planner page", "recommend": "the Recommend page"}
"""The CLI's commands as the pages name them: the planner and recommend pages, whose forms send the same fields."""


@functools.cache
def _command_fields() -> dict[str, frozenset[str]]:
    """The CLI commands whose flags are the fields of a request: command → its request's fields."""
    from anchorgpu.api.schemas import PlanRequest, RecommendRequest

    return {"plan": frozenset(PlanRequest.model_fields), "recommend": frozenset(RecommendRequest.model_fields)}


def request_fields(request: Request) -> frozenset[str]:
    """The names a client can send to the route answering ``request``: its query and path parameters and the fields
    of its JSON body's model (empty for a request no route matched)."""
    from pydantic import BaseModel

    names: set[str] = set()
    todo = [getattr(request.scope.get("route"), "dependant", None)]
    while todo:
        dependant = todo.pop()
        if dependant is None:
            continue
        names.update(param.alias for param in (*dependant.query_params, *dependant.path_params))
        for param in dependant.body_params:
            body = param.field_info.annotation
            if isinstance(body, type) and issubclass(body, BaseModel):
                names.update(field.alias or name for name, field in body.model_fields.items())
        todo.extend(dependant.dependencies)
    return frozenset(names)


def field_hint(name: str, fields: frozenset[str]) -> str:
    """What a refusal of the unknown body field ``name`` adds: the field of ``fields`` meant, where one is plain.
    A CLI flag whose field has another name (``_RENAMED_FLAGS``) is named the field's way; else the fields spelled
    closest (``difflib``, a ratio of 0.8 or more: ``gpuz`` → ``gpu``); else nothing.

    >>> field_hint("offload_activations", frozenset({"offload_activation_layers", "seq"}))
    "; this route names it 'offload_activation_layers'"
    >>> field_hint("gpuz", frozenset({"gpu", "gpus", "seq"})), field_hint("colour", frozenset({"gpu"}))
    ("; did you mean 'gpu'?", '')
    """
    import difflib

    for flag, renamed in _RENAMED_FLAGS.items():
        plain = flag.replace("-", "_")
        for given, other in ((renamed, plain), (plain, renamed)):
            if name == given and other in fields:
                return f"; this route names it {other!r}"
    close = difflib.get_close_matches(name, sorted(fields), n=2, cutoff=0.8)
    return f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""


def _field(flag: str, fields: frozenset[str]) -> str | None:
    """The field of ``fields`` that the CLI's ``--flag`` is, or None."""
    name = flag.replace("-", "_")
    if name not in fields and _RENAMED_FLAGS.get(flag) in fields:
        name = _RENAMED_FLAGS[flag]
    return name if name in fields else None


def _same(name: str) -> str:
    return name


def _negated(flag: str, fields: frozenset[str]) -> str | None:
    """The field a negated switch turns off (``--no-sequence-parallel``: ``sequence_parallel``), or None."""
    if not flag.startswith("no-") or flag.replace("-", "_") in fields:
        return None
    return _field(flag[3:], fields)


def _as_route(command: str, args: str, commands: Mapping[str, str], *, model_first: bool,
              say: Callable[[str], str] = _same, joiner: str = "with") -> str | None:
    """``plan --gpus N`` as ``POST /v1/plan with gpus N`` (``commands`` names the command, ``say`` each field); None
    where a flag is no field of the command's request (a word that is no flag's value, beyond a quoted command's
    leading model name, too)."""
    route, fields = commands[command], _command_fields()[command]
    words, out = args.split(), []
    if model_first and words and not words[0].startswith("--"):
        out += [say("model"), words.pop(0)]
    for i, word in enumerate(words):
        if word.startswith("--"):
            match = _FLAG.fullmatch(word)
            name = _field(match.group(1), fields) if match else None
            if name is None:
                return None
            out.append(say(name))
        elif i == 0 or not words[i - 1].startswith("--"):
            return None
        else:
            out.append(word)
    return f"{route} {joiner} {' '.join(out)}" if out else route


def api_words(message: str, fields: frozenset[str], commands: Mapping[str, str] = API_COMMANDS,
              say: Callable[[str], str] = _same, joiner: str = "with") -> str:
    """``message`` (written for the CLI) as the API says it to a request with ``fields`` (see the module's list);
    ``commands``: how the CLI's commands are named (:data:`PAGE_COMMANDS` on the pages, or those words in the page's
    language, ``joiner`` then the page's "with"); ``say``: how a field is named (its name; a page's refusal names it by
    its form's label, ``anchorgpu.web.planning.page_refusal``).

    >>> api_words("--train-precision fp4: h100-sxm has no FP4 tensor cores; --kv-cache-dtype stays",
    ...           frozenset({"train_precision", "kv_cache"}))
    'train_precision fp4: h100-sxm has no FP4 tensor cores; --kv-cache-dtype stays'
    >>> api_words("as plan --concurrency N sizes it; set --min-tokens-per-s-per-user 20 (CLI --lower-precision or a "
    ...           "--weights list, API lower_precision)", frozenset({"concurrency", "min_tokens_per_s_per_user"}))
    'as POST /v1/plan with concurrency N sizes it; set min_tokens_per_s_per_user 20 (CLI --lower-precision or a --weights list, API lower_precision)'
    >>> api_words("plan 128 with `anchorgpu plan llama-3.1-405b --task train --gpus 1024`; `anchorgpu model --json`",
    ...           frozenset())
    'plan 128 with POST /v1/plan with model llama-3.1-405b task train gpus 1024; `anchorgpu model --json`'
    >>> api_words("or --no-sequence-parallel", frozenset({"sequence_parallel"}))
    'or sequence_parallel false'
    """
    off = "false" if commands is API_COMMANDS else "off"  # a JSON body says false, a page's select off

    def field(flag: str, written: str) -> str:
        name = _field(flag, fields)
        if name is None and (name := _negated(flag, fields)) is not None:
            return f"{say(name)} {off}"  # --no-sequence-parallel: sequence_parallel false
        return written if name is None else say(name)

    def rewrite(match: re.Match[str]) -> str:
        if match.group("flag"):
            return field(match.group("flag"), match.group(0))
        if match.group("command"):
            said = _as_route(match.group("command"), match.group("args"), commands, model_first=False, say=say,
                             joiner=joiner)
            return said or f"{match.group('command')}{_FLAG.sub(lambda m: field(m.group(1), m.group(0)), match.group('args'))}"
        if match.group("cli"):
            return _as_route(match.group("cli"), match.group("cli_args"), commands, model_first=True,
                             say=say, joiner=joiner) or match.group(0)
        return match.group(0)  # code, or the CLI's own clause

    return _SPANS.sub(rewrite, message) if "--" in message or "`anchorgpu " in message else message


_LAUNCH_KEYS = frozenset({"recipe"})
"""Keys holding a launch (``recipe``): its command line and files are kept as written, in its engine's flags, some
spelled as the request's fields (vLLM's ``--max-num-seqs``); the lines that explain them (:data:`_LAUNCH_NOTES`) are
written the API's way with every flag of the launch's own tool kept (:func:`_launch_words`)."""
_LAUNCH_NOTES = ("assumptions", "cannot_set")
_TOOL_FLAGS = {"vllm": "vllm_flags", "sglang": "sglang_flags", "trtllm": "trtllm_flags",
               "torchrun-fsdp": "torchrun_flags", "deepspeed": "torchrun_flags"}
"""The packaged flag list (``recipes/data/<name>.json``) of the tool each launch kind runs (DeepSpeed's through
torchrun); a kind without one (accelerate, SkyPilot, Kubernetes) keeps the flags its command and files write."""


@functools.cache
def _tool_flags(kind: str) -> frozenset[str]:
    """The flags of ``kind``'s tool, as the names a request field would have (``--max-num-seqs``: ``max_num_seqs``)."""
    from anchorgpu.recipes import flag_data

    name = _TOOL_FLAGS.get(kind)
    flags = flag_data(name)["flags"] if name else ()
    return frozenset(flag[2:].replace("-", "_") for flag in flags if flag.startswith("--"))


def _launch_words(recipe: Mapping[str, Any], fields: frozenset[str], commands: Mapping[str, str]) -> dict[str, Any]:
    """A launch (``recipe``) with its explaining lines (``assumptions``, ``cannot_set``) written by :func:`api_words`
    for the fields of the request that are no flag of the launch's tool, nor written in its command or files: the
    engine's ``--max-num-seqs`` stays, AnchorGPU's ``--engine trtllm`` is the request's ``engine trtllm``.

    >>> launch = {"kind": "vllm", "command": "vllm serve m --max-num-seqs 64", "files": [],
    ...           "assumptions": ["--max-num-seqs as planned (--engine vllm, --allow-long-context)"]}
    >>> _launch_words(launch, frozenset({"engine", "max_num_seqs", "allow_long_context"}), API_COMMANDS)["assumptions"]
    ['--max-num-seqs as planned (engine vllm, allow_long_context)']
    """
    written = " ".join([str(recipe.get("command", "")), *(str(f.get("text", "")) for f in recipe.get("files") or ())])
    own = _tool_flags(str(recipe.get("kind", ""))) | {m.group(1).replace("-", "_") for m in _FLAG.finditer(written)}
    kept = fields - own
    return {key: answer_words(value, kept, commands) if key in _LAUNCH_NOTES else value
            for key, value in recipe.items()}


def answer_words(answer: Any, fields: frozenset[str], commands: Mapping[str, str] = API_COMMANDS) -> Any:
    """``answer`` (a plan or a recommendation, the CLI's JSON) with every line of advice in it written by
    :func:`api_words` for a request with ``fields``: ``suggestions[].change``, ``rejected[].reason``, assumptions,
    checks, warnings, ``recipe_refused`` …; a launch (``recipe``) keeps its command and files as written and its
    lines keep its tool's flags (:func:`_launch_words`)."""
    if isinstance(answer, str):
        return api_words(answer, fields, commands)
    if isinstance(answer, list):
        return [answer_words(item, fields, commands) for item in answer]
    if isinstance(answer, dict):
        return {key: (_launch_words(value, fields, commands) if isinstance(value, dict) else value)
                if key in _LAUNCH_KEYS else answer_words(value, fields, commands)
                for key, value in answer.items()}
    return answer
