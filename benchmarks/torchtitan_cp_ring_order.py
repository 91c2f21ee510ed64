"""Where Inductor puts the context-parallel ring's collectives and their waits in a compiled training graph (issue 11;
findings: benchmarks/torchtitan_cp_findings.md, 2026-12-07 section; model: speed.context_parallel.pytorch_cp_exposed_s).

It compiles PyTorch's own ``_templated_ring_attention`` and ``_templated_ring_attention_backward`` (all-gather rotater,
round-robin load balance, float32 dK/dV hand-offs), as torchtitan's compiled blocks trace them, with a matmul stand-in
for the SDPA kernel, and prints the order of the generated code's collectives, waits and kernels. A fake process group
sends nothing: only the order is read. Needs PyTorch 2.6.0 (the release nearest torchtitan's December 2024 torch),
which the project does not depend on; run it from a separate environment:

    python -m venv /tmp/tv && /tmp/tv/bin/pip install torch==2.6.0
    CP=4 /tmp/tv/bin/python benchmarks/torchtitan_cp_ring_order.py

Seen (CP 2, 4, 8; rank 1; torch 2.6.0, reorder_for_compute_comm_overlap False, reorder_for_peak_memory True): the
forward issues ``all_gather_into_tensor`` and waits on it before the first block's product; the backward does the same
with its all-gather and waits on each ``all_to_all_single`` (the dK/dV hand-off) before the next block's products.
"""
import os
import re

import torch
import torch.distributed as dist
from torch._inductor.utils import run_and_get_code
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor.experimental import _attention as A
from torch.testing._internal.distributed.fake_pg import FakeStore

CP, RANK = int(os.environ.get("CP", "4")), int(os.environ.get("RANK_", "1"))
dist.init_process_group("fake", store=FakeStore(), rank=RANK, world_size=CP)
mesh = init_device_mesh("cpu", (CP,))
B, H, S, D = 1, 2, 64, 16  # local tokens S (two chunks of S/2)

def _scores(q, k, is_causal):
    s = q @ k.transpose(-1, -2)
    if is_causal:
        s = s.masked_fill(torch.ones(s.shape[-2:], dtype=torch.bool).triu(1), float("-inf"))
    return s

def op(query, key, value, is_causal=False, **kw):  # stands in for aten._scaled_dot_product_flash_attention
    s = _scores(query, key, is_causal)
    return torch.softmax(s, -1) @ value, s.logsumexp(-1)

def bwd_op(query, key, value, out, logsumexp, is_causal=False, grad_out=None, **kw):  # ... _backward
    p = torch.softmax(_scores(query, key, is_causal), -1)
    dv = p.transpose(-1, -2) @ grad_out
    dp = grad_out @ value.transpose(-1, -2)
    ds = p * (dp - (grad_out * out).sum(-1, keepdim=True))
    return ds @ key, ds.transpose(-1, -2) @ query, dv

def fwd(x, q, k, v):
    out, lse = A._templated_ring_attention(mesh, 2, op, q, k, v, is_causal=True)
    return out * x

def bwd(x, q, k, v, out, lse, dout):
    dq, dk, dv = A._templated_ring_attention_backward(mesh, 2, bwd_op, dout, "grad_out", q, k, v, out, lse,
                                                        is_causal=True)
    return dq * x, dk, dv

def order(code):
    """The kernel calls in the generated forward, in order: collectives, waits, matmuls (bmm/mm extern calls)."""
    rows = []
    for line in code.split("def call(args)", 1)[-1].splitlines():
        m = re.search(r"(all_gather_into_tensor|all_to_all_single|wait_tensor|extern_kernels\.bmm|aten\.bmm|"
                      r"extern_kernels\.mm|cpp_fused_\w+)", line)
        if m and "def " not in line and "#" not in line.split(m.group(1))[0]:
            rows.append(m.group(1))
    return rows

if __name__ == "__main__":
    x = torch.randn(B, H, S, D, requires_grad=True)  # a training compile (is_inference False), as torchtitan's
    q, k, v, out, dout = (torch.randn(B, H, S, D) for _ in range(5))
    lse = torch.randn(B, H, S)
    for name, fn, args in (("forward ring", fwd, (x, q, k, v)), ("backward ring", bwd, (x, q, k, v, out, lse, dout))):
        torch._dynamo.reset()
        _, codes = run_and_get_code(torch.compile(fn, fullgraph=True), *args)
        print(f"== CP {CP}, rank {RANK}: {name} (torch {torch.__version__}, reorder_for_compute_comm_overlap="
              f"{torch._inductor.config.reorder_for_compute_comm_overlap}, reorder_for_peak_memory="
              f"{torch._inductor.config.reorder_for_peak_memory})")
        rows = order(codes[0])
        print(" -> ".join(rows))
        if os.environ.get("DUMP"):
            open(f"/tmp/ttcp/{name.split()[0]}_cp{CP}.py", "w").write(codes[0])
