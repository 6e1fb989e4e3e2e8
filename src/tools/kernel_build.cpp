#include "tools/kernel_build.h"

#include "support/cuda_tools.h"
#include "support/file_io.h"

#include "support/errors.h"
#include "gpu/gpu_runtime.h"
#include "gpu/kernel_abi.h"
#include "support/process_runner.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <sstream>
#include <thread>

namespace fs = std::filesystem;

namespace s2tp {

fs::path find_nvcc(const std::optional<std::string> &requested) {
    if (requested) {
        if (auto found = find_program(*requested)) return *found;
        fail(ExitCode::missing_tool, "--nvcc '" + *requested + "' is not an executable program");
    }
    if (auto found = find_cuda_tool("nvcc")) return *found;
    fail(ExitCode::missing_tool,
         std::string("nvcc not found (looked in ") + cuda_tool_search_order() +
             "): install the CUDA toolkit, or point sage2tp at one with CUDA_HOME=/path/to/cuda or --nvcc /path/to/nvcc");
}

CompilerLookup look_for_nvcc(const std::optional<std::string> &requested) {
    CompilerLookup lookup;
    try {
        lookup.nvcc = find_nvcc(requested);
    } catch (const Error &e) {
        if (requested) throw;
        lookup.missing = e;
    }
    return lookup;
}

std::string nvcc_version(const fs::path &nvcc) {
    ProcessResult r = run_process({nvcc.string(), "--version"});
    if (r.exit_code != 0) fail(ExitCode::missing_tool, nvcc.string() + " --version failed: " + r.err);
    // "Cuda compilation tools, release 13.0, V13.0.88 / Build cuda_13.0.r13.0/compiler.36424714_0":
    // the same compiler on any host, whatever its install path or packaging.
    std::istringstream lines(r.out);
    std::string line, release, build;
    while (std::getline(lines, line)) {
        if (line.find("release") != std::string::npos) release = line;
        if (line.rfind("Build ", 0) == 0) build = line;
    }
    if (release.empty()) return r.out;
    return build.empty() ? release : release + " / " + build;
}

std::string resolve_target_arch(const std::string &requested, const ArchLimitsTable &table) {
    if (requested != "auto") {
        resolve_arch(table, requested);  // throws with the valid names
        return requested;
    }
    GpuProbe probe = probe_gpu();
    if (!probe.available)
        fail(ExitCode::missing_tool, "--arch auto needs a GPU: " + probe.reason +
                                         "; pass --arch for the GPU the run will use: " + targets_by_gpu(table));
    DeviceFacts device = select_device(0);
    std::string plain = device.arch();
    for (const auto &[row, limits] : table)
        if (row == plain) return limits.target;
    fail(ExitCode::usage, "--arch auto: the GPU (" + device.name + ", " + plain + ") is not an arch sage2tp supports "
                                "(data/arch_limits.toml); pass --arch with one it does to build for another GPU");
}

int default_build_jobs() {
    if (const char *env = std::getenv("MAX_JOBS"); env && *env) {
        char *end = nullptr;
        long n = std::strtol(env, &end, 10);
        if (*end || n < 1 || n > 1024) fail(ExitCode::usage, std::string("MAX_JOBS='") + env + "' is not a positive job count");
        return static_cast<int>(n);
    }
    return std::max(1u, std::thread::hardware_concurrency());
}

namespace {

// The characters that sh still expands inside double quotes.
constexpr const char *shell_active_in_quotes = "$`\"\\";

std::string shown_character(char c) {
    char text[8];
    if (std::isprint(static_cast<unsigned char>(c))) std::snprintf(text, sizeof text, "%c", c);
    else std::snprintf(text, sizeof text, "\\x%02x", static_cast<unsigned char>(c));
    return text;
}

void refuse_shell_active(const std::string &path, const std::string &what, const std::string &fix) {
    std::size_t at = path.find_first_of(shell_active_in_quotes);
    if (at != std::string::npos)
        fail(ExitCode::usage, what + " '" + path + "' contains '" + shown_character(path[at]) +
                                  "', which nvcc would pass to its own shell (sh -c), where it could run commands; " + fix);
}

void refuse_unsafe_manifest_path(const std::string &path, const std::string &key) {
    for (char c : path) {
        bool safe = std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '+' || c == '/' || c == '-';
        if (!safe)
            fail(ExitCode::usage, "[source] " + key + " '" + path + "' contains '" + shown_character(c) +
                                      "': nvcc passes paths to its own shell and splits option values at ',', so "
                                      "source paths and include dirs may hold only letters, digits and . _ + / -");
    }
}

}  // namespace

std::string host_call_artifact_key(const std::string &variant, const std::string &source) {
    return variant + ":" + source + ":host-call";
}

std::vector<std::string> host_call_link_arguments() {
    // Hidden symbols: each library keeps its own statics (inline functions' statics would otherwise be
    // GNU unique symbols, one per process, shared by the baseline's and the candidate's library). libcuda
    // only where the host code calls the driver (cuTensorMapEncodeTiled), so a library of another
    // launcher loads on a host without a driver; each launch passes the recorder first.
    return {"-shared", "-Xcompiler", "-fPIC,-fvisibility=hidden", "-Xlinker", "--as-needed", "-lcuda", "-Xlinker",
            "--wrap=__cudaLaunchKernel,--wrap=__cudaLaunchKernel_ptsz,--wrap=cudaLaunchKernel,"
            "--wrap=cudaLaunchKernelExC"};
}

std::string host_call_source(const fs::path &launcher, const std::string &host_function) {
    return "// Generated by sage2tp build: the launcher file and sage2tp's export of its host function, one\n"
           "// translation unit (see kernels/host_call_export.h).\n"
           "#include \"" + launcher.generic_string() + "\"\n"
           "#include \"host_call_export.h\"\n"
           "S2TP_EXPORT_HOST_FUNCTION(" + host_function + ")\n";
}

std::vector<CompileJob> plan_compiles(const RunDirectory &run, const Experiment &experiment, const std::string &arch,
                                      const fs::path &nvcc, const fs::path &output_dir) {
    std::error_code ec;
    const fs::path real_root = fs::weakly_canonical(run.root(), ec);
    refuse_shell_active(ec ? run.root().string() : real_root.string(), "the run directory",
                        "use a --run or --root path without $ ` \" \\");
    if (const char *tmp = std::getenv("TMPDIR"); tmp && *tmp)
        refuse_shell_active(tmp, "TMPDIR", "set TMPDIR to a path without $ ` \" \\");
    // Checked when the manifest is read, and again here: the run's experiment.toml may have been edited.
    for (const auto &flag : experiment.nvcc_flags) check_compiler_flag(flag, run.manifest().string() + ": [build] nvcc_flags");
    for (const auto &flag : experiment.extra_flags) check_compiler_flag(flag, run.manifest().string() + ": [build] extra_flags");
    for (const std::string &variant : experiment.variant_names()) {
        const SourceSpec &spec = experiment.source(variant);
        for (const auto &source : spec.kernel_sources) refuse_unsafe_manifest_path(source, "kernel_sources");
        for (const auto &source : spec.support_sources) refuse_unsafe_manifest_path(source, "support_sources");
        for (const auto &dir : spec.include_dirs) refuse_unsafe_manifest_path(dir, "include_dirs");
    }

    // sm_90a -> compute_90a,code=sm_90a: the "a" feature set needs the -gencode form (HOPPER.md).
    const std::string gencode = "-gencode=arch=compute_" + arch.substr(3) + ",code=" + arch;
    // sage2tp's own kernels/ as prepare copied it into the run: its torch subset and host-call export.
    const fs::path embedded = fs::path("trees") / "support" / embedded_include_dir();
    const std::string manifest = run.relative(run.manifest());
    std::vector<CompileJob> jobs;
    auto add = [&](const std::string &variant, const std::string &source, bool compared,
                   const std::vector<std::string> &include_dirs, bool with_torch, const std::string &host_function) {
        // Relative to the run directory, nvcc's working directory: built from the run layout, the
        // variant, the checked arch and the checked manifest paths only.
        const fs::path tree = fs::path("trees") / variant;
        const fs::path out_dir = output_dir / variant;
        CompileJob job;
        job.variant = variant;
        job.source = source;
        job.compared = compared;
        job.working_directory = run.root();
        std::string stem = fs::path(source).stem().string() + "." + arch;
        const fs::path cubin = out_dir / (stem + ".cubin");
        job.cubin = run.root() / cubin;
        job.log = run.root() / out_dir / (stem + ".log");
        job.command_file = run.root() / out_dir / (stem + ".cmd");
        job.dependency_file = run.root() / out_dir / (stem + ".d");
        const bool host_call = !host_function.empty();
        if ((with_torch || host_call) && !experiment.needs_support_tree())
            fail(ExitCode::usage, manifest + ": the " + variant + " source " + source +
                                      " includes <torch/extension.h> or is called through its host function, which "
                                      "builds against sage2tp's embedded kernels/ (its torch subset), and this "
                                      "experiment's baseline lists support_sources, so the run has no copy of them");
        // Absolute: a relative --nvcc names a file relative to where sage2tp was started.
        job.argv = {nvcc.has_parent_path() ? fs::absolute(nvcc).string() : nvcc.string()};
        if (host_call) {
            const std::vector<std::string> link = host_call_link_arguments();
            job.argv.insert(job.argv.end(), link.begin(), link.end());
        } else {
            job.argv.push_back("-cubin");
        }
        job.argv.push_back(gencode);
        job.argv.insert(job.argv.end(), experiment.nvcc_flags.begin(), experiment.nvcc_flags.end());
        job.argv.insert(job.argv.end(), experiment.extra_flags.begin(), experiment.extra_flags.end());
        job.argv.insert(job.argv.end(), {"-Xptxas", "-v"});
        for (const auto &dir : include_dirs) job.argv.push_back("-I" + (tree / dir).string());
        if (with_torch || host_call) job.argv.push_back("-I" + (embedded / "torch_shim").string());
        if (host_call) job.argv.push_back("-I" + embedded.string());
        job.argv.insert(job.argv.end(), {"-MD", "-MF", (out_dir / (stem + ".d")).string()});
        job.output_arguments.push_back(job.argv.size() - 1);
        fs::path input = tree / source;
        if (host_call) {
            job.keep_directory = run.root() / out_dir / (stem + ".keep");
            job.argv.insert(job.argv.end(), {"--keep", "--keep-dir", (out_dir / (stem + ".keep")).string()});
            job.output_arguments.push_back(job.argv.size() - 1);
            const fs::path library = out_dir / (stem + ".so");
            job.host_library = run.root() / library;
            job.argv.insert(job.argv.end(), {"-o", library.string()});
            const fs::path generated = out_dir / (stem + ".host_call.cu");
            job.generated_source = run.root() / generated;
            job.generated_text = host_call_source(input.lexically_relative(out_dir), host_function);
            input = generated;
        } else {
            job.argv.insert(job.argv.end(), {"-o", cubin.string()});
        }
        job.output_arguments.push_back(job.argv.size() - 1);
        job.argv.push_back(input.string());
        jobs.push_back(std::move(job));
    };
    auto host_function_of = [&](const std::string &abi) {
        return kernel_abi(abi, manifest + " abi").host_function();
    };
    for (const std::string &variant : experiment.variant_names()) {
        const SourceSpec &spec = experiment.source(variant);
        for (const auto &source : spec.kernel_sources)
            add(variant, source, true, spec.include_dirs, spec.needs_torch_headers,
                source == spec.kernel_sources.front() ? host_function_of(experiment.abi(variant)) : std::string());
        for (const auto &source : spec.support_sources)
            add(variant, source, false, spec.include_dirs, spec.needs_torch_headers, {});
    }
    if (experiment.needs_support_tree())
        add("support", embedded_quantize_source(), false, {embedded_include_dir()}, false, {});
    return jobs;
}

std::string quoted_command(const std::vector<std::string> &argv) {
    // For people to read and paste; sage2tp itself never runs this text through a shell.
    std::string line;
    for (const auto &arg : argv) {
        bool plain = !arg.empty() && arg.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                            "0123456789-_=./,:+@%") == std::string::npos;
        std::string quoted = plain ? arg : "'" + arg + "'";
        if (!plain)
            for (std::size_t at = 1; (at = quoted.find('\'', at)) != quoted.size() - 1; at += 4) quoted.replace(at, 1, "'\\''");
        line += (line.empty() ? "" : " ") + quoted;
    }
    return line + "\n";
}

