/*
 * sage2tp kernel ABI: the only contract between the CUDA sources in kernels/ and the host code in src/.
 *
 * The host loads a cubin, looks entry points up by the names below and launches them with a single
 * by-value parameter struct. Nothing here uses CUDA runtime types, so this header compiles as plain C,
 * as C++ without CUDA, and inside nvcc.
 *
 * Tensor conventions follow upstream SageAttention (commit d1a57a5: sageattention/core.py and
 * csrc/qattn/sm89_qk_int8_sv_f8_accum_f16_fuse_v_scale_attn_inst_buf.cu). Strides are in elements of the tensor's own type.
 * All index arithmetic inside the kernels is 32-bit, as upstream's, so no tensor may exceed 2^32 elements.
 */
#ifndef SAGE2TP_ABI_H
#define SAGE2TP_ABI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Attention: INT8 QK^T, FP8 (e4m3) PV with fp16 inner accumulation, fused per-channel V scale ---- */

#define S2TP_CTA_Q 128          /* query rows per CTA */
#define S2TP_CTA_K 64           /* keys per KV tile */
#define S2TP_WARP_Q 32          /* query rows per warp */
#define S2TP_WARPS_PER_CTA 4
#define S2TP_THREADS_PER_CTA (32 * S2TP_WARPS_PER_CTA) /* block is (32, 4, 1) */

/* Dynamic shared memory per CTA in bytes: Q(128*D) + K(64*D) + V(64*D), aliased by the O staging
 * (128 rows * 2*D bytes): 256*D. 32768 for D=128, 16384 for D=64. */
#define S2TP_ATTN_SMEM_BYTES(head_dim) (256u * (uint32_t)(head_dim))

typedef struct s2tp_attn_params {
    const int8_t *q;        /* [B,Nq,Hq,D] (NHD) or [B,Hq,Nq,D] (HND), quantized per 32-row group */
    const int8_t *k;        /* [B,Nk,Hk,D] or [B,Hk,Nk,D], quantized per 64-token block, K mean removed */
    const uint8_t *v;       /* e4m3 bytes, [B,D,Hk,Nk_pad] (NHD) or [B,Hk,D,Nk_pad] (HND), token-permuted */
    void *o;                /* fp16 or bf16, same layout as q */
    const float *q_scale;   /* [B,Hq,ceil(Nq/128)*4] */
    const float *k_scale;   /* [B,Hk,ceil(Nk/64)] */
    const float *v_scale;   /* [B,Hk,D] */
    float *lse;             /* [B,Hq,Nq], base-2 log-sum-exp of the smoothed scores; NULL = not written */
    uint32_t batch, heads_q, heads_kv, len_q, len_kv;
    uint32_t stride_bz_q, stride_seq_q, stride_h_q;
    uint32_t stride_bz_k, stride_seq_k, stride_h_k;
    uint32_t stride_bz_v, stride_h_v, stride_d_v; /* tokens are V's contiguous last axis */
    uint32_t stride_bz_o, stride_seq_o, stride_h_o;
    float sm_scale;         /* softmax scale before the log2(e) factor, usually original_head_dim^-0.5 */
} s2tp_attn_params;

/* Entry points: s2tp_attn_hd{64,128}_{f16,bf16}_{nomask,causal}. Grid (ceil(Nq/128), Hq, B).
 * Block (32, 4, 1); dynamic smem S2TP_ATTN_SMEM_BYTES(D). Preconditions (the kernels do not check):
 * len_q >= 1, len_kv >= 1, heads_q % heads_kv == 0, V padded to S2TP_V_PADDED_LEN(len_kv) tokens,
 * 16-byte aligned rows; causal masking is top-left aligned, so it is meaningful only for len_q == len_kv.
 *
 * The one list of them, as an X-macro: X(name, head_dim, dtype, output_type, causal), where dtype is
 * the host's name for the output type (f16, bf16) and output_type the CUDA one. attention_entry.cu
 * expands it into the entry points, the host into its entry table. */
