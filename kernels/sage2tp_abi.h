/*
 * sage2tp kernel ABI: the only contract between the CUDA sources in kernels/ and the host code in src/.
 *
 * The host loads a cubin, looks entry points up by the names below and launches them with a single
 * by-value parameter struct. Nothing here uses CUDA runtime types, so this header compiles as plain C,
 * as C++ without CUDA, and inside nvcc.
 *
 * Tensor conventions follow upstream SageAttention (commit d1a57a5); see
 * shared/reference/upstream-sm89-kernel.md section 1. Strides are in elements of the tensor's own type.
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

/* Entry points: s2tp_attn_hd{64,128}_{f16,bf16}_{nomask,causal}. Grid (ceil(Nq/128), Hq, B). */
#define S2TP_ATTN_ENTRY_COUNT 8
static const char *const s2tp_attn_entry_names[S2TP_ATTN_ENTRY_COUNT] = {
    "s2tp_attn_hd64_f16_nomask",  "s2tp_attn_hd64_f16_causal",
    "s2tp_attn_hd64_bf16_nomask", "s2tp_attn_hd64_bf16_causal",
    "s2tp_attn_hd128_f16_nomask", "s2tp_attn_hd128_f16_causal",
    "s2tp_attn_hd128_bf16_nomask", "s2tp_attn_hd128_bf16_causal",
};

#ifdef __cplusplus
}
#endif

#endif /* SAGE2TP_ABI_H */
