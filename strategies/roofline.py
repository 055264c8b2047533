"""Per-target machine figures for the analytical cost estimate, and the work an implementation does.

An estimate is `launches * launch_us + max(flops / peak_flops, bytes / bandwidth)` in microseconds:
the slower of compute and memory traffic (the roofline), plus a fixed cost per kernel launch. The
shipped figures describe the hardware each target stands for, so the estimates prefer different
programs where the hardware would: a GPU has far more FLOP/s per byte of bandwidth than a CPU and
pays a launch overhead per kernel, so fusing kernels and cutting memory traffic pay more there,
while cutting FLOPs (e.g. Winograd) pays more on the CPU.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Roofline", "Work", "CPU_ROOFLINE", "CUDA_ROOFLINE"]


@dataclass(frozen=True)
class Roofline:
    """Peak rates of one device; every estimate built on it is in microseconds."""

    peak_gflops: float       # sustained float32 GFLOP/s of a well-blocked GEMM
    bandwidth_gbps: float    # sustained memory bandwidth, GB/s
    launch_us: float         # fixed cost of starting one kernel (dispatch, launch), microseconds

    def time_us(self, work: "Work") -> float:
        """The estimated latency of `work` on this device, in microseconds."""
        compute_us = work.flops / (self.peak_gflops * 1e3 * work.efficiency)
        memory_us = work.bytes / (self.bandwidth_gbps * 1e3)
        return work.launches * self.launch_us + max(compute_us, memory_us)


@dataclass(frozen=True)
class Work:
    """What one implementation does for one workload."""

    flops: float             # floating-point operations (a multiply-add counts 2)
    bytes: float             # bytes read and written in main memory
    launches: int = 1        # kernels started
    efficiency: float = 1.0  # fraction of the device's peak FLOP/s this algorithm reaches

    def __add__(self, other: "Work") -> "Work":
        flops = self.flops + other.flops
        # the combined efficiency keeps the total compute time of both parts
        time = self.flops / self.efficiency + other.flops / other.efficiency
        return Work(flops, self.bytes + other.bytes, self.launches + other.launches,
                    flops / time if time else 1.0)

    def scaled(self, flops: float = 1.0, bytes: float = 1.0, efficiency: float = 1.0) -> "Work":
        """This work with FLOPs, bytes and efficiency multiplied by the given factors."""
        return Work(self.flops * flops, self.bytes * bytes, self.launches, self.efficiency * efficiency)


#: a two-core AVX-512 x86 host running numpy/OpenBLAS kernels from Python; measured there: 100-170
#: GFLOP/s for one core's sgemm, 30 GB/s for warm element-wise passes (about half with fresh
#: allocations), 6-8 µs of executor dispatch per call
CPU_ROOFLINE = Roofline(peak_gflops=100.0, bandwidth_gbps=15.0, launch_us=6.0)
#: a datacenter GPU (H100/H200 class: float32 without tensor cores, HBM3) driven through CUDA launches
CUDA_ROOFLINE = Roofline(peak_gflops=50_000.0, bandwidth_gbps=4_000.0, launch_us=6.0)
