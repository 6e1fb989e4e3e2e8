// Host calls end to end with the real nvcc: a launcher file in upstream's style (tests/host_call/
// fill_launcher.cu) built into a host-call library as `sage2tp build` builds one (the generated
// translation unit, kernels/torch_shim instead of torch, the wrapped launch entry points), loaded and
// called through gpu/host_call.h. What its host code reports reaches sage2tp as a clear error naming
// the host function and the problem, on any host; with a GPU the launch itself is recorded too.
#include "build_config.h"
#include "gpu/gpu_runtime.h"
#include "gpu/host_call.h"
#include "support/errors.h"
#include "support/file_io.h"
#include "support/process_runner.h"
#include "tools/kernel_build.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using namespace s2tp;

namespace {

class HostCall : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        directory_ = new fs::path(fs::temp_directory_path() / ("s2tp-host-call-" + std::to_string(::getpid())));
        fs::create_directories(*directory_);
        const fs::path source_root = S2TP_SOURCE_ROOT;
        write_file_atomically(*directory_ / "fill.host_call.cu",
                              host_call_source(source_root / "tests/host_call/fill_launcher.cu", "fill_out"));
        std::vector<std::string> argv = {find_nvcc({}).string()};
        for (const std::string &argument : host_call_link_arguments()) argv.push_back(argument);
        for (const std::string &argument : std::vector<std::string>{
                 "-gencode=arch=compute_90a,code=sm_90a", "-O3", "-std=c++17",
              "-I" + (source_root / "kernels/torch_shim").string(), "-I" + (source_root / "kernels").string(), "-o",
              (*directory_ / "fill.so").string(), (*directory_ / "fill.host_call.cu").string()})
            argv.push_back(argument);
        const ProcessResult built = run_process(argv, {});
        build_output_ = new std::string(built.err + built.out);
        built_ = built.exit_code == 0;
    }
    static void TearDownTestSuite() {
        std::error_code ec;
        fs::remove_all(*directory_, ec);
        delete directory_;
        delete build_output_;
    }

    // The error the call throws, or "" when it returns.
    static std::string error_of(const HostCallLibrary &library, const HostArguments &arguments, ExitCode want = ExitCode::stop) {
        try {
            library.call(arguments, nullptr, false, "b=1 test shape");
        } catch (const Error &e) {
            EXPECT_EQ(e.code(), want) << e.what();
            return e.what();
        }
        return "";
    }

    static HostArguments fill_arguments(const void *out, HostDType dtype, std::int64_t mode) {
        HostArguments a;
        a.tensor(out, dtype, {4, 32});
        a.integer(mode);
        a.real(2.5);
        return a;
    }

    static fs::path *directory_;
    static std::string *build_output_;
    static bool built_;
};

fs::path *HostCall::directory_ = nullptr;
std::string *HostCall::build_output_ = nullptr;
bool HostCall::built_ = false;

TEST_F(HostCall, TheLauncherFileBuildsAgainstSage2tpsTorchSubsetAndLoads) {
    ASSERT_TRUE(built_) << *build_output_;
    const HostCallLibrary library(*directory_ / "fill.so");
    EXPECT_EQ(library.function(), "fill_out");
}

TEST_F(HostCall, ATorchCheckThatFailsIsReportedWithItsMessageTheFunctionAndTheShape) {
    ASSERT_TRUE(built_) << *build_output_;
    const HostCallLibrary library(*directory_ / "fill.so");
    const std::string message = error_of(library, fill_arguments(nullptr, HostDType::f16, 0));
    EXPECT_NE(message.find("Tensor out must have dtype (torch::kFloat32)"), std::string::npos) << message;
    EXPECT_NE(message.find("the host function fill_out"), std::string::npos) << message;
    EXPECT_NE(message.find("b=1 test shape"), std::string::npos) << message;
    EXPECT_NE(message.find("fill_launcher.cu"), std::string::npos) << message;  // where the check is
}

TEST_F(HostCall, AFailedAssertInHostCodeIsReportedNotAnAbort) {
    ASSERT_TRUE(built_) << *build_output_;
    const HostCallLibrary library(*directory_ / "fill.so");
    const std::string message = error_of(library, fill_arguments(nullptr, HostDType::f32, 7));
    EXPECT_NE(message.find("assertion 'mode != 7' failed"), std::string::npos) << message;
}

