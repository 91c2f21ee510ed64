"""One small parser per Hugging Face ``model_type``: config fields → exact parameter counts.

Each parser mirrors the modules transformers (5.24) builds for that model type — the same shapes,
biases, norms and defaults — so ``params_total`` equals ``sum(p.numel() for p in model.parameters())``
with tied embeddings counted once. The blocks they share are in :mod:`._blocks`; dense decoders in
:mod:`.dense`, mixture-of-experts decoders in :mod:`.moe`. Pure; stdlib only.
"""

from __future__ import annotations

from anchorgpu.architectures.families import dense, moe, ssm
from anchorgpu.architectures.families._blocks import Parser

__all__ = ["FAMILY_NAMES", "PARSERS", "Parser"]

# Each family module owns its parsers and display names; a new module adds one line to each merge.
FAMILY_NAMES: dict[str, str] = {**dense.FAMILY_NAMES, **moe.FAMILY_NAMES, **ssm.FAMILY_NAMES}

PARSERS: dict[str, Parser] = {**dense.PARSERS, **moe.PARSERS, **ssm.PARSERS}
