// sage2tp build: compile both trees for the target GPU, read the ptxas resources of every entry
// point, model occupancy, and record what the resource gates compare.
#include "subcommands.h"

#include "gpu/gpu_runtime.h"
#include "model/arch_limits.h"
#include "pipeline/cli.h"
#include "support/data_paths.h"
#include "support/errors.h"
#include "model/experiment_manifest.h"
#include "support/hashing.h"
#include "gpu/kernel_abi.h"
#include "stages/kernel_build.h"
#include "stages/torch_headers.h"
#include "stages/sass_histogram.h"
#include "model/occupancy.h"
#include "support/process_runner.h"
#include "formats/ptxas_report.h"
#include "pipeline/stage_pipeline.h"

#include <unistd.h>
#include <chrono>

#include <algorithm>
#include <iomanip>
#include <sstream>

namespace fs = std::filesystem;

namespace s2tp {
namespace {

toml::table resources_table(const KernelResources &k, const AbiEntry &launch, const Occupancy &o) {
    return toml::table{{"entry", launch.full_name},
                       {"registers", k.registers},
                       {"barriers", k.barriers.value_or(1)},
                       {"stack_frame_bytes", k.stack_frame_bytes},
                       {"spill_store_bytes", k.spill_store_bytes},
                       {"spill_load_bytes", k.spill_load_bytes},
                       {"static_smem_bytes", k.static_smem_bytes},
                       {"dynamic_smem_bytes", launch.dynamic_smem_bytes},
                       {"smem_per_block", k.static_smem_bytes + launch.dynamic_smem_bytes},
                       {"threads_per_block", launch.threads_per_block},
                       {"blocks_per_sm", o.blocks_per_sm},
                       {"resident_warps", o.resident_warps},
                       {"warps_per_scheduler", o.warps_per_scheduler},
                       {"limited_by", limiter_names(o.limited_by)}};
}

// Per-entry resources of one variant's compiled kernel sources, for one arch, keyed by the adapter's
// short name so that variants of different ABIs compare entry by entry. Two entries with one short
// name cannot be told apart by the GPU stages either: each such clash is a reason in `clashes`.
std::map<std::string, toml::table> variant_resources(const std::vector<CompileJob> &jobs,
                                                     const std::vector<CompileOutcome> &outcomes,
                                                     const std::string &variant, const KernelAbi &abi,
                                                     const ArchLimits &limits, const RunDirectory &run,
                                                     std::vector<std::string> &clashes) {
    std::map<std::string, toml::table> entries;
    for (std::size_t i = 0; i < jobs.size(); ++i) {
        if (jobs[i].variant != variant || !jobs[i].compared) continue;
        PtxasReport report = parse_ptxas_report(outcomes[i].output, run.relative(jobs[i].log));
        for (const auto &[key, k] : report) {
            const std::optional<AbiEntry> launch = abi.describe_entry(key.name);
            if (!launch) continue;  // not an entry the GPU stages launch through this adapter
            LaunchResources resources{k.registers, launch->threads_per_block, k.static_smem_bytes,
                                      launch->dynamic_smem_bytes, k.barriers.value_or(1)};
            auto [at, inserted] = entries.emplace(launch->short_name,
                                                  resources_table(k, *launch, compute_occupancy(limits, resources)));
            if (!inserted)
                clashes.push_back(variant + ": two entries are " + launch->short_name + " for kernel ABI " + abi.name() +
                                  ": " + at->second["entry"].value_or(std::string()) + " and " + launch->full_name);
        }
    }
    return entries;
}

std::int64_t spill_bytes(const toml::table &t) {
    return t["spill_store_bytes"].value_or<std::int64_t>(0) + t["spill_load_bytes"].value_or<std::int64_t>(0);
}

void print_table(const Checkpoint &c, const Reporter &reporter) {
    const toml::table *kernels = c.figures["kernels"].as_table();
    if (!kernels) return;
    std::ostringstream out;
    out << std::left << std::setw(30) << "ENTRY (baseline -> candidate)" << std::setw(12) << "REGISTERS" << std::setw(18)
        << "SPILL ST/LD B" << std::setw(15) << "SMEM/BLOCK" << std::setw(11) << "BLOCKS/SM" << "WARPS/SCHEDULER\n";
    for (const auto &[name, node] : *kernels) {
        const toml::table &e = *node.as_table();
        auto pair = [&](const char *key) {
            return std::to_string(e["baseline"][key].value_or<std::int64_t>(0)) + "->" +
                   std::to_string(e["candidate"][key].value_or<std::int64_t>(0));
        };
        auto spills = [&](const char *variant) {
            return std::to_string(e[variant]["spill_store_bytes"].value_or<std::int64_t>(0)) + "/" +
                   std::to_string(e[variant]["spill_load_bytes"].value_or<std::int64_t>(0));
        };
        std::ostringstream wps;
        wps << std::fixed << std::setprecision(1) << e["baseline"]["warps_per_scheduler"].value_or(0.0) << "->"
            << e["candidate"]["warps_per_scheduler"].value_or(0.0)
            << (e["delta"]["warps_per_scheduler_fell"].value_or(false) ? "  FELL" : "");
        out << std::setw(30) << std::string(name.str()) << std::setw(12) << pair("registers") << std::setw(18)
            << (spills("baseline") + "->" + spills("candidate")) << std::setw(15) << pair("smem_per_block")
            << std::setw(11) << pair("blocks_per_sm") << wps.str() << "\n";
    }
    reporter.say("  " + c.figures["arch"].value_or(std::string()) + ", " + c.figures["nvcc_version"].value_or(std::string()));
    reporter.say(out.str());
    if (const toml::table *sass = c.figures["sass"].as_table()) reporter.say(SassComparison::from_toml(*sass).table_text());
}

}  // namespace

int build_command(const Args &args) {
    CommandLine cl("build", "Compile both trees for the target GPU, read ptxas resources and model occupancy.", args);
    cl.add_options()
        ("arch", "target: sm_89, sm_90a, sm_100a, sm_103a, sm_120a, sm_121a, or auto (the first visible GPU); "
                 "default: auto when a GPU is visible, else the arch of the last passed build, else the manifest's",
         cxxopts::value<std::string>(), "ARCH")
        ("jobs", "parallel nvcc processes (default: $MAX_JOBS, else the number of cores)", cxxopts::value<int>(), "N")
        ("nvcc", "the nvcc to use (default: $CUDA_HOME/bin/nvcc, then PATH, then /usr/local/cuda/bin/nvcc)",
         cxxopts::value<std::string>(), "PATH")
        ("torch-include", "a directory with torch's headers for sources that need them (repeatable; default: "
                          "[build] torch_include_dirs, then the python3 on PATH, then libtorch-dev)",
         cxxopts::value<std::vector<std::string>>(), "DIR")
        ("sass", "also count the SASS opcodes of every entry and variant (cuobjdump or nvdisasm); on an up-to-date "
                 "build, of the cubins already built")
        ("force", "compile even when the checkpoint is up to date");
    if (!cl.parse()) return 0;
    const bool want_sass = cl.has("sass");

    StageContext context(Stage::build, require_existing_run(cl.selection()));
    RunDirectory &run = context.run();
    const std::vector<StageState> &states = context.states();

    const Experiment &experiment = context.experiment();
    const std::string manifest = run.relative(run.manifest());
    const KernelAbi &baseline_abi = kernel_abi(experiment.baseline_abi, manifest + " [source] abi");
    const KernelAbi &candidate_abi = kernel_abi(experiment.candidates.front().abi, manifest + " [candidate] abi");
    const ArchLimitsTable table = load_arch_limits(arch_limits_table().string());
    // With a GPU visible the kernels are built for it, since the GPU stages can load nothing else. Without
    // one, resuming keeps the target of the last passed build (a run built with --arch sm_90a here and
    // copied to the GPU host stays sm_90a); a new target takes an explicit --arch.
    std::string requested = experiment.arch;
    const auto &built = states[static_cast<std::size_t>(Stage::build)].read.checkpoint;
    if (cl.has("arch")) requested = cl.result()["arch"].as<std::string>();
    else if (probe_gpu().available) requested = "auto";
    else if (built && built->status == StageStatus::passed) requested = built->figures["arch"].value_or(requested);
    const std::string arch = resolve_target_arch(requested, table);
    const ArchLimits &limits = resolve_arch(table, arch);
    const int jobs_limit = cl.has("jobs") ? cl.result()["jobs"].as<int>() : default_build_jobs();
    if (jobs_limit < 1) fail(ExitCode::usage, "--jobs must be at least 1");
    // A GPU host may have no compiler: a passed, intact build made elsewhere is then used as it is.
    std::optional<fs::path> nvcc;
    std::optional<Error> no_nvcc;
    try {
        nvcc = find_nvcc(cl.has("nvcc") ? std::optional<std::string>(cl.result()["nvcc"].as<std::string>()) : std::nullopt);
    } catch (const Error &e) {
        if (cl.has("nvcc")) throw;
        no_nvcc = e;
    }
    // Looked up only for sources that include torch's headers, and only where there is a compiler to
    // use them (a GPU host without nvcc keeps the intact build made elsewhere).
    std::optional<TorchHeaders> torch;
    if (needs_torch_headers(experiment) && nvcc) {
        std::vector<std::string> requested_torch;
        if (cl.has("torch-include")) requested_torch = cl.result()["torch-include"].as<std::vector<std::string>>();
        for (auto &dir : requested_torch) dir = fs::absolute(dir).lexically_normal().string();
        torch = find_torch_headers(requested_torch, experiment.torch_include_dirs);
    }
    const std::vector<CompileJob> jobs =
        plan_compiles(run, experiment, arch, nvcc.value_or("nvcc"), torch ? torch->include_dirs : std::vector<std::string>{});
    const std::string compiler = nvcc ? nvcc_version(*nvcc) : std::string();

    StageWork work;
    work.stage = Stage::build;
    work.add_inputs = [&](Fingerprint &f) {
        // The compiler by its version, not its path: the same nvcc packaged differently is the same.
        f.add("arch", arch).add("nvcc", compiler);
        // The adapters decide which entries the resource table holds.
        f.add("baseline_abi", baseline_abi.name()).add("candidate_abi", candidate_abi.name());
        for (const auto &flag : experiment.nvcc_flags) f.add("nvcc_flag", flag);
        for (const auto &flag : experiment.extra_flags) f.add("extra_flag", flag);
        for (const char *variant : {"baseline", "candidate"})
            for (const auto &dir : experiment.source(variant).include_dirs) f.add(std::string(variant) + " include_dir", dir);
        if (torch)
            for (const auto &dir : torch->include_dirs) f.add("torch_include_dir", dir);
        for (const auto &job : jobs) f.add("source", job.variant + ":" + job.source);
        f.add_tree("baseline", run.tree("baseline")).add_tree("candidate", run.tree("candidate"));
        if (experiment.needs_support_tree()) f.add_tree("support", run.tree("support"));
    };
    work.verify_outputs = [&](const Checkpoint &c) -> std::string {
        for (const auto &job : jobs) {
            std::string key = job.variant + ":" + job.source;
            std::error_code ec;
            if (!fs::is_regular_file(job.cubin, ec)) return run.relative(job.cubin) + " is missing";
            if (sha256_file(job.cubin) != c.artifacts[key]["sha256"].value_or(std::string()))
                return run.relative(job.cubin) + " changed since it was built";
        }
        return "";
    };
    work.run = [&] {
        StageResult result;
        const std::string &version = compiler;
        result.tools.insert("nvcc", version);
        const Reporter &reporter = cl.reporter();
        reporter.progress("compiling " + std::to_string(jobs.size()) + " sources for " + arch + " with " +
                          std::to_string(std::min<std::size_t>(jobs_limit, jobs.size())) + " parallel nvcc");
        const auto began = std::chrono::steady_clock::now();
        const auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count(); };
        const std::string total = std::to_string(jobs.size());
        CompileProgress progress;
        // -v: the exact command line (also kept in the job's .cmd file).
        progress.started = [&](const CompileJob &job) {
            std::string command = quoted_command(job.argv);
            command.pop_back();  // its newline
            reporter.detail("  nvcc: " + command);
        };
        // One line per finished compile, in a pipe as on a terminal.
        progress.finished = [&](const CompileJob &job, const CompileOutcome &outcome, std::size_t finished) {
            std::ostringstream line;
            line << "  [" << finished << "/" << total << "] " << job.variant << ":" << job.source << " "
                 << std::fixed << std::setprecision(1) << outcome.seconds << " s"
                 << (outcome.exit_code == 0 ? "" : ", FAILED (nvcc exit " + std::to_string(outcome.exit_code) + ")");
            reporter.progress(line.str());
        };
        progress.tick = [&](const std::string &running, std::size_t finished) {
            reporter.live_line("  compiling " + std::to_string(finished) + "/" + total + " done, " +
                               elapsed_and_eta(elapsed(), static_cast<double>(finished) / jobs.size()) + ":" + running);
        };
        std::vector<CompileOutcome> outcomes = run_compiles(jobs, jobs_limit, progress);
        reporter.end_live_line();

        result.figures = toml::table{{"arch", arch}, {"nvcc_version", version}, {"jobs", jobs_limit}};
        toml::array flags;
        for (const auto &flag : experiment.nvcc_flags) flags.push_back(flag);
        for (const auto &flag : experiment.extra_flags) flags.push_back(flag);
        result.figures.insert("flags", flags);
        if (torch) {
            toml::array dirs;
            for (const auto &dir : torch->include_dirs) dirs.push_back(dir);
            result.figures.insert("torch_headers", toml::table{{"found_by", torch->found_by}, {"include_dirs", dirs}});
        }
        for (std::size_t i = 0; i < jobs.size(); ++i) {
            const std::string key = jobs[i].variant + ":" + jobs[i].source;
            toml::table artifact{{"log", run.relative(jobs[i].log)}, {"command", run.relative(jobs[i].command_file)},
                                 {"seconds", outcomes[i].seconds}};
            if (outcomes[i].exit_code == 0 && fs::is_regular_file(jobs[i].cubin)) {
                artifact.insert("path", run.relative(jobs[i].cubin));
                artifact.insert("sha256", sha256_file(jobs[i].cubin));
            } else {
                result.status = StageStatus::failed;
                std::string first;
                for (const auto &line : first_error_lines(outcomes[i].output, 3)) first += (first.empty() ? "" : " | ") + line;
                result.reasons.push_back(key + " does not compile (nvcc exit " + std::to_string(outcomes[i].exit_code) +
                                         "): " + (first.empty() ? "see " + run.relative(jobs[i].log) : first));
            }
            result.artifacts.insert(key, artifact);
        }
        if (result.status == StageStatus::failed) {
            result.figures.insert("summary", arch + ": compile failed");
            return result;
        }

        std::vector<std::string> clashes;
        auto baseline = variant_resources(jobs, outcomes, "baseline", baseline_abi, limits, run, clashes);
        auto candidate = variant_resources(jobs, outcomes, "candidate", candidate_abi, limits, run, clashes);
        for (const std::string &clash : clashes) {
            result.status = StageStatus::failed;
            result.reasons.push_back(clash);
        }
        toml::table kernels;
        std::int64_t max_register_growth = INT64_MIN, max_spill_growth = INT64_MIN;
        std::int64_t base_smem = 0, cand_smem = 0;
        double base_wps = 1e9, cand_wps = 1e9;
        bool any_fell = false;
        for (const auto &[name, base] : baseline) {
            auto found = candidate.find(name);
            if (found == candidate.end()) {
                result.status = StageStatus::failed;
                result.reasons.push_back("entry point " + name + " is in the baseline but not in the candidate");
                continue;
            }
            const toml::table &cand = found->second;
            std::int64_t d_regs = cand["registers"].value_or<std::int64_t>(0) - base["registers"].value_or<std::int64_t>(0);
            std::int64_t d_spill = spill_bytes(cand) - spill_bytes(base);
            std::int64_t b_smem = base["smem_per_block"].value_or<std::int64_t>(0);
            std::int64_t c_smem = cand["smem_per_block"].value_or<std::int64_t>(0);
            double b_wps = base["warps_per_scheduler"].value_or(0.0), c_wps = cand["warps_per_scheduler"].value_or(0.0);
            bool fell = c_wps < b_wps;
            kernels.insert(name, toml::table{{"baseline", base}, {"candidate", cand},
                                             {"delta", toml::table{{"registers", d_regs}, {"spill_bytes", d_spill},
                                                                   {"smem_per_block", c_smem - b_smem},
                                                                   {"warps_per_scheduler_fell", fell}}}});
            max_register_growth = std::max(max_register_growth, d_regs);
            max_spill_growth = std::max(max_spill_growth, d_spill);
            base_smem = std::max(base_smem, b_smem);
            cand_smem = std::max(cand_smem, c_smem);
            base_wps = std::min(base_wps, b_wps);
            cand_wps = std::min(cand_wps, c_wps);
            any_fell = any_fell || fell;
        }
        if (kernels.empty()) {
            result.status = StageStatus::failed;
            result.reasons.push_back("no attention entry point of kernel ABI " + baseline_abi.name() +
                                     " was found in the ptxas report of the compared sources");
            return result;
        }
        result.figures.insert("kernels", kernels);
        result.figures.insert("compared", toml::table{{"entries", static_cast<std::int64_t>(kernels.size())},
                                                      {"max_register_growth", max_register_growth},
                                                      {"max_spill_growth_bytes", max_spill_growth},
                                                      {"baseline_max_smem_per_block", base_smem},
                                                      {"candidate_max_smem_per_block", cand_smem},
                                                      {"baseline_min_warps_per_scheduler", base_wps},
                                                      {"candidate_min_warps_per_scheduler", cand_wps},
                                                      {"any_warps_per_scheduler_fell", any_fell}});
        std::ostringstream summary;
        summary << arch << ": " << kernels.size() << " entries, register growth <= " << max_register_growth
                << ", spill growth <= " << max_spill_growth << " B, smem " << base_smem << "->" << cand_smem
                << (any_fell ? ", warps/scheduler FELL" : "");
        result.figures.insert("summary", summary.str());
        if (want_sass)
            if (auto sass = write_sass_report(run, jobs, baseline_abi, candidate_abi, cl.reporter())) result.figures.insert("sass", sass->to_toml());
        return result;
    };
    work.summarize = print_table;
    // A build that was up to date (here or, without nvcc, kept as built elsewhere) gets its histogram
    // from the cubins on disk.
    const auto with_sass = [&](ExitCode code) {
        if (!want_sass || code != ExitCode::ok) return static_cast<int>(code);
        const CheckpointRead done = read_checkpoint(checkpoint_path(run, Stage::build));
        if (done.checkpoint && !done.checkpoint->figures.contains("sass"))
            if (auto sass = write_sass_report(run, jobs, baseline_abi, candidate_abi, cl.reporter())) cl.reporter().say(sass->table_text());
        return static_cast<int>(code);
    };
    if (!nvcc) {
        if (auto kept = keep_intact_checkpoint(context, work, "no nvcc on this host; using the cubins built before", cl.reporter()))
            return with_sass(*kept);
        throw *no_nvcc;
    }
    return with_sass(execute_stage(context, work, cl.has("force"), cl.reporter()));
}

}  // namespace s2tp
