#include "tools/exec_request.h"

#include "pipeline/common_options.h"

#include "support/errors.h"

namespace s2tp {

std::vector<std::string> ExecRequest::to_argv(const std::filesystem::path &executable) const {
    std::vector<std::string> argv{executable.string(), "exec", "--run", run.string(), "--variant", variant};
    if (sanitize_shape) {
        argv.push_back("--sanitize-shape");
        argv.push_back(std::to_string(*sanitize_shape));
    } else {
        argv.push_back("--workload");
        if (workload_file) {
            argv.push_back("--workload-file");
            argv.push_back(workload_file->string());
        }
    }
    if (seed) {
        argv.push_back("--seed");
        argv.push_back(std::to_string(*seed));
    }
    if (seq_len) {
        argv.push_back("--seq-len");
        argv.push_back(std::to_string(*seq_len));
    }
    argv.push_back("--device");
    argv.push_back(std::to_string(device_index));
    return argv;
}

void ExecRequest::add_options(CommandLine &cl) {
    cl.add_options()
        ("variant", "baseline or a candidate's name", cxxopts::value<std::string>(), "V")
        ("sanitize-shape", "index into the sanitizer shape list", cxxopts::value<int>(), "I")
        ("workload", "the run's real workload instead of a sanitizer shape")
        ("workload-file", "with --workload: the workload of this file (time --workload FILE) instead of the run's",
         cxxopts::value<std::string>(), "FILE")
        ("seed", "generator seed (default: 1 for sanitizer shapes, the workload's own for --workload)",
         cxxopts::value<std::uint64_t>(), "N")
        ("seq-len", "with --workload: len_q = len_kv = N instead of the workload's (a generated workload only)",
         cxxopts::value<std::int64_t>(), "N");
    add_option(cl, device_option);
}

ExecRequest ExecRequest::from_args(const CommandLine &cl, const std::filesystem::path &run) {
    if (!cl.has("variant")) fail(ExitCode::usage, "exec needs --variant baseline or --variant CANDIDATE");
    if (cl.has("sanitize-shape") == cl.has("workload"))
        fail(ExitCode::usage, "exec needs exactly one of --sanitize-shape I and --workload");
    if (cl.has("workload-file") && !cl.has("workload")) fail(ExitCode::usage, "exec --workload-file needs --workload");
    const auto &args = cl.result();
    ExecRequest request;
    request.run = run;
    request.variant = args["variant"].as<std::string>();
    if (cl.has("sanitize-shape")) request.sanitize_shape = args["sanitize-shape"].as<int>();
    if (cl.has("workload-file")) request.workload_file = args["workload-file"].as<std::string>();
    if (cl.has("seed")) request.seed = args["seed"].as<std::uint64_t>();
    if (cl.has("seq-len")) request.seq_len = args["seq-len"].as<std::int64_t>();
    request.device_index = s2tp::device_index(cl);
    return request;
}

}  // namespace s2tp
