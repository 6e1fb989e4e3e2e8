#include "model/experiment_manifest.h"
#include "model/arch_limits.h"
#include "support/data_paths.h"
#include "support/did_you_mean.h"
#include "support/file_io.h"

#include "support/errors.h"
#include "support/number_format.h"
#include "formats/toml_schema.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <string_view>
#include <sstream>

namespace fs = std::filesystem;

namespace s2tp {
namespace {

const std::vector<std::string> known_tools = {"memcheck", "racecheck", "synccheck", "initcheck"};

// A candidate's name becomes a directory (trees/<name>, builds/<name>) and a checkpoint key.
bool is_candidate_name(const std::string &name) {
    bool valid = !name.empty() && name.size() <= 32 && name[0] >= 'a' && name[0] <= 'z';
    for (char ch : name) valid = valid && ((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-');
    return valid;
}

void check_candidate_name(const std::string &name, const std::string &position) {
    if (!is_candidate_name(name))
        fail(ExitCode::usage, position + ": candidate name '" + name +
                                  "' must be a lower-case letter followed by up to 31 lower-case letters, digits or '-'");
    if (name == "baseline" || name == "support")
        fail(ExitCode::usage, position + ": candidate name '" + name + "' is taken by the run's own " + name + " tree");
}

// --candidate-commit for the candidate `name`: its NAME=REV, or the plain REV of a one-candidate run.
std::optional<std::string> candidate_commit_override(const SourceOverrides &overrides, const std::string &name) {
    auto named = overrides.candidate_commits.find(name);
    if (named != overrides.candidate_commits.end()) return named->second;
    return overrides.candidate_commit;
}

std::string resolve_against(const fs::path &base_dir, const std::string &path) {
    fs::path p(path);
    return (p.is_absolute() ? p : base_dir / p).lexically_normal().string();
}

// A source table's keys on top of `inherited` (the baseline's, for [candidate.source]). Changing the
// kind starts the repository and commit afresh. The overrides (prepare's --repository and --commit or
// --candidate-commit, named by `commit_option`) replace a git source's values.
SourceSpec read_source(TableReader &r, const std::optional<SourceSpec> &inherited, const fs::path &base_dir,
                       const std::optional<std::string> &repository_override,
                       const std::optional<std::string> &commit_override, const std::string &commit_option) {
    SourceSpec s = inherited.value_or(SourceSpec{});
    s.kind = r.choice("kind", {"embedded", "git"}, inherited ? inherited->kind : "");
    if (inherited && s.kind != inherited->kind) s.repository = s.commit = "";
    if (s.kind == "git") {
        if (auto repository = r.optional_string("repository")) s.repository = resolve_against(base_dir, *repository);
        if (repository_override) s.repository = fs::absolute(*repository_override).lexically_normal().string();
        if (s.repository.empty())
            fail(ExitCode::usage, r.position() + ": a git source needs its repository: set 'repository' in the "
                                                 "manifest or pass --repository DIR to prepare");
        s.commit = commit_override.value_or(r.string_or("commit", s.commit));
        if (s.commit.empty())
            fail(ExitCode::usage, r.position() + ": a git source needs 'commit' (or " + commit_option + " REV)");
    } else {
        if (commit_override)
            fail(ExitCode::usage, r.position() + ": " + commit_option + " names a commit, but this source is embedded");
        for (const char *key : {"repository", "commit"})
            if (r.optional_string(key))
                fail(ExitCode::usage, r.position() + ": '" + key + "' is for git sources; this one is embedded");
    }
    s.kernel_sources = r.strings_or("kernel_sources", s.kernel_sources);
    s.support_sources = r.strings_or("support_sources", s.support_sources);
    s.include_dirs = r.strings_or("include_dirs", s.include_dirs);
    s.needs_torch_headers = r.boolean_or("needs_torch_headers", s.needs_torch_headers);
    if (s.kernel_sources.empty()) {
        r.reject_misspelling_of("kernel_sources");
        fail(ExitCode::usage, r.position() + ": kernel_sources must name at least one file");
    }
    for (const auto *list : {&s.kernel_sources, &s.support_sources, &s.include_dirs})
        for (const auto &path : *list) {
            fs::path p(path);
            bool inside = !p.is_absolute() && !path.empty();
            for (const auto &part : p) inside = inside && part != "..";
            if (!inside)
                fail(ExitCode::usage, r.position() + ": source path '" + path +
                                          "' must be relative and stay inside the source tree");
        }
    return s;
}

ParityMode read_parity_mode(TableReader &r, const std::string &key) {
    return *parity_mode_from(r.choice(key, {"exact", "tolerance"}, "exact"));
}

// One [[gate.waiver]]: a condition the gate knows, and a reason that says something.
GateWaiver read_gate_waiver(const toml::table &table, const std::string &file) {
    TableReader r(table, file, "[[gate.waiver]]");
    GateWaiver w{r.string("condition"), r.string("reason")};
    const std::vector<std::string> &names = gate_condition_names();
    if (std::find(names.begin(), names.end(), w.condition) == names.end())
        fail(ExitCode::usage, r.position(*table.get("condition")) + ": [[gate.waiver]] condition '" + w.condition +
                                  "' is no gate condition" + did_you_mean(w.condition, names));
    if (w.reason.find_first_not_of(" \t\n") == std::string::npos)
        fail(ExitCode::usage, r.position(*table.get("reason")) + ": [[gate.waiver]] for '" + w.condition +
                                  "' needs a reason: the gate shows it beside the condition it waives");
    r.finish();
    return w;
}

// One candidate table ([candidate], or one [[candidate]] element, `where` naming it) on top of the
// baseline; `name_required` for the array form.
CandidateSpec read_candidate(const toml::table &table, const std::string &file, const std::string &where,
                             bool name_required, const Experiment &e, const fs::path &base_dir,
                             const SourceOverrides &overrides) {
    CandidateSpec c;
    TableReader r(table, file, where);
    if (const auto name = name_required ? r.string("name") : r.optional_string("name")) {
        c.name = *name;
        check_candidate_name(c.name, r.position(*table.get("name")));
    }
    const std::optional<std::string> commit_override = candidate_commit_override(overrides, c.name);
    if (table.contains("patch")) c.patch = r.existing_file("patch", base_dir.string());
    else r.accept("patch");
    if (overrides.candidate_patch) {
        std::error_code ec;
        if (!overrides.candidate_patch->empty() && !fs::is_regular_file(*overrides.candidate_patch, ec))
            fail(ExitCode::usage, "--patch '" + *overrides.candidate_patch + "': no such file");
        c.patch = *overrides.candidate_patch;
    }
    std::optional<std::string> abi = r.optional_string("abi");
    if (table.contains("parity_mode")) c.parity_mode = read_parity_mode(r, "parity_mode");
    c.source = e.baseline_source;
    const toml::table *own = r.optional_table("source");
    const std::string source_where = name_required ? "[candidate.source] of '" + c.name + "'" : "[candidate.source]";
    if (own) {
        TableReader s(*own, file, source_where);
        c.source = read_source(s, e.baseline_source, base_dir, overrides.repository, commit_override, "--candidate-commit");
        if (auto own_abi = s.optional_string("abi")) {
            if (abi) fail(ExitCode::usage, s.position() + ": candidate '" + c.name + "': the abi is given twice, in " + where +
                                              " and " + source_where + "; keep one");
            abi = own_abi;
        }
        s.finish();
    }
    c.abi = abi.value_or(e.baseline_abi);
    r.finish();
    if (commit_override && !own) {
        if (c.source.kind != "git")
            fail(ExitCode::usage, r.position() + ": --candidate-commit names a commit for candidate '" + c.name +
                                      "', but it is not a git source");
        c.source.commit = *commit_override;
    }
    // Another launcher of the same checkout (its own kernel_sources or abi) is a candidate of its own;
    // with --candidate-worktree the working tree's diff becomes its patch.
    if (c.patch.empty() && !overrides.candidate_worktree && c.source.same_checkout(e.baseline_source) &&
        c.source.kernel_sources == e.baseline_source.kernel_sources && c.abi == e.baseline_abi)
        fail(ExitCode::usage, r.position() + ": " + (name_required ? "candidate '" + c.name + "'" : std::string("the candidate")) +
                                  " is the baseline itself: give " + where +
                                  " patch, a [candidate.source] of its own, or both");
    return c;
}

// [candidate] (one candidate) or [[candidate]] (several, each named). TOML itself refuses a manifest
// that has both: a table cannot be defined again as an array of tables.
void read_candidates(const toml::table &doc, TableReader &top, Experiment &e, const fs::path &base_dir,
                     const SourceOverrides &overrides) {
    const std::string &file = top.file();
    top.accept("candidate");
    const toml::node *node = doc.get("candidate");
    if (!node)
        fail(ExitCode::usage, file + ":1:1: the manifest needs a [candidate] table (a patch, a [candidate.source], or "
                                     "both), or [[candidate]] tables, one per candidate");
    if (const toml::table *single = node->as_table()) {
        e.candidates.push_back(read_candidate(*single, file, "[candidate]", false, e, base_dir, overrides));
    } else if (const toml::array *several = node->as_array(); several && several->is_array_of_tables()) {
        if (several->size() > max_candidates)
            fail(ExitCode::usage, top.position(*several->get(max_candidates)) + ": " + std::to_string(several->size()) +
                                      " candidates; at most " + std::to_string(max_candidates) +
                                      ", because time interleaves the baseline, the A/A control and every candidate "
                                      "in each round");
        // One [[candidate]] table is the manifest's only candidate, as a [candidate] table is.
        if (overrides.candidate_commit && several->size() > 1)
            fail(ExitCode::usage, file + ":1:1: the manifest has " + std::to_string(several->size()) +
                                      " candidates: --candidate-commit takes NAME=REV, once per candidate it sets");
        if (overrides.candidate_patch && several->size() > 1)
            fail(ExitCode::usage, file + ":1:1: the manifest has " + std::to_string(several->size()) +
                                      " candidates: --patch and --no-patch are for a manifest with one candidate");
        for (std::size_t i = 0; i < several->size(); ++i) {
            const toml::table &table = *several->get(i)->as_table();
            CandidateSpec c = read_candidate(table, file, "[[candidate]] " + std::to_string(i + 1), true, e, base_dir, overrides);
            for (const CandidateSpec &earlier : e.candidates)
                if (earlier.name == c.name)
                    fail(ExitCode::usage, top.position(*table.get("name")) + ": candidate name '" + c.name +
                                              "' is used twice; each candidate needs its own name");
            e.candidates.push_back(std::move(c));
        }
    } else {
        fail(ExitCode::usage, top.position(*node) + ": 'candidate' must be a [candidate] table or [[candidate]] tables");
    }
    for (const auto &named : overrides.candidate_commits) e.candidate(named.first);  // refuses an unknown name
    bool any_git = e.baseline_source.kind == "git";
    for (const CandidateSpec &c : e.candidates) any_git = any_git || c.source.kind == "git";
    if (overrides.repository && !any_git)
        fail(ExitCode::usage, file + ":1:1: --repository names a repository, but neither [source] nor any "
                                     "[candidate.source] is a git source");
}

}  // namespace

const std::vector<std::string> &default_ncu_metrics() {
    // Names as `ncu --query-metrics` (2025.3, sm_90) lists them, each with the rollup and suffix the
    // raw page prints: per-SM averages, so a partly idle last wave does not hide in a sum.
    static const std::vector<std::string> metrics = {
        "gpu__time_duration.sum",
        "sm__cycles_active.avg",
        "sm__warps_active.avg.pct_of_peak_sustained_active",  // achieved occupancy
        "smsp__warps_active.avg.per_cycle_active",             // resident warps per scheduler
        "smsp__warps_eligible.avg.per_cycle_active",
        "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
        "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
        "sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active",
        "sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active",  // MUFU and conversions
        "smsp__issue_active.avg.pct_of_peak_sustained_active",
        "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio",
        "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio",
        "smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio",
        "smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio",
        "smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio",
        "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum",
        "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
        "lts__throughput.avg.pct_of_peak_sustained_elapsed",
        "lts__t_sector_hit_rate.pct",
    };
    return metrics;
}

fs::path find_manifest(const std::string &word) {
    std::error_code ec;
    if (word.empty()) fail(ExitCode::usage, "--manifest '' is an empty path; give it a file or a shipped manifest's name");
    if (fs::exists(word, ec)) return word;
    const fs::path shipped = data_root() / "data/experiments";
    const bool plain_name = word.find('/') == std::string::npos;
    if (plain_name)
        for (const std::string &file : {word, word + ".toml"})
            if (fs::is_regular_file(shipped / file, ec)) return shipped / file;
    const std::vector<std::string> names = shipped_manifest_names();
    std::string list;
    for (const std::string &name : names) list += (list.empty() ? "" : ", ") + name;
    fail(ExitCode::usage, "--manifest '" + word + "': no such file" +
                              (plain_name ? ", and no shipped manifest of that name" : std::string()) + did_you_mean(word, names) +
                              "; the shipped manifests (" + shipped.string() + "): " + list);
}

std::vector<std::string> shipped_manifest_names() {
    std::vector<std::string> names;
    std::error_code ec;
    for (const auto &entry : fs::directory_iterator(data_root() / "data/experiments", ec))
        if (entry.path().extension() == ".toml") names.push_back(entry.path().stem().string());
    std::sort(names.begin(), names.end());
    return names;
}

namespace {

// The nvcc flags a manifest may carry: each changes how the kernel compiles, none names a program, a
// plugin, or a file to run, include, read options from or write (unlike -ccbin, --compiler-bindir,
// -Xcompiler, -Xlinker, --dryrun, -include, -I, --options-file, -odir, --keep-dir, ...). A flag is one
// of the words, or a prefix followed by its value.
constexpr std::string_view manifest_flag_words[] = {
    "-O0", "-O1", "-O2", "-O3", "--use_fast_math", "-use_fast_math", "-lineinfo", "--generate-line-info", "-G",
    "--device-debug", "-w", "--disable-warnings", "--expt-relaxed-constexpr", "-expt-relaxed-constexpr",
    "--expt-extended-lambda", "-expt-extended-lambda", "--extended-lambda", "-extended-lambda", "--restrict", "-restrict",
    "--extra-device-vectorization", "-extra-device-vectorization", "-Wno-deprecated-gpu-targets",
    "-Wno-deprecated-declarations", "-Xptxas=-v", "-Xptxas=--verbose", "-Xptxas=-O0", "-Xptxas=-O1", "-Xptxas=-O2",
    "-Xptxas=-O3", "-Xptxas=--warn-on-spills", "-Xptxas=-warn-spills", "-Xptxas=--warn-on-local-memory-usage",
    "-Xptxas=-warn-lmem-usage",
};
constexpr std::string_view manifest_flag_prefixes[] = {
    "-D", "--define-macro=", "-U", "--undefine-macro=", "-std=", "--std=", "-maxrregcount=", "--maxrregcount=",
    "-ftz=", "--ftz=", "-prec-div=", "--prec-div=", "-prec-sqrt=", "--prec-sqrt=", "-fmad=", "--fmad=",
    "-diag-suppress=", "--diag-suppress=", "-diag_suppress=", "--diag_suppress=", "-diag-warn=", "--diag-warn=",
    "-diag-error=", "--diag-error=", "-Xptxas=-dlcm=", "-Xptxas=-dscm=",
};

bool manifest_may_carry(const std::string &flag) {
    for (std::string_view word : manifest_flag_words)
        if (flag == word) return true;
    // nvcc splits an -Xptxas value at ',' into several ptxas options: one value, one option.
    const bool ptxas = flag.rfind("-Xptxas=", 0) == 0;
    for (std::string_view prefix : manifest_flag_prefixes)
        if (flag.size() > prefix.size() && flag.compare(0, prefix.size(), prefix) == 0)
            return !ptxas || flag.find(',') == std::string::npos;
    return false;
}

}  // namespace

void check_compiler_flag(const std::string &flag, const std::string &where) {
    if (!manifest_may_carry(flag))
        fail(ExitCode::usage, where + ": the flag '" + flag + "' is not one a manifest may carry: a flag that names a "
                                  "program, a plugin or a file (-ccbin, --compiler-bindir, -Xcompiler, -Xlinker, "
                                  "--dryrun, -include, -I, --options-file, ...) would let whoever wrote the manifest "
                                  "choose what this host runs or reads. A manifest may carry -O0..-O3, "
                                  "--use_fast_math, -lineinfo, -G, -w, -D..., -U..., -std=..., -maxrregcount=..., "
                                  "--ftz=, --prec-div=, --prec-sqrt=, --fmad=, -diag-suppress=..., --expt-relaxed-constexpr, "
                                  "--extended-lambda, --restrict, -Xptxas=-v and the others sage2tp-experiment(5) "
                                  "lists; include directories go in [source] include_dirs, and the host compiler is the "
                                  "one nvcc finds on the host that builds (its PATH, or NVCC_CCBIN in its environment)");
    for (char c : flag) {
        const bool allowed = std::isalnum(static_cast<unsigned char>(c)) || std::string_view("-_=.,/+:@%").find(c) != std::string_view::npos;
        if (allowed) continue;
        char shown[8];
        if (std::isprint(static_cast<unsigned char>(c))) std::snprintf(shown, sizeof shown, "%c", c);
        else std::snprintf(shown, sizeof shown, "\\x%02x", static_cast<unsigned char>(c));
        fail(ExitCode::usage, where + ": the flag '" + flag + "' contains '" + shown +
                                  "': nvcc hands its flags to its own shell (sh -c), where that character could run "
                                  "commands, so a flag may hold only letters, digits and - _ = . , / + : @ %");
    }
}

Experiment load_experiment(const fs::path &manifest, const SourceOverrides &overrides) {
    const std::string file = manifest.string();
    const fs::path base_dir = fs::absolute(manifest).parent_path();
    toml::table doc = parse_toml_file(file);
    TableReader top(doc, file, "the manifest");
    Experiment e;

    const toml::table *experiment = top.optional_table("experiment");
    if (!experiment) fail(ExitCode::usage, file + ":1:1: the manifest needs an [experiment] table");
    {
        TableReader r(*experiment, file, "[experiment]");
        e.name = r.string("name");
        e.description = r.string_or("description", "");
        r.finish();
        if (e.name.empty() || e.name.find('/') != std::string::npos)
            fail(ExitCode::usage, r.position() + ": [experiment] name must be a plain non-empty name");
        if (overrides.experiment_name) {
            if (overrides.experiment_name->empty() || overrides.experiment_name->find('/') != std::string::npos)
                fail(ExitCode::usage, "--name '" + *overrides.experiment_name + "': an experiment name is plain and non-empty");
            e.name = *overrides.experiment_name;
        }
        if (overrides.experiment_description) e.description = *overrides.experiment_description;
    }

    const toml::table *source = top.optional_table("source");
    if (!source) fail(ExitCode::usage, file + ":1:1: the manifest needs a [source] table");
    {
        TableReader r(*source, file, "[source]");
        e.baseline_source = read_source(r, std::nullopt, base_dir, overrides.repository, overrides.commit, "--commit");
        e.baseline_abi = r.string_or("abi", e.baseline_abi);
        r.finish();
    }

    read_candidates(doc, top, e, base_dir, overrides);

    if (const toml::table *build = top.optional_table("build")) {
        TableReader r(*build, file, "[build]");
        e.arch = r.string_or("arch", e.arch);
        // The arch table decides, as build does: a target no row selects would fail only at build.
        if (const toml::node *arch = build->get("arch"); arch && e.arch != "auto") try {
                resolve_arch(load_arch_limits(arch_limits_table().string()), e.arch);
            } catch (const Error &error) {
                fail(ExitCode::usage, r.position(*arch) + ": [build] arch: " + error.what());
            }
        e.nvcc_flags = r.strings_or("nvcc_flags", e.nvcc_flags);
        e.extra_flags = r.strings_or("extra_flags", e.extra_flags);
        for (const char *key : {"nvcc_flags", "extra_flags"})
            if (const toml::array *flags = (*build)[key].as_array())
                for (const toml::node &flag : *flags)
                    check_compiler_flag(flag.value_or(std::string()), r.position(flag) + ": [build] " + key);
        r.finish();
    }

    if (const toml::table *sanitize = top.optional_table("sanitize")) {
        TableReader r(*sanitize, file, "[sanitize]");
        e.sanitizer_tools = r.strings_or("tools", e.sanitizer_tools);
        for (const auto &tool : e.sanitizer_tools) {
            bool known = false;
            for (const auto &k : known_tools) known = known || k == tool;
            if (!known)
                fail(ExitCode::usage, r.position() + ": [sanitize] unknown tool '" + tool +
                                          "'; expected memcheck, racecheck, synccheck or initcheck");
        }
        r.finish();
    }

    if (const toml::table *parity = top.optional_table("parity")) {
        TableReader r(*parity, file, "[parity]");
        e.parity_default_shapes = r.boolean_or("default_shapes", true);
        e.parity_seeds = r.integers_or("seeds", e.parity_seeds);
        e.reference_max_rel_l2 = r.number_or("reference_max_rel_l2", e.reference_max_rel_l2, 0.0, 1.0);
        if (const toml::array *shapes = r.optional_array_of_tables("shape")) {
            for (const auto &node : *shapes) {
                TableReader s(*node.as_table(), file, "[[parity.shape]]");
                e.parity_shapes.push_back(read_attention_problem(s, /*with_lse=*/true));
                s.finish();
            }
        }
        if (const toml::array *shapes = r.optional_array_of_tables("accuracy_shape")) {
            for (const auto &node : *shapes) {
                TableReader s(*node.as_table(), file, "[[parity.accuracy_shape]]");
                e.accuracy_shapes.push_back(read_attention_problem(s, /*with_lse=*/false));
                s.finish();
            }
        }
        e.parity_mode = read_parity_mode(r, "mode");
        const auto limit = [&](const char *key, double low, double high) -> std::optional<double> {
            if (!parity->contains(key)) {
                r.accept(key);
                return std::nullopt;
            }
            return r.number_or(key, 0.0, low, high);
        };
        AccuracyLimits &limits = e.accuracy_limits;
        limits.min_cosine = limit("min_cosine", 0.0, 1.0);
        limits.max_rel_l1 = limit("max_rel_l1", 0.0, 1.0);
        limits.max_rmse = limit("max_rmse", 0.0, 1e6);
        limits.max_abs_error = limit("max_abs_error", 0.0, 1e6);
        limits.baseline_factor = r.number_or("baseline_factor", limits.baseline_factor, 1.0, 1000.0);
        e.reference_rows = r.integer_or("reference_rows", e.reference_rows, 1, std::int64_t(1) << 20);
        r.finish();
        if (e.parity_seeds.empty()) fail(ExitCode::usage, r.position() + ": [parity] seeds must not be empty");
        if (!e.parity_default_shapes && e.parity_shapes.empty() && e.accuracy_shapes.empty())
            fail(ExitCode::usage, r.position() +
                                      ": [parity] default_shapes = false needs [[parity.shape]] or [[parity.accuracy_shape]] entries");
    }

    bool tolerance = e.parity_mode == ParityMode::tolerance;
    for (const CandidateSpec &c : e.candidates) tolerance = tolerance || c.parity_mode == ParityMode::tolerance;
    if ((tolerance || !e.accuracy_shapes.empty()) && !e.accuracy_limits.any())
        fail(ExitCode::usage, file + ": [parity] " +
                                  std::string(tolerance ? "mode = \"tolerance\"" : "[[parity.accuracy_shape]]") +
                                  " needs at least one limit: min_cosine, max_rel_l1, max_rmse or max_abs_error");

    const toml::table *workload = top.optional_table("workload");
    if (!workload) fail(ExitCode::usage, file + ":1:1: the manifest needs a [workload] table");
    if (workload->contains("set")) {
        // A resolved experiment.toml carries the set itself in [workload_set]; a manifest names its file.
        TableReader r(*workload, file, "[workload]");
        const std::string set_name = r.string("set");
        r.finish();
        if (const toml::table *embedded = top.optional_table("workload_set")) {
            e.workload_set = read_workload_set(*embedded, file, base_dir);
            if (e.workload_set->name != set_name)
                fail(ExitCode::usage, r.position() + ": [workload] set = '" + set_name + "' but [workload_set] is the set '" +
                                          e.workload_set->name + "'");
        } else {
            e.workload_set = load_workload_set(workload_set_file(set_name, base_dir));
        }
        e.workload = e.workload_set->workloads.front().workload;
    } else if (workload->contains("file")) {
        TableReader r(*workload, file, "[workload]");
        std::string workload_file = r.existing_file("file", base_dir.string());
        r.finish();
        e.workload = load_workload(workload_file);
    } else {
        TableReader r(*workload, file, "[workload]");
        e.workload = read_workload(r, base_dir);
        r.finish();
    }
    if (!e.workload_set && top.optional_table("workload_set"))
        fail(ExitCode::usage, file + ": [workload_set] holds a resolved set; name it with [workload] set = NAME");

    if (const toml::table *time = top.optional_table("time")) {
        TableReader r(*time, file, "[time]");
        const SettingRange &half = time_target_half_width_range, &budget = time_budget_seconds_range,
                           &rounds = time_min_rounds_range, &repeats = time_repeats_range;
        e.target_half_width = r.number_or(half.key, e.target_half_width, half.low, half.high);
        e.budget_seconds = r.number_or(budget.key, e.budget_seconds, budget.low, budget.high);
        e.min_rounds = r.integer_or(rounds.key, e.min_rounds, static_cast<std::int64_t>(rounds.low),
                                    static_cast<std::int64_t>(rounds.high));
        e.repeats = r.integer_or(repeats.key, e.repeats, static_cast<std::int64_t>(repeats.low),
                                 static_cast<std::int64_t>(repeats.high));
        e.warmup_launches = r.integer_or("warmup_launches", e.warmup_launches, 0, 1000);
        e.bootstrap_seed = static_cast<std::uint64_t>(r.integer_or("bootstrap_seed", 20261129, 0, INT64_MAX));
        e.bootstrap_resamples = r.integer_or("bootstrap_resamples", e.bootstrap_resamples, 100, 1000000);
        e.throttle_fraction = r.number_or("throttle_fraction", e.throttle_fraction, 0.0, 1.0);
        e.ncu_metrics = r.strings_or("ncu_metrics", e.ncu_metrics);
        for (const std::string &metric : e.ncu_metrics)
            if (metric.empty() || metric.find_first_of(", \t") != std::string::npos)
                fail(ExitCode::usage, r.position() + ": [time] ncu_metrics: '" + metric +
                                          "' is not one raw ncu metric name (no commas or spaces)");
        e.ncu_seq_len = r.integer_or("ncu_seq_len", e.ncu_seq_len, 0, 1 << 24);
        if (e.ncu_seq_len > 0 && e.workload.q_file)
            fail(ExitCode::usage, r.position() + ": [time] ncu_seq_len does not apply: the workload '" +
                                      e.workload.name + "' reads tensor files of a fixed shape");
        r.finish();
    }

    if (const toml::table *gate = top.optional_table("gate")) {
        TableReader r(*gate, file, "[gate]");
        const SettingRange &spill = gate_max_spill_growth_bytes_range, &ratio = gate_max_ratio_upper_range;
        e.max_spill_growth_bytes = r.integer_or(spill.key, e.max_spill_growth_bytes, static_cast<std::int64_t>(spill.low),
                                                static_cast<std::int64_t>(spill.high));
        if (auto off = gate->get(ratio.key); off && off->is_string()) {
            r.accept(ratio.key);
            if (off->value<std::string>() != "off")
                fail(ExitCode::usage, r.position(*off) + ": [gate] key 'max_ratio_upper' is a number or \"off\", got \"" +
                                          *off->value<std::string>() + "\"");
            e.max_ratio_upper.reset();
        } else {
            e.max_ratio_upper = r.number_or(ratio.key, Experiment::default_max_ratio_upper, ratio.low, ratio.high);
        }
        // Each is unset unless the manifest sets it: the set bounds are then off, and the gate applies the
        // default p50 bound, which a manifest that writes 220 has chosen, not left.
        for (auto [range, bound] : {std::pair{&gate_max_candidate_p50_ms_range, &e.max_candidate_p50_ms},
                                    {&gate_max_geomean_ratio_upper_range, &e.max_geomean_ratio_upper},
                                    {&gate_max_worst_ratio_upper_range, &e.max_worst_ratio_upper}}) {
            if (gate->contains(range->key)) *bound = r.number_or(range->key, 1.0, range->low, range->high);
            else r.accept(range->key);
        }
        e.require_sanitizer = r.boolean_or("require_sanitizer", e.require_sanitizer);
        if (const toml::array *waivers = r.optional_array_of_tables("waiver"))
            for (const auto &node : *waivers) e.gate_waivers.push_back(read_gate_waiver(*node.as_table(), file));
        r.finish();
    }

    top.finish();
    return e;
}

namespace {

toml::array to_array(const std::vector<std::string> &values) {
    toml::array a;
    for (const auto &v : values) a.push_back(v);
    return a;
}

toml::table source_table(const SourceSpec &s) {
    toml::table t{{"kind", s.kind},
                  {"kernel_sources", to_array(s.kernel_sources)},
                  {"support_sources", to_array(s.support_sources)},
                  {"include_dirs", to_array(s.include_dirs)},
                  {"needs_torch_headers", s.needs_torch_headers}};
    if (s.kind == "git") {
        t.insert("repository", s.repository);
        t.insert("commit", s.commit);
    }
    return t;
}

}  // namespace

namespace {

std::vector<OutputPin> read_pins(const fs::path &pins) {
    std::error_code ec;
    if (!fs::exists(pins, ec)) return {};
    const toml::table doc = parse_toml_file(pins.string());
    for (const auto &[key, node] : doc)
        if (key.str() != "expected_sha256")
            fail(ExitCode::usage, pins.string() + ":" + std::to_string(node.source().begin.line) + ": unknown key '" +
                                      std::string(key.str()) + "'; a pins file holds only [expected_sha256]");
    if (const toml::table *expected = doc["expected_sha256"].as_table())
        return read_expected_sha256(*expected, pins.string(), "[expected_sha256]");
    return {};
}

}  // namespace

void apply_run_pins(WorkloadSpec &workload, const fs::path &pins) {
    for (const OutputPin &pin : read_pins(pins)) set_pin(workload.expected_sha256, pin);
}

std::optional<std::string> pin_expected_output_sha256(const fs::path &pins, const WorkloadSpec &workload,
                                                      const PinKey &key, const std::string &sha) {
    WorkloadSpec pinned = workload;
    apply_run_pins(pinned, pins);
    std::optional<std::string> replaced = expected_output_sha256(pinned, key);
    if (replaced == sha) replaced.reset();
    std::vector<OutputPin> entries = read_pins(pins);
    set_pin(entries, OutputPin{key, sha});
    std::ostringstream text;
    text << "# Output SHA-256 pins recorded by 'sage2tp time' in this run (--pin, or a baseline's first passing\n"
            "# run when nothing pinned its kernel); they override the manifest's [workload.expected_sha256].\n"
         << toml::table{{"expected_sha256", expected_sha256_table(entries)}} << "\n";
    write_file_atomically(pins, text.str());
    return replaced;
}

void add_candidate_commit_override(SourceOverrides &overrides, const std::string &value) {
    const auto equals = value.find('=');
    const std::string name = equals == std::string::npos ? std::string() : value.substr(0, equals);
    if (!is_candidate_name(name)) {
        if (overrides.candidate_commit)
            fail(ExitCode::usage, "--candidate-commit is given twice without a candidate name ('" + *overrides.candidate_commit +
                                      "' and '" + value + "'); with several candidates, give NAME=REV for each");
        overrides.candidate_commit = value;
        return;
    }
    if (!overrides.candidate_commits.emplace(name, value.substr(equals + 1)).second)
        fail(ExitCode::usage, "--candidate-commit names candidate '" + name + "' twice");
}

double checked_setting(const SettingRange &range, double value) {
    const std::string where = " (as " + std::string(range.table) + " " + range.key + "), got " + shortest(value);
    if (!(value >= range.low && value <= range.high))
        fail(ExitCode::usage, std::string("--") + range.flag + " must be in [" + shortest(range.low) + ", " +
                                  shortest(range.high) + "]" + where);
    if (range.whole && value != std::floor(value))
        fail(ExitCode::usage, std::string("--") + range.flag + " must be a whole number" + where);
    return value;
}

const CandidateSpec &Experiment::candidate(const std::string &name) const {
    for (const CandidateSpec &c : candidates)
        if (c.name == name) return c;
    std::string known;
    for (const CandidateSpec &c : candidates) known += (known.empty() ? "" : ", ") + c.name;
    fail(ExitCode::usage, "experiment '" + this->name + "' has no candidate named '" + name + "' (it has " + known + ")");
}

const SourceSpec &Experiment::source(const std::string &variant) const {
    return variant == "baseline" ? baseline_source : candidate(variant).source;
}

const std::string &Experiment::abi(const std::string &variant) const {
    return variant == "baseline" ? baseline_abi : candidate(variant).abi;
}

ParityMode Experiment::parity_mode_of(const std::string &name) const {
    return candidate(name).parity_mode.value_or(parity_mode);
}

bool Experiment::checks_accuracy() const {
    bool tolerance = false;
    for (const CandidateSpec &c : candidates) tolerance = tolerance || parity_mode_of(c.name) == ParityMode::tolerance;
    return tolerance || !accuracy_shapes.empty() || accuracy_limits.any();
}

std::vector<SetWorkload> Experiment::timed_workloads() const {
    if (workload_set) return workload_set->workloads;
    return {SetWorkload{workload, "", std::nullopt}};
}

std::vector<std::string> Experiment::variant_names() const {
    std::vector<std::string> names{"baseline"};
    for (const CandidateSpec &c : candidates) names.push_back(c.name);
    return names;
}

std::string experiment_to_toml(const Experiment &e) {
    toml::table doc;
    doc.insert("experiment", toml::table{{"name", e.name}, {"description", e.description}});
    toml::table source = source_table(e.baseline_source);
    source.insert("abi", e.baseline_abi);
    doc.insert("source", source);
    auto candidate_table = [](const CandidateSpec &c, bool named) {
        toml::table t{{"abi", c.abi}, {"source", source_table(c.source)}};
        if (named) t.insert("name", c.name);
        if (!c.patch.empty()) t.insert("patch", c.patch);
        if (c.parity_mode) t.insert("parity_mode", parity_mode_name(*c.parity_mode));
        return t;
    };
    if (e.candidates.size() == 1) {
        const CandidateSpec &only = e.candidates.front();
        doc.insert("candidate", candidate_table(only, only.name != CandidateSpec{}.name));
    } else {
        toml::array candidates;
        for (const CandidateSpec &c : e.candidates) candidates.push_back(candidate_table(c, true));
        doc.insert("candidate", candidates);
    }
    doc.insert("build", toml::table{{"arch", e.arch},
                                    {"nvcc_flags", to_array(e.nvcc_flags)},
                                    {"extra_flags", to_array(e.extra_flags)}});
    doc.insert("sanitize", toml::table{{"tools", to_array(e.sanitizer_tools)}});
    toml::array seeds, shapes;
    for (auto s : e.parity_seeds) seeds.push_back(s);
    for (const auto &s : e.parity_shapes) shapes.push_back(attention_problem_table(s));
    toml::table parity{{"default_shapes", e.parity_default_shapes},
                       {"seeds", seeds},
                       {"reference_max_rel_l2", e.reference_max_rel_l2}};
    if (!shapes.empty()) parity.insert("shape", shapes);
    toml::array accuracy_shapes;
    for (const auto &s : e.accuracy_shapes) accuracy_shapes.push_back(attention_problem_table(s));
    if (!accuracy_shapes.empty()) parity.insert("accuracy_shape", accuracy_shapes);
    parity.insert("mode", parity_mode_name(e.parity_mode));
    const AccuracyLimits &limits = e.accuracy_limits;
    for (const auto &[key, value] : {std::pair{"min_cosine", limits.min_cosine}, {"max_rel_l1", limits.max_rel_l1},
                                     {"max_rmse", limits.max_rmse}, {"max_abs_error", limits.max_abs_error}})
        if (value) parity.insert(key, *value);
    parity.insert("baseline_factor", limits.baseline_factor);
    parity.insert("reference_rows", e.reference_rows);
    doc.insert("parity", parity);
    if (e.workload_set) {
        doc.insert("workload", toml::table{{"set", e.workload_set->name}});
        doc.insert("workload_set", workload_set_table(*e.workload_set));
    } else {
        doc.insert("workload", workload_table(e.workload));
    }
    doc.insert("time", toml::table{{"target_half_width", e.target_half_width},
                                   {"budget_seconds", e.budget_seconds},
                                   {"min_rounds", e.min_rounds},
                                   {"repeats", e.repeats},
                                   {"warmup_launches", e.warmup_launches},
                                   {"bootstrap_seed", static_cast<std::int64_t>(e.bootstrap_seed)},
                                   {"bootstrap_resamples", e.bootstrap_resamples},
                                   {"throttle_fraction", e.throttle_fraction},
                                   {"ncu_metrics", to_array(e.ncu_metrics)},
                                   {"ncu_seq_len", e.ncu_seq_len}});
    toml::table gate{{"max_spill_growth_bytes", e.max_spill_growth_bytes}, {"require_sanitizer", e.require_sanitizer}};
    // Only when the manifest set it: the resolved copy, too, leaves the default to Experiment.
    if (e.max_candidate_p50_ms) gate.insert("max_candidate_p50_ms", *e.max_candidate_p50_ms);
    if (e.max_ratio_upper) gate.insert("max_ratio_upper", *e.max_ratio_upper);
    else gate.insert("max_ratio_upper", "off");
    if (e.max_geomean_ratio_upper) gate.insert("max_geomean_ratio_upper", *e.max_geomean_ratio_upper);
    if (e.max_worst_ratio_upper) gate.insert("max_worst_ratio_upper", *e.max_worst_ratio_upper);
    if (!e.gate_waivers.empty()) {
        toml::array waivers;
        for (const GateWaiver &w : e.gate_waivers)
            waivers.push_back(toml::table{{"condition", w.condition}, {"reason", w.reason}});
        gate.insert("waiver", waivers);
    }
    doc.insert("gate", gate);
    std::ostringstream out;
    out << "# Resolved by sage2tp prepare; later stages read this copy, not the original manifest.\n" << doc << "\n";
    return out.str();
}

}  // namespace s2tp