#define S2TP_ATTN_ENTRIES(X)                                          \
    X(s2tp_attn_hd64_f16_nomask, 64, f16, __half, false)              \
    X(s2tp_attn_hd64_f16_causal, 64, f16, __half, true)               \
    X(s2tp_attn_hd64_bf16_nomask, 64, bf16, __nv_bfloat16, false)     \
    X(s2tp_attn_hd64_bf16_causal, 64, bf16, __nv_bfloat16, true)      \
    X(s2tp_attn_hd128_f16_nomask, 128, f16, __half, false)            \
    X(s2tp_attn_hd128_f16_causal, 128, f16, __half, true)             \
    X(s2tp_attn_hd128_bf16_nomask, 128, bf16, __nv_bfloat16, false)   \
    X(s2tp_attn_hd128_bf16_causal, 128, bf16, __nv_bfloat16, true)

/* ---- Quantization (shared by both arms, not part of the A/B), upstream's exact byte layouts ---- */

#define S2TP_QUANT_Q_GROUP_TOKENS 32    /* Q is quantized per 32-token group (one attention warp) */
#define S2TP_QUANT_K_BLOCK_TOKENS 64    /* K is quantized per 64-token block (one KV tile) */
#define S2TP_QUANT_INT8_THREADS 128     /* block (128, 1, 1) for both int8 entries */
#define S2TP_QUANT_V_THREADS 256        /* block (256, 1, 1) for the fp8 V entries */
#define S2TP_QUANT_V_CHANNELS_PER_CTA 32
#define S2TP_V_SCALE_MAX_FP16_ACCUM 2.25f /* keeps a 64-key fp16 PV partial below 65504 */
#define S2TP_V_SCALE_MAX_E4M3 448.0f      /* the e4m3 range: FP32 PV accumulation (upstream's default) */
/* Upstream's V mean divides by the token count rounded up to 16 (the permutation's group). */
#define S2TP_V_MEAN_DIVISOR(len_kv) ((((uint32_t)(len_kv) + 15u) / 16u) * 16u)

/* Scale groups per (batch, head). Q: ceil(Nq/128)*4, so groups past Nq exist and get the scale
 * max(1e-7,0)/127 exactly as upstream; K: ceil(Nk/64). */
#define S2TP_Q_SCALE_GROUPS(len_q) ((((uint32_t)(len_q) + 127u) / 128u) * 4u)
#define S2TP_K_SCALE_GROUPS(len_kv) (((uint32_t)(len_kv) + 63u) / 64u)
/* V's token axis is zero-padded to a multiple of 64. */
#define S2TP_V_PADDED_LEN(len_kv) ((((uint32_t)(len_kv) + 63u) / 64u) * 64u)

/* The sm90 path (core.py's sageattn_qk_int8_pv_fp8_cuda_sm90): Q per 16-token warp in 64-token blocks,
 * K per 128-token block; per thread (Triton), 8 Q scales per warp and 4 K scales per block; V padded to
 * a multiple of 128 tokens. */
#define S2TP_SM90_Q_WARP_TOKENS 16
#define S2TP_SM90_K_BLOCK_TOKENS 128
#define S2TP_SM90_Q_SCALE_GROUPS(len_q) ((((uint32_t)(len_q) + 63u) / 64u) * 4u)
#define S2TP_SM90_K_SCALE_GROUPS(len_kv) (((uint32_t)(len_kv) + 127u) / 128u)
#define S2TP_PER_THREAD_Q_GROUPS 8
#define S2TP_PER_THREAD_K_GROUPS 4
#define S2TP_SM90_V_PAD_TOKENS 128

/* Entry points (quantize.cu): s2tp_k_mean_{f16,bf16}, s2tp_v_mean_{f16,bf16}, s2tp_quant_{q,k}_int8_{f16,bf16},
 * s2tp_quant_v_fp8_{f16,bf16}, each named after the dtype of its input; for the sm90 path
 * s2tp_quant_{q,k}_int8_sm90_{f16,bf16} (per warp), s2tp_quant_{q,k}_int8_per_thread_sm90_{f16,bf16} and
 * s2tp_quant_v_fp8_pad128_{f16,bf16}, with the same parameter structs. Per-thread entries: grid
 * (scales per (batch, head), H, B), one CTA per scale. For the sm80 path (Q warps of 16 in 128-token
 * blocks per warp, Triton's per-thread Q/K with 128/32, 128/16 and 64/64 blocks, which the sm89 path's
 * per-thread recipe shares) s2tp_quant_q_int8_warp16_*, s2tp_quant_q_int8_per_thread_warp{32,16}_* and
 * s2tp_quant_k_int8_per_thread_warp64_*: each reads its scale count per (batch, head) from the grid's
 * x extent, so it takes any block that its warp divides. s2tp_convert_v_f16_{f16,bf16}: fp16 V. */

