"""The calibrated speed model: training step time from its parts, serving under continuous batching.

Modules, one per phase: :mod:`.flops` (FLOPs per token), :mod:`.links` (peaks, links, collectives),
:mod:`.training` (step time by part), :mod:`.serving` (TTFT, TPOT, tokens/s), :mod:`.layouts` (the training layout
chosen for the user), :mod:`.serving_layouts` (the serving one), :mod:`.estimate` (the plan's ``performance`` section), :mod:`.calibration` (the
constants in ``data/calibration.json``, read into :mod:`.constants`), :mod:`.runs` and :mod:`.calibrate` (the measured runs and the
fit: ``python -m anchorgpu.planner.speed.calibrate``). Pure: stdlib only.
"""
