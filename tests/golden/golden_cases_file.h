// tests/golden/cases.toml: the golden cases' problems and input seeds, read strictly (every key present
// and typed, the problem valid). golden_inputs writes their q, k and v; gpu_kernel_check's `launchers`
// mode regenerates the same q, k and v and checks every launcher against upstream.toml.
#pragma once

#include "../golden_cases.h"
#include "model/attention_problem.h"
#include "support/errors.h"

#include <toml++/toml.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace s2tp::golden {

struct SeededCase {
    std::string name;
    AttentionProblem problem;  // with_lse on: the golden outputs hold the LSE
    std::uint64_t seed = 0;
};

inline std::vector<SeededCase> seeded_cases(const std::filesystem::path &cases_toml) {
    const toml::table root = parse_toml_file(cases_toml);
    const toml::array *cases = root["case"].as_array();
    if (!cases || cases->empty()) fail(ExitCode::usage, cases_toml.string() + ": no [[case]] tables");
    std::vector<SeededCase> result;
    for (const toml::node &node : *cases) {
        const std::string where = cases_toml.string() + ":" + std::to_string(node.source().begin.line);
        const toml::table *t = node.as_table();
        if (!t) fail(ExitCode::usage, where + ": [[case]] is not a table");
        SeededCase c;
        c.name = toml_value<std::string>(*t, "name", where);
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
        const std::int64_t seed = toml_value<std::int64_t>(*t, "seed", where);
        if (seed < 0) fail(ExitCode::usage, where + ": seed must not be negative");
        c.seed = static_cast<std::uint64_t>(seed);
        c.problem.validate();
        result.push_back(c);
    }
    return result;
}

}  // namespace s2tp::golden
