"""Published peaks of the GPU the near-memory studies compare against (NOVA Sec. VI-A, SNAKE Secs. 6.3-6.4).

References
----------
NVIDIA H100 Tensor Core GPU datasheet, SXM5: 989 TFLOPS dense BF16 (without sparsity), 80 GB HBM3 at 3.35 TB/s.
"""

from __future__ import annotations

H100_FLOPS = 989e12
"""NVIDIA H100 SXM5 dense BF16 Tensor Core peak, FLOP/s (H100 datasheet: 989 TFLOPS without sparsity)."""

H100_HBM_Bps = 3.35e12
"""NVIDIA H100 SXM5 80 GB HBM3 bandwidth, bytes/s (H100 datasheet: 3.35 TB/s)."""
