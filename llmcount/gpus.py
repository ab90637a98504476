"""Accelerators: dense (non-sparse) peak tensor throughput, bf16 and fp8, in TFLOPS (10^12 FLOP/s); memory
as the datasheet states it, in GB (10^9 bytes); and peak memory bandwidth in GB/s. All per GPU.

Vendors print the 2:4-structured-sparsity figure beside the dense one (marked "with sparsity"); MFU is measured
against the dense peak, so where a datasheet gives only the sparse figure the dense one is half of it. Each entry
names the document its numbers come from; the figures are the boost-clock peaks those documents state.

Memory and bandwidth, from the same datasheets: A100 SXM 80 GB HBM2e, 2,039 GB/s; H100 SXM 80 GB HBM3, 3.35 TB/s;
H100 PCIe 80 GB HBM2e, 2 TB/s; H200 141 GB HBM3e, 4.8 TB/s; HGX B200 1.44 TB and 64 TB/s for eight GPUs: 180 GB and
8 TB/s each; MI300X 192 GB HBM3, 5.3 TB/s; L40S 48 GB GDDR6, 864 GB/s; RTX 4090 24 GB GDDR6X, 1,008 GB/s. A
datasheet's "80 GB" is a marketing figure: what the driver reports as total can differ by a few percent either way.

* A100 SXM: NVIDIA A100 Tensor Core GPU datasheet: BF16 Tensor Core 312 TFLOPS (624 with sparsity); A100 has no
  FP8 tensor cores.
* H100 SXM and H100 PCIe: NVIDIA H100 Tensor Core GPU datasheet: BF16 1,979 / FP8 3,958 TFLOPS with sparsity (SXM),
  1,513 / 3,026 (PCIe): dense 989.5 / 1,979 and 756.5 / 1,513.
* H200 (SXM): NVIDIA H200 Tensor Core GPU datasheet: BF16 1,979 / FP8 3,958 TFLOPS with sparsity: dense 989.5 / 1,979.
* B200 (HGX, 1,000 W): NVIDIA HGX B200 datasheet, per GPU: FP16/BF16 4.5 / FP8 9 PFLOPS with sparsity:
  dense 2,250 / 4,500.
* MI300X: AMD Instinct MI300X datasheet: peak BF16 1,307.4 and FP8 2,614.9 TFLOPS (dense; 2,614.9 / 5,229.8 with
  sparsity).
* L40S: NVIDIA L40S datasheet: BF16 362.05 and FP8 733 TFLOPS dense (733 / 1,466 with sparsity).
* RTX 4090: NVIDIA Ada Lovelace GPU architecture whitepaper, appendix table: peak BF16 tensor TFLOPS with FP32
  accumulate 165.2 (330.4 with sparsity), FP8 with FP32 accumulate 330.3 (660.6); the GeForce cards run FP16/BF16
  with FP32 accumulate at half the FP16-accumulate rate, and training accumulates in FP32.

More parts, each figure from the document named:

* H20: NVIDIA HGX H20 specification (NVIDIA's product brief for the China market, not on nvidia.com; the figures
  as the press reported them): 96 GB HBM3, 4.0 TB/s; FP16/BF16 148 and FP8 296 TFLOPS dense.
* GB200 (one Blackwell GPU of a GB200 NVL72, 1,200 W): NVIDIA GB200 NVL72 datasheet, per GB200 superchip (one Grace
  CPU, two Blackwell GPUs): FP16/BF16 10 and FP8 20 PFLOPS with sparsity, 372 GB HBM3e at 16 TB/s: per GPU dense
  2,500 / 5,000 TFLOPS, 186 GB, 8 TB/s. (Earlier editions of the datasheet said 384 GB per superchip.)
* B300 (HGX, Blackwell Ultra): NVIDIA HGX B300 datasheet, eight GPUs: FP16/BF16 36 and FP8 72 PFLOPS with sparsity,
  up to 2.3 TB of HBM3e at 64 TB/s: per GPU dense 2,250 / 4,500 TFLOPS, 288 GB, 8 TB/s.
* MI325X: AMD Instinct MI325X datasheet: 256 GB HBM3E, 6 TB/s; peak BF16 1,307.4 and FP8 2,614.9 TFLOPS dense
  (the MI300X's compute die).
* MI355X: AMD Instinct MI355X datasheet: 288 GB HBM3E, 8 TB/s; peak BF16 2.5 and FP8 5.0 PFLOPS dense, which are
  4,096 and 8,192 FLOPs per clock per compute unit (CDNA 4 whitepaper) × 256 CUs × 2.4 GHz: 2,516.6 and 5,033.2.
* L4: NVIDIA L4 Tensor Core GPU datasheet: 24 GB GDDR6, 300 GB/s; BF16 242 and FP8 485 TFLOPS with sparsity:
  dense 121 / 242.5.
* A10: NVIDIA A10 Tensor Core GPU datasheet: 24 GB GDDR6, 600 GB/s; BF16 125 TFLOPS dense (250 with sparsity);
  no FP8 tensor cores.
* RTX 5090: NVIDIA RTX Blackwell GPU architecture whitepaper, appendix table: 32 GB GDDR7, 1,792 GB/s; peak BF16
  tensor TFLOPS with FP32 accumulate 209.5 (419 with sparsity), FP8 with FP32 accumulate 419 (838), as for the
  RTX 4090 above.
* RTX 3090: NVIDIA Ampere GA102 GPU architecture whitepaper, appendix table: 24 GB GDDR6X, 936 GB/s; peak BF16
  tensor TFLOPS with FP32 accumulate 71 (142 with sparsity); no FP8 tensor cores.
* Apple M2 Ultra, M3 Ultra, M4 Max: unified memory shared by CPU and GPU, the largest configuration Apple sells:
  Apple's newsroom announcements (June 2023: M2 Ultra up to 192 GB at 800 GB/s; March 2025: M3 Ultra up to 512 GB
  at 819 GB/s; October 2024: M4 Max up to 128 GB at 546 GB/s, the 16-core-CPU part). Apple states no bf16 or fp8
  matrix peak: give ``--peak-tflops`` where a peak is needed. Not all of the unified memory can hold a GPU's
  tensors (macOS caps the GPU's share by default).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from fractions import Fraction

from .errors import LlmcountError, UnknownName


@dataclass(frozen=True)
class GPU:
    name: str
    title: str
    bf16: Fraction | None  # dense TFLOPS; None where the maker states none (Apple)
    fp8: Fraction | None
    source: str
    memory_gb: Fraction  # as the datasheet states it, GB = 10^9 bytes
    bandwidth_gbs: Fraction  # peak memory bandwidth, GB/s

    @property
    def memory_bytes(self) -> int:
        """The datasheet's memory in bytes (GB = 10^9)."""
        return int(self.memory_gb * 10**9)

    def peak_tflops(self, dtype: str) -> Fraction:
        """The dense peak in TFLOPS for ``bf16`` or ``fp8``; LlmcountError when the GPU has no such tensor cores."""
        peak = self.bf16 if dtype == "bf16" else self.fp8
        if self.bf16 is None:
            raise LlmcountError(f"--gpu: the maker of the {self.title} states no {dtype} peak; give --peak-tflops")
        if peak is None:
            raise LlmcountError(f"--dtype: the {self.title} has no {dtype} tensor cores; use bf16 or --peak-tflops")
        return peak


