// Shared-memory layout of one attention CTA and the global->shared tile copies.
//
// Byte regions (HeadDim = D), upstream's exactly (reference section 2):
//   Q  [0,      128*D)  int8, 128 rows (tokens) of D bytes
//   K  [128*D,  192*D)  int8,  64 rows (tokens) of D bytes
//   V  [192*D,  256*D)  e4m3,   D rows (channels) of 64 bytes (tokens, permuted in 16-token groups)
//   O  [0,      256*D)  f16/bf16 staging for the epilogue, 128 rows of 2*D bytes; it aliases Q, K and V,
//                       so it may only be written after a CTA barrier that follows every warp's last PV.
// Rows are split into 16-byte chunks and the chunk index is XOR-swizzled with the row, so that the
// eight 16-byte rows one ldmatrix phase reads (and the rows a cp.async wave writes) hit distinct banks:
//   128B swizzle (Q/K at D=128, O):  physical chunk = chunk ^ (row % 8)
//   64B swizzle  (Q/K at D=64, V):    physical chunk = chunk ^ ((row / 2) % 4)
// The swizzle only places bytes; it never changes what a fragment holds.
#pragma once

#include <cstdint>

#include "sage2tp_abi.h"

namespace s2tp {

// ---- cp.async: 16 bytes, L1-bypassing (.cg), with a 128-byte L2 prefetch hint ----------------------------

__device__ __forceinline__ void cp_async_16(uint32_t smem_address, const void *global_source) {
    asm volatile("cp.async.cg.shared.global.L2::128B [%0], [%1], 16;\n" ::"r"(smem_address), "l"(global_source)
                 : "memory");
}

// No-fill: when the predicate is false nothing is copied and the destination keeps its old bytes.
// The source address is never dereferenced then, so it may point past the tensor.
__device__ __forceinline__ void cp_async_16_if(uint32_t smem_address, const void *global_source, bool predicate) {
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "setp.ne.b32 p, %0, 0;\n"
        "@p cp.async.cg.shared.global.L2::128B [%1], [%2], 16;\n"
        "}\n" ::"r"(static_cast<uint32_t>(predicate)),
        "r"(smem_address), "l"(global_source)
        : "memory");
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }

// Wait until at most `Pending` of this thread's committed groups are still in flight. It covers only the
// calling thread's copies: a CTA barrier must follow before other threads read the data.
template <int Pending>
__device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(Pending) : "memory");
}

__device__ __forceinline__ uint32_t shared_address(const void *pointer) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(pointer));
}

// ---- Layout ----------------------------------------------------------------------------------------------

template <uint32_t HeadDim>
struct SmemLayout {
    static_assert(HeadDim == 64 || HeadDim == 128, "head dim must be 64 or 128");

    // Q (S2TP_CTA_Q rows), then K and V (S2TP_CTA_K rows each), HeadDim bytes a row; the O staging
    // (S2TP_CTA_Q rows of 2*HeadDim bytes) reuses all of it after the last PV.
    static constexpr uint32_t kQTileBytes = S2TP_CTA_Q * HeadDim;
    static constexpr uint32_t kKTileBytes = S2TP_CTA_K * HeadDim;
    static constexpr uint32_t kVTileBytes = S2TP_CTA_K * HeadDim;  // HeadDim channels of S2TP_CTA_K tokens
    static constexpr uint32_t kQOffset = 0;
    static constexpr uint32_t kKOffset = kQOffset + kQTileBytes;
    static constexpr uint32_t kVOffset = kKOffset + kKTileBytes;
    static constexpr uint32_t kBytes = kVOffset + kVTileBytes;
    static_assert(kBytes == S2TP_ATTN_SMEM_BYTES(HeadDim), "the ABI's dynamic shared memory must hold Q, K and V");
    static_assert(S2TP_CTA_Q * 2 * HeadDim <= kBytes, "the O staging must fit in the Q/K/V region");

    static constexpr uint32_t kQKRowBytes = HeadDim;
    static constexpr uint32_t kQKRowChunks = HeadDim / 16;
    static constexpr bool kQKSwizzle128 = (HeadDim == 128);
    static constexpr uint32_t kVRowBytes = S2TP_CTA_K;
    static_assert(kVRowBytes * HeadDim == kVTileBytes, "a V row holds one byte per token of the tile");
    static constexpr uint32_t kORowBytes = 2 * HeadDim;
    static constexpr uint32_t kORowChunks = 2 * HeadDim / 16;

