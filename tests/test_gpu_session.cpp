// The arch check every GPU stage makes before its first check: cubins hold SASS for one arch only, so a
// run built for another GPU must stop with both archs named and the command that rebuilds it.
#include "build_config.h"
#include "request_round_trip.h"
#include "tools/gpu_session/exec_request.h"
#include "tools/gpu_session/gpu_session.h"
#include "support/errors.h"

#include <gtest/gtest.h>

namespace s2tp::unit_gpu_session {
namespace {

const ArchLimitsTable &table() {
    static const ArchLimitsTable loaded = load_arch_limits(std::string(S2TP_SOURCE_ROOT) + "/data/arch_limits.toml");
    return loaded;
}

DeviceFacts gpu(int major, int minor, const std::string &name) {
    DeviceFacts device;
    device.cc_major = major;
    device.cc_minor = minor;
    device.name = name;
    return device;
}

TEST(ArchMismatch, KernelsBuiltForTheGpusTargetPass) {
    EXPECT_EQ(arch_mismatch("parity", "sm_90a", gpu(9, 0, "NVIDIA H200"), table()), "");
    EXPECT_EQ(arch_mismatch("time", "sm_121a", gpu(12, 1, "NVIDIA GB10"), table()), "");
    EXPECT_EQ(arch_mismatch("exec", "sm_89", gpu(8, 9, "NVIDIA L40S"), table()), "");
    EXPECT_EQ(arch_mismatch("sanitize", "sm_100a", gpu(10, 0, "NVIDIA B200"), table()), "");
    EXPECT_EQ(arch_mismatch("sanitize", "sm_103a", gpu(10, 3, "NVIDIA B300"), table()), "");
}

TEST(ArchMismatch, AnotherGpusKernelsNameBothArchsAndTheFix) {
    const std::string message = arch_mismatch("sanitize", "sm_121a", gpu(9, 0, "NVIDIA H200"), table());
    EXPECT_NE(message.find("sanitize"), std::string::npos) << message;
    EXPECT_NE(message.find("built for sm_121a"), std::string::npos) << message;
    EXPECT_NE(message.find("NVIDIA H200, sm_90"), std::string::npos) << message;
    EXPECT_NE(message.find("'sage2tp build --arch sm_90a --force'"), std::string::npos) << message;
    EXPECT_NE(message.find("--arch auto"), std::string::npos) << message;
}

TEST(ArchMismatch, PlainTargetOnAFeatureSuffixGpuIsAMismatch) {
    // sm_90 has no row name as a target ("sm_90a" is), and the same cc's other target still differs.
    EXPECT_NE(arch_mismatch("parity", "sm_120a", gpu(12, 1, "NVIDIA GB10"), table()), "");
    EXPECT_NE(arch_mismatch("parity", "", gpu(9, 0, "NVIDIA H200"), table()).find("an unrecorded arch"), std::string::npos);
}

TEST(ArchMismatch, AGpuWithoutARowIsNamedWithTheSupportedTargets) {
    const std::string message = arch_mismatch("time", "sm_90a", gpu(7, 5, "Tesla T4"), table());
    EXPECT_NE(message.find("Tesla T4, sm_75"), std::string::npos) << message;
    EXPECT_NE(message.find("not an arch sage2tp supports"), std::string::npos) << message;
    EXPECT_NE(message.find("sm_90a"), std::string::npos) << message;
}

// The words sanitize and time --ncu start `sage2tp exec` with are the ones exec reads back.
TEST(ExecRequest, WhatTheStagesWriteIsWhatExecReads) {
    for (const ExecRequest &sent :
         {ExecRequest{"/runs/r", "baseline", {3}, std::nullopt, 1, std::nullopt, 1},
          ExecRequest{"/runs/r", "candidate", {9, 0, 4, 1}, std::nullopt, 1, std::nullopt, 0},
          ExecRequest{"/runs/r", "double-v", {}, std::nullopt, std::nullopt, 8192, 0},
          ExecRequest{"/runs/r", "double-v", {}, "/work/shapes/t2v.toml", std::nullopt, std::nullopt, 0}}) {
        const ExecRequest read = read_back<ExecRequest>(sent.to_argv("/usr/bin/sage2tp"), "exec");
        EXPECT_EQ(read.run, sent.run);
        EXPECT_EQ(read.variant, sent.variant);
        EXPECT_EQ(read.sanitize_shapes, sent.sanitize_shapes);
        EXPECT_EQ(read.workload_file, sent.workload_file);
        EXPECT_EQ(read.seed, sent.seed);
        EXPECT_EQ(read.seq_len, sent.seq_len);
        EXPECT_EQ(read.device_index, sent.device_index);
    }
}

// exec's reading of --sanitize-shape LIST: the Error(usage) message, or "" when it is read.
std::string shape_list_error(const std::string &list) {
    CommandLine cl("exec", "", {"--run", "/runs/r", "--variant", "baseline", "--sanitize-shape", list});
    ExecRequest::add_options(cl);
    if (!cl.parse()) return "no parse";
    try {
        ExecRequest::from_args(cl, "/runs/r");
        return "";
    } catch (const Error &error) {
        EXPECT_EQ(error.code(), ExitCode::usage) << error.what();
        return error.what();
    }
}

TEST(ExecRequest, AShapeListIsReadInItsOrder) {
    CommandLine cl("exec", "", {"--run", "/runs/r", "--variant", "baseline", "--sanitize-shape", "7,0,3"});
    ExecRequest::add_options(cl);
    ASSERT_TRUE(cl.parse());
    EXPECT_EQ(ExecRequest::from_args(cl, "/runs/r").sanitize_shapes, (std::vector<int>{7, 0, 3}));
    EXPECT_EQ(shape_list_error("9"), "");
}

TEST(ExecRequest, ABadShapeListIsRefusedNamingTheWord) {
    const std::string empty = shape_list_error("");
    EXPECT_NE(empty.find("at least one index"), std::string::npos) << empty;
    const std::string range = shape_list_error("0,10");
    EXPECT_NE(range.find("--sanitize-shape 10 is out of range"), std::string::npos) << range;
    EXPECT_NE(range.find("(0..9)"), std::string::npos) << range;
    EXPECT_NE(shape_list_error("-1").find("out of range"), std::string::npos);
    const std::string twice = shape_list_error("2,5,2");
    EXPECT_NE(twice.find("names shape 2 twice"), std::string::npos) << twice;
    for (const std::string list : {"a", "1,x", "1,,2", "1,", ",1", "3 ", "0x1", "1.5", "99999999999"}) {
        const std::string message = shape_list_error(list);
        EXPECT_NE(message.find("is not a shape index"), std::string::npos) << list << ": " << message;
        EXPECT_NE(message.find("'" + list + "'"), std::string::npos) << list << ": " << message;
    }
}

}  // namespace
}  // namespace s2tp::unit_gpu_session
