#include "gpu/gpu_input_generator.h"

#include "support/errors.h"

#include <string>

namespace s2tp {
namespace {

std::uint32_t u32(std::int64_t value) { return static_cast<std::uint32_t>(value); }

const char *tensor_name(std::uint32_t which) {
    return which == S2TP_GENERATED_Q ? "q" : which == S2TP_GENERATED_K ? "k" : "v";
}

}  // namespace

s2tp_generate_params generate_params(const AttentionShape &shape, std::uint32_t which, std::uint64_t seed,
                                     void *output) {
    const bool kv = which != S2TP_GENERATED_Q;
    const std::int64_t heads = kv ? shape.heads_kv : shape.heads_q;
    const std::int64_t len = kv ? shape.len_kv : shape.len_q;
    const std::int64_t d = shape.head_dim;
    s2tp_generate_params p{};
    p.output = output;
    p.seed = seed;
    p.tensor = which;
    p.batch = u32(shape.batch), p.heads = u32(heads), p.len = u32(len), p.head_dim = u32(d);
    p.stride_bz = u32(len * heads * d);
    if (shape.layout == Layout::nhd) p.stride_seq = u32(heads * d), p.stride_h = u32(d);
    else p.stride_seq = u32(d), p.stride_h = u32(len * d);
    return p;
}

DeviceInputs generate_inputs_on_gpu(const CubinModule &quantize_module, const AttentionShape &shape, DType dtype,
                                    std::uint64_t seed) {
    shape.validate("GPU input generator");
    if (dtype != DType::f16 && dtype != DType::bf16)
        fail(ExitCode::usage, std::string("GPU input generator: dtype must be f16 or bf16, not ") + dtype_name(dtype));
    const Kernel kernel =
        quantize_module.function(dtype == DType::f16 ? "s2tp_generate_inputs_f16" : "s2tp_generate_inputs_bf16");
    DeviceInputs inputs;
    inputs.q = DeviceBuffer(static_cast<std::size_t>(shape_numel(shape.q_shape())) * dtype_size(dtype), "q input");
    inputs.k = DeviceBuffer(static_cast<std::size_t>(shape_numel(shape.kv_shape())) * dtype_size(dtype), "k input");
    inputs.v = DeviceBuffer(inputs.k.size(), "v input");
    for (std::uint32_t which : {S2TP_GENERATED_Q, S2TP_GENERATED_K, S2TP_GENERATED_V}) {
        DeviceBuffer &out = which == S2TP_GENERATED_Q ? inputs.q : which == S2TP_GENERATED_K ? inputs.k : inputs.v;
        const s2tp_generate_params p = generate_params(shape, which, seed, out.get());
        const std::uint64_t elements = std::uint64_t{p.batch} * p.heads * p.len * p.head_dim;
        const auto blocks = static_cast<unsigned>((elements + S2TP_GENERATE_THREADS - 1) / S2TP_GENERATE_THREADS);
        kernel.launch({blocks, 1, 1}, {S2TP_GENERATE_THREADS, 1, 1}, 0, &p, sizeof p, nullptr,
                      std::string("generating ") + tensor_name(which) + " of " + shape.to_string() + " " +
                          dtype_name(dtype) + ", seed " + std::to_string(seed));
    }
    synchronize("generating the inputs of " + shape.to_string() + " " + dtype_name(dtype) + " on the GPU");
    return inputs;
}

}  // namespace s2tp
