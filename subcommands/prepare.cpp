// sage2tp prepare: option parsing and wiring of the prepare stage (stages/prepare_stage.h).
#include "prepare_run.h"
#include "stage_options.h"

#include "pipeline/cli.h"
#include "stages/prepare_options.h"

namespace fs = std::filesystem;

namespace s2tp {

int prepare_command(const Args &args) {
    fs::path prepared_run;
    return prepare_command(args, prepared_run);
}

int prepare_command(const Args &args, fs::path &prepared_run) {
    CommandLine cl("prepare", "Resolve the experiment and make the baseline and candidate source trees.", args);
    add_stage_options(cl, Stage::prepare);
    add_option(cl, force_option("run"));
    if (!cl.parse()) return 0;

    const auto text = [&](const char *option) {
        return cl.has(option) ? std::optional(cl.result()[option].as<std::string>()) : std::nullopt;
    };
    PrepareOptions options;
    options.selection = cl.selection();
    options.new_run = cl.has("new");
    options.force = cl.has("force");
    options.quiet = cl.result().count("quiet") > 0;
    options.manifest = text("manifest");
    options.repository = text("repository");
    options.commit = text("commit");
    options.patch = text("patch");
    options.name = text("name");
    options.description = text("description");
    if (cl.has("candidate-commit")) options.candidate_commits = cl.result()["candidate-commit"].as<std::vector<std::string>>();
    options.no_patch = cl.has("no-patch");
    options.candidate_worktree = cl.has("candidate-worktree");
    return prepare_with_options(options, cl.reporter(), prepared_run);
}

}  // namespace s2tp
