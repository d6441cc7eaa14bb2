"""Score the fused-attention pricing (:mod:`simulator.costs.attention_shape` and a profile's
``gpu.attention_efficiency``) against published kernel benchmarks.

Data: ``data/kernels/cudnn_sdpa_benchmarks.csv``, cuDNN's own SDPA training sweeps
(NVIDIA/cudnn-frontend): forward and backward TFLOP/s, bf16, head dim 128, causal and unmasked,
4K-64K tokens on H200 (cuDNN 9.1.0 of May 2024 and 9.4.0 of September 2024, each beside the
FlashAttention-2 of PyTorch's SDPA in the same container) and 512-128K on B200 (cuDNN 9.10.2 and
flash-attn 2.7.3). These are the measured backward rates that the FlashAttention papers do not
print as numbers.

Two checks, both on the scripts' own FLOP convention (the forward's 4·b·h·s_q·s_k·d, halved when
causal; the backward 2.5× that), which is the simulator's:

* **length dependence** (:func:`length_errors`): a kernel's rate at s tokens over its rate at
  ``REF_SEQ`` (16K) in the same sweep, against :func:`~simulator.costs.attention_shape.shape_factor`
  for the backend's kernel generation (``cudnn`` → ``flash3``, the FlashAttention-2 backends →
  ``flash2``), forward and backward apart. The shape factor is read off FlashAttention-3's
  forward curves (H100); these rows test it on backward kernels and on cuDNN's.
* **long-kernel rate** (:func:`fwd_bwd_fraction`): the fraction of the dense bf16 peak that one
  forward plus one backward reaches, 3.5 / (1 / fwd + 2.5 / bwd), against a profile's pair. The
  H200 sweeps ran with the SM clock locked at 1980 MHz (the README's settings), so their peak is
  132 SMs × 4 tensor cores × 1024 FLOP/clock × 1.98 GHz (:func:`clock_peak_tflops`), not the
  1830 MHz datasheet figure the dgx-h100 profile's 989.4 TFLOP/s stands for.

* **B200 at the context-parallel kernel lengths** (:func:`b200_cp_rates`): the dgx-b200 flash3
  pair × shape factor against the three B200 cuDNN sweeps (9.10.2 twice, 9.13.0; causal, 128
  query / 8 KV heads of 128) at 16K-64K tokens, the local lengths n = s/cp of NeMo's B200
  long-context rows (32K-1M tokens at cp 2-16). The modelled forward plus backward sits 3-8%
  *below* every sweep there (16K: 1090 TFLOP/s modelled, 1138-1143 measured; 64K: 1145 and
  1146-1157) and rises 5.0% from 16K to 64K where the sweeps rise 0.6-1.2%: the kernel curve is
  not what makes those rows optimistic (e2e_validation/findings.py, "Context parallelism").

* **cuDNN's CTA cost on Blackwell** (:func:`fit_blackwell_cta_overhead`): the GB200 and GB300
  length curves of cuDNN 9.17.0 and 9.22.0 (``cudnn_sdpa_gb200_gb300.csv``, 512-8K against 16K, causal and
  unmasked, d = 128) lose more at short lengths than Hopper's: 4.8 tiles per CTA forward and 3.6
  backward against Hopper's 1.5 and 2.7, the figures the Blackwell profiles give. B200's older
  sweeps (9.10.2, 9.13.0) lose more still (their own fit runs past 8 tiles).

* **sliding-window kernels** (:func:`read_window_points`, :func:`sliding_window_errors`):
  cudnn-frontend's windowed rows (``cudnn_sdpa_sliding_window.csv``: GB200 and GB300 at a
  128-key window, H200 at 1,024; 2K-32K tokens, d = 64), each over its container's causal
  d = 128 rate at 16K, against the shape factor with the window (``costs/attention_shape.py``:
  the key tiles a query tile's rows touch, both edge tiles computed whole) and the profile's CTA
  cost. Held out of every fit: the backward at 2K-16K is within 17% (medians +4% GB200, +12%
  GB300, +6% H200; +59-68% on GB200 with the kernel generation's CTA cost); the forward is modelled
  13-43% fast (masking both edge tiles weighs more against its two GEMMs than against the
  backward's five; not modelled).

* **the backward's CTA cost on Hopper** (:func:`fit_cta_overhead`): this project's H200
  sweep (``data/kernels/h200_attention_sdpa.csv``: PyTorch's FlashAttention-2 and cuDNN 9.19,
  512-32K tokens, d = 64 and 128, on cudnn-frontend's shapes) shows the backward losing more
  than the forward at short lengths; the per-CTA cost read off its d = 128 rows (3.0 tiles for
  FlashAttention-2, 2.7 for cuDNN) is what the Hopper profiles give
  (``bwd_cta_overhead_tiles``), scored on the d = 64 rows and on cudnn-frontend's H200 rows. Its
  FlashAttention-2 rows at 4K-32K also reproduce cudnn-frontend's within 4%.

* **TE's fused attention on the B200 of SimuMax's runs** (:func:`modelled_seconds`,
  ``data/kernels/simumax_b200_te_attention.csv``: Megatron-Core's TEDotProductAttention timed at
  those runs' per-rank shapes): at 32K tokens (8 and 16 query heads of 128, the 32K CP rows')
  the dgx-b200 pair x shape factor is within 0-5% of the measured forward and backward; at 128K
  (the 128K CP rows') it is 19-20% fast on the forward and 11% on the backward: from 32K to 128K
  the measured kernel loses 17% (forward) and 13% (backward) of its rate at 8 heads, where
  cuDNN's own sweep at 128 heads loses 6-8%, and the shape factor, rising with length, has no
  such fall. Not modelled. MLA's heads (q/k 192, v 128, DeepSeek-V2/V3) run slower than the
  pair at their mean head dim gives: 0.63-0.67 of the modelled time at 32K, 0.52-0.67 at 128K.
  The 4K calls with 4-16 heads are spans of the call's kernels with the host gaps between them
  (a ~90 us floor), not a kernel rate.

``python -m simulator.calibration.attention_bench`` prints all seven.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path

from simulator.costs.attention_shape import REF_SEQ, shape_factor
from simulator.files import bundled_dir, read_commented_csv

DATA = bundled_dir("data/kernels") / "cudnn_sdpa_benchmarks.csv"
# This project's H200 sweep on cudnn-frontend's protocol, 512-32K tokens, d = 64 and 128 (clocks not locked).
H200_SWEEP = bundled_dir("data/kernels") / "h200_attention_sdpa.csv"
H200_SWEEP_CUDNN = "9.19.0"
PROFILE_OF_GPU = {"H200": "dgx-h200", "B200": "dgx-b200", "GB200": "gb200-nvl72", "GB300": "gb300-nvl72"}
KERNEL_OF_BACKEND = {"cudnn": "flash3", "pytorch_sdpa_flash": "flash2", "flash_attn_2": "flash2"}
DENSE_BF16_FLOP_PER_CLOCK_PER_SM = 4 * 1024  # Hopper: 4 tensor cores × 1024 dense bf16 FLOP per clock
H200_BENCH_CLOCK_GHZ = 1.98  # cudnn-frontend benchmark/README.md: nvidia-smi -ac 3201,1980
HOPPER_SMS = 132


@dataclass(frozen=True)
class BenchPoint:
    """One measured kernel pair: forward and backward TFLOP/s of one shape on one stack."""

    commit: str
    gpu: str
    cudnn: str
    backend: str
    batch: int
    q_heads: int
    kv_heads: int
    seq_q: int
    seq_kv: int
    head_dim: int
    causal: bool
    fwd_tflops: float
    bwd_tflops: float

    @property
    def kernel(self) -> str:
        return KERNEL_OF_BACKEND[self.backend]

    @property
    def sweep(self) -> tuple:
        """The points of one curve: same file, backend, masking and head layout."""
        return (self.commit, self.backend, self.causal, self.q_heads, self.kv_heads, self.head_dim)


@dataclass(frozen=True)
class LengthError:
    point: BenchPoint
    modelled: float  # forward shape factor at the point's shape over the sweep's REF_SEQ point's
    fwd_measured: float  # the point's forward rate over the same sweep's at REF_SEQ
    bwd_measured: float
    modelled_bwd: float  # the same for the backward kernel (the GPU's backward CTA cost)

    @property
    def fwd_error(self) -> float:
        return self.modelled / self.fwd_measured - 1.0

    @property
    def bwd_error(self) -> float:
        return self.modelled_bwd / self.bwd_measured - 1.0


def read_points(path: Path = DATA) -> list[BenchPoint]:
    rows = read_commented_csv(path)
    return [BenchPoint(r["commit"], r["gpu"], r["cudnn"], r["backend"], int(r["batch"]), int(r["q_heads"]),
                       int(r["kv_heads"]), int(r["seq_q"]), int(r["seq_kv"]), int(r["head_dim"]),
                       r["causal"] == "true", float(r["fwd_tflops"]), float(r["bwd_tflops"])) for r in rows]


def cta_overhead(gpu: str, kernel: str, backward: bool) -> float | None:
    """The per-CTA cost the bundled profile of the sweep's GPU gives ``kernel``'s forward or backward."""
    from simulator.config.hardware import load_profile

    return load_profile(PROFILE_OF_GPU[gpu]).gpu.attention_cta_overhead(kernel, backward)


def _references(points: list[BenchPoint]) -> dict[tuple, BenchPoint]:
    """Each sweep's ``REF_SEQ`` point, of its smallest batch (cuDNN 9.22's files run batch 2 throughout)."""
    ref: dict[tuple, BenchPoint] = {}
    for p in points:
        if p.seq_q == REF_SEQ and p.seq_kv == REF_SEQ and (p.sweep not in ref or p.batch < ref[p.sweep].batch):
            ref[p.sweep] = p
    return ref


def length_errors(points: list[BenchPoint], min_seq: int = 0, bwd_overhead: float | None | str = "profile",
                  fwd_overhead: float | None | str = "profile") -> list[LengthError]:
    """Each point of at least ``min_seq`` tokens against its sweep's ``REF_SEQ`` point, the factor
    taken relative to the reference's (a sweep at d = 64 has its own 16K point); the forward with
    ``fwd_overhead`` tiles per CTA, the backward with ``bwd_overhead`` ("profile": the GPU's
    profile; None: the kernel generation's)."""
    ref = _references(points)
    out = []
    for p in points:
        r = ref.get(p.sweep)
        if r is None or p.seq_q < min_seq:
            continue
        c_fwd = cta_overhead(p.gpu, p.kernel, False) if isinstance(fwd_overhead, str) else fwd_overhead
        c_bwd = cta_overhead(p.gpu, p.kernel, True) if isinstance(bwd_overhead, str) else bwd_overhead

        def rel(c: float | None) -> float:
            return (shape_factor(p.seq_q, p.seq_kv, p.causal, p.head_dim, p.kernel, c)
                    / shape_factor(r.seq_q, r.seq_kv, r.causal, r.head_dim, p.kernel, c))
        out.append(LengthError(p, rel(c_fwd), p.fwd_tflops / r.fwd_tflops, p.bwd_tflops / r.bwd_tflops, rel(c_bwd)))
    return out


def read_h200_sweep(path: Path = H200_SWEEP) -> list[BenchPoint]:
    """This project's H200 sweep (benchmarks/measure_reference_kernels.py) as points of the same kind: the
    flash2 rows as ``pytorch_sdpa_flash``, q = k = v heads."""
    rows = read_commented_csv(path)
    backend = {"flash2": "pytorch_sdpa_flash", "cudnn": "cudnn"}
    return [BenchPoint("h200-measured", "H200", H200_SWEEP_CUDNN, backend[r["backend"]], int(r["batch"]),
                       int(r["heads"]), int(r["heads"]), int(r["seqlen"]), int(r["seqlen"]), int(r["head_dim"]),
                       r["causal"] == "1", float(r["fwd_tflops"]), float(r["bwd_tflops"])) for r in rows]


def fit_cta_overhead(points: list[BenchPoint], kernel: str, head_dim: int = 128, backward: bool = True) -> float:
    """The CTA cost (0-8 tiles, steps of 0.1) that minimises the median |error| of the backward's
    (or the forward's) length ratios below ``REF_SEQ`` of ``kernel``'s sweeps at ``head_dim``."""
    pts = [p for p in points if p.kernel == kernel and p.head_dim == head_dim]

    def score(c0: float) -> float:
        errs = [abs(e.bwd_error if backward else e.fwd_error) for e in length_errors(pts, 0, c0, c0)
                if e.point.seq_q < REF_SEQ]
        return statistics.median(errs)

    return min((x / 10 for x in range(81)), key=score)


def fwd_bwd_fraction(fwd: float, bwd: float) -> float:
    """Rate of one forward plus one backward (2.5× its FLOPs) from their rates (or fractions)."""
    return (1.0 + 2.5) / (1.0 / fwd + 2.5 / bwd)


def clock_peak_tflops(sms: int = HOPPER_SMS, clock_ghz: float = H200_BENCH_CLOCK_GHZ) -> float:
    """Dense bf16 peak of a Hopper GPU at ``clock_ghz``."""
    return sms * DENSE_BF16_FLOP_PER_CLOCK_PER_SM * clock_ghz * 1e9 / 1e12


def summary(points: list[BenchPoint], min_seq: int = 4096) -> dict[tuple[str, str, str, str, bool, str], float]:
    """Median |error| of the shape factor per (gpu, cuDNN release, file, backend, causal, direction)."""
    groups: dict[tuple[str, str, str, str, bool, str], list[float]] = {}
    for e in length_errors(points, min_seq):
        p = e.point
        if p.seq_q == REF_SEQ and p.batch == 1:
            continue
        groups.setdefault((p.gpu, p.cudnn, p.commit, p.backend, p.causal, "fwd"), []).append(abs(e.fwd_error))
        groups.setdefault((p.gpu, p.cudnn, p.commit, p.backend, p.causal, "bwd"), []).append(abs(e.bwd_error))
    return {k: statistics.median(v) for k, v in groups.items()}


BLACKWELL_ULTRA = bundled_dir("data/kernels") / "cudnn_sdpa_gb200_gb300.csv"
ULTRA_SEQS = (4096, 32768)  # the training kernels' lengths: a sequence of 4K-8K, or its CP share


@dataclass(frozen=True)
class UltraRatio:
    """GB300's rate over GB200's for one kernel, the median over the shapes both GPUs ran in one
    container (same cuDNN, same script)."""

    fwd: float
    bwd: float
    shapes: int


def blackwell_ultra_ratios(points: list[BenchPoint], backend: str = "cudnn",
                           seqs: tuple[int, int] = ULTRA_SEQS) -> UltraRatio:
    """What Blackwell Ultra does to one attention kernel: GB300 over GB200, causal, ``seqs``
    tokens, medians over the shapes timed on both with the same software. The two parts have
    the same dense tensor rate (2,500 TFLOP/s bf16); Blackwell Ultra doubles the SFU's
    exponentials (MUFU.EX2), which bound cuDNN's Blackwell forward at head dim 128 (one
    exponential per score against 4 x 128 tensor FLOPs), and runs at 1,400 W against 1,200."""
    def shape(p: BenchPoint) -> tuple:  # one curve's point (the curve names the file, hence the cuDNN)
        return p.sweep, p.batch, p.seq_q, p.seq_kv

    base = {shape(p): p for p in points if p.gpu == "GB200"}
    fwd, bwd = [], []
    for p in points:
        b = base.get(shape(p))
        if p.gpu == "GB300" and b is not None and p.backend == backend and p.causal and seqs[0] <= p.seq_q <= seqs[1]:
            fwd.append(p.fwd_tflops / b.fwd_tflops)
            bwd.append(p.bwd_tflops / b.bwd_tflops)
    return UltraRatio(statistics.median(fwd), statistics.median(bwd), len(fwd))


B200_CP_SEQS = (16384, 32768, 65536)  # n = s/cp of the nemo_cp B200 rows: 16K (32K-64K), 32K (128K), 64K (256K-1M)


@dataclass(frozen=True)
class RateCheck:
    """One B200 cuDNN sweep point against the dgx-b200 flash3 pricing, forward plus backward."""

    point: BenchPoint
    modelled_tflops: float  # 3.5 / (1/fwd + 2.5/bwd) of the profile pair x shape factor x peak
    measured_tflops: float

    @property
    def error(self) -> float:
        return self.modelled_tflops / self.measured_tflops - 1.0


def modelled_rates(profile: str, s_q: int, s_k: int, causal: bool, head_dim: int = 128,
                   kernel: str = "flash3") -> tuple[float, float]:
    """FLOP/s the simulator charges the forward and the backward kernel of this shape on
    ``profile``: ``costs.compute.achieved_flops`` (pair x shape factor x bf16 peak)."""
    from simulator.config.hardware import load_profile
    from simulator.costs.compute import achieved_flops
    from simulator.schedule.ir import ComputeOp

    gpu = load_profile(profile).gpu

    def rate(direction: str) -> float:
        op = ComputeOp(name=f"attn.{direction}", kind="attention", attention_kernel=kernel,
                       attention_shape=(s_q, s_k, head_dim, causal))
        return achieved_flops(op, gpu)

    return rate("fwd"), rate("bwd")


def modelled_fwd_bwd_tflops(profile: str, s_q: int, s_k: int, causal: bool, head_dim: int = 128,
                            kernel: str = "flash3") -> float:
    """TFLOP/s the simulator charges one forward plus one backward of this shape on ``profile``."""
    fwd, bwd = modelled_rates(profile, s_q, s_k, causal, head_dim, kernel)
    return fwd_bwd_fraction(fwd / 1e12, bwd / 1e12)


def b200_cp_rates(points: list[BenchPoint], seqs: tuple[int, ...] = B200_CP_SEQS) -> list[RateCheck]:
    """Every B200 cuDNN point at ``seqs`` (batch 1) against dgx-b200's flash3 pricing."""
    out = []
    for p in points:
        if p.gpu == "B200" and p.backend == "cudnn" and p.batch == 1 and p.seq_q in seqs:
            model = modelled_fwd_bwd_tflops("dgx-b200", p.seq_q, p.seq_kv, p.causal, p.head_dim)
            out.append(RateCheck(p, model, fwd_bwd_fraction(p.fwd_tflops, p.bwd_tflops)))
    return out


BLACKWELL_CTA_RELEASES = ("9.17.0", "9.22.0")  # cuDNN's sm100 kernels of the GB200/GB300 sweeps


def fit_blackwell_cta_overhead(points: list[BenchPoint]) -> tuple[float, float]:
    """(forward, backward) CTA cost of cuDNN's Blackwell kernels, in tiles: :func:`fit_cta_overhead`
    over the causal and unmasked head-dim-128 length curves of GB200 and GB300, cuDNN 9.17.0 and
    9.22.0 (``data/kernels/cudnn_sdpa_gb200_gb300.csv``), together. What the profiles of Blackwell
    GPUs give (``cta_overhead_tiles``, ``bwd_cta_overhead_tiles``); the sliding-window rows
    (:func:`sliding_window_errors`) are not fitted."""
    pts = [p for p in points if p.backend == "cudnn" and p.gpu in ("GB200", "GB300")
           and p.cudnn in BLACKWELL_CTA_RELEASES]
    return fit_cta_overhead(pts, "flash3", backward=False), fit_cta_overhead(pts, "flash3", backward=True)


SLIDING_WINDOW = bundled_dir("data/kernels") / "cudnn_sdpa_sliding_window.csv"


@dataclass(frozen=True)
class WindowPoint:
    """One measured sliding-window kernel pair (``window`` keys per query) beside the causal
    head-dim-128 rate at ``REF_SEQ`` of the same container (``ref_fwd``, ``ref_bwd``)."""

    point: BenchPoint
    window: int
    ref_fwd: float
    ref_bwd: float

    def modelled(self, backward: bool) -> float:
        """The shape factor of the windowed kernel on the GPU's profile (relative to the causal
        head-dim-128 kernel at ``REF_SEQ``, as the reference rate is)."""
        p = self.point
        c0 = cta_overhead(p.gpu, p.kernel, backward)
        return shape_factor(p.seq_q, p.seq_kv, True, p.head_dim, p.kernel, c0, self.window)

    @property
    def fwd_error(self) -> float:
        return self.modelled(False) / (self.point.fwd_tflops / self.ref_fwd) - 1.0

    @property
    def bwd_error(self) -> float:
        return self.modelled(True) / (self.point.bwd_tflops / self.ref_bwd) - 1.0


def read_window_points(path: Path = SLIDING_WINDOW, ultra: Path = BLACKWELL_ULTRA) -> list[WindowPoint]:
    """The windowed rows of ``path``, each with its container's causal 16K reference: the
    file's own window-0 rows (H200, cuDNN 9.19.1) or the same commit's rows of ``ultra`` (GB200
    and GB300, cuDNN 9.22.0)."""
    rows = read_commented_csv(path)
    points = [(BenchPoint(r["commit"], r["gpu"], r["cudnn"], r["backend"], int(r["batch"]), int(r["q_heads"]),
                          int(r["kv_heads"]), int(r["seq_q"]), int(r["seq_kv"]), int(r["head_dim"]), True,
                          float(r["fwd_tflops"]), float(r["bwd_tflops"])), int(r["window"])) for r in rows]
    refs = {(p.commit, p.gpu): p for p, w in points if w == 0 and p.seq_q == REF_SEQ and p.head_dim == 128}
    refs.update({(p.commit, p.gpu): p for p in read_points(ultra) if p.backend == "cudnn" and p.causal
                 and p.seq_q == REF_SEQ and p.head_dim == 128 and (p.commit, p.gpu) not in refs})
    return [WindowPoint(p, w, refs[p.commit, p.gpu].fwd_tflops, refs[p.commit, p.gpu].bwd_tflops)
            for p, w in points if w > 0]


def sliding_window_errors(points: list[WindowPoint], max_seq: int = REF_SEQ) -> dict[tuple[str, str], float]:
    """Median signed error of the modelled windowed rate (relative to the container's causal
    16K rate) per (GPU, direction), kernels up to ``max_seq`` tokens."""
    out: dict[tuple[str, str], list[float]] = {}
    for w in points:
        if w.point.seq_q <= max_seq:
            out.setdefault((w.point.gpu, "fwd"), []).append(w.fwd_error)
            out.setdefault((w.point.gpu, "bwd"), []).append(w.bwd_error)
    return {k: statistics.median(v) for k, v in out.items()}


SIMUMAX_B200 = bundled_dir("data/kernels") / "simumax_b200_te_attention.csv"


@dataclass(frozen=True)
class TimedAttention:
    """One TE fused-attention call timed on the B200 of SimuMax's runs (causal, batch 1): its
    sequence, query heads, head dims and the measured forward and backward spans."""

    seq: int
    q_heads: int
    d_qk: int
    d_v: int
    fwd_s: float
    bwd_s: float

    @property
    def causal_flops(self) -> float:
        """The forward's FLOPs on this module's convention: 4·h·s²·d halved for the causal mask,
        d the mean of the two head dims (the backward is 2.5 times it)."""
        return self.q_heads * self.seq ** 2 * (self.d_qk + self.d_v)


def read_simumax_b200(path: Path = SIMUMAX_B200) -> list[TimedAttention]:
    """The calls with q, k and v as views of one fused tensor (as Megatron-Core's layers pass them)."""
    rows = read_commented_csv(path)
    return [TimedAttention(int(r["seq"]), int(r["q_heads"]), int(r["d_qk"]), int(r["d_v"]),
                           float(r["fwd_us"]) * 1e-6, float(r["bwd_us"]) * 1e-6)
            for r in rows if r["qkv_contiguous"] == "true" and r["batch"] == "1"]


def modelled_seconds(call: TimedAttention, profile: str = "dgx-b200", kernel: str = "flash3") -> tuple[float, float]:
    """The forward and backward times the simulator charges the call on ``profile``
    (:func:`modelled_rates` at the mean head dim)."""
    fwd, bwd = modelled_rates(profile, call.seq, call.seq, True, (call.d_qk + call.d_v) // 2, kernel)
    return call.causal_flops / fwd, 2.5 * call.causal_flops / bwd


def main() -> None:
    points = read_points()
    print("shape factor vs measured length dependence, 4K-128K tokens (median |error|):")
    for (gpu, ver, commit, backend, causal, direction), err in sorted(summary(points).items()):
        print(f"  {gpu} cuDNN {ver:7s} {commit} {backend:19s} {'causal' if causal else 'full  '} {direction}: {100 * err:4.1f}%")
    peak = clock_peak_tflops()
    print(f"H200 long kernels (16K tokens, causal), fraction of the {peak:.0f} TFLOP/s peak at 1980 MHz:")
    for p in points:
        if p.gpu == "H200" and p.causal and p.seq_q == REF_SEQ:
            print(f"  cuDNN {p.cudnn:6s} {p.backend:19s} fwd {p.fwd_tflops / peak:.3f} bwd {p.bwd_tflops / peak:.3f} "
                  f"fwd+bwd {fwd_bwd_fraction(p.fwd_tflops, p.bwd_tflops) / peak:.3f}")
    own = read_h200_sweep()
    print(f"backward CTA cost (tiles) read off {H200_SWEEP.name} at d=128, and the backward length ratios' median |error|:")
    for kernel in ("flash2", "flash3"):
        c0 = fit_cta_overhead(own, kernel)
        for d in (128, 64):
            pts = [p for p in own if p.kernel == kernel and p.head_dim == d]
            for label, tiles in (("forward's", None), (f"{c0:.1f}", c0)):
                errs = [abs(e.bwd_error) for e in length_errors(pts, 0, tiles) if e.point.seq_q < REF_SEQ]
                print(f"  {kernel} d={d:3d} c0 {label:9s}: median {statistics.median(errs):.1%} max {max(errs):.1%}")
    print("B200 at the context-parallel kernel lengths, causal, forward + backward TFLOP/s (dgx-b200 flash3):")
    for c in b200_cp_rates(points):
        p = c.point
        print(f"  {p.commit} cuDNN {p.cudnn:6s} {p.seq_q // 1024:3d}K  modelled {c.modelled_tflops:6.1f}  "
              f"measured {c.measured_tflops:6.1f}  {100 * c.error:+5.1f}%")
    ultra = read_points(BLACKWELL_ULTRA)
    print(f"{BLACKWELL_ULTRA.name}: GB300 over GB200 in one container, causal, {ULTRA_SEQS[0] // 1024}K-"
          f"{ULTRA_SEQS[1] // 1024}K tokens (median over the shapes):")
    for backend in ("cudnn", "pytorch_sdpa_flash"):
        r = blackwell_ultra_ratios(ultra, backend)
        print(f"  {backend:19s} fwd x{r.fwd:.3f} bwd x{r.bwd:.3f} ({r.shapes} shapes)")
    fwd_c0, bwd_c0 = fit_blackwell_cta_overhead(ultra)
    print(f"cuDNN's Blackwell CTA cost (tiles) read off {BLACKWELL_ULTRA.name} ({', '.join(BLACKWELL_CTA_RELEASES)}): "
          f"forward {fwd_c0:.1f}, backward {bwd_c0:.1f} (Hopper: 1.5, 2.7)")
    print(f"{SLIDING_WINDOW.name}: sliding-window kernels over the container's causal 16K rate, modelled / measured - 1:")
    for w in read_window_points():
        p = w.point
        print(f"  {p.gpu:5s} cuDNN {p.cudnn} W={w.window:5d} d={p.head_dim} {p.seq_q // 1024:3d}K  "
              f"fwd {p.fwd_tflops:6.1f} TFLOP/s {100 * w.fwd_error:+6.1f}%  bwd {p.bwd_tflops:6.1f} {100 * w.bwd_error:+6.1f}%")
    print(f"{SIMUMAX_B200.name}: TE fused attention on the B200 of SimuMax's runs, "
          "modelled / measured time (dgx-b200 flash3):")
    for call in read_simumax_b200():
        fwd, bwd = modelled_seconds(call)
        print(f"  {call.seq // 1024:4d}K {call.q_heads:3d} heads d {call.d_qk}/{call.d_v}  "
              f"fwd {call.fwd_s * 1e6:9.1f} us x {fwd / call.fwd_s:.2f}  bwd {call.bwd_s * 1e6:9.1f} us x {bwd / call.bwd_s:.2f}")


if __name__ == "__main__":
    main()
