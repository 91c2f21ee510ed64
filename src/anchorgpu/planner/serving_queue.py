"""The sequences a serving replica holds memory for when more users are asked for than its engine runs at once: those
running, at most the engine's sequence cap (vLLM's ``max_num_seqs``, SGLang's ``max_running_requests``,
TensorRT-LLM's ``max_batch_size``); the rest wait in its queue holding no KV cache and no recurrent state. Each
engine allocates a request's cache only when it admits the request to its running batch:

- vLLM V1: ``Scheduler.schedule`` (vllm-project/vllm vllm/v1/core/sched/scheduler.py) takes requests from
  ``self.waiting`` only while ``len(self.running) < self.max_num_running_reqs`` (``max_num_seqs``), and a request's
  blocks come from ``self.kv_cache_manager.allocate_slots`` as it is moved to ``self.running``; a waiting request
  holds none (a Mamba layer's state is a KV-cache group of the same manager, allocated the same way).
- SGLang: ``Scheduler.get_new_batch_prefill`` (sgl-project/sglang python/sglang/srt/managers/scheduler.py) stops
  taking from ``self.waiting_queue`` once ``running_bs + len(adder.can_run_list) >= self.max_running_requests``;
  the requests taken get their request-pool slot and KV token slots when the batch is prepared
  (``ScheduleBatch.prepare_for_extend``); the waiting queue holds only the requests.
- TensorRT-LLM (PyTorch): the capacity scheduler (tensorrt_llm/_torch/pyexecutor/scheduler.py) fits at most
  ``max_num_requests`` (``max_batch_size``) requests, and ``KVCacheManager.prepare_resources``
  (tensorrt_llm/_torch/pyexecutor/resource_manager.py) adds a sequence (``impl.add_sequence``) only for the scheduled
  context requests.

Plan, the serving chooser and recommend's sweep size a replica's cache for :func:`running_sequences`. Pure.
"""

from __future__ import annotations

__all__ = ["KV_SHOWN_REQUESTED", "KV_SHOWN_RUNNING", "QUEUED_PREFIX", "cap_setting", "queued_line", "running_sequences", "runs_fewer"]

QUEUED_PREFIX = "Users past the engines' sequence cap: "
"""How :func:`queued_line` begins (recommend's sweep leaves its 1-GPU probe's line out: its rows run every user)."""
KV_SHOWN_REQUESTED = "KV cache shown is what the requested sequences need"
KV_SHOWN_RUNNING = "KV cache shown is what the sequences running at once need"
"""The memory table's KV cache, every user's where the engines run them all, else the running sequences'."""


def running_sequences(per_replica: int, cap: int | None) -> int:
    """The sequences one replica runs at once, and holds a KV cache and recurrent state for: its share of the users,
    at most its engine's sequence cap (``cap``; none or 0: no cap known, every sequence).

    >>> running_sequences(2_500, 1_024), running_sequences(64, 1_024), running_sequences(64, None)
    (1024, 64, 64)
    """
    return min(per_replica, cap) if cap else per_replica


def cap_setting(engine: str) -> str:
    """The engine's name for its sequence cap.

    >>> cap_setting("vllm"), cap_setting("sglang"), cap_setting("trtllm")
    ('max_num_seqs', 'max_running_requests', 'max_batch_size')
    """
    return {"trtllm": "max_batch_size", "sglang": "max_running_requests"}.get(engine, "max_num_seqs")


_ADMISSION = {
    "vllm": "vLLM's scheduler allocates a request's KV blocks (kv_cache_manager.allocate_slots) only as it moves the "
            "request from waiting to running, vllm/v1/core/sched/scheduler.py",
    "sglang": "SGLang's scheduler gives a request its KV slots only as it joins a prefill batch "
              "(get_new_batch_prefill), python/sglang/srt/managers/scheduler.py",
    "trtllm": "TensorRT-LLM's KV cache manager adds a request's sequence only once its capacity scheduler schedules it "
              "(KVCacheManager.prepare_resources), tensorrt_llm/_torch/pyexecutor/resource_manager.py",
}


def queued_line(users: int, running: int, replicas: int, engine: str) -> str:
    """The assumption a plan states where ``users`` exceed what its ``replicas`` engines run at once (``running``
    each): the memory is sized for the running sequences, and how many wait.

    >>> queued_line(20_000, 1_024, 8, "vllm")[38:197]
    '20,000 users, 8 replicas each running at most 1,024 at once (max_num_seqs): the KV cache is sized for the 8,192 sequences running, the other 11,808 wait in the'
    """
    at_once = running * replicas
    return (f"{QUEUED_PREFIX}{users:,} users, {replicas:,} replica{'s each' if replicas > 1 else ''} running at most {running:,} at "
            f"once ({cap_setting(engine)}): the KV cache is sized for the {at_once:,} sequences running, the other "
            f"{users - at_once:,} wait in the queue holding none ({_ADMISSION.get(engine, _ADMISSION['vllm'])}).")


def runs_fewer(queued_cap: int | None, replicas: int, users: int, asked_replicas: int) -> bool:
    """Whether a serving plan of ``replicas`` whose engines each run ``queued_cap`` (its breakdown's
    ``kv_cache_sequences_per_replica``: present only where users wait, None elsewhere) runs fewer of the ``users`` at
    once than ``asked_replicas`` of the same engine do: "What would fit" does not offer pipeline stages in place of
    replicas that fit only by queueing the users the replicas ran.

    >>> runs_fewer(256, 1, 1024, 4), runs_fewer(256, 1, 1024, 1), runs_fewer(None, 1, 64, 4)
    (True, False, False)
    """
    return queued_cap is not None and queued_cap * replicas < min(users, queued_cap * asked_replicas)