namespace {

CacheableCompile cacheable(const CompileJob &job, const CompileCaching &caching) {
    return {job.argv, job.working_directory, fs::path(job.argv.back()), caching.compiler_version, job.output_arguments};
}

// The cubin of a host-call compile, which nvcc kept among its intermediate files (named after the
// generated source, "<stem>.host_call.cubin"; "<library>_dlink.cubin" is the device link's), moved to
// where a cubin compile would have written it; the other intermediates go. False when there is none.
bool take_kept_cubin(const CompileJob &job) {
    std::error_code ec;
    const fs::path kept = job.keep_directory / (job.generated_source.stem().string() + ".cubin");
    const bool found = fs::is_regular_file(kept, ec);
    if (found) fs::rename(kept, job.cubin, ec);
    fs::remove_all(job.keep_directory, ec);
    return found && !ec;
}

// The compile's outcome, from the cache when it holds it.
CompileOutcome compile_one(const CompileJob &job, CompileCaching *caching, std::mutex &mutex) {
    const auto began = std::chrono::steady_clock::now();
    const bool host_call = !job.host_library.empty();
    if (host_call) write_file_atomically(job.generated_source, job.generated_text);
    if (caching && caching->cache) {
        std::vector<std::string> corrupt;
        std::optional<CachedOutputs> hit = caching->cache->lookup(cacheable(job, *caching), corrupt);
        if (!corrupt.empty()) {
            std::lock_guard<std::mutex> lock(mutex);
            caching->corrupt.insert(caching->corrupt.end(), corrupt.begin(), corrupt.end());
        }
        if (hit && host_call == !hit->library.empty()) {
            write_file_atomically(job.cubin, hit->cubin);
            if (host_call) write_file_atomically(job.host_library, hit->library);
            write_file_atomically(job.log, hit->output);
            return {0, std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count(), hit->output, true};
        }
    }
    ProcessOptions options;
    options.working_directory = job.working_directory;
    std::error_code ec;
    if (host_call) fs::create_directories(job.keep_directory, ec);
    ProcessResult r = run_process(job.argv, options);
    CompileOutcome outcome{r.exit_code, r.seconds, r.err + r.out, false};
    if (host_call && !take_kept_cubin(job) && outcome.exit_code == 0) {
        outcome.exit_code = 1;
        outcome.output += "sage2tp: nvcc kept no cubin of " + job.generated_source.filename().string() + " in " +
                          job.keep_directory.string() + "\n";
    }
    write_file_atomically(job.log, outcome.output);
    if (caching && caching->cache && outcome.exit_code == 0 && fs::is_regular_file(job.cubin, ec) &&
        fs::is_regular_file(job.dependency_file, ec) && (!host_call || fs::is_regular_file(job.host_library, ec)))
        caching->cache->store(cacheable(job, *caching), job.dependency_file,
                              {read_text_file(job.cubin), outcome.output,
                               host_call ? read_text_file(job.host_library) : std::string()});
    return outcome;
}

}  // namespace

