// The options of the stage commands that `sage2tp run` takes too and hands on, each stage's group
// declared once: the stage's command adds its group (add_stage_options), and run adds every group,
// each option once, its help naming the stages it is for (add_run_stage_options), then gives each
// stage the options of its group that were given (stage_option_words).
#pragma once

#include "subcommands.h"

#include "pipeline/common_options.h"
#include "pipeline/stage_pipeline.h"

#include <string>
#include <vector>

namespace s2tp {

struct StageOption {
    CommonOption option;
    std::vector<Stage> stages;  // the stage commands that take it
    std::string run_name;       // its name under run where its own does not say its stage; else ""
};
const std::vector<StageOption> &stage_options();

void add_stage_options(CommandLine &command_line, Stage stage);
void add_run_stage_options(CommandLine &run_command_line);
// The words that hand `stage` the options of its group that run's command line holds.
Args stage_option_words(const CommandLine &run_command_line, Stage stage);

}  // namespace s2tp
