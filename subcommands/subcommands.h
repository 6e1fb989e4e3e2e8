// One entry point per subcommand; each lives in its own file in subcommands/ and is a thin sequence
// of calls into src/. `args` are the words after the program name, without the subcommand.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace s2tp {

using Args = std::vector<std::string>;

int prepare_command(const Args &args);
// prepare, also setting `prepared_run` to the run directory it prepared when it passes: `sage2tp run` pins
// the run there, so that a prepare in another shell (which moves `latest`) cannot redirect its later stages.
int prepare_command(const Args &args, std::filesystem::path &prepared_run);
int build_command(const Args &args);
int sanitize_command(const Args &args);
int parity_command(const Args &args);
int time_command(const Args &args);
int gate_command(const Args &args);
int run_command(const Args &args);
int status_command(const Args &args);
int runs_command(const Args &args);
int report_command(const Args &args);
int compare_command(const Args &args);
int help_command(const Args &args);
int clean_command(const Args &args);
int phases_command(const Args &args);
int slurm_command(const Args &args);
// Internal: one variant's launches for the sanitize stage (under compute-sanitizer) and time --ncu.
int exec_command(const Args &args);
// Internal: one repeat of time --repeat, in the fresh process the time stage starts for it.
int time_repeat_command(const Args &args);

}  // namespace s2tp
