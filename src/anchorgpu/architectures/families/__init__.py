"""One parser per Hugging Face ``model_type``: config fields → exact parameter counts.

Each parser mirrors the modules transformers (5.24) builds for that model type — the same shapes,
biases, norms and defaults — so ``params_total`` equals ``sum(p.numel() for p in model.parameters())``
with tied embeddings counted once. Most families are a :class:`~._describe.Decoder` row (data) turned
into a parser by :func:`~._describe.parser`; the odd ones are small functions. The blocks they share are
in :mod:`._blocks`; dense decoders in :mod:`.dense`, mixture-of-experts decoders in :mod:`.moe`.

Each family module exports ``FAMILY_NAMES`` and ``PARSERS``, and may export ``READS`` (per model type,
the count-changing config keys its parser understands; :mod:`anchorgpu.architectures.hf` refuses a config
that sets any other key of its shared list) and ``CLASSES`` (``architectures`` class name → model type,
for configs whose ``model_type`` is unknown). Pure; stdlib only.
"""

from __future__ import annotations

from anchorgpu.architectures.families import dense, encdec, moe, multimodal, ssm
from anchorgpu.architectures.families._blocks import Parser

__all__ = ["CLASSES", "FAMILY_NAMES", "PARSERS", "READS", "Parser"]

# Each family module owns its parsers and display names; a new module adds one line to each merge.
FAMILY_NAMES: dict[str, str] = {**dense.FAMILY_NAMES, **moe.FAMILY_NAMES, **ssm.FAMILY_NAMES, **multimodal.FAMILY_NAMES,
                              **encdec.FAMILY_NAMES}

PARSERS: dict[str, Parser] = {**dense.PARSERS, **moe.PARSERS, **ssm.PARSERS, **multimodal.PARSERS, **encdec.PARSERS}

READS: dict[str, frozenset[str]] = {**dense.READS, **moe.READS, **ssm.READS, **multimodal.READS, **encdec.READS}

CLASSES: dict[str, str] = {**dense.CLASSES, **moe.CLASSES, **ssm.CLASSES, **multimodal.CLASSES, **encdec.CLASSES}
