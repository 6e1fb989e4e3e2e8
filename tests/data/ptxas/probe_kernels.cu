// Source of the recorded real ptxas report nvcc13_sm90a_probe.log (tests/test_ptxas_report.cpp).
// Each kernel exercises one shape of the report: an extern "C" (unmangled) entry, a templated entry
// that calls a non-entry __noinline__ function (a "Function properties" block with no entry line), and
// an entry that spills under -maxrregcount=32 (warnings before the module line). Regenerate with:
//   /usr/local/cuda/bin/nvcc -cubin -gencode=arch=compute_90a,code=sm_90a -O3 -maxrregcount=32 \
//     -Xptxas -v,-warn-spills,-warn-lmem-usage probe_kernels.cu -o /tmp/probe_kernels.cubin \
//     2> nvcc13_sm90a_probe.log

extern "C" __global__ void probe_tile_shift(const float *in, float *out, int n) {
    __shared__ float tile[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    tile[threadIdx.x] = i < n ? in[i] : 0.f;
    __syncthreads();
    if (i < n) out[i] = tile[(threadIdx.x + 1) % 256];
}

// The local array indexed at run time forces a stack frame in the callee.
__device__ __noinline__ float probe_pick(float x) {
    float table[16];
    for (int k = 0; k < 16; ++k) table[k] = x * k;
    return table[static_cast<int>(x) & 15];
}

template <int Scale>
__global__ void probe_scaled(float *out) {
    out[threadIdx.x] = probe_pick(out[threadIdx.x]) * Scale;
}
template __global__ void probe_scaled<4>(float *);

// 24 float4 values live at once: 96 registers of data, far above the 32-register cap.
__global__ void probe_spill(const float4 *in, float *out) {
    float4 v[24];
#pragma unroll
    for (int k = 0; k < 24; ++k) v[k] = in[threadIdx.x + k * blockDim.x];
    float acc = 0.f;
#pragma unroll
    for (int k = 0; k < 24; ++k) acc += v[k].x * v[(k + 5) % 24].y + v[k].z * v[(k + 11) % 24].w;
    out[threadIdx.x] = acc;
}
