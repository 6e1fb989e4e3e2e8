// The `sage2tp` adapter: kernels written to kernels/sage2tp_abi.h, extern "C" entries
// s2tp_attn_hd{64,128}_{f16,bf16}_{nomask,causal} taking one by-value s2tp_attn_params.
#include "gpu/kernel_abi.h"

#include "model/workload_set.h"

#include "support/errors.h"
#include "sage2tp_abi.h"

namespace s2tp {
namespace {

struct Sage2tpEntry {
    const char *name;
    std::int64_t head_dim;
    DType dtype;
    bool causal;
};

#define S2TP_HOST_ENTRY(name, head_dim, dtype, output_type, causal) {#name, head_dim, DType::dtype, causal},
constexpr Sage2tpEntry kEntries[] = {S2TP_ATTN_ENTRIES(S2TP_HOST_ENTRY)};
#undef S2TP_HOST_ENTRY

std::uint32_t u32(std::int64_t value) { return static_cast<std::uint32_t>(value); }

class Sage2tpAbi : public KernelAbi {
public:
    std::string name() const override { return "sage2tp"; }
    // The embedded kernels reproduce the bytes of upstream's sm89 kernel as its default launcher
    // instantiates it (gpu_kernel_check's upstream check compares them), so they share its pins.
    std::string pinned_kernel() const override { return bare_pin_kernel; }

    std::optional<AbiEntry> describe_entry(const std::string &mangled_name) const override {
        for (const Sage2tpEntry &entry : kEntries)
            if (mangled_name == entry.name)
                return AbiEntry{attention_short_name(entry.head_dim, entry.dtype, entry.causal), entry.name,
                                S2TP_THREADS_PER_CTA, S2TP_ATTN_SMEM_BYTES(entry.head_dim)};
        return std::nullopt;
    }

    std::string select_entry(const AttentionProblem &problem, const std::vector<std::string> &entry_names,
                             const std::string &cubin) const override {
        const std::string wanted = "s2tp_attn_" + attention_short_name(problem.shape.head_dim, problem.dtype,
                                                                        problem.causal);
        std::string found;
        for (const std::string &name : entry_names) {
            if (name == wanted) return name;
            if (describe_entry(name)) found += (found.empty() ? "" : ", ") + name;
        }
        fail(ExitCode::usage, "cubin '" + cubin + "' has no kernel entry '" + wanted + "' (kernel ABI sage2tp, for " +
                                  problem.describe() + "); its sage2tp attention entries: " +
                                  (found.empty() ? "none" : found));
    }

    AttentionLaunch pack(const AttentionProblem &problem, const AttentionBuffers &buffers) const override {
        problem.validate();
        const AttentionShape &shape = problem.shape;
        const AttentionStrides s = attention_strides(shape);
        s2tp_attn_params p{};
        p.q = static_cast<const std::int8_t *>(buffers.q_int8);
        p.k = static_cast<const std::int8_t *>(buffers.k_int8);
        p.v = static_cast<const std::uint8_t *>(buffers.v_fp8);
        p.o = buffers.o;
        p.q_scale = buffers.q_scale;
        p.k_scale = buffers.k_scale;
        p.v_scale = buffers.v_scale;
        p.lse = problem.with_lse ? buffers.lse : nullptr;
        p.batch = u32(shape.batch), p.heads_q = u32(shape.heads_q), p.heads_kv = u32(shape.heads_kv);
        p.len_q = u32(shape.len_q), p.len_kv = u32(shape.len_kv);
        p.stride_bz_q = s.bz_q, p.stride_seq_q = s.seq_q, p.stride_h_q = s.h_q;
        p.stride_bz_k = s.bz_kv, p.stride_seq_k = s.seq_kv, p.stride_h_k = s.h_kv;
        p.stride_bz_v = s.bz_v, p.stride_h_v = s.h_v, p.stride_d_v = s.d_v;
        p.stride_bz_o = s.bz_q, p.stride_seq_o = s.seq_q, p.stride_h_o = s.h_q;
        p.sm_scale = problem.sm_scale;

        AttentionLaunch launch;
        launch.grid = {u32((shape.len_q + S2TP_CTA_Q - 1) / S2TP_CTA_Q), u32(shape.heads_q), u32(shape.batch)};
        launch.block = {32, S2TP_WARPS_PER_CTA, 1};
        launch.dynamic_smem_bytes = S2TP_ATTN_SMEM_BYTES(shape.head_dim);
        launch.arguments.add(p);  // the struct is the kernel's single by-value parameter
        launch.context = problem.describe();
        return launch;
    }
};

}  // namespace

const KernelAbi &sage2tp_abi() {
    static const Sage2tpAbi abi;
    return abi;
}

}  // namespace s2tp
