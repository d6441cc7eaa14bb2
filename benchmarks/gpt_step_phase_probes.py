"""Where the host time of ``measure_gpt_step.py``'s short steps goes: two profiling probes, as run.

GPT-2 124M at micro-batch 1 steps in about three times its GPU busy time on one H200 of a
Firecracker VM (``data/e2e/h200_gpt2_eager_single_gpu.csv``): the GPU waits for the host. The two
probes below were run on 2026-12-04 on a later lease of the same machine (torch 2.11.0+cu130),
from the repository root, and printed ``data/e2e/h200_gpt2_step_phases.csv``'s figures. They are
kept verbatim (the text that ran), with this wrapper to run them again:

* ``PROBE_PHASES``: the step of ``measure_gpt_step.py`` (its ``build``) split into zero_grad,
  forward with the loss, backward, the fused AdamW step and ``loss.item()``; for each, the median
  and minimum host wall time over 20 steps (no synchronisation inside the step, so a phase's time is
  what the host spends issuing it while the GPU runs behind) and, from one more step with the phase
  alone under ``torch.profiler``, the CUDA kernels (memsets included) it launched, their summed GPU
  time and the most frequent kernel names of the backward and optimizer phases.
* ``PROBE_VARIANTS``: the whole step (median and minimum of 15) and the forward and backward host
  times (median of 10) as the script runs it (``autocast``), with SDPA held to its
  FlashAttention-2 backend (``flash``) and with the model cast to bf16 and no autocast (``bf16``:
  no weight casts), and the kernels of one forward and one backward. The profiled forward follows
  an optimizer step without ``zero_grad``, so its backward also adds each of the 148 gradients to
  the one left from the step before (148 kernels more than in a step).

    python benchmarks/gpt_step_phase_probes.py phases|variants
"""

from __future__ import annotations

import sys

PROBE_PHASES = r'''
import sys,time,statistics as S,torch
sys.path.insert(0,"benchmarks");import measure_gpt_step as M
from torch.profiler import profile,ProfilerActivity as A
P=("zero_grad","forward","backward","optimizer","item")
for mb in (1,4):
 m=M.build(torch,768,12,12,1024).cuda();o=torch.optim.AdamW(m.parameters(),lr=1e-4,fused=True)
 i=torch.randint(0,M.VOCAB,(mb,1024),device="cuda");t=torch.randint(0,M.VOCAB,(mb,1024),device="cuda");s={}
 def f(p):
  if p=="zero_grad":o.zero_grad(set_to_none=True)
  elif p=="forward":
   with torch.autocast("cuda",dtype=torch.bfloat16):s["l"]=m(i,t)
  elif p=="backward":s["l"].backward()
  elif p=="optimizer":o.step()
  else:float(s["l"].item())
 for _ in range(3):
  for p in P:f(p)
 torch.cuda.synchronize();w={p:[] for p in P};W=[]
 for _ in range(20):
  a=time.perf_counter()
  for p in P:
   b=time.perf_counter();f(p);w[p].append(time.perf_counter()-b)
  W.append(time.perf_counter()-a)
 for p in P:
  for q in P:
   if q==p:
    torch.cuda.synchronize()
    with profile(activities=[A.CUDA]) as pr:
     f(q);torch.cuda.synchronize()
   else:f(q)
  k=g=0;names={}
  for e in pr.key_averages():
   if "CUDA" in str(e.device_type):k+=e.count;g+=e.self_device_time_total;names[e.key[:40]]=e.count
  h=S.median(w[p])*1e6
  print(f"mb{mb} {p} host_med_us {h:.0f} host_min_us {min(w[p])*1e6:.0f} kernels {k} gpu_us {g:.0f} us_per_k {h/max(k,1):.1f}",flush=True)
  if p in("backward","optimizer"):print(sorted(names.items(),key=lambda x:-x[1])[:14])
 print(f"mb{mb} step_med_us {S.median(W)*1e6:.0f} min {min(W)*1e6:.0f}",flush=True)
 del m,o;torch.cuda.empty_cache()
'''

PROBE_VARIANTS = r'''
import sys,time,statistics as S,torch
sys.path.insert(0,"benchmarks");import measure_gpt_step as M
from torch.profiler import profile,ProfilerActivity as A
from torch.nn.attention import sdpa_kernel,SDPBackend as B
import contextlib as C
def run(v,mb=1):
 m=M.build(torch,768,12,12,1024).cuda()
 if v=="bf16":m=m.bfloat16()
 o=torch.optim.AdamW(m.parameters(),lr=1e-4,fused=True)
 i=torch.randint(0,M.VOCAB,(mb,1024),device="cuda");t=torch.randint(0,M.VOCAB,(mb,1024),device="cuda");s={}
 ac=(lambda:C.nullcontext()) if v=="bf16" else (lambda:torch.autocast("cuda",dtype=torch.bfloat16))
 bk=(lambda:sdpa_kernel(B.FLASH_ATTENTION)) if v=="flash" else (lambda:C.nullcontext())
 def fw():
  with bk(),ac():s["l"]=m(i,t)
 def bw():
  with bk():s["l"].backward()
 def step():
  o.zero_grad(set_to_none=True);fw();bw();o.step();return float(s["l"].item())
 for _ in range(3):step()
 torch.cuda.synchronize();W=[];F=[];Bw=[]
 for _ in range(15):
  a=time.perf_counter();step();W.append(time.perf_counter()-a)
 for _ in range(10):
  o.zero_grad(set_to_none=True);a=time.perf_counter();fw();b=time.perf_counter();bw();c=time.perf_counter();o.step();s["l"].item()
  F.append(b-a);Bw.append(c-b)
 print(f"{v} mb{mb} step_med_ms {S.median(W)*1e3:.2f} min {min(W)*1e3:.2f} fwd_ms {S.median(F)*1e3:.2f} bwd_ms {S.median(Bw)*1e3:.2f}",flush=True)
 ks=[]
 for fn in(fw,bw):
  torch.cuda.synchronize()
  with profile(activities=[A.CUDA]) as pr:
   fn();torch.cuda.synchronize()
  ks.append(sum(e.count for e in pr.key_averages() if "CUDA" in str(e.device_type)))
 o.step()
 print(f"{v} mb{mb} kernels fwd {ks[0]} bwd {ks[1]}",flush=True)
 del m,o;torch.cuda.empty_cache()
for v in("autocast","flash","bf16"):run(v)
run("autocast",4)
'''


def main(argv: list[str]) -> int:
    probes = {"phases": PROBE_PHASES, "variants": PROBE_VARIANTS}
    if len(argv) != 1 or argv[0] not in probes:
        print("usage: python benchmarks/gpt_step_phase_probes.py phases|variants", file=sys.stderr)
        return 2
    exec(compile(probes[argv[0]], f"<probe {argv[0]}>", "exec"), {"__name__": "__probe__"})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
