#include "gpu/attention_launch.h"

#include "support/errors.h"
#include "formats/tensor_io.h"

#include <cuda_runtime_api.h>

#include <cmath>
#include <limits>
#include <utility>

namespace s2tp {
namespace {

std::uint32_t u32(std::int64_t value) { return static_cast<std::uint32_t>(value); }

const char *dtype_suffix(DType dtype) { return dtype == DType::f16 ? "f16" : "bf16"; }

std::size_t bytes_of(DType dtype, const Shape &shape) {
    return static_cast<std::size_t>(shape_numel(shape)) * dtype_size(dtype);
}

DeviceBuffer allocate(DType dtype, const Shape &shape, const std::string &what) {
    return DeviceBuffer(bytes_of(dtype, shape), what);
}

// A host tensor the kernels will read must have exactly the geometry the launch assumes.
void require(const Tensor &tensor, DType dtype, const Shape &shape, const std::string &what) {
    TensorRequest request;
    request.dtype = dtype;
    request.shape = shape;
    // Quantized tensors may legitimately hold NaN: an all-zero V channel quantizes to e4m3 NaN.
    request.require_finite = false;
    check_tensor(tensor, request, what);
}

// quantize.cu's entries (less their dtype suffix) for the Q/K blocks and V each recipe names.
struct Int8Entry {
    QkGranularity granularity;
    std::int64_t block, warp;  // K per warp: one scale per block, its warp unused (any)
    const char *entry;
};
constexpr std::int64_t kAnyWarp = 0;
constexpr Int8Entry kQEntries[] = {
    {QkGranularity::per_warp, 128, 32, "s2tp_quant_q_int8_"},            // sm89, sm80
    {QkGranularity::per_warp, 64, 16, "s2tp_quant_q_int8_sm90_"},        // sm90
    {QkGranularity::per_warp, 128, 16, "s2tp_quant_q_int8_warp16_"},     // sm80 inst_buf at head dim 128
    {QkGranularity::per_thread, 128, 32, "s2tp_quant_q_int8_per_thread_warp32_"},
    {QkGranularity::per_thread, 64, 16, "s2tp_quant_q_int8_per_thread_sm90_"},
    {QkGranularity::per_thread, 128, 16, "s2tp_quant_q_int8_per_thread_warp16_"},
};
constexpr Int8Entry kKEntries[] = {
    {QkGranularity::per_warp, 64, kAnyWarp, "s2tp_quant_k_int8_"},
    {QkGranularity::per_warp, 128, kAnyWarp, "s2tp_quant_k_int8_sm90_"},
    {QkGranularity::per_thread, 64, 64, "s2tp_quant_k_int8_per_thread_warp64_"},
    {QkGranularity::per_thread, 128, 128, "s2tp_quant_k_int8_per_thread_sm90_"},
};

struct QuantizerEntries {
    std::string q, k, v;
};

std::string blocks_text(const Int8Entry &e) {
    return std::string(granularity_name(e.granularity)) + " " + std::to_string(e.block) +
           (e.warp == kAnyWarp ? "" : "/" + std::to_string(e.warp));
}

template <std::size_t N>
const Int8Entry *find_int8_entry(const Int8Entry (&table)[N], QkGranularity granularity, std::int64_t block,
                                 std::int64_t warp) {
    for (const Int8Entry &e : table)
        if (e.granularity == granularity && e.block == block && (e.warp == kAnyWarp || e.warp == warp)) return &e;
    return nullptr;
}

template <std::size_t N>
std::string int8_entries_text(const Int8Entry (&table)[N]) {
    std::string text;
    for (const Int8Entry &e : table) text += (text.empty() ? "" : ", ") + blocks_text(e);
    return text;
}

// Error(usage) naming the recipe and what the kernels cover, when no kernel quantizes as it says.
QuantizerEntries quantizer_entries(const QuantizationRecipe &recipe, const std::string &context) {
    const auto unsupported = [&](const std::string &why) {
        fail(ExitCode::usage, "quantizing " + context + ": " + recipe.describe() + ": " + why);
    };
    const Int8Entry *q = find_int8_entry(kQEntries, recipe.qk.granularity, recipe.qk.q_block, recipe.qk.q_warp);
    if (!q) unsupported("sage2tp's GPU quantizer has Q kernels only for blocks/warps " + int8_entries_text(kQEntries));
    const Int8Entry *k = find_int8_entry(kKEntries, recipe.qk.granularity, recipe.qk.k_block, recipe.qk.k_warp);
    if (!k) unsupported("sage2tp's GPU quantizer has K kernels only for blocks/warps " + int8_entries_text(kKEntries));
    if (recipe.v_format == VFormat::f16) return {q->entry, k->entry, "s2tp_convert_v_f16_"};
    if (recipe.v_pad_tokens != S2TP_SM90_V_PAD_TOKENS && recipe.v_pad_tokens != QuantizationRecipe{}.v_pad_tokens)
        unsupported("sage2tp's GPU quantizer pads e4m3 V only to 64 or 128 tokens");
    if (recipe.smooth_v && recipe.v_pad_tokens != QuantizationRecipe{}.v_pad_tokens)
        unsupported("the V mean is subtracted from e4m3 V only with the sm89 path's padding to 64 tokens");
    return {q->entry, k->entry,
            recipe.v_pad_tokens == S2TP_SM90_V_PAD_TOKENS ? "s2tp_quant_v_fp8_pad128_" : "s2tp_quant_v_fp8_"};
}

}  // namespace

AttentionStrides attention_strides(const AttentionShape &shape, std::int64_t v_pad_tokens) {
    const std::int64_t d = shape.head_dim;
    const std::int64_t padded = v_fp8_shape(shape, v_pad_tokens)[3];
    AttentionStrides s{};
    if (shape.layout == Layout::nhd) {  // [B, N, H, D]; V fp8 [B, D, Hk, Npad]
        s.bz_q = u32(shape.len_q * shape.heads_q * d), s.seq_q = u32(shape.heads_q * d), s.h_q = u32(d);
        s.bz_kv = u32(shape.len_kv * shape.heads_kv * d), s.seq_kv = u32(shape.heads_kv * d), s.h_kv = u32(d);
        s.bz_v = u32(d * shape.heads_kv * padded), s.h_v = u32(padded), s.d_v = u32(shape.heads_kv * padded);
    } else {  // [B, H, N, D]; V fp8 [B, Hk, D, Npad]
        s.bz_q = u32(shape.heads_q * shape.len_q * d), s.seq_q = u32(d), s.h_q = u32(shape.len_q * d);
        s.bz_kv = u32(shape.heads_kv * shape.len_kv * d), s.seq_kv = u32(d), s.h_kv = u32(shape.len_kv * d);
        s.bz_v = u32(shape.heads_kv * d * padded), s.h_v = u32(d * padded), s.d_v = u32(padded);
    }
    // [B, 1, Hk, D] and [B, Hk, 1, D] are both [B, Hk, D] in memory.
    s.bz_mean = u32(shape.heads_kv * d), s.h_mean = u32(d);
    return s;
}

Shape lse_shape(const AttentionShape &shape) { return {shape.batch, shape.heads_q, shape.len_q}; }

// ---- Quantized inputs ----

DeviceInputs upload_inputs(const AttentionProblem &problem, const Tensor &q, const Tensor &k, const Tensor &v) {
    problem.validate();
    const AttentionShape &shape = problem.shape;
    const std::string context = problem.describe();
    require(q, problem.dtype, shape.q_shape(), "q for " + context);
    require(k, problem.dtype, shape.kv_shape(), "k for " + context);
    require(v, problem.dtype, shape.kv_shape(), "v for " + context);
    DeviceInputs inputs;
    inputs.q = upload(q, "q input");
    inputs.k = upload(k, "k input");
    inputs.v = upload(v, "v input");
    return inputs;
}

DeviceQuantizedInputs quantize_on_gpu(const CubinModule &quantize_module, const AttentionProblem &problem,
                                      const Tensor &q, const Tensor &k, const Tensor &v, const GivenMeans &given,
                                      const QuantizationRecipe &recipe) {
    return quantize_on_gpu(quantize_module, problem, upload_inputs(problem, q, k, v), given, recipe);
}

InputsByRecipe::InputsByRecipe(const CubinModule &quantize_module, const AttentionProblem &problem, DeviceInputs inputs)
    : quantize_(quantize_module), problem_(problem), inputs_(std::move(inputs)) {}

const DeviceQuantizedInputs &InputsByRecipe::get(const QuantizationRecipe &recipe) {
    for (const auto &[made_for, set] : sets_)
        if (made_for == recipe) return *set;
    if (inputs_.q.size() == 0)
        fail(ExitCode::internal, "quantizing " + problem_.describe() + " for another recipe after its q, k, v were freed");
    sets_.emplace_back(recipe,
                       std::make_unique<DeviceQuantizedInputs>(quantize_on_gpu(quantize_, problem_, inputs_, {}, recipe)));
    return *sets_.back().second;
}

void InputsByRecipe::release_unquantized() { inputs_ = DeviceInputs{}; }

DeviceQuantizedInputs quantize_on_gpu(const CubinModule &quantize_module, const AttentionProblem &problem,
                                      const DeviceInputs &inputs, const GivenMeans &given,
                                      const QuantizationRecipe &recipe) {
    problem.validate();
    const AttentionShape &shape = problem.shape;
    const std::string context = problem.describe();
    const DType dtype = problem.dtype;
    for (const auto &[buffer, tensor_shape] : {std::pair<const DeviceBuffer *, Shape>{&inputs.q, shape.q_shape()},
                                               {&inputs.k, shape.kv_shape()}, {&inputs.v, shape.kv_shape()}})
        if (buffer->size() != bytes_of(dtype, tensor_shape))
            fail(ExitCode::internal, "quantizing " + context + ": " + buffer->what() + " has " +
                                         std::to_string(buffer->size()) + " bytes, not the " +
                                         std::to_string(bytes_of(dtype, tensor_shape)) + " of " + dtype_name(dtype) +
                                         " " + shape_to_string(tensor_shape));
    const DeviceBuffer &q_in = inputs.q, &k_in = inputs.k, &v_in = inputs.v;
    const std::string suffix = dtype_suffix(dtype);
    const Shape q_scales = q_scale_shape(shape, recipe.qk), k_scales = k_scale_shape(shape, recipe.qk);
    const QuantizerEntries entries = quantizer_entries(recipe, context);
    DeviceQuantizedInputs out;
    out.recipe = recipe;
    out.q_int8 = allocate(DType::i8, shape.q_shape(), "q_int8");
    out.q_scale = allocate(DType::f32, q_scales, "q_scale");
    out.k_int8 = allocate(DType::i8, shape.kv_shape(), "k_int8");
    out.k_scale = allocate(DType::f32, k_scales, "k_scale");
    const AttentionStrides s = attention_strides(shape, recipe.v_pad_tokens);
    const std::uint32_t batch = u32(shape.batch), d = u32(shape.head_dim);

    // The per-channel mean of K or V (s2tp_{k,v}_mean_*) into `mean`.
    const auto channel_mean = [&](const char *entry, const DeviceBuffer &input, DeviceBuffer &mean) {
        s2tp_k_mean_params p{};
        p.input = input.get();
        p.mean = mean.get();
        p.batch = batch, p.heads = u32(shape.heads_kv), p.len = u32(shape.len_kv), p.head_dim = d;
        p.stride_bz_in = s.bz_kv, p.stride_seq_in = s.seq_kv, p.stride_h_in = s.h_kv;
        p.stride_bz_mean = s.bz_mean, p.stride_h_mean = s.h_mean;
        quantize_module.function(entry + suffix)
            .launch({u32(shape.heads_kv), batch, 1}, {d, 1, 1}, 0, &p, sizeof p, nullptr, entry + (", " + context));
    };
    if (given.k_mean) {
        require(*given.k_mean, dtype, k_mean_shape(shape), "k_mean for " + context);
        out.k_mean = upload(*given.k_mean, "k_mean");
    } else {
        out.k_mean = allocate(dtype, k_mean_shape(shape), "k_mean");
        channel_mean("s2tp_k_mean_", k_in, out.k_mean);
    }

    s2tp_quant_int8_params qp{};
    qp.input = q_in.get();
    qp.mean = nullptr;
    qp.output = out.q_int8.as<std::int8_t>();
    qp.scale = out.q_scale.as<float>();
    qp.batch = batch, qp.heads = u32(shape.heads_q), qp.len = u32(shape.len_q), qp.head_dim = d;
    qp.stride_bz_in = s.bz_q, qp.stride_seq_in = s.seq_q, qp.stride_h_in = s.h_q;
    qp.stride_bz_out = s.bz_q, qp.stride_seq_out = s.seq_q, qp.stride_h_out = s.h_q;
    // One CTA per scale group (per warp) or per scale (per thread).
    quantize_module.function(entries.q + suffix)
        .launch({u32(q_scales[2]), u32(shape.heads_q), batch}, {S2TP_QUANT_INT8_THREADS, 1, 1}, 0, &qp,
                sizeof qp, nullptr, "q int8, " + context);

    s2tp_quant_int8_params kp{};
    kp.input = k_in.get();
    kp.mean = out.k_mean.get();
    kp.output = out.k_int8.as<std::int8_t>();
    kp.scale = out.k_scale.as<float>();
    kp.batch = batch, kp.heads = u32(shape.heads_kv), kp.len = u32(shape.len_kv), kp.head_dim = d;
    kp.stride_bz_in = s.bz_kv, kp.stride_seq_in = s.seq_kv, kp.stride_h_in = s.h_kv;
    kp.stride_bz_mean = s.bz_mean, kp.stride_h_mean = s.h_mean;
    kp.stride_bz_out = s.bz_kv, kp.stride_seq_out = s.seq_kv, kp.stride_h_out = s.h_kv;
    quantize_module.function(entries.k + suffix)
        .launch({u32(k_scales[2]), u32(shape.heads_kv), batch}, {S2TP_QUANT_INT8_THREADS, 1, 1}, 0,
                &kp, sizeof kp, nullptr, "k int8, " + context);

    const DType mean_dtype = v_mean_dtype(recipe, dtype);
    if (recipe.smooth_v && given.v_mean) {
        require(*given.v_mean, mean_dtype, v_mean_shape(shape), "v_mean for " + context);
        out.v_mean = upload(*given.v_mean, "v_mean");
    } else if (recipe.smooth_v) {
        out.v_mean = allocate(mean_dtype, v_mean_shape(shape), "v_mean");
        // fp16 V's mean is sub_mean's, in V's dtype: the K mean's kernel; e4m3 V's is per_channel_fp8's.
        channel_mean(recipe.v_format == VFormat::f16 ? "s2tp_k_mean_" : "s2tp_v_mean_", v_in, out.v_mean);
    }

    if (recipe.v_format == VFormat::f16) {
        out.v_f16 = allocate(DType::f16, shape.kv_shape(), "v_f16");
        s2tp_convert_v_f16_params cp{};
        cp.input = v_in.get();
        cp.mean = recipe.smooth_v ? out.v_mean.get() : nullptr;
        cp.output = out.v_f16.get();
        cp.len = u32(shape.len_kv), cp.head_dim = d;
        cp.stride_bz = s.bz_kv, cp.stride_seq = s.seq_kv, cp.stride_h = s.h_kv;
        cp.stride_bz_mean = s.bz_mean, cp.stride_h_mean = s.h_mean;
        const std::uint32_t chunks = u32(shape.len_kv) * (d / 8);
        quantize_module.function(entries.v + suffix)
            .launch({(chunks + S2TP_CONVERT_V_THREADS - 1) / S2TP_CONVERT_V_THREADS, u32(shape.heads_kv), batch},
                    {S2TP_CONVERT_V_THREADS, 1, 1}, 0, &cp, sizeof cp, nullptr, "v f16, " + context);
    } else {
        out.v_fp8 = allocate(DType::e4m3, v_fp8_shape(shape, recipe.v_pad_tokens), "v_fp8");
        out.v_scale = allocate(DType::f32, v_scale_shape(shape), "v_scale");
        s2tp_quant_v_fp8_params vp{};
        vp.input = v_in.get();
        vp.output = out.v_fp8.as<std::uint8_t>();
        vp.scale = out.v_scale.as<float>();
        vp.batch = batch, vp.heads = u32(shape.heads_kv), vp.len = u32(shape.len_kv), vp.head_dim = d;
        vp.stride_bz_in = s.bz_kv, vp.stride_seq_in = s.seq_kv, vp.stride_h_in = s.h_kv;
        vp.stride_bz_out = s.bz_v, vp.stride_h_out = s.h_v, vp.stride_d_out = s.d_v;
        vp.scale_max = recipe.v_scale_max;
        vp.mean = recipe.smooth_v ? out.v_mean.as<const float>() : nullptr;
        quantize_module.function(entries.v + suffix)
            .launch({d / S2TP_QUANT_V_CHANNELS_PER_CTA, u32(shape.heads_kv), batch}, {S2TP_QUANT_V_THREADS, 1, 1}, 0, &vp,
                    sizeof vp, nullptr, "v fp8, " + context);
    }

    // A fault in a quantizer is reported here, named; and the caller may free the inputs on return.
    synchronize("quantizing " + context);
    return out;
}

DeviceQuantizedInputs upload_quantized(const AttentionProblem &problem, const QuantizedInputs &host,
                                       const QuantizationRecipe &recipe) {
    problem.validate();
    const AttentionShape &shape = problem.shape;
    const std::string context = " for " + problem.describe() + " (" + recipe.describe() + ")";
    require(host.q_int8, DType::i8, shape.q_shape(), "q_int8" + context);
    require(host.q_scale, DType::f32, q_scale_shape(shape, recipe.qk), "q_scale" + context);
    require(host.k_mean, problem.dtype, k_mean_shape(shape), "k_mean" + context);
    require(host.k_int8, DType::i8, shape.kv_shape(), "k_int8" + context);
    require(host.k_scale, DType::f32, k_scale_shape(shape, recipe.qk), "k_scale" + context);
    if (recipe.v_format == VFormat::f16) {
        require(host.v_f16, DType::f16, shape.kv_shape(), "v_f16" + context);
    } else {
        require(host.v_fp8, DType::e4m3, v_fp8_shape(shape, recipe.v_pad_tokens), "v_fp8" + context);
        require(host.v_scale, DType::f32, v_scale_shape(shape), "v_scale" + context);
    }
    DeviceQuantizedInputs device;
    device.recipe = recipe;
    device.q_int8 = upload(host.q_int8, "q_int8");
    device.q_scale = upload(host.q_scale, "q_scale");
    device.k_mean = upload(host.k_mean, "k_mean");
    device.k_int8 = upload(host.k_int8, "k_int8");
    device.k_scale = upload(host.k_scale, "k_scale");
    if (recipe.v_format == VFormat::f16) {
        device.v_f16 = upload(host.v_f16, "v_f16");
    } else {
        device.v_fp8 = upload(host.v_fp8, "v_fp8");
        device.v_scale = upload(host.v_scale, "v_scale");
    }
    if (!host.v_mean.bytes.empty()) {
        require(host.v_mean, v_mean_dtype(recipe, problem.dtype), v_mean_shape(shape), "v_mean" + context);
        device.v_mean = upload(host.v_mean, "v_mean");
    }
    return device;
}

QuantizedInputs download_quantized(const AttentionProblem &problem, const DeviceQuantizedInputs &device) {
    const AttentionShape &shape = problem.shape;
    QuantizedInputs host;
    host.q_int8 = download(device.q_int8, DType::i8, shape.q_shape());
    host.q_scale = download(device.q_scale, DType::f32, q_scale_shape(shape, device.recipe.qk));
    host.k_mean = download(device.k_mean, problem.dtype, k_mean_shape(shape));
    host.k_int8 = download(device.k_int8, DType::i8, shape.kv_shape());
    host.k_scale = download(device.k_scale, DType::f32, k_scale_shape(shape, device.recipe.qk));
    if (device.recipe.v_format == VFormat::f16) {
        host.v_f16 = download(device.v_f16, DType::f16, shape.kv_shape());
    } else {
        host.v_fp8 = download(device.v_fp8, DType::e4m3, v_fp8_shape(shape, device.recipe.v_pad_tokens));
        host.v_scale = download(device.v_scale, DType::f32, v_scale_shape(shape));
    }
    if (device.v_mean.size() > 0)
        host.v_mean = download(device.v_mean, v_mean_dtype(device.recipe, problem.dtype), v_mean_shape(shape));
    return host;
}

// ---- Outputs and the attention launch ----

AttentionOutputs allocate_outputs(const AttentionProblem &problem, const std::string &label) {
    AttentionOutputs out;
    out.o = allocate(problem.dtype, problem.shape.q_shape(), label + " o");
    if (problem.with_lse) out.lse = allocate(DType::f32, lse_shape(problem.shape), label + " lse");
    return out;
}

void poison_outputs(AttentionOutputs &outputs) {
    poison(outputs.o);
    poison(outputs.lse);
}

void fill_shared_memory_with_nan(const CubinModule &quantize_module) {
    int device = 0, sms = 0, shared_bytes = 0;
    const auto query = [](cudaError_t error, const char *what) {
        if (error != cudaSuccess)
            fail(ExitCode::missing_tool, std::string("filling shared memory with NaN: ") + what + " failed: " +
                                             cudaGetErrorString(error));
    };
    query(cudaGetDevice(&device), "cudaGetDevice");
    query(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "the multiprocessor count");
    query(cudaDeviceGetAttribute(&shared_bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin, device),
          "the largest shared memory per block");
    s2tp_fill_shared_params p{};
    p.bytes = static_cast<std::uint32_t>(shared_bytes) & ~15u;
    // A block of the largest shared memory fits once per SM, so the SM-count blocks land one on each.
    quantize_module.function(S2TP_FILL_SHARED_ENTRY)
        .launch({static_cast<unsigned>(sms), 1, 1}, {S2TP_FILL_SHARED_THREADS, 1, 1}, p.bytes, &p, sizeof p, nullptr,
                "filling shared memory with NaN");
}

Tensor download_output(const AttentionProblem &problem, const AttentionOutputs &outputs) {
    return download(outputs.o, problem.dtype, problem.shape.q_shape());
}

Tensor download_lse(const AttentionProblem &problem, const AttentionOutputs &outputs) {
    if (!problem.with_lse) fail(ExitCode::internal, "download_lse: " + problem.describe() + " was run without LSE");
    return download(outputs.lse, DType::f32, lse_shape(problem.shape));
}

}  // namespace s2tp
