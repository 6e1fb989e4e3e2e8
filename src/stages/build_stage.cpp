#include "stages/build_stage.h"

#include "pipeline/file_artifact.h"

#include "formats/ptxas_report.h"
#include "support/number_format.h"
#include "gpu/gpu_runtime.h"
#include "gpu/kernel_abi.h"
#include "model/arch_limits.h"
#include "model/experiment_manifest.h"
#include "figures/build_figures.h"
#include "tools/compile_cache.h"
#include "tools/kernel_build.h"
#include "figures/resource_comparison.h"
#include "tools/sass_histogram.h"
#include "support/data_paths.h"
#include "support/errors.h"
#include "support/hashing.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <set>
#include <sstream>

namespace fs = std::filesystem;

namespace s2tp {
namespace {

// With a GPU visible the kernels are built for it, since the GPU stages can load nothing else. Without
// one, resuming keeps the target of the last passed build (a run built with --arch sm_90a here and
// copied to the GPU host stays sm_90a); a new target takes an explicit --arch.
std::string requested_arch(StageContext &context, const BuildRequest &request) {
    if (request.arch) return *request.arch;
    if (probe_gpu().available) return "auto";
    const auto &built = context.states()[static_cast<std::size_t>(Stage::build)].read.checkpoint;
    if (built && built->status == StageStatus::passed) return built->figures["arch"].value_or(context.experiment().arch);
    return context.experiment().arch;
}

// A build killed before its swap left its staging behind and builds/ as the last build left it; one
// killed between the swap's two renames left builds/ as .build-old.
void discard_build_leftovers(const RunDirectory &run) {
    std::error_code ec;
    if (!fs::exists(run.builds(), ec) && fs::exists(run.build_retired(), ec)) fs::rename(run.build_retired(), run.builds(), ec);
    if (ec) fail(ExitCode::usage, "cannot restore '" + run.builds().string() + "' from '" + run.build_retired().string() + "': " + ec.message());
    for (const fs::path &leftover : {run.build_staging(), run.build_retired()}) {
        fs::remove_all(leftover, ec);
        if (ec) fail(ExitCode::usage, "cannot remove '" + leftover.string() + "': " + ec.message());
    }
}

// Replaces builds/ with the staged compile whole. What builds/ held that this build did not make
// (another arch's cubins, phases' builds) is linked into the new one first, and the old one is
// deleted only after the new one is in place.
void swap_in_build(const RunDirectory &run, const std::vector<CompileJob> &staged) {
    std::set<fs::path> made;
    for (const CompileJob &job : staged)
        for (const fs::path &file : {job.cubin, job.log, job.command_file, job.dependency_file, job.host_library,
                                     job.generated_source})
            if (!file.empty()) made.insert(file.lexically_relative(run.build_staging()));
    std::error_code ec;
    if (fs::is_directory(run.builds()))
        for (fs::recursive_directory_iterator it(run.builds(), ec), end; !ec && it != end; it.increment(ec)) {
            const fs::path relative = it->path().lexically_relative(run.builds());
            const fs::path target = run.build_staging() / relative;
            if (!it->is_regular_file() || made.count(relative) || fs::exists(target)) continue;
            fs::create_directories(target.parent_path());
            fs::create_hard_link(it->path(), target, ec);
            if (ec) fs::copy_file(it->path(), target, ec);
            if (ec) break;
        }
    if (ec) fail(ExitCode::usage, "cannot keep the earlier files of '" + run.builds().string() + "': " + ec.message());
    if (fs::exists(run.builds())) fs::rename(run.builds(), run.build_retired());
    fs::rename(run.build_staging(), run.builds());
    fs::remove_all(run.build_retired(), ec);
}

CompileProgress compile_progress(const std::vector<CompileJob> &jobs, const Reporter &reporter) {
    const auto began = std::chrono::steady_clock::now();
    const std::string total = std::to_string(jobs.size());
    CompileProgress progress;
    // -v: the exact command line (also kept in the job's .cmd file).
    progress.started = [&reporter](const CompileJob &job) {
        std::string command = quoted_command(job.argv);
        command.pop_back();  // its newline
        reporter.detail("  nvcc: " + command);
    };
    // One line per finished compile, in a pipe as on a terminal.
    progress.finished = [&reporter, total](const CompileJob &job, const CompileOutcome &outcome, std::size_t finished) {
        std::ostringstream line;
        line << "  [" << finished << "/" << total << "] " << job.variant << ":" << job.source << " "
             << (outcome.from_cache ? "from the cache" : fixed(outcome.seconds, 1) + " s")
             << (outcome.exit_code == 0 ? "" : ", FAILED (nvcc exit " + std::to_string(outcome.exit_code) + ")");
        reporter.progress(line.str());
    };
    // On a terminal, one line rewritten every second; in a pipe (a CI log), a line every 30 s, so that a
    // long compile never looks like a hang.
    progress.tick = [&reporter, total, began, count = jobs.size(),
                     last_line = began](const std::vector<RunningCompile> &running, std::size_t finished) mutable {
        const auto now = std::chrono::steady_clock::now();
        const double elapsed = std::chrono::duration<double>(now - began).count();
        const std::string counts = "  [" + std::to_string(finished) + "/" + total + "] " +
                                   elapsed_and_eta(elapsed, static_cast<double>(finished) / count) + ": ";
        const std::string line = compile_progress_line(counts, running);
        if (reporter.live()) {
            reporter.live_line(line);
        } else if (now - last_line >= std::chrono::seconds(30)) {
            reporter.progress(line);
            last_line = now;
        }
    };
    return progress;
}

// What the build's work functions share once the command line and the manifest are resolved.
struct BuildPlan {
    std::string arch;
    ArchLimits limits;
    const KernelAbi &baseline_abi;
    std::map<std::string, const KernelAbi *> candidate_abis;
    const KernelAbi &sass_candidate_abi;
    std::vector<CompileJob> jobs;    // where the cubins stand
    std::vector<CompileJob> staged;  // the same compiles into the staging directory, swapped in whole
    std::string compiler;            // nvcc's version line; "" without nvcc
};

// Everything the build consumes, for its input fingerprint.
void add_build_inputs(Fingerprint &f, const BuildPlan &p, const RunDirectory &run, const Experiment &experiment) {
    // The compiler by its version, not its path: the same nvcc packaged differently is the same.
    // Checkpoints written before the figures were kept per candidate are not read as current.
    f.add("figures_layout", kFiguresLayout);
    f.add("arch", p.arch).add("nvcc", p.compiler);
    // The adapters decide which entries the resource table holds.
    f.add("baseline_abi", p.baseline_abi.name());
    for (const auto &[name, abi] : p.candidate_abis) f.add(name + "_abi", abi->name());
    for (const auto &flag : experiment.nvcc_flags) f.add("nvcc_flag", flag);
    for (const auto &flag : experiment.extra_flags) f.add("extra_flag", flag);
    for (const std::string &variant : experiment.variant_names())
        for (const auto &dir : experiment.source(variant).include_dirs) f.add(variant + " include_dir", dir);
    // The host-call export and torch subset are in the support tree, fingerprinted below.
    for (const auto &job : p.jobs) f.add("source", job.variant + ":" + job.source);
    for (const std::string &variant : experiment.variant_names()) f.add_tree(variant, run.tree(variant));
    if (experiment.needs_support_tree()) f.add_tree("support", run.tree("support"));
}

// The build's body: every compile (through the compile cache), the ptxas resources per entry,
// occupancy, the comparison.
StageResult compile_and_compare(const BuildPlan &p, const RunDirectory &run, const Experiment &experiment,
                                const BuildRequest &request, const Reporter &reporter) {
    StageResult result;
    result.tools.insert("nvcc", p.compiler);
    const std::size_t parallel = std::min<std::size_t>(request.jobs, p.jobs.size());
    reporter.progress("compiling " + std::to_string(p.jobs.size()) + " sources for " + p.arch + " with " +
                      std::to_string(parallel) + " parallel nvcc");
    const CompileCacheSettings settings = compile_cache_settings();
    std::optional<CompileCache> cache;
    if (settings.root && !request.no_cache) cache.emplace(*settings.root, settings.max_bytes);
    CompileCaching caching{cache ? &*cache : nullptr, p.compiler, {}};
    fs::create_directories(run.build_staging());
    const std::vector<CompileOutcome> outcomes = run_compiles(p.staged, request.jobs, compile_progress(p.staged, reporter), &caching);
    reporter.end_live_line();
    swap_in_build(run, p.staged);
    for (const std::string &damaged : caching.corrupt)
        reporter.warn("build: compile cache entry " + damaged + "; removed it and compiled again");
    std::vector<std::string> cached;
    for (std::size_t i = 0; i < p.jobs.size(); ++i)
        if (outcomes[i].from_cache) cached.push_back(p.jobs[i].variant + ":" + p.jobs[i].source);
    if (!cache)
        reporter.progress("  cache: off (" + (request.no_cache ? std::string("--no-cache") : settings.off_reason) + ")");
    else {
        std::string line = "  cache: " + std::to_string(cached.size()) + " of " + std::to_string(p.jobs.size()) +
                           " compiles from " + cache->root().string();
        for (std::size_t i = 0; i < cached.size(); ++i) line += (i ? ", " : " (") + cached[i];
        reporter.progress(line + (cached.empty() ? "" : ")"));
    }

    BuildFigures figures;
    figures.arch = p.arch;
    figures.nvcc_version = p.compiler;
    figures.jobs = request.jobs;
    figures.flags = experiment.nvcc_flags;
    figures.flags.insert(figures.flags.end(), experiment.extra_flags.begin(), experiment.extra_flags.end());
    std::map<std::string, std::vector<PtxasReport>> reports;  // per variant, of its compared sources
    for (std::size_t i = 0; i < p.jobs.size(); ++i) {
        const std::string key = p.jobs[i].variant + ":" + p.jobs[i].source;
        const bool host_call = !p.jobs[i].host_library.empty();
        const bool compiled = outcomes[i].exit_code == 0 && fs::is_regular_file(p.jobs[i].cubin) &&
                              (!host_call || fs::is_regular_file(p.jobs[i].host_library));
        toml::table artifact = compiled ? FileArtifact::of(run, p.jobs[i].cubin).to_toml() : toml::table{};
        artifact.insert("log", run.relative(p.jobs[i].log));
        artifact.insert("command", run.relative(p.jobs[i].command_file));
        artifact.insert("seconds", outcomes[i].seconds);
        artifact.insert("from_cache", outcomes[i].from_cache);
        if (compiled) {
            if (p.jobs[i].compared)
                reports[p.jobs[i].variant].push_back(parse_ptxas_report(outcomes[i].output, run.relative(p.jobs[i].log)));
        } else {
            result.status = StageStatus::failed;
            std::string first;
            for (const auto &line : first_error_lines(outcomes[i].output, 3)) first += (first.empty() ? "" : " | ") + line;
            result.reasons.push_back(key + " does not compile (nvcc exit " + std::to_string(outcomes[i].exit_code) +
                                     "): " + (first.empty() ? "see " + run.relative(p.jobs[i].log) : first));
        }
        result.artifacts.insert(key, artifact);
        if (compiled && host_call)
            result.artifacts.insert(host_call_artifact_key(p.jobs[i].variant, p.jobs[i].source),
                                    FileArtifact::of(run, p.jobs[i].host_library).to_toml());
    }
    if (result.status == StageStatus::failed) {
        figures.summary = p.arch + ": compile failed";
        result.figures = figures.to_toml();
        return result;
    }

    std::vector<std::string> clashes;
    EntryTable baseline = variant_resources(reports["baseline"], "baseline", p.baseline_abi, p.limits, clashes);
    std::map<std::string, EntryTable> candidates;
    std::map<std::string, EntryResources> relaunched;
    for (const auto &[name, abi] : p.candidate_abis) {
        candidates[name] = variant_resources(reports[name], name, *abi, p.limits, clashes);
        if (!abi->host_function().empty())  // built as a host-call library, whose host code may launch its own kernels
            if (auto worst = worst_unrecognized_entry(reports[name], *abi)) relaunched.emplace(name, std::move(*worst));
    }
    ResourceComparison compared = compare_resources(p.arch, p.baseline_abi.name(), std::move(baseline), std::move(candidates), relaunched);
    result.reasons = clashes;
    result.reasons.insert(result.reasons.end(), compared.reasons.begin(), compared.reasons.end());
    if (!result.reasons.empty()) result.status = StageStatus::failed;
    if (compared.baseline.empty()) {
        result.figures = figures.to_toml();
        return result;
    }
    figures.baseline = std::move(compared.baseline);
    figures.candidates = std::move(compared.candidates);
    figures.summary = compared.summary;
    if (request.sass)
        if (auto sass = write_sass_report(run, p.jobs, p.baseline_abi, p.sass_candidate_abi, reporter)) figures.sass = sass->to_toml();
    result.figures = figures.to_toml();
    return result;
}

}  // namespace

StageWork build_stage_work(StageContext &context, const BuildRequest &request, const Reporter &reporter) {
    if (request.jobs < 1) fail(ExitCode::usage, "--jobs must be at least 1");
    RunDirectory &run = context.run();
    const Experiment &experiment = context.experiment();
    const std::string manifest = run.relative(run.manifest());
    const KernelAbi &baseline_abi = kernel_abi(experiment.baseline_abi, manifest + " [source] abi");
    std::map<std::string, const KernelAbi *> candidate_abis;
    for (const CandidateSpec &candidate : experiment.candidates)
        candidate_abis[candidate.name] = &kernel_abi(candidate.abi, manifest + " [candidate] abi");
    const ArchLimitsTable table = load_arch_limits(arch_limits_table().string());
    const std::string arch = resolve_target_arch(requested_arch(context, request), table);
    // A kernel written for one architecture (wgmma: sm_90a) cannot be compiled for another.
    std::vector<std::pair<std::string, const KernelAbi *>> abis = {{"[source]", &baseline_abi}};
    for (const CandidateSpec &candidate : experiment.candidates)
        abis.emplace_back("[candidate] " + candidate.name, candidate_abis.at(candidate.name));
    for (const auto &[where, abi] : abis)
        if (!abi->required_arch().empty() && abi->required_arch() != arch)
            fail(ExitCode::usage, manifest + " " + where + " abi " + abi->name() + ": its kernel (the launcher " +
                                      abi->launcher_file() + ") compiles only for " + abi->required_arch() +
                                      ", not for " + arch + "; build with --arch " + abi->required_arch());
    const ArchLimits limits = resolve_arch(table, arch);
    // A GPU host may have no compiler: a passed, intact build made elsewhere is then used as it is.
    const CompilerLookup lookup = look_for_nvcc(request.nvcc);
    const std::optional<fs::path> &nvcc = lookup.nvcc;
    std::vector<CompileJob> jobs = plan_compiles(run, experiment, arch, nvcc.value_or("nvcc"));
    // What runs: the same compiles into the staging directory, swapped in whole when all are done.
    std::vector<CompileJob> staged =
        plan_compiles(run, experiment, arch, nvcc.value_or("nvcc"), run.build_staging().filename());
    discard_build_leftovers(run);
    std::string compiler = nvcc ? nvcc_version(*nvcc) : std::string();
    // The SASS histogram compares the baseline with the first candidate.
    const KernelAbi &sass_candidate_abi = *candidate_abis.at(experiment.candidates.front().name);
    const auto plan = std::make_shared<const BuildPlan>(BuildPlan{arch, limits, baseline_abi, std::move(candidate_abis),
                                                                  sass_candidate_abi, std::move(jobs),
                                                                  std::move(staged), std::move(compiler)});

    StageWork work;
    work.stage = Stage::build;
    work.force = request.force;
    work.add_inputs = [&run, &experiment, plan](Fingerprint &f) { add_build_inputs(f, *plan, run, experiment); };
    // inspect_run has checked every cubin the checkpoint records; what it cannot know is whether the
    // checkpoint records every cubin this plan compiles.
    work.verify_outputs = [&run, plan](const Checkpoint &c) -> std::string {
        for (const auto &job : plan->jobs) {
            if (!FileArtifact::from_toml(c.artifacts[job.variant + ":" + job.source]))
                return run.relative(job.cubin) + " is not recorded";
            if (!job.host_library.empty() &&
                !FileArtifact::from_toml(c.artifacts[host_call_artifact_key(job.variant, job.source)]))
                return run.relative(job.host_library) + " is not recorded";
        }
        return "";
    };
    work.run = [&run, &experiment, &request, &reporter, plan] {
        return compile_and_compare(*plan, run, experiment, request, reporter);
    };
    work.summarize = [](const Checkpoint &c, const Reporter &to) {
        const std::string text = BuildFigures::from_toml(c.figures).text();
        if (!text.empty()) to.say(text);
    };
    // A build that was up to date (here or, without nvcc, kept as built elsewhere) gets its histogram
    // from the cubins on disk.
    work.then = [&run, &request, &reporter, plan](ExitCode code) {
        if (!request.sass || code != ExitCode::ok) return code;
        const CheckpointRead done = read_checkpoint(checkpoint_path(run, Stage::build));
        if (done.checkpoint && !done.checkpoint->figures.contains("sass"))
            if (auto sass = write_sass_report(run, plan->jobs, plan->baseline_abi, plan->sass_candidate_abi, reporter))
                reporter.say(sass->table_text());
        return code;
    };
    if (!nvcc) {
        work.unavailable = *lookup.missing;
        work.keep_reason = "no nvcc on this host; using the cubins built before";
    }
    return work;
}

}  // namespace s2tp
