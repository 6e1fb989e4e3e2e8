// Samples of the figures structs with every field set, so that a dropped or renamed key shows in the
// tests that write them (test_stage_figures.cpp).
#pragma once
#include "figures/build_figures.h"
#include "default_thresholds.h"
#include "figures/gate_figures.h"
#include "figures/parity_figures.h"
#include "figures/sanitize_figures.h"
#include "figures/set_time_figures.h"
#include "figures/time_figures.h"

namespace figure_samples {
using namespace s2tp;

inline EntryResources entry(const std::string &name, std::int64_t smem, double warps, std::int64_t spill_store) {
    EntryResources e;
    e.entry = "s2tp_attn_" + name;
    e.registers = 128;
    e.barriers = 1;
    e.stack_frame_bytes = 0;
    e.spill_store_bytes = spill_store;
    e.spill_load_bytes = 0;
    e.static_smem_bytes = smem;
    e.dynamic_smem_bytes = 0;
    e.smem_per_block = smem;
    e.threads_per_block = 128;
    e.blocks_per_sm = 4;
    e.resident_warps = 16;
    e.warps_per_scheduler = warps;
    e.limited_by = "registers";
    return e;
}

inline BuildFigures build() {
    BuildFigures f;
    f.arch = "sm_90a";
    f.nvcc_version = "release 13.0, V13.0.48 / Build cuda_13.0";
    f.jobs = 2;
    f.flags = {"-O3", "-lineinfo"};
    f.baseline = {{"hd128_bf16_nomask", entry("hd128_bf16_nomask", 32768, 4.0, 0)},
                  {"hd64_f16_causal", entry("hd64_f16_causal", 16384, 6.0, 0)}};
    f.candidates["candidate"] = CandidateBuild{f.baseline, "2 entries, register growth <= 0"};
    f.candidates["wide"] = CandidateBuild{{{"hd128_bf16_nomask", entry("hd128_bf16_nomask", 65536, 2.0, 16)},
                                           {"hd64_f16_causal", entry("hd64_f16_causal", 16384, 6.0, 0)}},
                                          "2 entries, spill growth <= 16 B"};
    f.summary = "sm_90a: candidate: 2 entries; wide: 2 entries";
    f.sass = toml::table{{"tool", "cuobjdump"}};
    return f;
}

inline SanitizeFigures sanitize() {
    SanitizeFigures f;
    f.tools = {"memcheck", "racecheck"};
    f.checks = {SanitizeCheck{"baseline", "memcheck", "b1 h2 q64", 0, true,
                              "logs/sanitize/baseline-memcheck-shape0-gpu0.log", 0},
                SanitizeCheck{"candidate", "racecheck", "b1 h2 q64", 3, false,
                              "logs/sanitize/candidate-racecheck-shape0-gpu1.log", 1}};
    GpuFigures gpu;
    gpu.index = 1;
    gpu.name = "NVIDIA H200";
    gpu.uuid = "GPU-0c3e2f5a-1b2c-4d5e-8f90-a1b2c3d4e5f6";
    gpu.pci_bus_id = "0000:3b:00.0";
    gpu.driver = "13.0";
    gpu.sm_count = 132;
    gpu.sm_clock_mhz = 1980;
    gpu.sample_clock_mhz = 1755;
    gpu.checks = 1;
    gpu.ran = 1;
    gpu.passed = 0;
    gpu.failed = 1;
    gpu.lost = "cudaErrorDevicesUnavailable (log logs/sanitize/candidate-racecheck-shape0-gpu1.log)";
    f.gpus = {gpu};
    f.total_errors = 3;
    f.failed_checks = 1;
    f.baseline = VariantSanitize{0, 0};
    f.candidates["candidate"] = VariantSanitize{3, 1};
    f.device = "0: NVIDIA H200, sm_90";
    f.seed = 1;
    f.summary = "2 checks (1 shapes x 2 tools x 2 variants), 1 failed, 3 errors";
    return f;
}

inline ParityFigures parity() {
    ParityFigures f;
    f.shapes_checked = 2;
    f.comparisons = 4;
    f.reference_worst_rel_l2 = 0.0123;
    f.reference_worst_case = "b1 h2 q64 seed 7";
    f.reference_limit = 0.05;
    f.baseline_outputs = {ParityOutput{"b1 h2 q64", 7, std::string(64, 'a')}};
    CandidateParity c;
    c.shapes_differing = 1;
    c.differences = {ParityDifference{"b1 h2 q64", 7, "o", 3, 1024, "[0, 1, 2, 3]", "0x3c01 (1.0009766)", "0x3c00 (1)"}};
    c.outputs = {ParityOutput{"b1 h2 q64", 7, std::string(64, 'b')}};
    AccuracyMetrics m;
    m.cosine = 0.9995, m.rel_l1 = 0.03, m.rmse = 0.002, m.max_abs_error = 0.01, m.worst_element = "b=0 h=1 row=5 d=2";
    c.mode = "tolerance";
    c.accuracy = c.vs_baseline = {AccuracyFigure::of("b1 h2 q64", 7, 64, m)};
    c.checks = {AccuracyShapeCheck{"b1 h2 q64", true, "cosine 0.9995 >= 0.999"}};
    f.baseline_accuracy = c.accuracy;
    f.baseline_checks = c.checks;
    f.reference_rows = 256;
    f.candidates["candidate"] = c;
    CandidateParity other;
    other.shapes_differing = 0;
    other.outputs = {ParityOutput{"b1 h2 q64", 7, std::string(64, 'a')}};
    f.candidates["other"] = other;
    f.device = "0: NVIDIA H200, sm_90";
    f.summary = "2 shapes x 2 seeds: candidate: 1 shapes differ, other: 0 shapes differ; ...";
    return f;
}

inline ArmTimeFigures arm(double p50) {
    ArmTimeFigures a;
    a.p10 = p50 - 0.5, a.p50 = p50, a.p90 = p50 + 0.5, a.mean = p50 + 0.1, a.stdev = 0.2, a.n = 40, a.tops_p50 = 512.5;
    a.sm_clock_median_mhz = 1770, a.power_median_w = 699.5, a.temperature_median_c = 61;
    a.power_limited_share = 0.975, a.thermal_limited_share = 0, a.sync_boost_share = 0;
    return a;
}

inline RatioFigures ratio(double median) {
    RatioFigures r;
    r.median = median, r.ci_low = median - 0.01, r.ci_high = median + 0.01, r.half_width = 0.01 / median;
    r.resamples = 10000, r.seed = 20261129, r.confidence = 0.9;
    r.repeat_medians = {median - 0.002, median + 0.002};
    r.between_repeat_spread = 0.003, r.within_repeat_half_width = 0.004, r.between_process_sd = 0.001;
    return r;
}

inline AccuracyFigure accuracy() {
    AccuracyFigure a;
    a.shape = "b1 h2 q64", a.seed = 7, a.rows = 64, a.cosine = 0.9995, a.rel_l1 = 0.03, a.rmse = 0.002;
    a.max_abs_error = 0.01, a.worst_element = "b=0 h=1 row=5 d=2", a.nan_count = 0, a.inf_count = 0;
    a.reference_non_finite = 0;
    return a;
}

inline TimeFigures time() {
    TimeFigures f;
    f.workload = "wan21-14b", f.shape = "b1 h40/40 n32760/32760 d128 NHD bf16 non-causal", f.device = "0: NVIDIA H200";
    f.device_name = "NVIDIA H200", f.arch = "sm_90a";
    f.baseline_sha256 = std::string(64, 'a'), f.expected_sha256 = std::string(64, 'b');
    f.replaced_pin = std::string(64, 'c'), f.outputs_match = true;
    f.pinned_kernel = "sageattention-sm90-accum-f32-fuse-v-scale", f.recorded_pin = false;
    f.baseline_accuracy = accuracy(), f.baseline_accuracy_passed = true, f.baseline_accuracy_conditions = "cosine ok";
    f.baseline = arm(55.0), f.baseline_control = arm(55.1), f.aa = ratio(1.0);
    CandidateTimeFigures &c = f.candidate_or_add("fast");
    c.sha256 = std::string(64, 'a'), c.matches_baseline = true, c.timing = arm(41.0), c.ratio = ratio(0.745);
    NcuComparison ncu;
    ncu.metrics = {NcuMetricFigure{"sm__throughput", "%", 50.0, 60.0}};
    ncu.largest_changes = {"sm__throughput"};
    c.ncu = ncu;
    c.parity_mode = "tolerance", c.accuracy = accuracy(), c.vs_baseline = accuracy(), c.accuracy_passed = false;
    c.accuracy_conditions = "cosine 0.9 < 0.999";
    f.candidate_or_add("also").ratio = ratio(1.02);
    f.rounds = 80, f.throttled_rounds = 2, f.stopped_by = "half_width", f.l2_flushed = true, f.footprint_bytes = 1 << 30;
    f.persisting_l2_max_bytes = 78643200, f.between_process_basis = "ten single runs on an NVIDIA H200";
    f.order_seed = 1, f.warmup_launches = 3, f.min_rounds = 20, f.repeats = 2, f.target_half_width = 0.005;
    f.budget_seconds = 60, f.measure_seconds = 12.5, f.sm_clock_min_mhz = 1755, f.sm_clock_median_mhz = 1980;
    f.sm_clock_max_mhz = 1980;
    NcuFigures n;
    n.requested = true, n.found = true, n.seconds = 30.5, n.seq_len = 4096;
    n.runs["baseline"] = NcuRunFigures{0, std::string("logs/ncu-baseline.log"), std::string("reports/ncu-baseline.ncu-rep"), 12.0};
    n.runs["fast"] = NcuRunFigures{1, std::string("logs/ncu-fast.log"), std::nullopt, 11.0};
    f.ncu = n;
    f.summary = "wan21-14b: fast/baseline 0.7450 [0.7350, 0.7550]";
    return f;
}

inline SetTimeFigures set_time() {
    SetTimeFigures f;
    f.workload_set = "wan21", f.description = "the Wan 2.1 shapes", f.device = "0: NVIDIA H200";
    f.device_name = "NVIDIA H200", f.arch = "sm_90a", f.summary = "fast: geomean 0.75", f.weighted = true, f.repeats = 2;
    f.budget_seconds = 120, f.measure_seconds = 100;
    ShapeTimeFigures a;
    a.name = "t2v-720p", a.weight = 2, a.source = "wan/config.json", a.passed = true, a.figures = time();
    ShapeTimeFigures b;
    b.name = "i2v-480p", b.weight = 1, b.source = "wan/config.json", b.passed = false, b.reasons = {"too noisy"};
    b.figures = time();
    f.shapes = {a, b};
    SetCandidateFigures c;
    c.name = "fast", c.geomean = ratio(0.75), c.worst_shape = "i2v-480p", c.worst = ratio(0.8);
    f.candidates = {c};
    return f;
}

inline GateFigures gate() {
    GateResult passing;
    passing.conditions = {GateCondition{"parity", GateStatus::pass, "0 of 12 shapes differ", "", true}};
    passing.passed = true;
    GateResult failing;
    failing.conditions = {GateCondition{"relative-speed", GateStatus::fail, "ratio 1.34 >= 1.0", "slower", true},
                          GateCondition{"sanitizer", GateStatus::not_checked, "skipped", "RUN_SANITIZER=0", false}};
    GateThresholds thresholds = default_gate_thresholds();
    thresholds.ratio_upper_bound = 1.0, thresholds.geomean_ratio_upper_bound = 0.99;
    thresholds.worst_ratio_upper_bound = 1.05, thresholds.require_sanitizer = true;
    return GateFigures::of({{"candidate", passing}, {"slow", failing}}, thresholds);
}

}  // namespace figure_samples
