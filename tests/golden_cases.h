// Upstream SageAttention's golden cases (shared/upstream-golden): inputs, quantized tensors and outputs
// produced on an H200, described by its cases.toml. One strict reader for every test that compares
// against them: keys present and typed, and each array's dtype, shape and data digest as declared.
#pragma once

#include "build_config.h"
#include "model/attention_problem.h"
#include "support/errors.h"
#include "support/hashing.h"
#include "formats/tensor.h"
#include "formats/tensor_io.h"

#include <toml++/toml.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace s2tp::golden {

// $S2TP_GOLDEN_DIR, else the shared/ folder beside the source tree, as in CI.
inline std::filesystem::path directory() {
    if (const char *env = std::getenv("S2TP_GOLDEN_DIR")) return env;
    return std::filesystem::path(S2TP_SOURCE_ROOT) / ".." / "shared" / "upstream-golden";
}

struct Case {
    std::string name;
    std::filesystem::path dir;  // the case's folder of .npy files
    AttentionProblem problem;
    std::map<std::string, std::pair<DType, Shape>> files;  // name -> declared dtype and shape
    std::map<std::string, std::string> sha256;
};

inline float float_from_hex(const std::string &hex, const std::string &where) {
    if (hex.size() != 8 || hex.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos)
        fail(ExitCode::usage, where + ": sm_scale_f32_hex must be 8 hex digits, got '" + hex + "'");
    std::uint32_t bits = static_cast<std::uint32_t>(std::stoul(hex, nullptr, 16));
    float value;
    std::memcpy(&value, &bits, sizeof value);
    return value;
}

template <typename T>
T toml_value(const toml::table &table, const std::string &key, const std::string &where) {
    auto value = table[key].value<T>();
    if (!value) {
        std::string line;
        if (auto *node = table.get(key)) line = " (line " + std::to_string(node->source().begin.line) + ")";
        fail(ExitCode::usage, where + ": key '" + key + "' is missing or has the wrong type" + line);
    }
    return *value;
}

// A TOML file, or Error(usage) naming its line and column.
inline toml::table parse_toml_file(const std::filesystem::path &path) {
    try {
        return toml::parse_file(path.string());
    } catch (const toml::parse_error &e) {
        fail(ExitCode::usage, path.string() + ":" + std::to_string(e.source().begin.line) + ":" +
                                  std::to_string(e.source().begin.column) + ": " + std::string(e.description()));
    }
}

// Reads <dir>/cases.toml strictly: every key present and typed, every file's dtype, shape and digest.
inline std::vector<Case> cases(const std::filesystem::path &dir) {
    const std::filesystem::path cases_toml = dir / "cases.toml";
    const toml::table root = parse_toml_file(cases_toml);
    const toml::array *cases = root["case"].as_array();
    if (!cases || cases->empty()) fail(ExitCode::usage, cases_toml.string() + ": no [[case]] tables");
    std::vector<Case> result;
    for (const toml::node &node : *cases) {
        const toml::table *t = node.as_table();
        const std::string where = cases_toml.string() + ":" + std::to_string(node.source().begin.line);
        if (!t) fail(ExitCode::usage, where + ": [[case]] is not a table");
        Case c;
        c.name = toml_value<std::string>(*t, "name", where);
        c.dir = dir / c.name;
        AttentionShape &s = c.problem.shape;
        s.batch = toml_value<std::int64_t>(*t, "batch", where);
        s.heads_q = toml_value<std::int64_t>(*t, "heads_q", where);
        s.heads_kv = toml_value<std::int64_t>(*t, "heads_kv", where);
        s.len_q = toml_value<std::int64_t>(*t, "len_q", where);
        s.len_kv = toml_value<std::int64_t>(*t, "len_kv", where);
        s.head_dim = toml_value<std::int64_t>(*t, "head_dim", where);
        s.layout = parse_layout(toml_value<std::string>(*t, "layout", where));
        c.problem.causal = toml_value<bool>(*t, "causal", where);
        c.problem.dtype = parse_dtype(toml_value<std::string>(*t, "dtype", where));
        c.problem.sm_scale = float_from_hex(toml_value<std::string>(*t, "sm_scale_f32_hex", where), where);
        c.problem.with_lse = true;
        c.problem.validate();
        const toml::table *files = (*t)["files"].as_table();
        if (!files) fail(ExitCode::usage, where + ": case '" + c.name + "' has no files table");
        for (const auto &[key, file_node] : *files) {
            const toml::table *f = file_node.as_table();
            const std::string file_where = where + " files." + std::string(key.str());
            if (!f) fail(ExitCode::usage, file_where + " is not a table");
            Shape shape;
            const toml::array *dims = (*f)["shape"].as_array();
            if (!dims) fail(ExitCode::usage, file_where + ": no shape array");
            for (const toml::node &dim : *dims) {
                auto extent = dim.value<std::int64_t>();
                if (!extent) fail(ExitCode::usage, file_where + ": shape entries must be integers");
                shape.push_back(*extent);
            }
            c.files[std::string(key.str())] = {parse_dtype(toml_value<std::string>(*f, "dtype", file_where)), shape};
            c.sha256[std::string(key.str())] = toml_value<std::string>(*f, "sha256", file_where);
        }
        result.push_back(std::move(c));
    }
    return result;
}

// One of the case's arrays, checked against the dtype, shape and digest cases.toml declares for it.
inline Tensor load(const Case &c, const std::string &name) {
    auto declared = c.files.find(name);
    if (declared == c.files.end()) fail(ExitCode::usage, "case '" + c.name + "' declares no file '" + name + "'");
    const std::filesystem::path path = c.dir / (name + ".npy");
    TensorRequest request;
    request.dtype = declared->second.first;
    request.shape = declared->second.second;
    request.require_finite = false;  // compared as bytes; NaN has a meaning here (e4m3 of a zero channel)
    Tensor tensor = load_tensor(path, request);
    // cases.toml pins the digest of the array data (the bytes after the .npy header).
    const std::string digest = sha256_hex(tensor.bytes.data(), tensor.bytes.size());
    if (digest != c.sha256.at(name))
        fail(ExitCode::usage, path.string() + ": the array data has sha256 " + digest + " but cases.toml pins " +
                                  c.sha256.at(name));
    return tensor;
}

}  // namespace s2tp::golden