    // Byte offset of 16-byte chunk `chunk` of Q/K row `row`, relative to the region start.
    __device__ __forceinline__ static uint32_t qk_chunk(uint32_t row, uint32_t chunk) {
        const uint32_t physical = kQKSwizzle128 ? (chunk ^ (row % 8)) : (chunk ^ ((row / 2) % 4));
        return row * kQKRowBytes + physical * 16;
    }

    __device__ __forceinline__ static uint32_t v_chunk(uint32_t channel, uint32_t chunk) {
        return channel * kVRowBytes + (chunk ^ ((channel / 2) % 4)) * 16;
    }

    __device__ __forceinline__ static uint32_t o_chunk(uint32_t row, uint32_t chunk) {
        return row * kORowBytes + (chunk ^ (row % 8)) * 16;
    }
};

// ---- Global -> shared tile copies (cp.async; the caller commits and waits) ---------------------------------
// Every copy is one 16-byte chunk per lane. A Q/K row has D/16 chunks, so a warp covers 32/(D/16) rows
// per wave. The warp->rows assignment only decides who issues which copy; compute reads whole tiles.

// Q rows 32*warp .. 32*warp+31 of the CTA's 128; rows at or past `valid_rows` are not copied (no-fill).
template <uint32_t HeadDim>
__device__ __forceinline__ void load_q_tile(uint32_t smem_q, const int8_t *q_cta_row0, uint32_t stride_seq,
                                            uint32_t valid_rows, uint32_t warp, uint32_t lane) {
    using Layout = SmemLayout<HeadDim>;
    constexpr uint32_t kLanesPerRow = Layout::kQKRowChunks;
    constexpr uint32_t kRowsPerWave = 32 / kLanesPerRow;
    const uint32_t chunk = lane % kLanesPerRow;
#pragma unroll
    for (uint32_t wave = 0; wave < 32 / kRowsPerWave; ++wave) {
        const uint32_t row = 32 * warp + wave * kRowsPerWave + lane / kLanesPerRow;
        cp_async_16_if(smem_q + Layout::qk_chunk(row, chunk), q_cta_row0 + row * stride_seq + chunk * 16,
                       row < valid_rows);
    }
}

// K tile rows 16*warp .. 16*warp+15. With Bounded, rows at or past `valid_rows` are not copied (no-fill):
// only the last tile of a CTA can be partial, and its out-of-range scores are masked.
template <uint32_t HeadDim, bool Bounded>
__device__ __forceinline__ void load_k_tile(uint32_t smem_k, const int8_t *k_tile_row0, uint32_t stride_seq,
                                            uint32_t valid_rows, uint32_t warp, uint32_t lane) {
    using Layout = SmemLayout<HeadDim>;
    constexpr uint32_t kLanesPerRow = Layout::kQKRowChunks;
    constexpr uint32_t kRowsPerWave = 32 / kLanesPerRow;
    const uint32_t chunk = lane % kLanesPerRow;
#pragma unroll
    for (uint32_t wave = 0; wave < 16 / kRowsPerWave; ++wave) {
        const uint32_t row = 16 * warp + wave * kRowsPerWave + lane / kLanesPerRow;
        const uint32_t destination = smem_k + Layout::qk_chunk(row, chunk);
        const int8_t *source = k_tile_row0 + row * stride_seq + chunk * 16;
        if constexpr (Bounded) {
            cp_async_16_if(destination, source, row < valid_rows);
        } else {
            cp_async_16(destination, source);
        }
    }
}

// V tile: channels (D/4)*warp .. +D/4-1, 64 token bytes each (4 lanes per channel). V is padded to a
// multiple of 64 tokens, so no bound applies.
template <uint32_t HeadDim>
__device__ __forceinline__ void load_v_tile(uint32_t smem_v, const uint8_t *v_tile_channel0, uint32_t stride_d,
                                            uint32_t warp, uint32_t lane) {
    using Layout = SmemLayout<HeadDim>;
    constexpr uint32_t kChannelsPerWarp = HeadDim / 4;
    const uint32_t chunk = lane % 4;
#pragma unroll
    for (uint32_t wave = 0; wave < kChannelsPerWarp / 8; ++wave) {
        const uint32_t channel = kChannelsPerWarp * warp + wave * 8 + lane / 4;
        cp_async_16(smem_v + Layout::v_chunk(channel, chunk), v_tile_channel0 + channel * stride_d + chunk * 16);
    }
}

