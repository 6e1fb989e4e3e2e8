// The between-process component of a single process's intervals (model/timing_calibration.h): the
// shipped table, a GPU model without a row, the widening itself, and where the time stage applies it.
#include "model/timing_calibration.h"

#include "build_config.h"
#include "scratch_directory.h"
#include "support/errors.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

namespace s2tp::unit_timing_calibration {
namespace {

RatioInterval interval(double median, double lo, double hi) {
    RatioInterval r;
    r.median = median, r.lo = lo, r.hi = hi, r.confidence = 0.95, r.n = 40;
    r.half_width_rel = (hi - lo) / 2 / median;
    return r;
}

TEST(BetweenProcess, TheShippedTableHasTheH100AndSaysHowItWasMeasured) {
    const std::vector<CalibrationRow> table =
        load_timing_calibration(std::string(S2TP_SOURCE_ROOT) + "/data/timing_calibration.toml");
    const BetweenProcess h100 = between_process_component(table, "NVIDIA H100 80GB HBM3");
    EXPECT_TRUE(h100.measured_on_this_gpu);
    EXPECT_GT(h100.relative_sd, 0);
    EXPECT_LT(h100.relative_sd, 0.01) << "a tenth of a percent, not a percent";
    EXPECT_NE(h100.basis.find("measured"), std::string::npos);
}

TEST(BetweenProcess, AGpuModelWithoutARowTakesTheLargestMeasuredAndSaysSo) {
    const std::vector<CalibrationRow> table{{"NVIDIA H200", 0.001, "ten runs"}, {"NVIDIA B200", 0.003, "five runs"}};
    const BetweenProcess other = between_process_component(table, "NVIDIA GeForce RTX 5090");
    EXPECT_FALSE(other.measured_on_this_gpu);
    EXPECT_DOUBLE_EQ(other.relative_sd, 0.003);
    EXPECT_NE(other.basis.find("not measured on NVIDIA GeForce RTX 5090; the largest measured, the NVIDIA B200's"),
              std::string::npos) << other.basis;
}

TEST(BetweenProcess, TheWidenedEndsAddTheComponentInQuadratureAroundTheSameMedian) {
    const RatioInterval narrow = interval(1.3440, 1.3430, 1.3446);
    const RatioInterval wide = with_between_process(narrow, 0.001);
    const double spread = 1.959964 * 0.001 * 1.3440;
    EXPECT_DOUBLE_EQ(wide.median, narrow.median);
    EXPECT_NEAR(wide.lo, 1.3440 - std::hypot(0.0010, spread), 1e-6);
    EXPECT_NEAR(wide.hi, 1.3440 + std::hypot(0.0006, spread), 1e-6);
    EXPECT_NEAR(wide.half_width_rel, (wide.hi - wide.lo) / 2 / 1.3440, 1e-12);
    EXPECT_EQ(wide.n, narrow.n);
    const RatioInterval same = with_between_process(narrow, 0);
    EXPECT_EQ(same.lo, narrow.lo);
    EXPECT_EQ(same.hi, narrow.hi);
}

TEST(BetweenProcess, AMalformedTableIsNamedWithItsLine) {
    const ScratchDirectory dir("calibration");
    const std::string file = (dir.path() / "t.toml").string();
    std::ofstream(file) << "[[gpu]]\nname = \"NVIDIA H200\"\nbetween_process_sd = 0.9\nbasis = \"x\"\n";
    try {
        load_timing_calibration(file);
        FAIL() << "an sd of 90% was accepted";
    } catch (const Error &e) {
        EXPECT_EQ(e.code(), ExitCode::usage);
        EXPECT_NE(std::string(e.what()).find(file + ":3"), std::string::npos) << e.what();
    }
    std::ofstream(file) << "[[gpu]]\nname = \"NVIDIA H200\"\nbasis = \"x\"\n";
    EXPECT_THROW(load_timing_calibration(file), Error);
}

}  // namespace
}  // namespace s2tp::unit_timing_calibration
