"""A training run of ``--tokens`` runs whole optimizer steps (a training stack steps the optimizer once a global
batch; no step takes part of one): the run is timed, and priced, as ``ceil(tokens / global_batch)`` steps, which train
``steps x global_batch`` tokens. Rounded up, so every token asked for is trained; the plan's assumptions say how many
steps and, where the last step rounds up, the tokens trained. Pure; stdlib and :func:`anchorgpu.errors.said` only.
"""

from __future__ import annotations

from anchorgpu.errors import said

RUN_STEPS_LABEL = "run timed"
"""How the assumption that says how many optimizer steps a run is timed as begins (:func:`run_steps_line`, whose
templates spell it out: a message id is a literal)."""

__all__ = ["RUN_STEPS_LABEL", "run_steps", "run_steps_line"]


def run_steps(train_tokens: int, tokens_per_step: int) -> int:
    """Optimizer steps a run of ``train_tokens`` takes at ``tokens_per_step`` a step: whole steps, rounded up.

    >>> run_steps(5_000_000, 4_194_304), run_steps(8_388_608, 4_194_304), run_steps(10**12, 4_194_304)
    (2, 2, 238419)
    """
    return -(-train_tokens // tokens_per_step)


def run_steps_line(train_tokens: int, tokens_per_step: int) -> str:
    """The assumption that says how many steps a run of ``train_tokens`` is timed as, and the tokens those steps
    train where the last step rounds them up.

    >>> run_steps_line(5_000_000, 4_194_304)
    'run timed: 2 whole optimizer steps of 4,194,304 tokens = 8,388,608 tokens trained (--tokens 5,000,000 rounded up to whole global batches: 3,388,608 tokens more)'
    >>> run_steps_line(8_388_608, 4_194_304)
    'run timed: 2 whole optimizer steps of 4,194,304 tokens (--tokens 8,388,608)'
    """
    steps = run_steps(train_tokens, tokens_per_step)
    trained = steps * tokens_per_step
    if trained == train_tokens:
        return said("run timed: {steps:,} whole optimizer steps of {step_tokens:,} tokens (--tokens {tokens:,})",
                    steps=steps, step_tokens=tokens_per_step, tokens=train_tokens)
    return said("run timed: {steps:,} whole optimizer steps of {step_tokens:,} tokens = {trained:,} tokens trained "
                "(--tokens {tokens:,} rounded up to whole global batches: {more:,} tokens more)", steps=steps,
                step_tokens=tokens_per_step, trained=trained, tokens=train_tokens, more=trained - train_tokens)