// ---- ldmatrix row addresses ------------------------------------------------------------------------------
// Per lane, the region-relative offset of the 16-byte row it supplies to ldmatrix.x4 for fragment block 0
// and k-step 0. Further blocks add whole rows (16 rows per m16/n16 block); a further 32-byte k-step
// changes only chunk bits 1-2, which through the swizzle is an XOR of 32*step on the offset
// (see fragment_address).

// Q A-fragment: matrices (rows 0-7 | 8-15) x (k bytes 0-15 | 16-31) -> row lane%16, chunk lane/16.
template <uint32_t HeadDim>
__device__ __forceinline__ uint32_t q_fragment_offset(uint32_t warp, uint32_t lane) {
    return SmemLayout<HeadDim>::qk_chunk(32 * warp + lane % 16, lane / 16);
}

// K B-fragments of two n8 halves: matrices (keys 0-7, k 0-15), (keys 0-7, k 16-31), (keys 8-15, k 0-15),
// (keys 8-15, k 16-31) -> row lane%8 + 8*(lane/16), chunk (lane/8)%2.
template <uint32_t HeadDim>
__device__ __forceinline__ uint32_t k_fragment_offset(uint32_t lane) {
    return SmemLayout<HeadDim>::qk_chunk(lane % 8 + 8 * (lane / 16), (lane / 8) % 2);
}

// V B-fragments: rows are channels and a 16-byte chunk is 16 (permuted) tokens; same lane pattern as K.
template <uint32_t HeadDim>
__device__ __forceinline__ uint32_t v_fragment_offset(uint32_t lane) {
    return SmemLayout<HeadDim>::v_chunk(lane % 8 + 8 * (lane / 16), (lane / 8) % 2);
}

// Shared address for fragment block `block` and k-step `step`. Valid because every block starts at a row
// that is a multiple of 8 (the swizzle term is unchanged) and chunk 2*step + c equals (2*step) ^ c, so the
// step XORs into the physical chunk: byte offset ^ 32*step, which stays inside the row.
template <uint32_t RowBytes>
__device__ __forceinline__ uint32_t fragment_address(uint32_t region_base, uint32_t lane_offset, uint32_t block,
                                                     uint32_t step) {
    return region_base + ((lane_offset ^ (32 * step)) + block * 16 * RowBytes);
}

// ---- O staging --------------------------------------------------------------------------------------------

// Store one b32 (two output elements) of row `row`, channel pair starting at 16-byte chunk `chunk`,
// word `word` (0..3) inside it.
template <uint32_t HeadDim>
__device__ __forceinline__ void stage_o_word(uint8_t *smem, uint32_t row, uint32_t chunk, uint32_t word,
                                             uint32_t value) {
    *reinterpret_cast<uint32_t *>(smem + SmemLayout<HeadDim>::o_chunk(row, chunk) + 4 * word) = value;
}

// Copy this warp's 32 staged rows to global memory with 16-byte stores; rows at or past `valid_rows`
// (relative to the CTA's first row) are skipped. Only the calling warp's rows are read, so a __syncwarp
// after staging suffices.
template <uint32_t HeadDim>
__device__ __forceinline__ void store_o_rows(const uint8_t *smem, uint8_t *o_cta_row0, uint32_t stride_seq_bytes,
                                             uint32_t valid_rows, uint32_t warp, uint32_t lane) {
    using Layout = SmemLayout<HeadDim>;
    constexpr uint32_t kLanesPerRow = Layout::kORowChunks;
    constexpr uint32_t kRowsPerWave = 32 / kLanesPerRow;
    const uint32_t chunk = lane % kLanesPerRow;
#pragma unroll
    for (uint32_t wave = 0; wave < 32 / kRowsPerWave; ++wave) {
        const uint32_t row = 32 * warp + wave * kRowsPerWave + lane / kLanesPerRow;
        if (row < valid_rows) {
            const uint4 value = *reinterpret_cast<const uint4 *>(smem + Layout::o_chunk(row, chunk));
            *reinterpret_cast<uint4 *>(o_cta_row0 + row * stride_seq_bytes + chunk * 16) = value;
        }
    }
}

}  // namespace s2tp
