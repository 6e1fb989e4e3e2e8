#include "tools/slurm/slurm_jobs.h"

#include "support/errors.h"
#include "support/process_runner.h"
#include "support/text_lines.h"
#include "support/text_scan.h"

#include <algorithm>
#include <cctype>

namespace s2tp {
namespace {

// Slurm's commands answer within seconds; one that hangs (a controller that stopped answering) ends
// the command instead of blocking it.
constexpr std::chrono::seconds kSlurmCommandTimeout{60};

// Runs one Slurm command; Error(missing_tool) when it is not installed, its ProcessResult otherwise.
ProcessResult slurm_command(const std::vector<std::string> &argv) {
    if (!find_program(argv.front()))
        fail(ExitCode::missing_tool, argv.front() + " not found in PATH: sage2tp slurm needs Slurm's client commands "
                                                    "(Debian: apt-get install slurm-client)");
    ProcessOptions options;
    options.timeout = kSlurmCommandTimeout;
    ProcessResult result = run_process(argv, options);
    if (result.timed_out) fail(ExitCode::missing_tool, argv.front() + " did not answer within 60 s");
    return result;
}

std::string slurm_message(const ProcessResult &result) {
    const std::string message = trimmed(result.err.empty() ? result.out : result.err);
    return message.empty() ? "exit " + std::to_string(result.exit_code) : message;
}

std::vector<std::string> split(const std::string &text, char separator) {
    std::vector<std::string> fields;
    std::size_t start = 0;
    for (std::size_t at; (at = text.find(separator, start)) != std::string::npos; start = at + 1)
        fields.push_back(text.substr(start, at - start));
    fields.push_back(text.substr(start));
    return fields;
}

bool all_digits(const std::string &text) {
    return !text.empty() && std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c); });
}

// "CANCELLED by 0" -> "CANCELLED"; "PENDING" stays.
std::string state_word(const std::string &state) { return trimmed(state.substr(0, state.find(' '))); }

std::string reason_of(const std::string &reason) {
    const std::string r = trimmed(reason);
    return r == "None" || r == "(null)" ? "" : r;
}

}  // namespace

bool valid_feature_name(const std::string &name) {
    return !name.empty() && std::all_of(name.begin(), name.end(), [](unsigned char c) {
        return std::isalnum(c) || c == '_' || c == '.' || c == '-';
    });
}

std::vector<SlurmNode> slurm_nodes() {
    const ProcessResult result = slurm_command({"sinfo", "--noheader", "--Node", "--format=%N|%f|%t"});
    if (result.exit_code != 0) fail(ExitCode::missing_tool, "sinfo: " + slurm_message(result));
    std::map<std::string, SlurmNode> by_name;  // sinfo --Node lists a node once per partition
    for (std::string_view line : split_lines(result.out)) {
        const std::vector<std::string> fields = split(trimmed(std::string(line)), '|');
        if (fields.size() != 3 || fields[0].empty()) continue;
        SlurmNode &node = by_name[fields[0]];
        node.name = fields[0];
        node.state = fields[2];
        if (fields[1] != "(null)")
            for (const std::string &feature : split(fields[1], ',')) node.features.insert(feature);
    }
    std::vector<SlurmNode> nodes;
    for (auto &[name, node] : by_name) nodes.push_back(std::move(node));
    return nodes;
}

std::string submit_held_array(const std::string &script, int tasks, const std::vector<std::string> &extra) {
    std::vector<std::string> argv{"sbatch", "--parsable", "--hold", "--array=0-" + std::to_string(tasks - 1)};
    argv.insert(argv.end(), extra.begin(), extra.end());
    argv.push_back(script);
    const ProcessResult result = slurm_command(argv);
    if (result.exit_code != 0) fail(ExitCode::usage, "sbatch refused the job array: " + slurm_message(result));
    // --parsable: "<job id>" or "<job id>;<cluster>"
    const std::string job = trimmed(result.out).substr(0, trimmed(result.out).find(';'));
    if (!all_digits(job)) fail(ExitCode::internal, "sbatch --parsable printed '" + trimmed(result.out) + "', not a job id");
    return job;
}

void set_task_constraint(const std::string &job, int task, const std::string &constraint) {
    const ProcessResult result = slurm_command(
        {"scontrol", "update", "JobId=" + job + "_" + std::to_string(task), "Features=" + constraint});
    if (result.exit_code != 0)
        fail(ExitCode::usage, "scontrol could not set task " + std::to_string(task) + "'s constraint '" + constraint +
                                  "': " + slurm_message(result));
}

void release_job(const std::string &job) {
    const ProcessResult result = slurm_command({"scontrol", "release", job});
    if (result.exit_code != 0) fail(ExitCode::usage, "scontrol release " + job + ": " + slurm_message(result));
}

void cancel_job(const std::string &job) {
    const ProcessResult result = slurm_command({"scancel", job});
    if (result.exit_code != 0) fail(ExitCode::usage, "scancel " + job + ": " + slurm_message(result));
}

std::map<int, SlurmTaskState> parse_sacct_lines(const std::string &job, const std::string &text) {
    std::map<int, SlurmTaskState> tasks;
    const std::string prefix = job + "_";
    for (std::string_view line : split_lines(text)) {
        const std::vector<std::string> fields = split(trimmed(std::string(line)), '|');
        if (fields.size() < 5 || fields[0].rfind(prefix, 0) != 0) continue;
        const std::string task = fields[0].substr(prefix.size());
        if (!all_digits(task)) continue;  // a step ("_4.batch") or a pending range ("_[5-7]")
        SlurmTaskState &state = tasks[std::stoi(task)];
        state.task = std::stoi(task);
        state.state = state_word(fields[1]);
        state.exit_code = fields[2];
        state.node = fields[3] == "None assigned" ? "" : fields[3];
        state.reason = reason_of(fields[4]);
    }
    return tasks;
}

std::map<int, SlurmTaskState> parse_squeue_lines(const std::string &text) {
    std::map<int, SlurmTaskState> tasks;
    for (std::string_view line : split_lines(text)) {
        const std::vector<std::string> fields = split(trimmed(std::string(line)), '|');
        if (fields.size() != 4 || !all_digits(fields[0])) continue;
        SlurmTaskState &state = tasks[std::stoi(fields[0])];
        state.task = std::stoi(fields[0]);
        state.state = state_word(fields[1]);
        state.reason = reason_of(fields[2]);
        state.node = fields[3];
    }
    return tasks;
}

std::map<int, SlurmTaskState> slurm_task_states(const std::string &job) {
    if (find_program("sacct")) {
        const ProcessResult sacct = slurm_command({"sacct", "--noheader", "--parsable2", "--array", "--jobs", job,
                                                   "--format=JobID,State,ExitCode,NodeList,Reason"});
        if (sacct.exit_code == 0) return parse_sacct_lines(job, sacct.out);
    }
    // Without accounting (sacct: "Slurm accounting storage is disabled") the controller's own records.
    const ProcessResult squeue = slurm_command(
        {"squeue", "--noheader", "--array", "--states=all", "--jobs", job, "--format=%K|%T|%r|%N"});
    if (squeue.exit_code != 0) {
        // A job the controller has forgotten (older than MinJobAge): every task is absent.
        if (squeue.err.find("Invalid job id") != std::string::npos) return {};
        fail(ExitCode::missing_tool, "squeue: " + slurm_message(squeue));
    }
    return parse_squeue_lines(squeue.out);
}


}  // namespace s2tp
