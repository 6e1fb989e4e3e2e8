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

namespace keys = manifest_key;

const std::vector<std::string> known_tools = {"memcheck", "racecheck", "synccheck", "initcheck"};

// A reader of the manifest's table `table` (a TOML path, "gate.waiver"), `where` naming it in messages.
TableReader manifest_table_reader(const toml::table &contents, const std::string &file, const std::string &table,
                                  const std::string &where) {
    TableReader r(contents, file, where);
    r.expect(manifest_keys_of(table));
    return r;
}

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
    s.kind = r.choice(keys::source_kind.key, {"embedded", "git"}, inherited ? inherited->kind : "");
    if (inherited && s.kind != inherited->kind) s.repository = s.commit = "";
    if (s.kind == "git") {
        if (auto repository = r.optional_string(keys::source_repository.key)) s.repository = resolve_against(base_dir, *repository);
        if (repository_override) s.repository = fs::absolute(*repository_override).lexically_normal().string();
        if (s.repository.empty())
            fail(ExitCode::usage, r.position() + ": a git source needs its repository: set 'repository' in the "
                                                 "manifest or pass --repository DIR to prepare");
        s.commit = commit_override.value_or(r.string_or(keys::source_commit.key, s.commit));
        if (s.commit.empty())
            fail(ExitCode::usage, r.position() + ": a git source needs 'commit' (or " + commit_option + " REV)");
    } else {
        if (commit_override)
            fail(ExitCode::usage, r.position() + ": " + commit_option + " names a commit, but this source is embedded");
        for (const char *key : {keys::source_repository.key, keys::source_commit.key})
            if (r.optional_string(key))
                fail(ExitCode::usage, r.position() + ": '" + key + "' is for git sources; this one is embedded");
    }
    s.kernel_sources = r.strings_or(keys::source_kernel_sources.key, s.kernel_sources);
    s.support_sources = r.strings_or(keys::source_support_sources.key, s.support_sources);
    s.include_dirs = r.strings_or(keys::source_include_dirs.key, s.include_dirs);
    s.needs_torch_headers = r.boolean_or(keys::source_needs_torch_headers.key, s.needs_torch_headers);
    if (s.kernel_sources.empty()) {
        r.reject_misspelling_of(keys::source_kernel_sources.key);
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
    TableReader r = manifest_table_reader(table, file, "gate.waiver", "[[gate.waiver]]");
    GateWaiver w{r.string(keys::gate_waiver_condition.key), r.string(keys::gate_waiver_reason.key)};
    const std::vector<std::string> &names = gate_condition_names();
    if (std::find(names.begin(), names.end(), w.condition) == names.end())
        fail(ExitCode::usage, r.position(*table.get(keys::gate_waiver_condition.key)) + ": [[gate.waiver]] condition '" + w.condition +
                                  "' is no gate condition" + did_you_mean(w.condition, names));
    if (w.reason.find_first_not_of(" \t\n") == std::string::npos)
        fail(ExitCode::usage, r.position(*table.get(keys::gate_waiver_reason.key)) + ": [[gate.waiver]] for '" + w.condition +
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
    TableReader r = manifest_table_reader(table, file, "candidate", where);
    const char *name_key = keys::candidate_name.key;
    if (const auto name = name_required ? r.string(name_key) : r.optional_string(name_key)) {
        c.name = *name;
        check_candidate_name(c.name, r.position(*table.get(name_key)));
    }
    const std::optional<std::string> commit_override = candidate_commit_override(overrides, c.name);
    const char *patch_key = keys::candidate_patch.key;
    if (table.contains(patch_key)) c.patch = r.existing_file(patch_key, base_dir.string());
    else r.accept(patch_key);
    if (overrides.candidate_patch) {
        std::error_code ec;
        if (!overrides.candidate_patch->empty() && !fs::is_regular_file(*overrides.candidate_patch, ec))
            fail(ExitCode::usage, "--patch '" + *overrides.candidate_patch + "': no such file");
        c.patch = *overrides.candidate_patch;
    }
    std::optional<std::string> abi = r.optional_string(keys::candidate_abi.key);
    if (table.contains(keys::candidate_parity_mode.key)) c.parity_mode = read_parity_mode(r, keys::candidate_parity_mode.key);
    c.source = e.baseline_source;
    const toml::table *own = r.optional_table(keys::candidate_source.key);
    const std::string source_where = name_required ? "[candidate.source] of '" + c.name + "'" : "[candidate.source]";
    if (own) {
        TableReader s = manifest_table_reader(*own, file, "source", source_where);
        c.source = read_source(s, e.baseline_source, base_dir, overrides.repository, commit_override, "--candidate-commit");
        if (auto own_abi = s.optional_string(keys::source_abi.key)) {
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
                    fail(ExitCode::usage, top.position(*table.get(keys::candidate_name.key)) + ": candidate name '" + c.name +
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

namespace {

void read_experiment_table(const toml::table &table, const std::string &file, const SourceOverrides &overrides,
                           Experiment &e) {
    TableReader r = manifest_table_reader(table, file, "experiment", "[experiment]");
    e.name = r.string(keys::experiment_name.key);
    e.description = r.string_or(keys::experiment_description.key, "");
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

void read_build_table(const toml::table &build, const std::string &file, Experiment &e) {
    TableReader r = manifest_table_reader(build, file, "build", "[build]");
    e.arch = r.string_or(keys::build_arch.key, e.arch);
    // The arch table decides, as build does: a target no row selects would fail only at build.
    if (const toml::node *arch = build.get(keys::build_arch.key); arch && e.arch != "auto") try {
            resolve_arch(load_arch_limits(arch_limits_table().string()), e.arch);
        } catch (const Error &error) {
            fail(ExitCode::usage, r.position(*arch) + ": [build] arch: " + error.what());
        }
    e.nvcc_flags = r.strings_or(keys::build_nvcc_flags.key, e.nvcc_flags);
    e.extra_flags = r.strings_or(keys::build_extra_flags.key, e.extra_flags);
    for (const char *key : {keys::build_nvcc_flags.key, keys::build_extra_flags.key})
        if (const toml::array *flags = build[key].as_array())
            for (const toml::node &flag : *flags)
                check_compiler_flag(flag.value_or(std::string()), r.position(flag) + ": [build] " + key);
    r.finish();
}

void read_sanitize_table(const toml::table &sanitize, const std::string &file, Experiment &e) {
    TableReader r = manifest_table_reader(sanitize, file, "sanitize", "[sanitize]");
    e.sanitizer_tools = r.strings_or(keys::sanitize_tools.key, e.sanitizer_tools);
    for (const auto &tool : e.sanitizer_tools)
        if (std::find(known_tools.begin(), known_tools.end(), tool) == known_tools.end())
            fail(ExitCode::usage, r.position() + ": [sanitize] unknown tool '" + tool +
                                      "'; expected memcheck, racecheck, synccheck or initcheck");
    r.finish();
}

// [[parity.shape]] or [[parity.accuracy_shape]] (`key`), each element a shape.
std::vector<AttentionProblem> read_parity_shapes(TableReader &parity, const std::string &file, const SchemaKey &key,
                                                 bool with_lse) {
    std::vector<AttentionProblem> shapes;
    if (const toml::array *tables = parity.optional_array_of_tables(key.key))
        for (const auto &node : *tables) {
            TableReader s(*node.as_table(), file, "[[parity." + std::string(key.key) + "]]");
            shapes.push_back(read_attention_problem(s, with_lse));
            s.finish();
        }
    return shapes;
}

void read_parity_table(const toml::table &parity, const std::string &file, Experiment &e) {
    TableReader r = manifest_table_reader(parity, file, "parity", "[parity]");
    e.parity_default_shapes = r.boolean_or(keys::parity_default_shapes.key, true);
    e.parity_seeds = r.integers_or(keys::parity_seeds.key, e.parity_seeds);
    e.reference_max_rel_l2 = r.number_or(keys::parity_reference_max_rel_l2, e.reference_max_rel_l2);
    e.parity_shapes = read_parity_shapes(r, file, keys::parity_shape, /*with_lse=*/true);
    e.accuracy_shapes = read_parity_shapes(r, file, keys::parity_accuracy_shape, /*with_lse=*/false);
    e.parity_mode = read_parity_mode(r, keys::parity_mode.key);
    const auto limit = [&](const SchemaKey &key) -> std::optional<double> {
        if (!parity.contains(key.key)) {
            r.accept(key.key);
            return std::nullopt;
        }
        return r.number_or(key, 0.0);
    };
    AccuracyLimits &limits = e.accuracy_limits;
    limits.min_cosine = limit(keys::parity_min_cosine);
    limits.max_rel_l1 = limit(keys::parity_max_rel_l1);
    limits.max_rmse = limit(keys::parity_max_rmse);
    limits.max_abs_error = limit(keys::parity_max_abs_error);
    limits.baseline_factor = r.number_or(keys::parity_baseline_factor, limits.baseline_factor);
    e.reference_rows = r.integer_or(keys::parity_reference_rows, e.reference_rows);
    r.finish();
    if (e.parity_seeds.empty()) fail(ExitCode::usage, r.position() + ": [parity] seeds must not be empty");
    if (!e.parity_default_shapes && e.parity_shapes.empty() && e.accuracy_shapes.empty())
        fail(ExitCode::usage, r.position() +
                                  ": [parity] default_shapes = false needs [[parity.shape]] or [[parity.accuracy_shape]] entries");
}

// A tolerance candidate, or accuracy shapes, need a limit to hold the candidate to.
void check_accuracy_limits(const Experiment &e, const std::string &file) {
    bool tolerance = e.parity_mode == ParityMode::tolerance;
    for (const CandidateSpec &c : e.candidates) tolerance = tolerance || c.parity_mode == ParityMode::tolerance;
    if ((tolerance || !e.accuracy_shapes.empty()) && !e.accuracy_limits.any())
        fail(ExitCode::usage, file + ": [parity] " +
                                  std::string(tolerance ? "mode = \"tolerance\"" : "[[parity.accuracy_shape]]") +
                                  " needs at least one limit: min_cosine, max_rel_l1, max_rmse or max_abs_error");
}

// [workload]: a workload set by name, a workload file, or the workload itself.
void read_workload_tables(TableReader &top, const std::string &file, const fs::path &base_dir, Experiment &e) {
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
}

void read_time_table(const toml::table &time, const std::string &file, Experiment &e) {
    TableReader r = manifest_table_reader(time, file, "time", "[time]");
    e.target_half_width = r.number_or(keys::time_target_half_width, e.target_half_width);
    e.budget_seconds = r.number_or(keys::time_budget_seconds, e.budget_seconds);
    e.min_rounds = r.integer_or(keys::time_min_rounds, e.min_rounds);
    e.repeats = r.integer_or(keys::time_repeats, e.repeats);
    e.warmup_launches = r.integer_or(keys::time_warmup_launches, e.warmup_launches);
    e.bootstrap_seed = static_cast<std::uint64_t>(r.integer_or(keys::time_bootstrap_seed, 20261129));
    e.bootstrap_resamples = r.integer_or(keys::time_bootstrap_resamples, e.bootstrap_resamples);
    e.throttle_fraction = r.number_or(keys::time_throttle_fraction, e.throttle_fraction);
    e.ncu_metrics = r.strings_or(keys::time_ncu_metrics.key, e.ncu_metrics);
    for (const std::string &metric : e.ncu_metrics)
        if (metric.empty() || metric.find_first_of(", \t") != std::string::npos)
            fail(ExitCode::usage, r.position() + ": [time] ncu_metrics: '" + metric +
                                      "' is not one raw ncu metric name (no commas or spaces)");
    e.ncu_seq_len = r.integer_or(keys::time_ncu_seq_len, e.ncu_seq_len);
    if (e.ncu_seq_len > 0 && e.workload.q_file)
        fail(ExitCode::usage, r.position() + ": [time] ncu_seq_len does not apply: the workload '" + e.workload.name +
                                  "' reads tensor files of a fixed shape");
    r.finish();
}

void read_gate_table(const toml::table &gate, const std::string &file, Experiment &e) {
    TableReader r = manifest_table_reader(gate, file, "gate", "[gate]");
    e.max_spill_growth_bytes = r.integer_or(keys::gate_max_spill_growth_bytes, e.max_spill_growth_bytes);
    const SchemaKey &ratio = keys::gate_max_ratio_upper;
    if (auto off = gate.get(ratio.key); off && off->is_string()) {
        r.accept(ratio.key);
        if (off->value<std::string>() != "off")
            fail(ExitCode::usage, r.position(*off) + ": [gate] key 'max_ratio_upper' is a number or \"off\", got \"" +
                                      *off->value<std::string>() + "\"");
        e.max_ratio_upper.reset();
    } else {
        e.max_ratio_upper = r.number_or(ratio, Experiment::default_max_ratio_upper);
    }
    // Each is unset unless the manifest sets it: the set bounds are then off, and the gate applies the
    // default p50 bound, which a manifest that writes 220 has chosen, not left.
    for (auto [key, bound] : {std::pair{&keys::gate_max_candidate_p50_ms, &e.max_candidate_p50_ms},
                              {&keys::gate_max_geomean_ratio_upper, &e.max_geomean_ratio_upper},
                              {&keys::gate_max_worst_ratio_upper, &e.max_worst_ratio_upper}}) {
        if (gate.contains(key->key)) *bound = r.number_or(*key, 1.0);
        else r.accept(key->key);
    }
    e.require_sanitizer = r.boolean_or(keys::gate_require_sanitizer.key, e.require_sanitizer);
    if (const toml::array *waivers = r.optional_array_of_tables(keys::gate_waiver.key))
        for (const auto &node : *waivers) e.gate_waivers.push_back(read_gate_waiver(*node.as_table(), file));
    r.finish();
}

}  // namespace

Experiment load_experiment(const fs::path &manifest, const SourceOverrides &overrides) {
    const std::string file = manifest.string();
    const fs::path base_dir = fs::absolute(manifest).parent_path();
    toml::table doc = parse_toml_file(file);
    TableReader top(doc, file, "the manifest");
    Experiment e;

    const toml::table *experiment = top.optional_table("experiment");
    if (!experiment) fail(ExitCode::usage, file + ":1:1: the manifest needs an [experiment] table");
    read_experiment_table(*experiment, file, overrides, e);

    const toml::table *source = top.optional_table("source");
    if (!source) fail(ExitCode::usage, file + ":1:1: the manifest needs a [source] table");
    {
        TableReader r = manifest_table_reader(*source, file, "source", "[source]");
        e.baseline_source = read_source(r, std::nullopt, base_dir, overrides.repository, overrides.commit, "--commit");
        e.baseline_abi = r.string_or(keys::source_abi.key, e.baseline_abi);
        r.finish();
    }

    read_candidates(doc, top, e, base_dir, overrides);
    if (const toml::table *build = top.optional_table("build")) read_build_table(*build, file, e);
    if (const toml::table *sanitize = top.optional_table("sanitize")) read_sanitize_table(*sanitize, file, e);
    if (const toml::table *parity = top.optional_table("parity")) read_parity_table(*parity, file, e);
    check_accuracy_limits(e, file);
    read_workload_tables(top, file, base_dir, e);
    if (const toml::table *time = top.optional_table("time")) read_time_table(*time, file, e);
    if (const toml::table *gate = top.optional_table("gate")) read_gate_table(*gate, file, e);
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
    toml::table t{{keys::source_kind.key, s.kind},
                  {keys::source_kernel_sources.key, to_array(s.kernel_sources)},
                  {keys::source_support_sources.key, to_array(s.support_sources)},
                  {keys::source_include_dirs.key, to_array(s.include_dirs)},
                  {keys::source_needs_torch_headers.key, s.needs_torch_headers}};
    if (s.kind == "git") {
        t.insert(keys::source_repository.key, s.repository);
        t.insert(keys::source_commit.key, s.commit);
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
    const SchemaKey &key = range.setting;
    const std::string where = " (as [" + std::string(key.table) + "] " + key.key + "), got " + shortest(value);
    if (!(value >= key.low && value <= key.high))
        fail(ExitCode::usage, std::string("--") + range.flag + " must be in [" + shortest(key.low) + ", " +
                                  shortest(key.high) + "]" + where);
    if (key.kind == SchemaKind::integer && value != std::floor(value))
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
    doc.insert("experiment", toml::table{{keys::experiment_name.key, e.name}, {keys::experiment_description.key, e.description}});
    toml::table source = source_table(e.baseline_source);
    source.insert(keys::source_abi.key, e.baseline_abi);
    doc.insert("source", source);
    auto candidate_table = [](const CandidateSpec &c, bool named) {
        toml::table t{{keys::candidate_abi.key, c.abi}, {keys::candidate_source.key, source_table(c.source)}};
        if (named) t.insert(keys::candidate_name.key, c.name);
        if (!c.patch.empty()) t.insert(keys::candidate_patch.key, c.patch);
        if (c.parity_mode) t.insert(keys::candidate_parity_mode.key, parity_mode_name(*c.parity_mode));
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
    doc.insert("build", toml::table{{keys::build_arch.key, e.arch},
                                    {keys::build_nvcc_flags.key, to_array(e.nvcc_flags)},
                                    {keys::build_extra_flags.key, to_array(e.extra_flags)}});
    doc.insert("sanitize", toml::table{{keys::sanitize_tools.key, to_array(e.sanitizer_tools)}});
    toml::array seeds, shapes;
    for (auto s : e.parity_seeds) seeds.push_back(s);
    for (const auto &s : e.parity_shapes) shapes.push_back(attention_problem_table(s));
    toml::table parity{{keys::parity_default_shapes.key, e.parity_default_shapes},
                       {keys::parity_seeds.key, seeds},
                       {keys::parity_reference_max_rel_l2.key, e.reference_max_rel_l2}};
    if (!shapes.empty()) parity.insert(keys::parity_shape.key, shapes);
    toml::array accuracy_shapes;
    for (const auto &s : e.accuracy_shapes) accuracy_shapes.push_back(attention_problem_table(s));
    if (!accuracy_shapes.empty()) parity.insert(keys::parity_accuracy_shape.key, accuracy_shapes);
    parity.insert(keys::parity_mode.key, parity_mode_name(e.parity_mode));
    const AccuracyLimits &limits = e.accuracy_limits;
    for (const auto &[key, value] : {std::pair{keys::parity_min_cosine.key, limits.min_cosine},
                                     {keys::parity_max_rel_l1.key, limits.max_rel_l1},
                                     {keys::parity_max_rmse.key, limits.max_rmse},
                                     {keys::parity_max_abs_error.key, limits.max_abs_error}})
        if (value) parity.insert(key, *value);
    parity.insert(keys::parity_baseline_factor.key, limits.baseline_factor);
    parity.insert(keys::parity_reference_rows.key, e.reference_rows);
    doc.insert("parity", parity);
    if (e.workload_set) {
        doc.insert("workload", toml::table{{"set", e.workload_set->name}});
        doc.insert("workload_set", workload_set_table(*e.workload_set));
    } else {
        doc.insert("workload", workload_table(e.workload));
    }
    doc.insert("time", toml::table{{keys::time_target_half_width.key, e.target_half_width},
                                   {keys::time_budget_seconds.key, e.budget_seconds},
                                   {keys::time_min_rounds.key, e.min_rounds},
                                   {keys::time_repeats.key, e.repeats},
                                   {keys::time_warmup_launches.key, e.warmup_launches},
                                   {keys::time_bootstrap_seed.key, static_cast<std::int64_t>(e.bootstrap_seed)},
                                   {keys::time_bootstrap_resamples.key, e.bootstrap_resamples},
                                   {keys::time_throttle_fraction.key, e.throttle_fraction},
                                   {keys::time_ncu_metrics.key, to_array(e.ncu_metrics)},
                                   {keys::time_ncu_seq_len.key, e.ncu_seq_len}});
    toml::table gate{{keys::gate_max_spill_growth_bytes.key, e.max_spill_growth_bytes},
                     {keys::gate_require_sanitizer.key, e.require_sanitizer}};
    // Only when the manifest set it: the resolved copy, too, leaves the default to Experiment.
    for (const auto &[key, bound] : {std::pair{keys::gate_max_candidate_p50_ms.key, e.max_candidate_p50_ms},
                                     {keys::gate_max_geomean_ratio_upper.key, e.max_geomean_ratio_upper},
                                     {keys::gate_max_worst_ratio_upper.key, e.max_worst_ratio_upper}})
        if (bound) gate.insert(key, *bound);
    if (e.max_ratio_upper) gate.insert(keys::gate_max_ratio_upper.key, *e.max_ratio_upper);
    else gate.insert(keys::gate_max_ratio_upper.key, "off");
    if (!e.gate_waivers.empty()) {
        toml::array waivers;
        for (const GateWaiver &w : e.gate_waivers)
            waivers.push_back(toml::table{{keys::gate_waiver_condition.key, w.condition}, {keys::gate_waiver_reason.key, w.reason}});
        gate.insert(keys::gate_waiver.key, waivers);
    }
    doc.insert("gate", gate);
    std::ostringstream out;
    out << "# Resolved by sage2tp prepare; later stages read this copy, not the original manifest.\n" << doc << "\n";
    return out.str();
}

}  // namespace s2tp