std::string running_compiles_text(const std::vector<RunningCompile> &running, std::size_t width) {
    std::vector<std::pair<std::string, std::vector<std::string>>> by_file;  // file name, its running variants
    int longest = 0;
    for (const RunningCompile &compile : running) {
        auto group = std::find_if(by_file.begin(), by_file.end(), [&](const auto &g) { return g.first == compile.file; });
        if (group == by_file.end()) group = by_file.insert(by_file.end(), {compile.file, {}});
        group->second.push_back(compile.variant);
        longest = std::max(longest, compile.seconds);
    }
    if (by_file.empty()) return "";
    const std::string longest_text = " " + std::to_string(longest) + " s";
    std::string named, counted;
    for (const auto &[file, variants] : by_file) {
        std::string list;
        for (const std::string &variant : variants) list += (list.empty() ? "" : ", ") + variant;
        named += (named.empty() ? "" : "; ") + file + " for " + list;
        counted += (counted.empty() ? "" : ", ") + file + (variants.size() > 1 ? " x" + std::to_string(variants.size()) : "");
    }
    if (named.size() + longest_text.size() <= width) return named + longest_text;
    if (counted.size() + longest_text.size() <= width) return counted + longest_text;
    return std::to_string(running.size()) + " compiles of " + std::to_string(by_file.size()) + " files" + longest_text;
}

