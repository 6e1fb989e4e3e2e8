// The stage commands' option groups (subcommands/stage_options.h) and the common options
// (pipeline/common_options.h): what `run` hands each stage is what that stage's own command reads.
#include "stage_options.h"

#include "support/errors.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>

namespace s2tp {
namespace {

// run's command line as subcommands/run.cpp declares it.
std::unique_ptr<CommandLine> parsed_run(const Args &args) {
    auto cl = std::make_unique<CommandLine>("run", "test", args);
    add_option(*cl, force_option("re-run every stage"));
    add_run_stage_options(*cl);
    EXPECT_TRUE(cl->parse());
    return cl;
}

TEST(StageOptions, RunHandsEachStageTheOptionsOfItsGroupAsGiven) {
    const auto run = parsed_run({"--device", "1", "--budget", "4", "--target-half-width", "0.0005",
                                        "--skip-sanitize", "--candidate-commit", "a=1", "--candidate-commit", "b=2",
                                        "--arch", "sm_90a", "--force"});
    EXPECT_EQ(stage_option_words(*run, Stage::prepare),
              (Args{"--candidate-commit", "a=1", "--candidate-commit", "b=2"}));
    EXPECT_EQ(stage_option_words(*run, Stage::build), (Args{"--arch", "sm_90a"}));
    EXPECT_EQ(stage_option_words(*run, Stage::sanitize), (Args{"--device", "1", "--skip"}));
    EXPECT_EQ(stage_option_words(*run, Stage::parity), (Args{"--device", "1"}));
    EXPECT_EQ(stage_option_words(*run, Stage::time),
              (Args{"--device", "1", "--target-half-width", "5e-04", "--budget", "4"}));
    EXPECT_TRUE(stage_option_words(*run, Stage::gate).empty());
    EXPECT_TRUE(stage_option_words(*parsed_run({}), Stage::time).empty());
}

// The words run writes parse in the stage's own command line back to the values run read.
TEST(StageOptions, WhatRunForwardsReadsBackInTheStagesCommand) {
    const auto run = parsed_run({"--device", "3", "--budget", "0.1", "--target-half-width", "1e-3"});
    CommandLine time("time", "test", stage_option_words(*run, Stage::time));
    add_stage_options(time, Stage::time);
    ASSERT_TRUE(time.parse());
    EXPECT_EQ(device_index(time), 3);
    EXPECT_EQ(time.result()["budget"].as<double>(), 0.1);
    EXPECT_EQ(time.result()["target-half-width"].as<double>(), 1e-3);

    CommandLine sanitize("sanitize", "test", stage_option_words(*parsed_run({"--skip-sanitize"}), Stage::sanitize));
    add_stage_options(sanitize, Stage::sanitize);
    ASSERT_TRUE(sanitize.parse());
    EXPECT_TRUE(sanitize.has("skip"));
    EXPECT_EQ(device_index(sanitize), 0);
}

// --devices is parsed once, in the stage's command line, whether typed there or forwarded by run.
TEST(StageOptions, RunForwardsDevicesToTheGpuStagesAndTheyReadTheList) {
    const auto run = parsed_run({"--devices", "2,0"});
    for (const Stage stage : {Stage::sanitize, Stage::parity, Stage::time}) {
        EXPECT_EQ(stage_option_words(*run, stage), (Args{"--devices", "2,0"})) << stage_name(stage);
        CommandLine cl(stage_name(stage), "test", stage_option_words(*run, stage));
        add_stage_options(cl, stage);
        ASSERT_TRUE(cl.parse());
        EXPECT_EQ(selected_devices(cl), parse_device_list("2,0"));
    }
    EXPECT_TRUE(stage_option_words(*run, Stage::gate).empty());
    EXPECT_TRUE(stage_option_words(*run, Stage::build).empty());
}

ExitCode selection_code(const Args &args) {
    CommandLine cl("sanitize", "test", args);
    add_stage_options(cl, Stage::sanitize);
    try {
        cl.parse();
        selected_devices(cl);
    } catch (const Error &e) {
        return e.code();
    }
    return ExitCode::ok;
}

TEST(CommonOptions, DevicesIsAListOrAllAndNeverGivenWithDevice) {
    CommandLine all("time", "test", {"--devices", "all"});
    add_stage_options(all, Stage::time);
    ASSERT_TRUE(all.parse());
    EXPECT_TRUE(selected_devices(all).all);
    CommandLine one("time", "test", {"--device", "3"});
    add_stage_options(one, Stage::time);
    ASSERT_TRUE(one.parse());
    EXPECT_EQ(selected_devices(one), DeviceList::one(3));
    EXPECT_EQ(selection_code({}), ExitCode::ok);
    EXPECT_EQ(selection_code({"--device", "1", "--devices", "0,1"}), ExitCode::usage);
    EXPECT_EQ(selection_code({"--devices", "0,0"}), ExitCode::usage);
    EXPECT_EQ(selection_code({"--devices", "first"}), ExitCode::usage);
}

TEST(StageOptions, RunRefusesAValueOfTheWrongTypeAsTheStageWould) {
    try {
        parsed_run({"--budget", "soon"});
        FAIL() << "--budget soon was taken";
    } catch (const Error &e) {
        EXPECT_EQ(e.code(), ExitCode::usage);
        EXPECT_NE(std::string(e.what()).find("soon"), std::string::npos) << e.what();
    }
}

TEST(CommonOptions, JobsBelowOneIsAUsageError) {
    CommandLine cl("build", "test", {"--jobs", "0"});
    add_option(cl, jobs_option("parallel nvcc processes", "the number of cores"));
    ASSERT_TRUE(cl.parse());
    try {
        jobs_count(cl);
        FAIL() << "--jobs 0 was taken";
    } catch (const Error &e) {
        EXPECT_EQ(e.code(), ExitCode::usage);
        EXPECT_STREQ(e.what(), "--jobs must be at least 1");
    }
    CommandLine none("build", "test", {});
    add_option(none, jobs_option("parallel nvcc processes", "the number of cores"));
    ASSERT_TRUE(none.parse());
    EXPECT_FALSE(jobs_count(none));
}

TEST(CommonOptions, TheEnvironmentSwitchesTakeOnlyTheirOneValue) {
    ::setenv("RUN_SANITIZER", "0", 1);
    ::setenv("RUN_NCU", "1", 1);
    EXPECT_TRUE(sanitizer_switched_off());
    EXPECT_TRUE(ncu_switched_on());
    ::setenv("RUN_SANITIZER", "1", 1);
    ::setenv("RUN_NCU", "0", 1);
    EXPECT_FALSE(sanitizer_switched_off());
    EXPECT_FALSE(ncu_switched_on());
    ::unsetenv("RUN_SANITIZER");
    ::unsetenv("RUN_NCU");
    EXPECT_FALSE(sanitizer_switched_off());
    EXPECT_FALSE(ncu_switched_on());
}

}  // namespace
}  // namespace s2tp
