// The SM clock probe of the quantization cubin (kernels/quantize.cu includes it): one thread spins for
// spin_ns of %globaltimer and reports the clock64 cycles that passed meanwhile, so the host reads the SM
// clock without changing any GPU setting (gpu/gpu_runtime.h, SmClockProbe).
#pragma once

#include <cstdint>

#include "sage2tp_abi.h"

namespace s2tp {
namespace {

__device__ __forceinline__ unsigned long long read_globaltimer() {
    unsigned long long ns;
    asm volatile("mov.u64 %0, %%globaltimer;\n" : "=l"(ns));
    return ns;
}

__device__ __forceinline__ unsigned long long read_clock64() {
    unsigned long long cycles;
    asm volatile("mov.u64 %0, %%clock64;\n" : "=l"(cycles));
    return cycles;
}

}  // namespace
}  // namespace s2tp

extern "C" __global__ void s2tp_sm_clock_probe(const s2tp_clock_probe_params params) {
    if (threadIdx.x != 0 || blockIdx.x != 0) {
        return;
    }
    const unsigned long long start_ns = s2tp::read_globaltimer();
    const unsigned long long start_cycles = s2tp::read_clock64();
    unsigned long long now_ns;
    unsigned long long now_cycles;
    do {
        now_ns = s2tp::read_globaltimer();
        now_cycles = s2tp::read_clock64();
    } while (now_ns - start_ns < params.spin_ns);
    params.out[0] = now_cycles - start_cycles;
    params.out[1] = now_ns - start_ns;
}
