// Checks of output bytes done on the GPU, so that the time stage hashes a 335 MB output once instead of
// downloading and hashing every output before and after timing (six downloads at block-24).
//
// Usage:
//   s2tp::OutputChecks checks(quant_module, s2tp::DType::bf16);
//   std::vector<s2tp::OutputDigest> first = checks.record({&a.o, &b.o, &c.o});   // sha256 and NaN count each
//   ... launches that rewrite the outputs ...
//   std::vector<std::string> now = checks.current_sha256({&a.o, &b.o, &c.o});    // == first[i].sha256 if unchanged
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "formats/tensor.h"
#include "gpu/gpu_runtime.h"

namespace s2tp {

// The number of NaN elements of an f16 or bf16 buffer, counted on the GPU by the quantize cubin's
// s2tp_count_nan_* kernels (the same elements std::isnan finds in the decoded values).
std::int64_t count_nan_on_gpu(const CubinModule &quantize_module, const DeviceBuffer &buffer, DType dtype);

// Whether two buffers of one size hold the same bytes, compared on the GPU (s2tp_compare_bytes).
// Buffers of different sizes are never equal.
bool equal_on_gpu(const CubinModule &quantize_module, const DeviceBuffer &a, const DeviceBuffer &b);

struct OutputDigest {
    std::string sha256;
    std::int64_t nan_count = 0;
};

// The SHA-256 of every output, with each distinct content downloaded and hashed once: the first
// output is, and each other only when its bytes equal none of the outputs before it. A device copy
// of each distinct content is kept, so that current_sha256 can tell later, on the GPU, whether an
// output still holds the bytes it was recorded with. The outputs must stay alive and keep their
// sizes between the calls; the quantize module must outlive this object.
class OutputChecks {
public:
    OutputChecks(const CubinModule &quantize_module, DType dtype);

    // SHA-256 and NaN count of each output; replaces anything recorded before.
    std::vector<OutputDigest> record(const std::vector<const DeviceBuffer *> &outputs);
    // The SHA-256 each output has now, in record()'s order: the recorded one when its bytes equal the
    // device copy of its recorded content, otherwise downloaded and hashed.
    std::vector<std::string> current_sha256(const std::vector<const DeviceBuffer *> &outputs) const;
    // Whether output `index` (in record()'s order) holds its recorded bytes now, compared on the GPU;
    // nothing is downloaded.
    bool holds_recorded(std::size_t index, const DeviceBuffer &output) const;
    // The SHA-256 output `index` was recorded with.
    const std::string &recorded_sha256(std::size_t index) const;

private:
    const CubinModule &module_;
    DType dtype_;
    std::vector<DeviceBuffer> contents_;       // one copy of each distinct recorded content
    std::vector<std::string> content_sha256_;  // its digest
    std::vector<std::size_t> content_of_;      // per output: its index in contents_
};

}  // namespace s2tp
