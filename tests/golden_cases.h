// Upstream SageAttention's golden cases (shared/upstream-golden, format in its cases.toml), for the
// CPU tests that compare against them. The directory comes from $S2TP_GOLDEN_DIR, else the shared/
// folder beside the source tree, as in CI.
#pragma once

#include "tensor.h"
#include "tensor_io.h"

#include <toml++/toml.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace s2tp::golden {

inline std::filesystem::path directory() {
    if (const char *env = std::getenv("S2TP_GOLDEN_DIR")) return env;
    return std::filesystem::path(S2TP_SOURCE_ROOT) / ".." / "shared" / "upstream-golden";
}

struct Case {
    std::string name;
    AttentionShape shape;
    DType dtype = DType::f16;
    bool causal = false;
    double sm_scale = 0;  // as the kernel receives it: a C++ float
};

inline std::vector<Case> cases() {
    std::vector<Case> cases;
    const toml::table table = toml::parse_file((directory() / "cases.toml").string());
    for (const toml::node &node : *table["case"].as_array()) {
        const toml::table &c = *node.as_table();
        Case g;
        g.name = c["name"].value_or(std::string());
        g.shape.batch = c["batch"].value_or(std::int64_t(0));
        g.shape.heads_q = c["heads_q"].value_or(std::int64_t(0));
        g.shape.heads_kv = c["heads_kv"].value_or(std::int64_t(0));
        g.shape.len_q = c["len_q"].value_or(std::int64_t(0));
        g.shape.len_kv = c["len_kv"].value_or(std::int64_t(0));
        g.shape.head_dim = c["head_dim"].value_or(std::int64_t(0));
        g.shape.layout = parse_layout(c["layout"].value_or(std::string()));
        g.dtype = parse_dtype(c["dtype"].value_or(std::string()));
        g.causal = c["causal"].value_or(false);
        g.sm_scale = static_cast<float>(c["sm_scale"].value_or(0.0));
        cases.push_back(g);
    }
    return cases;
}

// One of the case's arrays (bf16 stored as uint16, e4m3 as uint8; quantized arrays may hold NaN).
inline Tensor load(const Case &c, const char *file, DType dtype) {
    TensorRequest request;
    request.dtype = dtype;
    request.require_finite = false;
    return read_npy(directory() / c.name / (std::string(file) + ".npy"), request);
}

}  // namespace s2tp::golden
