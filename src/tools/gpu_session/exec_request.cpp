#include "tools/gpu_session/exec_request.h"

#include "pipeline/common_options.h"

#include "model/shape_sets.h"
#include "support/errors.h"

#include <algorithm>
#include <charconv>

namespace s2tp {
namespace {

// "0,3,7": the indices in the order given; Error(usage) naming the list and the word at fault.
std::vector<int> parse_shape_list(const std::string &list) {
    const std::size_t count = sanitizer_shapes().size();
    const std::string valid = "there are " + std::to_string(count) + " sanitizer shapes (0.." +
                              std::to_string(count - 1) + ")";
    if (list.empty()) fail(ExitCode::usage, "--sanitize-shape needs at least one index: " + valid);
    std::vector<int> indices;
    std::size_t begin = 0;
    for (;;) {
        const std::size_t end = std::min(list.find(',', begin), list.size());
        const std::string word = list.substr(begin, end - begin);
        int index = -1;
        const auto [last, error] = std::from_chars(word.data(), word.data() + word.size(), index);
        if (word.empty() || error != std::errc() || last != word.data() + word.size())
            fail(ExitCode::usage, "--sanitize-shape '" + list + "': '" + word + "' is not a shape index; " + valid);
        if (index < 0 || static_cast<std::size_t>(index) >= count)
            fail(ExitCode::usage, "--sanitize-shape " + word + " is out of range: " + valid);
        if (std::find(indices.begin(), indices.end(), index) != indices.end())
            fail(ExitCode::usage, "--sanitize-shape '" + list + "' names shape " + word + " twice");
        indices.push_back(index);
        if (end == list.size()) return indices;
        begin = end + 1;
    }
}

}  // namespace

std::vector<std::string> ExecRequest::to_argv(const std::filesystem::path &executable) const {
    std::vector<std::string> argv{executable.string(), "exec", "--run", run.string(), "--variant", variant};
    if (!sanitize_shapes.empty()) {
        std::string list;
        for (const int index : sanitize_shapes) list += (list.empty() ? "" : ",") + std::to_string(index);
        argv.push_back("--sanitize-shape");
        argv.push_back(list);
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
        ("sanitize-shape", "indices into the sanitizer shape list, comma-separated, launched in turn",
         cxxopts::value<std::string>(), "I[,J...]")
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
    if (cl.has("sanitize-shape")) request.sanitize_shapes = parse_shape_list(args["sanitize-shape"].as<std::string>());
    if (cl.has("workload-file")) request.workload_file = args["workload-file"].as<std::string>();
    if (cl.has("seed")) request.seed = args["seed"].as<std::uint64_t>();
    if (cl.has("seq-len")) request.seq_len = args["seq-len"].as<std::int64_t>();
    request.device_index = s2tp::device_index(cl);
    return request;
}

}  // namespace s2tp
