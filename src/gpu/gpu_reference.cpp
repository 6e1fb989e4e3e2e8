#include "gpu/gpu_reference.h"

#include "sage2tp_abi.h"
#include "support/errors.h"

namespace s2tp {
namespace {

DeviceBuffer upload_rows(const AttentionProblem &problem, const std::vector<std::uint32_t> &rows) {
    if (rows.empty()) fail(ExitCode::internal, "the reference of " + problem.describe() + ": no query rows");
    Tensor table(DType::i32, {static_cast<std::int64_t>(rows.size())});
    for (std::size_t r = 0; r < rows.size(); ++r) {
        if (rows[r] >= problem.shape.len_q)
            fail(ExitCode::internal, "the reference of " + problem.describe() + ": query row " +
                                         std::to_string(rows[r]) + " is past len_q");
        table.data<std::int32_t>()[r] = static_cast<std::int32_t>(rows[r]);
    }
    return upload(table, "sampled query rows");
}

void require_size(const DeviceBuffer &buffer, std::int64_t elements, DType dtype, const std::string &context) {
    if (buffer.size() != static_cast<std::size_t>(elements) * dtype_size(dtype))
        fail(ExitCode::internal, context + ": " + buffer.what() + " holds " + std::to_string(buffer.size()) +
                                     " bytes, not " + std::to_string(elements) + " " + dtype_name(dtype) + " elements");
}

unsigned check_blocks(std::uint64_t elements) {
    return static_cast<unsigned>((elements + S2TP_CHECK_THREADS - 1) / S2TP_CHECK_THREADS);
}

}  // namespace

Tensor reference_on_gpu(const CubinModule &quantize_module, const AttentionProblem &problem, const DeviceInputs &inputs,
                        const std::vector<std::uint32_t> &rows) {
    const AttentionShape &shape = problem.shape;
    const std::string context = "the float64 reference of " + problem.describe();
    require_size(inputs.q, shape.batch * shape.heads_q * shape.len_q * shape.head_dim, problem.dtype, context);
    require_size(inputs.k, shape.batch * shape.heads_kv * shape.len_kv * shape.head_dim, problem.dtype, context);
    require_size(inputs.v, shape.batch * shape.heads_kv * shape.len_kv * shape.head_dim, problem.dtype, context);
    const DeviceBuffer row_table = upload_rows(problem, rows);
    const auto count = static_cast<std::int64_t>(rows.size());
    const Shape out_shape{shape.batch, shape.heads_q, count, shape.head_dim};
    DeviceBuffer output(static_cast<std::size_t>(shape.batch * shape.heads_q * count * shape.head_dim) * sizeof(double),
                        "float64 reference rows");
    const AttentionStrides strides = attention_strides(shape);
    s2tp_reference_params p{};
    p.q = inputs.q.get();
    p.k = inputs.k.get();
    p.v = inputs.v.get();
    p.rows = row_table.as<const std::uint32_t>();
    p.output = output.as<double>();
    p.batch = static_cast<std::uint32_t>(shape.batch);
    p.heads_q = static_cast<std::uint32_t>(shape.heads_q);
    p.heads_kv = static_cast<std::uint32_t>(shape.heads_kv);
    p.len_q = static_cast<std::uint32_t>(shape.len_q);
    p.len_kv = static_cast<std::uint32_t>(shape.len_kv);
    p.head_dim = static_cast<std::uint32_t>(shape.head_dim);
    p.row_count = static_cast<std::uint32_t>(count);
    p.causal = problem.causal ? 1u : 0u;
    p.stride_bz_q = strides.bz_q, p.stride_seq_q = strides.seq_q, p.stride_h_q = strides.h_q;
    p.stride_bz_kv = strides.bz_kv, p.stride_seq_kv = strides.seq_kv, p.stride_h_kv = strides.h_kv;
    p.sm_scale = static_cast<double>(problem.sm_scale);
    const Kernel kernel = quantize_module.function(problem.dtype == DType::f16 ? S2TP_REFERENCE_ENTRY_F16
                                                                                 : S2TP_REFERENCE_ENTRY_BF16);
    const auto blocks = static_cast<unsigned>((count + S2TP_REFERENCE_ROWS_PER_CTA - 1) / S2TP_REFERENCE_ROWS_PER_CTA);
    kernel.launch({blocks, p.heads_q, p.batch}, {S2TP_REFERENCE_THREADS, 1, 1}, 0, &p, sizeof p, nullptr, context);
    return download(output, DType::f64, out_shape);  // a synchronous copy: the kernel's fault surfaces here
}

Tensor gather_rows_on_gpu(const CubinModule &quantize_module, const AttentionProblem &problem, const DeviceBuffer &o,
                          const std::vector<std::uint32_t> &rows) {
    const AttentionShape &shape = problem.shape;
    const std::string context = "gathering the sampled rows of " + o.what();
    require_size(o, shape.batch * shape.heads_q * shape.len_q * shape.head_dim, problem.dtype, context);
    const DeviceBuffer row_table = upload_rows(problem, rows);
    const auto count = static_cast<std::int64_t>(rows.size());
    const Shape out_shape{shape.batch, shape.heads_q, count, shape.head_dim};
    const std::uint64_t elements = static_cast<std::uint64_t>(shape.batch * shape.heads_q * count * shape.head_dim);
    DeviceBuffer gathered(elements * dtype_size(problem.dtype), "sampled rows of " + o.what());
    const AttentionStrides strides = attention_strides(shape);
    s2tp_gather_rows_params p{};
    p.input = o.as<const std::uint16_t>();
    p.output = gathered.as<std::uint16_t>();
    p.rows = row_table.as<const std::uint32_t>();
    p.batch = static_cast<std::uint32_t>(shape.batch);
    p.heads = static_cast<std::uint32_t>(shape.heads_q);
    p.head_dim = static_cast<std::uint32_t>(shape.head_dim);
    p.row_count = static_cast<std::uint32_t>(count);
    p.stride_bz = strides.bz_q, p.stride_seq = strides.seq_q, p.stride_h = strides.h_q;
    quantize_module.function(S2TP_GATHER_ROWS_ENTRY)
        .launch({check_blocks(elements), 1, 1}, {S2TP_CHECK_THREADS, 1, 1}, 0, &p, sizeof p, nullptr, context);
    return download(gathered, problem.dtype, out_shape);
}

}  // namespace s2tp
