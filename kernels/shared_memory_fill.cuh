// The shared-memory fill of the quantization cubin (kernels/quantize.cu includes it): before each parity
// launch every SM's shared memory is filled with 0xFF bytes, so that a kernel that reads shared memory it
// never wrote (a tail tile loaded without zero-fill, say) reads NaN rather than what the kernel before it
// left, which is often zeros and hides the bug (gpu/attention_launch.h, fill_shared_memory_with_nan).
#pragma once

#include <cstdint>

#include "sage2tp_abi.h"

extern "C" __global__ void s2tp_fill_shared_nan(const s2tp_fill_shared_params params) {
    extern __shared__ __align__(16) uint8_t fill_smem[];
    const uint32_t base = static_cast<uint32_t>(__cvta_generic_to_shared(fill_smem));
    // Volatile stores: nothing reads them in this kernel, and the compiler must not drop them.
    for (uint32_t offset = threadIdx.x * 16; offset + 16 <= params.bytes; offset += blockDim.x * 16)
        asm volatile("st.shared.v4.u32 [%0], {%1, %1, %1, %1};\n" ::"r"(base + offset), "r"(0xFFFFFFFFu) : "memory");
}