std::string compile_progress_line(const std::string &counts, const std::vector<RunningCompile> &running) {
    constexpr std::size_t line_width = 79;
    return counts + running_compiles_text(running, counts.size() < line_width ? line_width - counts.size() : 0);
}

std::vector<CompileOutcome> run_compiles(const std::vector<CompileJob> &jobs, int parallel,
                                         const CompileProgress &progress, CompileCaching *caching) {
    std::vector<CompileOutcome> outcomes(jobs.size());
    std::vector<std::chrono::steady_clock::time_point> started(jobs.size());
    std::vector<int> state(jobs.size(), 0);  // 0 waiting, 1 running, 2 done
    std::mutex mutex;
    std::condition_variable done;
    std::size_t next = 0, finished = 0;
    std::exception_ptr failure;

    for (const auto &job : jobs) {
        fs::create_directories(job.cubin.parent_path());
        fs::remove(job.cubin);  // a stale cubin must never be mistaken for this build's output
        write_file_atomically(job.command_file, "# run in the run directory: the words nvcc is started with, no shell between\n" +
                                                      quoted_command(job.argv));
    }
    auto worker = [&] {
        for (;;) {
            std::size_t index;
            {
                std::lock_guard<std::mutex> lock(mutex);
                if (next >= jobs.size() || failure) return;
                index = next++;
                state[index] = 1;
                started[index] = std::chrono::steady_clock::now();
                if (progress.started) progress.started(jobs[index]);
            }
            try {
                outcomes[index] = compile_one(jobs[index], caching, mutex);
            } catch (...) {
                std::lock_guard<std::mutex> lock(mutex);
                if (!failure) failure = std::current_exception();
            }
            std::lock_guard<std::mutex> lock(mutex);
            state[index] = 2;
            ++finished;
            if (progress.finished && !failure) progress.finished(jobs[index], outcomes[index], finished);
            done.notify_all();
        }
    };
    std::vector<std::thread> workers;
    for (int i = 0; i < std::max(1, std::min<int>(parallel, static_cast<int>(jobs.size()))); ++i) workers.emplace_back(worker);
    {
        std::unique_lock<std::mutex> lock(mutex);
        while (finished < jobs.size() && !(failure && finished == next)) {
            done.wait_for(lock, std::chrono::seconds(1));
            if (!progress.tick || finished == jobs.size()) continue;
            std::vector<RunningCompile> running;
            for (std::size_t i = 0; i < jobs.size(); ++i)
                if (state[i] == 1)
                    running.push_back({fs::path(jobs[i].source).filename().string(), jobs[i].variant,
                                       static_cast<int>(std::chrono::duration<double>(std::chrono::steady_clock::now() - started[i]).count())});
            progress.tick(running, finished);
        }
    }
    for (auto &w : workers) w.join();
    if (failure) std::rethrow_exception(failure);
    return outcomes;
}

}  // namespace s2tp
