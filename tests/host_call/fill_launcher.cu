// A launcher file in the style of upstream SageAttention's, for test_host_call: a host function that
// checks its tensor with TORCH_CHECK and assert, allocates through torch::empty, and launches a kernel.
#include <torch/extension.h>

#include <cassert>

__global__ void fill_kernel(float *out, int count, float value) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < count) out[i] = value;
}

// mode 0: fill `out`; 1: return a new tensor of out's size; 2: return without launching; 7: fail an assert.
torch::Tensor fill_out(torch::Tensor out, int mode, float value) {
    TORCH_CHECK(out.scalar_type() == torch::kFloat32, "Tensor out must have dtype (torch::kFloat32)");
    TORCH_CHECK(out.is_contiguous(), "Tensor out must be contiguous");
    assert(mode != 7);
    if (mode == 2) return torch::empty({0});
    torch::Tensor target = mode == 1 ? torch::empty(out.sizes(), out.options()) : out;
    const int count = static_cast<int>(target.numel());
    fill_kernel<<<(count + 127) / 128, 128>>>(target.data_ptr<float>(), count, value);
    return mode == 1 ? target : torch::empty({0});
}
