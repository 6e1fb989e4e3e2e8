#include "stage_options.h"

#include "support/errors.h"

#include <algorithm>

namespace s2tp {

namespace {

using Kind = CommonOption::Kind;

bool takes(const StageOption &option, Stage stage) {
    return std::find(option.stages.begin(), option.stages.end(), stage) != option.stages.end();
}

// "prepare", "sanitize, parity and time": the stages an option is for.
std::string stage_list(const std::vector<Stage> &stages) {
    std::string names;
    for (std::size_t i = 0; i < stages.size(); ++i)
        names += (i == 0 ? "" : i + 1 == stages.size() ? " and " : ", ") + stage_name(stages[i]);
    return names;
}

// The option as run declares it: under its run name, if it has one, its help saying which stages
// it is for ("for time: stop sampling ...").
CommonOption under_run(const StageOption &option) {
    CommonOption declared = option.option;
    if (!option.run_name.empty()) declared.name = option.run_name;
    declared.help = "for " + stage_list(option.stages) + ": " + declared.help;
    return declared;
}

// The shipped manifests, named in --manifest's help (and so offered by the bash completion, which reads
// it); none where the shipped data is not found, which a command that needs it reports itself.
std::string shipped_manifest_list() {
    std::string list;
    try {
        for (const std::string &name : shipped_manifest_names()) list += (list.empty() ? "" : ", ") + name;
    } catch (const Error &) {
    }
    return list.empty() ? "" : ": " + list;
}

}  // namespace

const std::vector<StageOption> &stage_options() {
    static const std::vector<StageOption> options{
        {{"manifest", "experiment manifest: a file, or a shipped manifest's name" + shipped_manifest_list() +
                          " (default: the shipped temporal-pair)", Kind::text, "FILE|NAME"},
         {Stage::prepare}, ""},
        {{"repository", "the git repository of the manifest's git sources (e.g. your SageAttention checkout)",
          Kind::text, "DIR"},
         {Stage::prepare}, ""},
        {{"commit", "the baseline's commit (a candidate without its own commit follows it); default: the manifest's",
          Kind::text, "REV"},
         {Stage::prepare}, ""},
        {{"candidate-commit",
          "a candidate's commit, for a branch experiment: REV for a manifest's only candidate, NAME=REV (repeatable) "
          "for several",
          Kind::texts, "[NAME=]REV"},
         {Stage::prepare}, ""},
        {{"patch", "the patch of the manifest's only candidate, in place of the manifest's", Kind::text, "FILE"},
         {Stage::prepare}, ""},
        {{"no-patch", "the manifest's only candidate without its patch (with --candidate-commit: that commit alone)",
          Kind::flag, ""},
         {Stage::prepare}, ""},
        {{"candidate-worktree",
          "the manifest's only candidate is the repository's working tree: its 'git diff' against the baseline "
          "commit, recorded as the candidate's patch",
          Kind::flag, ""},
         {Stage::prepare}, ""},
        {{"name", "the experiment's name in place of the manifest's [experiment] name (what reports call it)",
          Kind::text, "NAME"},
         {Stage::prepare}, ""},
        {{"description", "the experiment's description in place of the manifest's", Kind::text, "TEXT"},
         {Stage::prepare}, ""},
        {{"new", "start a new run directory even when a latest run exists", Kind::flag, ""}, {Stage::prepare}, ""},
        {{"arch",
          "target: sm_89, sm_90a, sm_100a, sm_103a, sm_120a, sm_121a, or auto (the first visible GPU); default: auto "
          "when a GPU is visible, else the arch of the last passed build, else the manifest's",
          Kind::text, "ARCH"},
         {Stage::build}, ""},
        {device_option, {Stage::sanitize, Stage::parity, Stage::time}, ""},
        {devices_option, {Stage::sanitize, Stage::parity, Stage::time}, ""},
        {{"skip", "record a skipped stage instead of running (also: RUN_SANITIZER=0)", Kind::flag, ""},
         {Stage::sanitize}, "skip-sanitize"},
        {{"target-half-width",
          "stop once every candidate's 95% interval half-width (relative) is below this (default: the manifest's "
          "[time] target_half_width)",
          Kind::real, "F"},
         {Stage::time}, ""},
        {{"budget",
          "stop sampling after this many seconds in all, split evenly among the repeats (default: the manifest's "
          "[time] budget_seconds)",
          Kind::real, "SECONDS"},
         {Stage::time}, ""},
    };
    return options;
}

void add_stage_options(CommandLine &cl, Stage stage) {
    for (const StageOption &option : stage_options())
        if (takes(option, stage)) add_option(cl, option.option);
}

void add_run_stage_options(CommandLine &cl) {
    for (const StageOption &option : stage_options()) add_option(cl, under_run(option));
}

Args stage_option_words(const CommandLine &cl, Stage stage) {
    Args words;
    for (const StageOption &option : stage_options())
        if (takes(option, stage))
            for (std::string &word : forwarded_words(cl, under_run(option), option.option.name))
                words.push_back(std::move(word));
    return words;
}

}  // namespace s2tp