TEST_F(HostCall, ArgumentsThatDoNotFitTheHostFunctionsParametersAreRefused) {
    ASSERT_TRUE(built_) << *build_output_;
    const HostCallLibrary library(*directory_ / "fill.so");
    HostArguments too_few;
    too_few.tensor(nullptr, HostDType::f32, {4, 32});
    too_few.integer(0);
    std::string message = error_of(library, too_few);
    EXPECT_NE(message.find("takes 3 parameters, and sage2tp passes 2"), std::string::npos) << message;
    HostArguments wrong_kind;
    wrong_kind.tensor(nullptr, HostDType::f32, {4, 32});
    wrong_kind.real(0);
    wrong_kind.real(2.5);
    message = error_of(library, wrong_kind);
    EXPECT_NE(message.find("parameter 2 is an integer, and sage2tp passes a real"), std::string::npos) << message;
}

TEST_F(HostCall, ALibraryOfAnotherKindIsRefusedByName) {
    const fs::path fake = *directory_ / "not-a-library.so";
    write_file_atomically(fake, "not an ELF file");
    try {
        HostCallLibrary library(fake);
        ADD_FAILURE() << "loaded " << fake;
    } catch (const Error &e) {
        EXPECT_EQ(e.code(), ExitCode::precondition);
        EXPECT_NE(std::string(e.what()).find("not-a-library.so"), std::string::npos) << e.what();
    }
}

// Without a GPU the call reaches CUDA and fails there, as a CUDA error; with one, the launch is made and
// recorded as the host function made it, and a call that launches nothing is a failure.
TEST_F(HostCall, ALaunchIsRecordedAsTheHostFunctionMadeItAndNoLaunchIsAFailure) {
    ASSERT_TRUE(built_) << *build_output_;
    const HostCallLibrary library(*directory_ / "fill.so");
    const GpuProbe probe = probe_gpu();
    if (!probe.available) {
        const std::string message = error_of(library, fill_arguments(nullptr, HostDType::f32, 0));
        EXPECT_NE(message.find("cuda"), std::string::npos) << message;
        return;
    }
    select_device(0);
    DeviceBuffer out(4 * 32 * sizeof(float), "fill output");
    const HostCallResult result = library.call(fill_arguments(out.get(), HostDType::f32, 0), nullptr, false, "b=1 test shape");
    ASSERT_EQ(result.launch_count, 1);
    const std::vector<RecordedLaunch> launches = library.launches();
    ASSERT_EQ(launches.size(), 1u);
    EXPECT_NE(launches.at(0).kernel.find("fill_kernel"), std::string::npos) << launches.at(0).kernel;
    const RecordedLaunch &launch = launches.at(0);
    EXPECT_EQ(launch.describe().rfind("grid 1x1x1, block 128x1x1, 0 B dynamic smem, ", 0), 0u) << launch.describe();
    // The driver's occupancy of the launched kernel at its block and shared memory: 4 warps a block.
    ASSERT_TRUE(launch.blocks_per_sm && launch.registers) << launch.describe();
    EXPECT_GE(*launch.blocks_per_sm, 1);
    EXPECT_GE(*launch.registers, 1);
    EXPECT_DOUBLE_EQ(*launch.warps_per_scheduler(), *launch.blocks_per_sm * 4 / 4.0);
    EXPECT_EQ(result.device_allocations, 0);
    // torch::empty's block is allocated once, then reused by the next call.
    EXPECT_EQ(library.call(fill_arguments(out.get(), HostDType::f32, 1), nullptr, true, "x").device_allocations, 1);
    const HostCallResult again = library.call(fill_arguments(out.get(), HostDType::f32, 1), nullptr, true, "x");
    EXPECT_EQ(again.device_allocations, 0);
    ASSERT_TRUE(library.returned().has_value());
    EXPECT_EQ(library.returned()->dims, 2);
    try {
        library.replay(nullptr, "replay");
        ADD_FAILURE() << "replayed a call that was not kept";
    } catch (const Error &e) {
        EXPECT_NE(std::string(e.what()).find("no call was kept for replay"), std::string::npos) << e.what();
    }
    library.call(fill_arguments(out.get(), HostDType::f32, 0), nullptr, false, "x", true);
    library.replay(nullptr, "replay");
    synchronize("host call test");
    const std::string message = error_of(library, fill_arguments(out.get(), HostDType::f32, 2));
    EXPECT_NE(message.find("returned without launching a kernel"), std::string::npos) << message;
}

}  // namespace
