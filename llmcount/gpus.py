"""A few accelerators: dense (non-sparse) peak tensor throughput, bf16 and fp8, in TFLOPS (10^12 FLOP/s); memory
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
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from .errors import LlmcountError


@dataclass(frozen=True)
class GPU:
    name: str
    title: str
    bf16: Fraction  # dense TFLOPS
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
        if peak is None:
            raise LlmcountError(f"--dtype: the {self.title} has no {dtype} tensor cores; use bf16 or --peak-tflops")
        return peak


def _gpu(name: str, title: str, bf16: str, fp8: str | None, source: str, memory_gb: str, bandwidth_gbs: str) -> GPU:
    return GPU(
        name,
        title,
        Fraction(bf16),
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
    )
}
ALIASES = {"a100": "a100-sxm", "h100": "h100-sxm", "h200-sxm": "h200", "rtx4090": "rtx-4090", "4090": "rtx-4090"}


def gpu(name: str) -> GPU:
    """A GPU by name (``h100-sxm``, ``H100``, ``rtx4090``); LlmcountError listing the known ones otherwise."""
    key = name.strip().lower().replace("_", "-").replace(" ", "-")
    key = ALIASES.get(key, key)
    if key not in GPUS:
        raise LlmcountError(f"--gpu: unknown GPU {name!r}; known: {', '.join(GPUS)} (or give --peak-tflops)")
    return GPUS[key]


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
