// The one tensor loader/saver of sage2tp: .npy (read v1.0/2.0/3.0, write v1.0) and .safetensors (read).
// Every input is treated as hostile: each length, offset and header field is checked before use, and any
// defect throws s2tp::Error(ExitCode::usage, "<file>: <what>[, at byte offset N]"). NaN/Inf in a float
// tensor is reported with its flat index and multi-index unless the request allows it.
//
// Usage:
//   s2tp::TensorRequest want;
//   want.dtype = s2tp::DType::bf16;                 // '<u2' in .npy is accepted as bf16 bit patterns
//   want.shape = s2tp::Shape{1, 300, 2, 128};       // -1 in an entry accepts any extent there
//   s2tp::Tensor q = s2tp::load_tensor("case/q.npy", want);
//   s2tp::Tensor w = s2tp::load_tensor("weights.safetensors", want, "q");   // one named tensor
//   s2tp::save_npy("out/o.npy", q);                  // bf16 -> '<u2', e4m3 -> '|u1'
//
// Which dtypes a file descriptor maps to:
//   .npy:  '<f2' f16, '<f4' f32, '<f8' f64, '|i1' i8, '|u1' e4m3, '<u2' u16 (or bf16 when requested),
//          '<i4' i32  ('<i1'/'<u1' are accepted as aliases of the '|' forms)
//   .safetensors: F16, BF16, F32, F64, I8, U8 (e4m3 bit patterns), F8_E4M3, I32, U16
//          (U16 is accepted as bf16 when bf16 is requested, like '<u2' in .npy)
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "formats/tensor.h"

namespace s2tp {

struct TensorRequest {
    std::optional<DType> dtype;   // nullopt: take the file's dtype
    std::optional<Shape> shape;   // nullopt: any shape; an entry of -1 accepts any extent in that dim
    bool require_finite = true;   // reject NaN/Inf in floating dtypes (ignored for integer dtypes)
};

// Limits on what a file may claim, so a hostile header cannot make us allocate or scan without bound.
constexpr std::size_t kMaxNpyHeaderBytes = 64 * 1024;
constexpr std::size_t kMaxSafetensorsHeaderBytes = 16 * 1024 * 1024;
constexpr std::size_t kMaxTensorRank = 16;

// Loads one tensor: .npy by content; .safetensors needs `name` unless the file holds exactly one tensor.
// Files with another extension are rejected.
Tensor load_tensor(const std::filesystem::path &path, const TensorRequest &request = {},
                   const std::string &name = {});

Tensor read_npy(const std::filesystem::path &path, const TensorRequest &request = {});
// In-memory parser behind read_npy; `source` names the input in messages (fuzz tests call this).
Tensor parse_npy(const std::uint8_t *data, std::size_t size, const std::string &source,
                 const TensorRequest &request = {});

// Writes format version 1.0, C order. Creates or truncates the file; throws Error(usage) if unwritable.
void save_npy(const std::filesystem::path &path, const Tensor &tensor);
// The exact bytes save_npy writes.
std::string encode_npy(const Tensor &tensor);

// All tensors of a .safetensors file, by name, each in its file dtype (F8_E4M3/U8 -> e4m3, U16 -> u16),
// with the finiteness check applied when `require_finite`.
std::map<std::string, Tensor> read_safetensors(const std::filesystem::path &path,
                                               bool require_finite = true);
std::map<std::string, Tensor> parse_safetensors(const std::uint8_t *data, std::size_t size,
                                                const std::string &source, bool require_finite = true);
// One named tensor checked against `request`.
Tensor read_safetensors_tensor(const std::filesystem::path &path, const std::string &name,
                               const TensorRequest &request = {});

// Relabels u16 bit patterns as bf16 when the request asks for bf16 (the "U16 is accepted as bf16"
// rule above). The loaders apply it; code that picks a tensor out of read_safetensors' map applies it
// before check_tensor, which compares dtypes exactly.
void adopt_requested_dtype(Tensor &tensor, const TensorRequest &request);

// Checks an already loaded tensor against a request (dtype, shape, finiteness); `source` names it in
// messages. The loaders call this; callers that build tensors themselves may too.
void check_tensor(const Tensor &tensor, const TensorRequest &request, const std::string &source);

}  // namespace s2tp