/* Per-channel K mean in the input dtype, fp32 accumulation in token order; the V entries write an fp32
 * V mean, the same sum divided by S2TP_V_MEAN_DIVISOR(N) as upstream's smooth_v divides it.
 * Grid (H, B), block (head_dim, 1, 1). */
typedef struct s2tp_k_mean_params {
    const void *input;      /* f16 or bf16 K, [B,N,H,D] or [B,H,N,D], last dim contiguous */
    void *mean;             /* [B,H,D] in the input dtype (K) or fp32 (V), channel axis contiguous */
    uint32_t batch, heads, len, head_dim;
    uint32_t stride_bz_in, stride_seq_in, stride_h_in;
    uint32_t stride_bz_mean, stride_h_mean;
} s2tp_k_mean_params;

/* int8 quantization: Q per 32-token group, or K per 64-token block after subtracting the K mean.
 * Q entries: grid (S2TP_Q_SCALE_GROUPS(N), H, B). K entries: grid (S2TP_K_SCALE_GROUPS(N), H, B).
 * Block (S2TP_QUANT_INT8_THREADS, 1, 1). Tokens >= N count as 0 and are not written. */
typedef struct s2tp_quant_int8_params {
    const void *input;      /* f16 or bf16, [B,N,H,D] or [B,H,N,D], last dim contiguous */
    const void *mean;       /* K entries only: [B,H,D] in the input dtype; ignored by the Q entries */
    int8_t *output;         /* int8, shaped and strided like a Q/K attention input */
    float *scale;           /* [B,H,groups] contiguous (q_scale or k_scale of s2tp_attn_params) */
    uint32_t batch, heads, len, head_dim;
    uint32_t stride_bz_in, stride_seq_in, stride_h_in;
    uint32_t stride_bz_mean, stride_h_mean;
    uint32_t stride_bz_out, stride_seq_out, stride_h_out;
} s2tp_quant_int8_params;

/* Per-channel e4m3 quantization of V, transposed to tokens-last, zero-padded to S2TP_V_PADDED_LEN
 * and permuted within 16-token groups (stored position s holds token
 * {0,1,8,9,2,3,10,11,4,5,12,13,6,7,14,15}[s]). Every padded token is written.
 * Grid (head_dim / S2TP_QUANT_V_CHANNELS_PER_CTA, H, B), block (S2TP_QUANT_V_THREADS, 1, 1). */
typedef struct s2tp_quant_v_fp8_params {
    const void *input;      /* f16 or bf16 V, [B,N,H,D] or [B,H,N,D], last dim contiguous */
    uint8_t *output;        /* e4m3, [B,D,H,Npad] (NHD) or [B,H,D,Npad] (HND), tokens contiguous */
    float *scale;           /* v_scale, [B,H,D] contiguous */
    uint32_t batch, heads, len, head_dim;
    uint32_t stride_bz_in, stride_seq_in, stride_h_in;
    uint32_t stride_bz_out, stride_h_out, stride_d_out;
    float scale_max;        /* S2TP_V_SCALE_MAX_FP16_ACCUM or _E4M3; a runtime value, as upstream's divisions see it */
    const float *mean;      /* smooth_v: the V mean [B,H,D] contiguous, subtracted before quantizing; or NULL */
} s2tp_quant_v_fp8_params;

/* fp16 V for the sm80 path, in V's own layout: fl16(v), or with a mean fl16(v - mean) with the
 * subtraction in V's dtype (upstream's sub_mean). 8 elements per thread: grid
 * (ceil(N * head_dim / 8 / S2TP_CONVERT_V_THREADS), H, B), block (S2TP_CONVERT_V_THREADS, 1, 1). */