def _gpu(
    name: str, title: str, bf16: str | None, fp8: str | None, source: str, memory_gb: str, bandwidth_gbs: str
) -> GPU:
    return GPU(
        name,
        title,
        Fraction(bf16) if bf16 else None,
        Fraction(fp8) if fp8 else None,
        source,
        Fraction(memory_gb),
        Fraction(bandwidth_gbs),
    )


GPUS: dict[str, GPU] = {
    g.name: g
    for g in (
        _gpu("a100-sxm", "A100 SXM", "312", None, "NVIDIA A100 datasheet", "80", "2039"),
        _gpu("h100-sxm", "H100 SXM", "989.5", "1979", "NVIDIA H100 datasheet (with sparsity / 2)", "80", "3350"),
        _gpu("h100-pcie", "H100 PCIe", "756.5", "1513", "NVIDIA H100 datasheet (with sparsity / 2)", "80", "2000"),
        _gpu("h200", "H200 SXM", "989.5", "1979", "NVIDIA H200 datasheet (with sparsity / 2)", "141", "4800"),
        _gpu("b200", "B200 (HGX)", "2250", "4500", "NVIDIA HGX B200 datasheet (with sparsity / 2)", "180", "8000"),
        _gpu("mi300x", "MI300X", "1307.4", "2614.9", "AMD Instinct MI300X datasheet", "192", "5300"),
        _gpu("l40s", "L40S", "362.05", "733", "NVIDIA L40S datasheet", "48", "864"),
        _gpu(
            "rtx-4090", "RTX 4090", "165.2", "330.3", "NVIDIA Ada Lovelace whitepaper (FP32 accumulate)", "24", "1008"
        ),
        _gpu("h20", "H20", "148", "296", "NVIDIA HGX H20 specification, as reported", "96", "4000"),
        _gpu(
            "gb200",
            "GB200 (per GPU)",
            "2500",
            "5000",
            "NVIDIA GB200 NVL72 datasheet (with sparsity / 2)",
            "186",
            "8000",
        ),
        _gpu("b300", "B300 (HGX)", "2250", "4500", "NVIDIA HGX B300 datasheet (with sparsity / 2)", "288", "8000"),
        _gpu("mi325x", "MI325X", "1307.4", "2614.9", "AMD Instinct MI325X datasheet", "256", "6000"),
        _gpu("mi355x", "MI355X", "2516.6", "5033.2", "AMD Instinct MI355X datasheet, CDNA 4 whitepaper", "288", "8000"),
        _gpu("l4", "L4", "121", "242.5", "NVIDIA L4 datasheet (with sparsity / 2)", "24", "300"),
        _gpu("a10", "A10", "125", None, "NVIDIA A10 datasheet", "24", "600"),
        _gpu("rtx-5090", "RTX 5090", "209.5", "419", "NVIDIA RTX Blackwell whitepaper (FP32 accumulate)", "32", "1792"),
        _gpu("rtx-3090", "RTX 3090", "71", None, "NVIDIA Ampere GA102 whitepaper (FP32 accumulate)", "24", "936"),
        _gpu("m2-ultra", "Apple M2 Ultra (unified memory)", None, None, "Apple newsroom, June 2023", "192", "800"),
        _gpu("m3-ultra", "Apple M3 Ultra (unified memory)", None, None, "Apple newsroom, March 2025", "512", "819"),
        _gpu("m4-max", "Apple M4 Max (unified memory)", None, None, "Apple newsroom, October 2024", "128", "546"),
    )
}
ALIASES = {
    "a100": "a100-sxm",
    "h100": "h100-sxm",
    "h200-sxm": "h200",
    "rtx4090": "rtx-4090",
    "4090": "rtx-4090",
    "rtx5090": "rtx-5090",
    "5090": "rtx-5090",
    "rtx3090": "rtx-3090",
    "3090": "rtx-3090",
    "b300-hgx": "b300",
    "b200-hgx": "b200",
    "m2ultra": "m2-ultra",
    "m3ultra": "m3-ultra",
    "m4max": "m4-max",
}
KNOWN = ", ".join(GPUS)
"""The GPU names, for the help of every option that takes one."""
MAKERS = ("nvidia-", "amd-", "apple-", "geforce-", "instinct-")  # a maker's name typed before the part's: dropped


