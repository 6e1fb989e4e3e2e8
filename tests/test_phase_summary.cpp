// The phase log summary (figures/phase_summary.h) on synthetic logs whose sums are known: means per CTA,
// shares of the schedule, cycles per barrier and per copy wait, the baseline | candidate deltas and the
// split of the extra cycles; the all-zero log of a cubin without stamps; the TOML round trip.
#include "figures/phase_summary.h"

#include "formats/toml_schema.h"
#include "support/errors.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <sstream>

using namespace s2tp;

namespace s2tp::unit_phase_summary {

namespace {

constexpr std::size_t ctas = 8;

// What the embedded schedules record of themselves (kernels/schedule.cuh).
const ScheduleRecord sequential{"SequentialSchedule", {}};
const ScheduleRecord temporal_pair{"TemporalPairSchedule",
                                   {S2TP_WARP_PAIR_A, S2TP_WARP_PAIR_A, S2TP_WARP_PAIR_B, S2TP_WARP_PAIR_B}};

std::vector<s2tp_phase_slot> empty_log(std::size_t cta_count = ctas) {
    return std::vector<s2tp_phase_slot>(cta_count * phase_warps * phase_steps, s2tp_phase_slot{0, 0});
}

s2tp_phase_slot &slot(std::vector<s2tp_phase_slot> &log, std::size_t cta, std::size_t warp, std::size_t step) {
    return log[(cta * phase_warps + warp) * phase_steps + step];
}

// Every one of the first `logged` CTAs logs, for warp w: copy wait (10+w) cycles x 4 waits, barrier
// `barrier` cycles x 8 barriers, QK+softmax 300, PV 200, copy issue 50 (x4), and a schedule of
// `schedule` cycles. CTAs from `logged` on log nothing, as CTAs past S2TP_PHASE_LOG_MAX_CTAS do.
std::vector<s2tp_phase_slot> synthetic_log(unsigned long long barrier, unsigned long long schedule,
                                           std::size_t logged = ctas) {
    std::vector<s2tp_phase_slot> log = empty_log();
    for (std::size_t cta = 0; cta < logged; ++cta)
        for (std::size_t w = 0; w < phase_warps; ++w) {
            slot(log, cta, w, S2TP_STEP_COPY_WAIT) = {4 * (10 + w), 4};
            slot(log, cta, w, S2TP_STEP_BARRIER) = {8 * barrier, 8};
            slot(log, cta, w, S2TP_STEP_QK_SOFTMAX) = {300, 2};
            slot(log, cta, w, S2TP_STEP_PV) = {200, 2};
            slot(log, cta, w, S2TP_STEP_COPY_ISSUE) = {50, 4};
            slot(log, cta, w, S2TP_STEP_SCHEDULE) = {schedule, 1};
        }
    return log;
}

}  // namespace

TEST(PhaseSummary, KnownSumsGiveKnownMeansSharesAndPerOccurrenceCycles) {
    // Half the CTAs log (the rest are "past the log"): the means are over the 4 logged ones.
    std::vector<s2tp_phase_slot> log = synthetic_log(5, 1000, 4);
    // One CTA's warp 2 spent more on its barriers: 8 barriers of 25 cycles instead of 5.
    slot(log, 3, 2, S2TP_STEP_BARRIER).cycles = 8 * 25;
    const VariantPhases v = summarize_phase_log(log, "baseline", "builds/baseline/phases/a.cubin", sequential, 16);
    EXPECT_EQ(v.logged_ctas, 4);
    EXPECT_EQ(v.launched_ctas, 16);
    ASSERT_EQ(v.warps.size(), phase_warps);
    const WarpPhases &w1 = v.warps[1];
    EXPECT_EQ(w1.label, "warp 1");
    EXPECT_DOUBLE_EQ(w1.steps[S2TP_STEP_COPY_WAIT].cycles_per_cta, 44);
    EXPECT_DOUBLE_EQ(*w1.steps[S2TP_STEP_COPY_WAIT].cycles_per_occurrence, 11);
    EXPECT_DOUBLE_EQ(w1.steps[S2TP_STEP_COPY_WAIT].occurrences_per_cta, 4);
    EXPECT_DOUBLE_EQ(w1.steps[S2TP_STEP_BARRIER].cycles_per_cta, 40);
    EXPECT_DOUBLE_EQ(*w1.steps[S2TP_STEP_BARRIER].cycles_per_occurrence, 5);
    EXPECT_DOUBLE_EQ(w1.steps[S2TP_STEP_QK_SOFTMAX].share, 0.3);
    EXPECT_DOUBLE_EQ(w1.steps[S2TP_STEP_PV].share, 0.2);
    EXPECT_DOUBLE_EQ(w1.steps[S2TP_STEP_SCHEDULE].share, 1.0);
    // Warp 2: (3 * 40 + 200) / 4 CTAs = 80 per CTA; 320 cycles over 32 barriers = 10 per barrier.
    const WarpPhases &w2 = v.warps[2];
    EXPECT_DOUBLE_EQ(w2.steps[S2TP_STEP_BARRIER].cycles_per_cta, 80);
    EXPECT_DOUBLE_EQ(*w2.steps[S2TP_STEP_BARRIER].cycles_per_occurrence, 10);
    EXPECT_DOUBLE_EQ(w2.steps[S2TP_STEP_BARRIER].share, 0.08);
    // Averaged over the warps: barrier (40 + 40 + 80 + 40) / 4 = 50; copy wait (40+44+48+52)/4 = 46.
    EXPECT_DOUBLE_EQ(v.cycles_per_cta(S2TP_STEP_BARRIER), 50);
    EXPECT_DOUBLE_EQ(v.cycles_per_cta(S2TP_STEP_COPY_WAIT), 46);
    EXPECT_DOUBLE_EQ(v.cycles_per_cta(S2TP_STEP_SCHEDULE), 1000);
}

TEST(PhaseSummary, AStepThatNeverRanHasNoCyclesPerOccurrence) {
    std::vector<s2tp_phase_slot> log = synthetic_log(5, 1000);
    for (std::size_t cta = 0; cta < ctas; ++cta) slot(log, cta, 0, S2TP_STEP_COPY_WAIT) = {0, 0};
    const VariantPhases v = summarize_phase_log(log, "baseline", "a.cubin", ScheduleRecord{}, 8);
    EXPECT_FALSE(v.warps[0].steps[S2TP_STEP_COPY_WAIT].cycles_per_occurrence);
    EXPECT_DOUBLE_EQ(v.warps[0].steps[S2TP_STEP_COPY_WAIT].cycles_per_cta, 0);
    EXPECT_TRUE(v.warps[1].steps[S2TP_STEP_COPY_WAIT].cycles_per_occurrence);
    // In the table, its PER COPY WAIT column (the last) says "-".
    const std::string text = PhaseReport{"", "", "", "", {v}, {}}.table_text();
    const std::size_t row = text.find("\n  warp 0 ");
    ASSERT_NE(row, std::string::npos) << text;
    EXPECT_EQ(text.substr(text.find('\n', row + 1) - 2, 2), " -") << text;
}

TEST(PhaseSummary, AnAllZeroLogIsAnErrorNamingTheCubin) {
    try {
        summarize_phase_log(empty_log(), "candidate", "builds/candidate/phases/attention_entry.sm_90a.cubin",
                            temporal_pair, 8);
        FAIL() << "an all-zero log was summarised";
    } catch (const Error &e) {
        EXPECT_EQ(e.code(), ExitCode::precondition);
        EXPECT_NE(std::string(e.what()).find("builds/candidate/phases/attention_entry.sm_90a.cubin"), std::string::npos)
            << e.what();
        EXPECT_NE(std::string(e.what()).find("without phase stamps"), std::string::npos) << e.what();
    }
    // A log that is not a whole number of CTAs is the host's bug, not the kernel's.
    std::vector<s2tp_phase_slot> ragged = synthetic_log(5, 1000);
    ragged.pop_back();
    try {
        summarize_phase_log(ragged, "baseline", "a.cubin", ScheduleRecord{}, 8);
        FAIL() << "a ragged log was summarised";
    } catch (const Error &e) {
        EXPECT_EQ(e.code(), ExitCode::internal);
    }
}

TEST(PhaseSummary, TheCandidatesExtraCyclesSplitIntoBarrierCopyWaitComputeAndTheRest) {
    const VariantPhases base = summarize_phase_log(synthetic_log(5, 1000), "baseline", "b.cubin", sequential, 8);
    std::vector<s2tp_phase_slot> log = synthetic_log(30, 1400);  // barriers 200 more cycles per CTA
    for (std::size_t cta = 0; cta < ctas; ++cta)
        for (std::size_t w = 0; w < phase_warps; ++w) {
            slot(log, cta, w, S2TP_STEP_COPY_WAIT).cycles += 120;  // copy waits 120 more
            slot(log, cta, w, S2TP_STEP_PV).cycles += 40;          // compute 40 more
        }
    const VariantPhases cand = summarize_phase_log(log, "candidate", "c.cubin", temporal_pair, 8);
    EXPECT_EQ(cand.warps[0].label, "pair A warp 0");
    EXPECT_EQ(cand.warps[3].label, "pair B warp 3");

    const std::vector<PhaseComparison> comparisons = compare_with_baseline({base, cand});
    ASSERT_EQ(comparisons.size(), 1u);
    const PhaseComparison &c = comparisons[0];
    EXPECT_EQ(c.candidate, "candidate");
    EXPECT_DOUBLE_EQ(c.extra_cycles(), 400);
    EXPECT_DOUBLE_EQ(c.delta(S2TP_STEP_BARRIER), 200);
    EXPECT_DOUBLE_EQ(c.delta(S2TP_STEP_COPY_WAIT), 120);
    EXPECT_DOUBLE_EQ(c.compute_delta(), 40);
    EXPECT_DOUBLE_EQ(c.delta(S2TP_STEP_COPY_ISSUE), 0);
    EXPECT_DOUBLE_EQ(c.untimed_delta(), 40);  // the parts add up to the whole
    const std::string line = c.extra_cycles_text();
    EXPECT_NE(line.find("+400 cycles per CTA (+40.0%)"), std::string::npos) << line;
    EXPECT_NE(line.find("barrier wait +200 (50.0%)"), std::string::npos) << line;
    EXPECT_NE(line.find("copy wait +120 (30.0%)"), std::string::npos) << line;
    EXPECT_NE(line.find("compute (QK+softmax, PV) +40 (10.0%)"), std::string::npos) << line;
    EXPECT_NE(line.find("untimed +40 (10.0%)"), std::string::npos) << line;

    // A candidate that is not slower is said to be so, not split into shares of a negative number.
    const PhaseComparison faster = compare_phases(cand, base);
    EXPECT_NE(faster.extra_cycles_text().find("not slower"), std::string::npos) << faster.extra_cycles_text();
}

TEST(PhaseSummary, TheReportRoundTripsThroughToml) {
    PhaseReport report;
    report.arch = "sm_90a";
    report.device = "NVIDIA H200";
    report.shape = "b1 h40 q8192 kv8192 d128 bf16";
    report.nvcc_version = "release 13.0, V13.0.88";
    report.variants = {summarize_phase_log(synthetic_log(5, 1000), "baseline", "b.cubin", sequential, 8),
                       summarize_phase_log(synthetic_log(30, 1400, 6), "candidate", "c.cubin", temporal_pair, 8)};
    report.comparisons = compare_with_baseline(report.variants);
    std::ostringstream text;
    text << report.to_toml();
    const PhaseReport back = PhaseReport::from_toml(parse_toml_text(text.str(), "phases.toml"));
    EXPECT_EQ(back.arch, "sm_90a");
    EXPECT_EQ(back.shape, report.shape);
    ASSERT_EQ(back.variants.size(), 2u);
    EXPECT_EQ(back.variants[1].variant, "candidate");
    EXPECT_EQ(back.variants[1].schedule, "TemporalPairSchedule");
    EXPECT_EQ(back.variants[1].logged_ctas, 6);
    ASSERT_EQ(back.variants[1].warps.size(), phase_warps);
    EXPECT_EQ(back.variants[1].warps[2].label, "pair B warp 2");
    EXPECT_DOUBLE_EQ(*back.variants[1].warps[2].steps[S2TP_STEP_BARRIER].cycles_per_occurrence, 30);
    ASSERT_EQ(back.comparisons.size(), 1u);
    EXPECT_DOUBLE_EQ(back.comparisons[0].extra_cycles(), 400);
    EXPECT_EQ(back.table_text(), report.table_text());
    // The figures a reader of the file (or of --json) looks for, by name.
    const toml::table t = report.to_toml();
    EXPECT_DOUBLE_EQ(t["comparison"][0]["extra_cycles_per_cta"]["barrier_wait"].value_or(0.0), 200);
    EXPECT_DOUBLE_EQ(t["comparison"][0]["cycles_per_cta"]["schedule"]["delta"].value_or(0.0), 400);

    toml::table nameless = report.to_toml();
    nameless["variant"].as_array()->get(0)->as_table()->erase("name");
    EXPECT_THROW(PhaseReport::from_toml(nameless), Error);
}

TEST(PhaseSummary, WarpsAreLabelledByTheRolesTheScheduleRecorded) {
    EXPECT_EQ(warp_labels(sequential.warp_roles), (std::vector<std::string>{"warp 0", "warp 1", "warp 2", "warp 3"}));
    EXPECT_EQ(warp_labels(temporal_pair.warp_roles),
              (std::vector<std::string>{"pair A warp 0", "pair A warp 1", "pair B warp 2", "pair B warp 3"}));

    s2tp_schedule_record record{};
    std::snprintf(record.name, sizeof record.name, "%s", "TemporalPairSchedule");
    for (std::size_t warp = 0; warp < phase_warps; ++warp) record.warp_role[warp] = temporal_pair.warp_roles[warp];
    const ScheduleRecord read = ScheduleRecord::from_device(record, "c.cubin");
    EXPECT_EQ(read.name, "TemporalPairSchedule");
    EXPECT_EQ(read.warp_roles, temporal_pair.warp_roles);
    // A zeroed record (a kernel that recorded nothing) names no schedule and leaves every warp on its own.
    const ScheduleRecord nothing = ScheduleRecord::from_device(s2tp_schedule_record{}, "c.cubin");
    EXPECT_EQ(nothing.name, "");
    EXPECT_EQ(warp_labels(nothing.warp_roles), warp_labels(sequential.warp_roles));

    const VariantPhases v = summarize_phase_log(synthetic_log(5, 1000), "candidate", "c.cubin", temporal_pair, 8);
    EXPECT_EQ(v.schedule, "TemporalPairSchedule");
    EXPECT_EQ(v.warps[2].label, "pair B warp 2");
}

TEST(PhaseSummary, ABadScheduleRecordIsRefusedNamingTheCubin) {
    s2tp_schedule_record unterminated{};
    std::memset(unterminated.name, 'x', sizeof unterminated.name);
    s2tp_schedule_record unknown_role{};
    unknown_role.warp_role[3] = 7;
    for (const s2tp_schedule_record &record : {unterminated, unknown_role}) {
        try {
            ScheduleRecord::from_device(record, "builds/candidate/phases/c.cubin");
            ADD_FAILURE() << "a bad record was accepted";
        } catch (const Error &e) {
            EXPECT_EQ(e.code(), ExitCode::precondition);
            EXPECT_NE(std::string(e.what()).find("builds/candidate/phases/c.cubin"), std::string::npos) << e.what();
        }
    }
}

TEST(PhaseSummary, OverlappingStampsAreNotedInTheTable) {
    // Steps adding up to more than the schedule break phase_log.h's promise; the table says so.
    const VariantPhases v = summarize_phase_log(synthetic_log(100, 500), "baseline", "b.cubin", ScheduleRecord{}, 8);
    const std::string text = PhaseReport{"", "", "", "", {v}, {}}.table_text();
    EXPECT_NE(text.find("note: warp 0's steps add up to"), std::string::npos) << text;
}

}  // namespace s2tp::unit_phase_summary