#define S2TP_CONVERT_V_THREADS 256
typedef struct s2tp_convert_v_f16_params {
    const void *input;      /* f16 or bf16 V, [B,N,H,D] or [B,H,N,D], last dim contiguous */
    const void *mean;       /* [B,H,D] in V's dtype, channel axis contiguous; or NULL */
    void *output;           /* f16, strided as the input */
    uint32_t len, head_dim;
    uint32_t stride_bz, stride_seq, stride_h;
    uint32_t stride_bz_mean, stride_h_mean;
} s2tp_convert_v_f16_params;

/* ---- Input generator (lives in the quantization cubin) ---- */

/* One tensor of model/input_generator.h's generate_inputs, bit for bit: the same counter-based hash
 * (SplitMix64 over seed, stream and element), the same Irwin-Hall normal deviates and per-channel
 * parameters, the same exact double steps and the same roundings to float and then to the dtype.
 * Element e counts in canonical (b, h, token, d) order whatever the layout; it is written at
 * b*stride_bz + token*stride_seq + h*stride_h + d. One thread per element: grid
 * (ceil(B*H*N*D / S2TP_GENERATE_THREADS), 1, 1), block (S2TP_GENERATE_THREADS, 1, 1).
 * Entry points s2tp_generate_inputs_{f16,bf16}, named after the dtype they write. */
#define S2TP_GENERATE_THREADS 256
#define S2TP_GENERATED_Q 0u
#define S2TP_GENERATED_K 1u
#define S2TP_GENERATED_V 2u

typedef struct s2tp_generate_params {
    void *output;            /* f16 or bf16, [B,N,H,D] (NHD) or [B,H,N,D] (HND) */
    unsigned long long seed;
    uint32_t tensor;         /* S2TP_GENERATED_Q, _K or _V: the statistics and random streams used */
    uint32_t batch, heads, len, head_dim;
    uint32_t stride_bz, stride_seq, stride_h;
} s2tp_generate_params;

/* ---- Output checks (live in the quantization cubin) ---- */

/* Both count into one unsigned long long in device memory, which the host zeroes first; the data
 * must be 16-byte aligned (every cudaMalloc allocation is). Grid (ceil(ceil(count / 8) /
 * S2TP_CHECK_THREADS), 1, 1) for NaN counting (8 elements per thread), (ceil(ceil(bytes / 16) /
 * S2TP_CHECK_THREADS), 1, 1) for comparing (16 bytes per thread); block (S2TP_CHECK_THREADS, 1, 1). */
#define S2TP_CHECK_THREADS 256

/* A 16-bit float is NaN when its magnitude bits exceed infinity's: 0x7c00 in f16, 0x7f80 in bf16. */
#define S2TP_F16_INF_BITS 0x7c00u
#define S2TP_BF16_INF_BITS 0x7f80u
#define S2TP_IS_NAN16(bits, inf_bits) ((((uint32_t)(bits)) & 0x7fffu) > (inf_bits))

/* Entry points s2tp_count_nan_{f16,bf16}: adds the number of NaN elements of data to *result. */
typedef struct s2tp_count_nan_params {
    const uint16_t *data;
    unsigned long long count;      /* elements */
    unsigned long long *result;
} s2tp_count_nan_params;

/* Entry point s2tp_compare_bytes: adds to *result the number of 16-byte words (the last one may be
 * shorter) in which a and b differ; 0 means the bytes are identical. */
typedef struct s2tp_compare_params {
    const uint8_t *a;
    const uint8_t *b;
    unsigned long long bytes;
    unsigned long long *result;
} s2tp_compare_params;

#define S2TP_COUNT_NAN_ENTRY_F16 "s2tp_count_nan_f16"
#define S2TP_COUNT_NAN_ENTRY_BF16 "s2tp_count_nan_bf16"
#define S2TP_COMPARE_ENTRY "s2tp_compare_bytes"

/* ---- float64 reference attention and row gathering (live in the quantization cubin) ---- */

