"""Model references a remote client may use: registry names/aliases and Hugging Face Hub ids.

The CLI also accepts a path to a ``config.json``; the API does not — a client must never make the
server read its own files.

**Hub ids on the server (decision, issue 13).** A Hub id makes the server download a file for a caller who
needs no key, so it is off by default: the API and the page answer registry names at once and refuse a Hub id
in one line (422 ``hub_unavailable``) without touching the network. An operator may turn fetching on with
``ANCHORGPU_HUB_FETCH=1``; it is then bounded so that no caller can hold the server:

- at most :data:`HUB_CONCURRENCY` downloads at a time, on their own threads; a request arriving while they
  are busy is refused at once instead of queueing;
- each request waits at most :data:`HUB_TIMEOUT_S` for its download;
- a model fetched once is answered from a cache (:data:`HUB_CACHE_SIZE` entries) afterwards.

``ANCHORGPU_OFFLINE=1`` (or ``HF_HUB_OFFLINE=1``) always wins: no fetch at all.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path
from typing import Any

from anchorgpu.errors import HubUnavailable, InvalidInput, UnknownModel, did_you_mean, said

__all__ = ["HUB_CACHE_SIZE", "HUB_CONCURRENCY", "HUB_TIMEOUT_S", "ServerPathRefused", "load_public_model", "server_offline"]

HUB_CONCURRENCY = 2
HUB_TIMEOUT_S = 5.0
HUB_CACHE_SIZE = 256


class ServerPathRefused(InvalidInput):
    code = "model_path_not_allowed"


def server_offline(settings: Any) -> bool:
    """Whether this server refuses Hub ids: unless ``ANCHORGPU_HUB_FETCH=1``, and always when offline."""
    return bool(settings.offline) or not bool(getattr(settings, "hub_fetch", False))


class _BoundedHub:
    """Downloads on a small pool of their own, never more than ``slots`` at once, answers cached."""

    def __init__(self, slots: int, timeout_s: float, cache_size: int) -> None:
        self._slots = threading.BoundedSemaphore(slots)
        self._pool = ThreadPoolExecutor(max_workers=slots, thread_name_prefix="anchorgpu-hub")
        self._timeout_s = timeout_s
        self._cache: OrderedDict[str, Any] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()

    def cached(self, repo_id: str) -> Any | None:
        with self._lock:
            spec = self._cache.get(repo_id)
            if spec is not None:
                self._cache.move_to_end(repo_id)
            return spec

    def remember(self, repo_id: str, spec: Any) -> None:
        with self._lock:
            self._cache[repo_id] = spec
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)

    def fetch(self, repo_id: str, download: Any) -> str:
        """The local path of ``config.json``; raises when busy or slow (the loader words it as one line)."""
        if not self._slots.acquire(blocking=False):
            raise TimeoutError(f"the server is already fetching {HUB_CONCURRENCY} Hub configs; try again shortly")
        try:
            future = self._pool.submit(download, repo_id)
        except BaseException:
            self._slots.release()
            raise
        future.add_done_callback(lambda _f: self._slots.release())  # the slot frees when the download ends
        try:
            return str(future.result(timeout=self._timeout_s))
        except FutureTimeout:
            raise TimeoutError(f"no answer within {self._timeout_s:g} s") from None


_HUB = _BoundedHub(HUB_CONCURRENCY, HUB_TIMEOUT_S, HUB_CACHE_SIZE)


def load_public_model(ref: str, *, offline: bool, download: Any | None = None) -> Any:
    """The ``ModelSpec`` / ``DiffusionPipelineSpec`` for a registry name or Hub id (never a server path).

    ``offline`` (see :func:`server_offline`) refuses Hub ids at once; ``download`` replaces the Hub
    download (tests inject one).
    """
    from anchorgpu.architectures import list_models, load_model
    from anchorgpu.architectures.loader import HUB_ID, _hub_download
    from anchorgpu.architectures.registry import resolve

    text = ref.strip()
    if not text:  # bad input, as load_model and the schema (for "") refuse it, not an unknown name
        raise InvalidInput(said("model {ref!r}: the name is empty; give a registry name (see /v1/models) or a Hub "
                                "id 'org/name'", ref=ref))
    if resolve(text) is not None:
        return load_model(text, offline=True)  # registry models never need the network
    if HUB_ID.match(text) and not text.endswith(".json"):
        try:
            local = Path(text).exists()
        except OSError:
            local = False
        if not local:
            if offline:
                known = did_you_mean(text.split("/", 1)[1], list_models())
                hint = f"; did you mean {', '.join(repr(k) for k in known)}?" if known else ""
                raise HubUnavailable(said("{text}: this server does not fetch models from the Hugging Face Hub; "
                                          "use a registry name (see /v1/models){hint}", text=text, hint=hint))
            spec = _HUB.cached(text)
            if spec is None:
                fetcher = download or _hub_download
                spec = load_model(text, offline=False, fetch=lambda repo: _HUB.fetch(repo, fetcher))
                _HUB.remember(text, spec)
            return spec
    if text.endswith(".json") or "/" in text or "\\" in text or text.startswith((".", "~")):
        raise ServerPathRefused(said("model {text!r}: the API takes a registry name (see /v1/models) or a Hub id "
                                     "'org/name', not a file path", text=text))
    raise UnknownModel(text, did_you_mean(text, list_models()))
