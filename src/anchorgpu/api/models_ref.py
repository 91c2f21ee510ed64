"""Model references a remote client may use: registry names/aliases and Hugging Face Hub ids.

The CLI also accepts a path to a ``config.json``; the API does not — a client must never make the
server read its own files. A Hub id is fetched only when the server is online (``ANCHORGPU_OFFLINE``
unset); offline it is refused with ``hub_unavailable``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from anchorgpu.errors import InvalidInput, UnknownModel, did_you_mean

__all__ = ["ServerPathRefused", "load_public_model"]


class ServerPathRefused(InvalidInput):
    code = "model_path_not_allowed"


def load_public_model(ref: str, *, offline: bool) -> Any:
    """The ``ModelSpec`` / ``DiffusionPipelineSpec`` for a registry name or Hub id (never a server path)."""
    from anchorgpu.architectures import list_models, load_model
    from anchorgpu.architectures.loader import HUB_ID
    from anchorgpu.architectures.registry import resolve

    text = ref.strip()
    if resolve(text) is not None:
        return load_model(text, offline=offline)
    if HUB_ID.match(text) and not text.endswith(".json"):
        try:
            local = Path(text).exists()
        except OSError:
            local = False
        if not local:
            return load_model(text, offline=offline)
    if text.endswith(".json") or "/" in text or "\\" in text or text.startswith((".", "~")):
        raise ServerPathRefused(f"model {text!r}: the API takes a registry name (see /v1/models) or a Hub id 'org/name', not a file path")
    raise UnknownModel(text, did_you_mean(text, list_models()))