/* Attention on the UNQUANTIZED f16/bf16 q, k, v, every product and sum in double: for each sampled query
 * row r (rows[r], ascending) of every (batch, q head), softmax(q . k_j * sm_scale) over every visible key
 * j (all keys, or j <= row when causal, top-left aligned), times v. GQA: q head h reads kv head
 * h / (heads_q / heads_kv). One CTA of S2TP_REFERENCE_THREADS threads per S2TP_REFERENCE_ROWS_PER_CTA
 * sampled rows of one (batch, head): grid (ceil(row_count / S2TP_REFERENCE_ROWS_PER_CTA), Hq, B).
 * head_dim <= S2TP_REFERENCE_THREADS. Entry points s2tp_reference_attention_{f16,bf16}. */
#define S2TP_REFERENCE_THREADS 128
#define S2TP_REFERENCE_ROWS_PER_CTA 8

typedef struct s2tp_reference_params {
    const void *q, *k, *v;  /* f16 or bf16, the attention's own layout, last dim contiguous */
    const uint32_t *rows;   /* [row_count] query rows, ascending, each < len_q */
    double *output;         /* [B, Hq, row_count, D] contiguous */
    uint32_t batch, heads_q, heads_kv, len_q, len_kv, head_dim, row_count, causal;
    uint32_t stride_bz_q, stride_seq_q, stride_h_q;
    uint32_t stride_bz_kv, stride_seq_kv, stride_h_kv;
    double sm_scale;
} s2tp_reference_params;

/* Copies the sampled rows of a 16-bit output ([B,N,H,D] or [B,H,N,D]) into [B, H, row_count, D]
 * contiguous, bits unchanged. One thread per copied element: grid (ceil(B*H*row_count*D /
 * S2TP_CHECK_THREADS), 1, 1), block (S2TP_CHECK_THREADS, 1, 1). Entry point s2tp_gather_rows. */
typedef struct s2tp_gather_rows_params {
    const uint16_t *input;
    uint16_t *output;
    const uint32_t *rows;
    uint32_t batch, heads, head_dim, row_count;
    uint32_t stride_bz, stride_seq, stride_h;
} s2tp_gather_rows_params;

#define S2TP_REFERENCE_ENTRY_F16 "s2tp_reference_attention_f16"
#define S2TP_REFERENCE_ENTRY_BF16 "s2tp_reference_attention_bf16"
#define S2TP_GATHER_ROWS_ENTRY "s2tp_gather_rows"

/* ---- SM clock probe (lives in the quantization cubin) ---- */

/* One thread reads %globaltimer and clock64, spins until %globaltimer has advanced by at least
 * spin_ns, reads both again and writes out[0] = elapsed SM cycles, out[1] = elapsed ns.
 * SM clock in MHz = out[0] * 1000 / out[1]. Grid (1,1,1), block (1,1,1). */
typedef struct s2tp_clock_probe_params {
    unsigned long long *out; /* 2 elements in device memory */
    unsigned long long spin_ns;
} s2tp_clock_probe_params;

#define S2TP_CLOCK_PROBE_ENTRY "s2tp_sm_clock_probe"

/* ---- Shared memory dirtied before a parity launch (lives in the quantization cubin) ---- */

/* Entry point s2tp_fill_shared_nan: writes 0xFF to the first `bytes` of the block's dynamic shared
 * memory (a NaN in f16, bf16 and f32; -1 in int8), in 16-byte stores. Launched with one block of the
 * largest dynamic shared memory per SM, grid (SM count, 1, 1), block (S2TP_FILL_SHARED_THREADS, 1, 1),
 * so that every SM's shared memory holds NaN when the next kernel starts. */
#define S2TP_FILL_SHARED_THREADS 1024
typedef struct s2tp_fill_shared_params {
    uint32_t bytes; /* a multiple of 16, at most the launch's dynamic shared memory */
} s2tp_fill_shared_params;

#define S2TP_FILL_SHARED_ENTRY "s2tp_fill_shared_nan"

#ifdef __cplusplus
}
#endif

#endif /* SAGE2TP_ABI_H */