def gpu(name: str) -> GPU:
    """A GPU by name (``h100-sxm``, ``H100``, ``rtx4090``); LlmcountError listing the known ones otherwise."""
    key = name.strip().lower().replace("_", "-").replace(" ", "-")[:80]
    while key.startswith(MAKERS):
        key = key.partition("-")[2]
    key = ALIASES.get(key, key)
    if key not in GPUS:
        close = closest(key)
        hint = f"; closest: {', '.join(close)}" if close else ""
        shown = name if len(name) <= 40 else name[:39] + "…"
        raise UnknownName(f"--gpu: unknown GPU {shown!r}{hint}; known: {', '.join(GPUS)} (or give --peak-tflops)")
    return GPUS[key]


def closest(key: str) -> list[str]:
    """The known GPU names closest to ``key`` (difflib's ratio, aliases counted as their GPU), best first."""
    names = [*GPUS, *ALIASES]
    found = difflib.get_close_matches(key, names, n=6, cutoff=0.5)
    return list(dict.fromkeys(ALIASES.get(match, match) for match in found))[:3]


def peak(gpu_name: str | None, peak_tflops: str | float | None, dtype: str) -> tuple[Fraction, str]:
    """The dense peak per GPU (TFLOPS) and the GPU's title ("" for a stated peak): from the table by name, or
    the stated number; exactly one of the two. LlmcountError naming the option otherwise."""
    from .sizes import parse_positive

    if (gpu_name is None) == (peak_tflops is None):
        raise LlmcountError("give one of --gpu NAME and --peak-tflops NUMBER")
    if gpu_name is not None:
        card = gpu(gpu_name)
        return card.peak_tflops(dtype), card.title
    return parse_positive(str(peak_tflops), "--peak-tflops"), ""
