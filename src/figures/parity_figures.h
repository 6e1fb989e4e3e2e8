// The parity checkpoint's figures as a struct (sage2tp-checkpoint(5), "Figures of parity"): what was
// compared and the baseline against the float64 reference once, then per candidate (keyed by its
// name) the shapes whose bytes differ from the baseline's, every difference and its output digests.
#pragma once

#include <toml++/toml.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace s2tp {

// One differing tensor of one comparison.
struct ParityDifference {
    std::string shape;
    std::optional<std::int64_t> seed;
    std::string tensor;  // "o" or "lse"
    std::optional<std::int64_t> differing_elements, elements;
    std::string first_index;                      // the multi-index, as text
    std::string baseline_value, candidate_value;  // "0x3c01 (1.0009766)"
    bool operator==(const ParityDifference &o) const;
};

// One variant's O digest for one comparison.
struct ParityOutput {
    std::string shape;
    std::optional<std::int64_t> seed;
    std::string sha256;
    bool operator==(const ParityOutput &o) const { return shape == o.shape && seed == o.seed && sha256 == o.sha256; }
};

struct CandidateParity {
    std::optional<std::int64_t> shapes_differing;
    std::vector<ParityDifference> differences;
    std::vector<ParityOutput> outputs;
    bool operator==(const CandidateParity &o) const {
        return shapes_differing == o.shapes_differing && differences == o.differences && outputs == o.outputs;
    }
};

struct ParityFigures {
    std::optional<std::int64_t> shapes_checked, comparisons;
    std::optional<double> reference_worst_rel_l2, reference_limit;
    std::string reference_worst_case;
    std::vector<ParityOutput> baseline_outputs;        // [figures.baseline] outputs
    std::map<std::string, CandidateParity> candidates;  // [figures.candidates.<name>]
    std::string device, summary;

    toml::table to_toml() const;
    static ParityFigures from_toml(const toml::table &figures);
    bool operator==(const ParityFigures &o) const;

    std::string text() const;  // what `sage2tp parity` prints: the summary
};

}  // namespace s2tp
