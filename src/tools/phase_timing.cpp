#include "tools/phase_timing.h"

#include "pipeline/file_artifact.h"
#include "tools/compile_cache.h"

#include "formats/ptxas_report.h"
#include "formats/toml_schema.h"
#include "gpu/kernel_abi.h"
#include "support/errors.h"
#include "support/file_io.h"
#include "support/hashing.h"
#include "support/number_format.h"

#include <chrono>
#include <cstring>
#include <set>
#include <sstream>
#include <system_error>

namespace fs = std::filesystem;

namespace s2tp {
namespace {

fs::path record_path(const RunDirectory &run) { return run.builds() / "phase-timing.toml"; }

std::string job_key(const CompileJob &job) { return job.variant + ":" + job.source; }

// What the instrumented cubins are built from, the compiler apart: every command but its program path
// (so the arch, flags, include directories and file names) and every file of each variant's tree.
std::string sources_digest(const RunDirectory &run, const std::vector<CompileJob> &jobs) {
    Fingerprint f;
    std::set<std::string> variants;
    for (const CompileJob &job : jobs) {
        f.add("job", job_key(job));
        for (std::size_t i = 1; i < job.argv.size(); ++i) f.add("argument", job.argv[i]);
        variants.insert(job.variant);
    }
    for (const std::string &variant : variants) f.add_tree(variant, run.tree(variant));
    return f.hex();
}

// Why the recorded instrumented build cannot stand for `jobs` built from `digest` by `compiler` ("" when
// it can); `compiler` empty means "any": there is no nvcc here to compare with.
std::string stale_reason(const RunDirectory &run, const std::vector<CompileJob> &jobs, const std::string &digest,
                         const std::string &compiler) {
    std::error_code ec;
    if (!fs::is_regular_file(record_path(run), ec)) return "no instrumented build is recorded";
    toml::table record;
    try {
        record = parse_toml_file(record_path(run).string());
    } catch (const Error &e) {
        return e.what();
    }
    if (record["sources_digest"].value_or(std::string()) != digest)
        return "the sources, flags or arch changed since the instrumented build";
    if (!compiler.empty() && record["nvcc_version"].value_or(std::string()) != compiler)
        return "nvcc is not the one that built the instrumented cubins";
    for (const CompileJob &job : jobs) {
        const FileArtifact built{run.relative(job.cubin),
                                 record["cubin"][job_key(job)]["sha256"].value_or(std::string())};
        const FileArtifact::State state = built.state(run);
        if (state == FileArtifact::State::missing) return built.path + " is missing";
        if (built.sha256.empty() || state == FileArtifact::State::changed) return built.path + " changed since it was built";
    }
    return "";
}

PhaseBuild described(const std::vector<CompileJob> &jobs, std::string nvcc_version, std::string note) {
    PhaseBuild build;
    for (const CompileJob &job : jobs) build.cubins.push_back({job.variant, job.source, job.cubin});
    build.nvcc_version = std::move(nvcc_version);
    build.note = std::move(note);
    return build;
}

std::string first_errors(const std::string &output) {
    std::string first;
    for (const auto &line : first_error_lines(output, 3)) first += (first.empty() ? "" : " | ") + line;
    return first;
}

}  // namespace

std::vector<CompileJob> plan_phase_compiles(const RunDirectory &run, const std::vector<CompileJob> &plain) {
    std::vector<CompileJob> jobs;
    for (const CompileJob &original : plain) {
        if (!original.compared) continue;
        CompileJob job = original;
        const fs::path out_dir = original.cubin.parent_path() / "phases";
        job.cubin = out_dir / original.cubin.filename();
        job.log = out_dir / original.log.filename();
        job.command_file = out_dir / original.command_file.filename();
        job.dependency_file = out_dir / original.dependency_file.filename();
        for (std::size_t i = 0; i + 1 < job.argv.size(); ++i)
            if (job.argv[i] == "-MF") job.argv[i + 1] = run.relative(job.dependency_file);
        // plan_compiles ends every command with "-o <cubin> <source>".
        const std::size_t n = job.argv.size();
        if (n < 3 || job.argv[n - 3] != "-o")
            fail(ExitCode::internal, "the build command of " + job_key(job) + " does not end with -o <cubin> <source>");
        job.argv[n - 2] = run.relative(job.cubin);
        job.argv.insert(job.argv.begin() + static_cast<std::ptrdiff_t>(n - 3), phase_timing_define());
        jobs.push_back(std::move(job));
    }
    return jobs;
}

const fs::path &PhaseBuild::cubin_of(const std::string &variant, const std::string &source) const {
    for (const PhaseCubin &c : cubins)
        if (c.variant == variant && c.source == source) return c.cubin;
    fail(ExitCode::internal, "the instrumented build has no cubin of " + variant + ":" + source);
}

void require_phase_stamps(const RunDirectory &run, const Experiment &experiment) {
    // A text search of each tree's files (not .git, not files of 4 MiB or more): what declares or uses the
    // phase log names it, and nothing else does.
    constexpr std::size_t largest = std::size_t(4) << 20;
    for (const std::string &variant : experiment.variant_names()) {
        const fs::path tree = run.tree(variant);
        bool stamped = false;
        std::error_code ec;
        for (fs::recursive_directory_iterator it(tree, ec), end; !stamped && !ec && it != end; it.increment(ec)) {
            if (it->path().filename() == ".git") {
                it.disable_recursion_pending();
                continue;
            }
            if (!it->is_regular_file(ec) || it->is_symlink(ec) || it->file_size(ec) >= largest) continue;
            stamped = read_text_file(it->path(), largest).find(S2TP_PHASE_LOG_SYMBOL) != std::string::npos;
        }
        if (!stamped)
            fail(ExitCode::precondition, "phases: no file of " + run.relative(tree) + " mentions " +
                                             S2TP_PHASE_LOG_SYMBOL + ": " + variant +
                                             "'s kernels have no phase stamps (kernels/phase_stamps.cuh), so there is "
                                             "nothing to measure; nothing was compiled");
    }
}

PhaseBuild build_phase_cubins(const RunDirectory &run, const Experiment &experiment, const BuiltKernels &kernels,
                              const PhaseBuildRequest &request, const Reporter &reporter) {
    const CompilerLookup lookup = look_for_nvcc(request.nvcc);
    const std::optional<fs::path> &nvcc = lookup.nvcc;
    const std::vector<CompileJob> jobs = plan_phase_compiles(
        run, plan_compiles(run, experiment, kernels.arch, nvcc.value_or("nvcc")));
    const std::string digest = sources_digest(run, jobs);

    if (!nvcc) {
        if (!stale_reason(run, jobs, digest, "").empty()) throw *lookup.missing;
        const toml::table record = parse_toml_file(record_path(run).string());
        const std::string version = record["nvcc_version"].value_or(std::string());
        return described(jobs, version, "no nvcc on this host; using the instrumented cubins built before (" + version + ")");
    }
    const std::string compiler = nvcc_version(*nvcc);
    const std::string why = stale_reason(run, jobs, digest, compiler);
    if (why.empty() && !request.force) return described(jobs, compiler, "instrumented build up to date");

    reporter.progress("compiling " + std::to_string(jobs.size()) + " kernel sources for " + kernels.arch + " with " +
                      phase_timing_define() + " into builds/<variant>/phases" +
                      (request.force || why.empty() ? std::string() : " (" + why + ")"));
    std::error_code ec;
    fs::remove(record_path(run), ec);  // a build cut short must never read as up to date
    const auto began = std::chrono::steady_clock::now();
    const std::string total = std::to_string(jobs.size());
    CompileProgress progress;
    progress.started = [&](const CompileJob &job) {
        std::string command = quoted_command(job.argv);
        command.pop_back();  // its newline
        reporter.detail("  nvcc: " + command);
    };
    progress.finished = [&](const CompileJob &job, const CompileOutcome &outcome, std::size_t finished) {
        reporter.progress("  [" + std::to_string(finished) + "/" + total + "] " + job_key(job) + " " +
                          fixed(outcome.seconds, 1) + " s" +
                          (outcome.exit_code == 0 ? "" : ", FAILED (nvcc exit " + std::to_string(outcome.exit_code) + ")"));
    };
    progress.tick = [&](const std::vector<RunningCompile> &running, std::size_t finished) {
        const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
        const std::string counts = "  compiling " + std::to_string(finished) + "/" + total + " done, " +
                                   elapsed_and_eta(elapsed, static_cast<double>(finished) / static_cast<double>(jobs.size())) +
                                   ": ";
        reporter.live_line(compile_progress_line(counts, running));
    };
    // The instrumented compiles are cached as the build's are: their define is in the key.
    const CompileCacheSettings settings = compile_cache_settings();
    std::optional<CompileCache> cache;
    if (settings.root) cache.emplace(*settings.root, settings.max_bytes);
    CompileCaching caching{cache ? &*cache : nullptr, compiler, {}};
    const std::vector<CompileOutcome> outcomes = run_compiles(jobs, request.jobs, progress, &caching);
    reporter.end_live_line();
    for (const std::string &damaged : caching.corrupt)
        reporter.warn("phases: compile cache entry " + damaged + "; removed it and compiled again");

    toml::table cubins;
    for (std::size_t i = 0; i < jobs.size(); ++i) {
        if (outcomes[i].exit_code != 0 || !fs::is_regular_file(jobs[i].cubin, ec)) {
            const std::string first = first_errors(outcomes[i].output);
            fail(ExitCode::stop, job_key(jobs[i]) + " does not compile with " + phase_timing_define() + " (nvcc exit " +
                                     std::to_string(outcomes[i].exit_code) + ")" + (first.empty() ? "" : ": " + first) +
                                     "; see " + run.relative(jobs[i].log));
        }
        toml::table cubin = FileArtifact::of(run, jobs[i].cubin).to_toml();
        cubin.insert("log", run.relative(jobs[i].log));
        cubin.insert("seconds", outcomes[i].seconds);
        cubins.insert(job_key(jobs[i]), std::move(cubin));
    }
    const toml::table record{{"sources_digest", digest}, {"nvcc_version", compiler}, {"arch", kernels.arch},
                             {"define", phase_timing_define()}, {"built_utc", utc_now()}, {"cubin", cubins}};
    std::ostringstream text;
    text << "# sage2tp phases: the instrumented cubins and what they were built from\n" << record << "\n";
    write_file_atomically(record_path(run), text.str());
    return described(jobs, compiler, "");
}

WorkloadSpec phase_workload(const Experiment &experiment, std::int64_t seq_len) {
    WorkloadSpec workload = experiment.workload;
    if (seq_len == 0) return workload;
    if (workload.q_file)
        fail(ExitCode::usage, "--seq-len does not apply: the workload '" + workload.name + "' reads tensor files");
    workload.problem.shape.len_q = workload.problem.shape.len_kv = seq_len;
    try {
        workload.problem.validate();  // before any GPU is asked for
    } catch (const Error &e) {
        fail(ExitCode::usage, "--seq-len " + std::to_string(seq_len) + ": " + e.what());
    }
    return workload;
}

namespace {

// Error(precondition) when the cubin's `symbol` is not the size kernels/phase_log.h gives it.
void require_layout(const DeviceGlobal &global, const char *symbol, std::size_t expected_bytes, const std::string &cubin) {
    if (global.bytes != expected_bytes)
        fail(ExitCode::precondition, cubin + ": its " + symbol + " has " + std::to_string(global.bytes) +
                                         " bytes, but kernels/phase_log.h says " + std::to_string(expected_bytes) +
                                         ": the kernel was built against another phase log layout");
}

}  // namespace

PhaseReport measure_phases(const RunDirectory &run, const Experiment &experiment, const BuiltKernels &kernels,
                           const PhaseBuild &build, const WorkloadSpec &workload, const DeviceFacts &device,
                           const Reporter &reporter) {
    const AttentionProblem &problem = workload.problem;
    PhaseReport report;
    report.arch = kernels.arch;
    report.device = device.summary();
    report.shape = problem.describe();
    report.nvcc_version = build.nvcc_version;

    reporter.progress("quantizing the inputs of " + problem.describe());
    const GeneratedInputs host = workload_inputs(workload);
    const CubinModule quantize(kernels.quantize);
    InputsByRecipe quantized(quantize, problem, upload_inputs(problem, host.q, host.k, host.v));

    for (const BuiltAttention *built : kernels.variants()) {
        const std::string &source = experiment.source(built->variant).kernel_sources.front();
        const fs::path cubin = build.cubin_of(built->variant, source);
        const std::string shown = run.relative(cubin);
        const CubinModule module(cubin);
        const std::optional<DeviceGlobal> log = module.global(S2TP_PHASE_LOG_SYMBOL);
        if (!log)
            fail(ExitCode::precondition,
                 shown + " defines no " + S2TP_PHASE_LOG_SYMBOL + " (the extern \"C\" __device__ array of "
                         "kernels/phase_log.h that phase-stamped kernels define under " + phase_timing_define() +
                         "): its kernel sources have no phase stamps, so " + built->variant +
                         "'s phases cannot be measured");
        constexpr std::size_t expected_bytes = S2TP_PHASE_LOG_SLOTS * sizeof(s2tp_phase_slot);
        require_layout(*log, S2TP_PHASE_LOG_SYMBOL, expected_bytes, shown);
        const std::optional<DeviceGlobal> schedule = module.global(S2TP_PHASE_SCHEDULE_SYMBOL);
        if (!schedule)
            fail(ExitCode::precondition, shown + " defines " + S2TP_PHASE_LOG_SYMBOL + " but no " +
                                             S2TP_PHASE_SCHEDULE_SYMBOL + " (the schedule's record beside it, "
                                             "kernels/phase_log.h): the kernel was built against another phase log layout");
        require_layout(*schedule, S2TP_PHASE_SCHEDULE_SYMBOL, sizeof(s2tp_schedule_record), shown);
        // Phase stamps are sage2tp's own kernels' (checked above): launched from their cubin.
        AttentionEntry kernel;
        kernel.kernel = module.function(built->abi->select_entry(problem, module.entry_names(), shown));
        AttentionOutputs outputs = allocate_outputs(problem, built->variant);
        const AttentionLaunch launch =
            built->abi->pack(problem, attention_buffers(problem, quantized.get(built->abi->quantization(problem.shape.head_dim)), outputs));
        const std::string context = built->variant + " instrumented attention, " + problem.describe();
        reporter.progress("  " + built->variant + ": warm-up launch, then one launch with the phase log zeroed");
        launch_attention(kernel, launch);  // untimed: the measured launch finds the caches and clocks warm
        synchronize(context + " (warm-up)");
        zero_global(*log, context);
        zero_global(*schedule, context);
        launch_attention(kernel, launch);
        synchronize(context);
        const std::vector<unsigned char> bytes = read_global(*log, context);
        std::vector<s2tp_phase_slot> slots(S2TP_PHASE_LOG_SLOTS);
        std::memcpy(slots.data(), bytes.data(), expected_bytes);
        s2tp_schedule_record record;
        std::memcpy(&record, read_global(*schedule, context).data(), sizeof record);

        const std::int64_t launched = static_cast<std::int64_t>(launch.grid.x) * launch.grid.y * launch.grid.z;
        report.variants.push_back(
            summarize_phase_log(slots, built->variant, shown, ScheduleRecord::from_device(record, shown), launched));
    }
    report.comparisons = compare_with_baseline(report.variants);
    return report;
}

fs::path write_phase_report(const RunDirectory &run, const PhaseReport &report) {
    std::ostringstream text;
    text << "# sage2tp phases: cycles per CTA of each schedule step, per variant and warp\n" << report.to_toml() << "\n";
    fs::create_directories(run.reports());
    const fs::path file = run.reports() / "phases.toml";
    write_file_atomically(file, text.str());
    return file;
}

}  // namespace s2tp
