// GPU-suite program: runs the real sage2tp binary ($SAGE2TP_BIN) through prepare, build, sanitize and
// parity in a temporary run directory and checks that the stages catch planted bugs:
//
//   gpu_pipeline_check broken-rounding   tests/manifests/broken-rounding.toml: parity exits 1 and names a
//                                        shape, a differing-element count and both values
//   gpu_pipeline_check missing-barrier   tests/manifests/missing-barrier.toml: sanitize exits 1 with
//                                        racecheck (or synccheck) errors on the candidate only, the
//                                        failing batch split and each failure in its own shape's log
//   gpu_pipeline_check long-sequence-fault  tests/manifests/long-sequence-fault.toml: tolerance parity passes
//                                        the 32,768-token shape and fails the 170,000-token one, with the
//                                        accuracy figures of both variants against the float64 reference
//   gpu_pipeline_check default           the embedded default: prepare, build --arch sm_90a, sanitize and
//                                        parity all exit 0
//   gpu_pipeline_check workload-set      the embedded default timed over tests/data/small-set.toml
//                                        (time --workload-set): one interval per shape, the weighted
//                                        geometric mean and the worst shape; gate decides per shape and
//                                        for the set
//   gpu_pipeline_check cheat-early-exit  tests/manifests/cheat-early-exit.toml (issue 39's cheating self-test):
//                                        a launch counter returns at once after 8 launches; sanitize and
//                                        parity pass, time exits 1 on a re-checked round naming the candidate,
//                                        the elements left unwritten, the round and the input set; gate FAILs
//   gpu_pipeline_check cheat-half-work   tests/manifests/cheat-half-work.toml: half the query tiles on timed
//                                        launches; caught the same way, with about half the elements unwritten
//   gpu_pipeline_check cheat-no-op       tests/manifests/cheat-no-op.toml: nothing at all on long sequences;
//                                        time exits 1 on the first outputs, every element unwritten, nothing timed
//   gpu_pipeline_check cheat-input-cache tests/manifests/cheat-input-cache.toml: an output cache keyed by the
//                                        inputs, one entry per input set; its bytes are right, so time
//                                        passes with every re-check good, and gate exits 1 on
//                                        plausible-ratio and tensor-peak
//   gpu_pipeline_check smem-tail-bug     tests/manifests/smem-tail-bug.toml: V's tail past len_kv read from
//                                        unwritten shared memory; parity, which fills shared memory with
//                                        NaN before every launch, exits 1 on the short one-tile shapes
//   gpu_pipeline_check stage-times       (benchmark) the embedded default through every stage, each
//                                        stage's wall time printed, and the time to a verdict after build
//   gpu_pipeline_check interval-coverage (benchmark) the calibration check of sage2tp-time(1), Intervals
//                                        across processes: ten single `time` runs of the embedded default
//                                        and one `time --repeat 5`; how many single intervals hold the
//                                        repeat's median, per candidate (the goal: 19 of 20 in all)
//
// The manifests are found under $SAGE2TP_DATA_DIR (the source root). Exit status: 0 passed, 1 a check
// failed, 77 skipped (no GPU, or no compute-sanitizer where sanitize must run), 2 usage.
#include "figures/time_figures.h"
#include "formats/checkpoint_store.h"
#include "gpu/gpu_runtime.h"
#include "tools/gpu_session/gpu_session.h"
#include "support/process_runner.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using namespace s2tp;

namespace {

constexpr int kExitPass = 0;
constexpr int kExitFailed = 1;
constexpr int kExitUsage = 2;
constexpr int kExitSkip = 77;

class Pipeline {
public:
    Pipeline(fs::path binary, fs::path run) : binary_(std::move(binary)), run_(std::move(run)) {}

    // Runs `sage2tp <stage> --run RUN <extra...>`; prints the command, exit code and output tail.
    ProcessResult stage(const std::string &name, const std::vector<std::string> &extra,
                        const std::map<std::string, std::string> &environment = {}) const {
        std::vector<std::string> argv = {binary_.string(), name, "--run", run_.string()};
        argv.insert(argv.end(), extra.begin(), extra.end());
        ProcessOptions options;
        options.extra_environment = environment;
        std::cout << "$";
        for (const auto &word : argv) std::cout << " " << word;
        std::cout << std::endl;
        ProcessResult result = run_process(argv, options);
        std::cout << "  exit " << result.exit_code << " after " << static_cast<int>(result.seconds) << " s\n"
                  << tail(result.out + result.err) << std::endl;
        return result;
    }

    const fs::path &run() const { return run_; }

    Checkpoint checkpoint(const std::string &file) const {
        CheckpointRead read = read_checkpoint(run_ / "checkpoints" / file);
        if (!read.checkpoint) return Checkpoint{};
        return *read.checkpoint;
    }

private:
    static std::string tail(const std::string &text) {
        constexpr std::size_t kShown = 4000;
        return text.size() <= kShown ? text : "..." + text.substr(text.size() - kShown);
    }

    fs::path binary_;
    fs::path run_;
};

// Collects failed expectations; the program fails if any is recorded.
class Expectations {
public:
    void check(bool ok, const std::string &what) {
        std::cout << (ok ? "  ok:   " : "  FAIL: ") << what << std::endl;
        if (!ok) ++failed_;
    }
    bool passed() const { return failed_ == 0; }

private:
    int failed_ = 0;
};

bool contains(const std::string &text, const std::string &part) { return text.find(part) != std::string::npos; }

// prepare + build; false (with the failure recorded) when either does not pass.
bool prepare_and_build(const Pipeline &pipeline, const std::vector<std::string> &prepare_args, Expectations &expect) {
    expect.check(pipeline.stage("prepare", prepare_args).exit_code == 0, "prepare exits 0");
    const bool built = pipeline.stage("build", {"--arch", "sm_90a"}).exit_code == 0;
    expect.check(built, "build --arch sm_90a exits 0");
    return built;
}

void broken_rounding(const Pipeline &pipeline, const fs::path &manifest, Expectations &expect) {
    if (!prepare_and_build(pipeline, {"--manifest", manifest.string()}, expect)) return;
    // The bug is numerical: the sanitizer has nothing to say about it, so it is skipped here.
    expect.check(pipeline.stage("sanitize", {"--skip"}).exit_code == 0, "sanitize --skip exits 0");
    const ProcessResult parity = pipeline.stage("parity", {});
    expect.check(parity.exit_code == 1, "parity exits 1 (stop condition)");

    const Checkpoint c = pipeline.checkpoint("04-parity.toml");
    expect.check(c.status == StageStatus::failed, "the parity checkpoint records a failure");
    const toml::table *candidate = c.figures["candidates"]["candidate"].as_table();
    expect.check(candidate && (*candidate)["shapes_differing"].value_or<std::int64_t>(0) > 0,
                 "figures.candidates.candidate.shapes_differing > 0");
    const toml::array *differences = candidate ? (*candidate)["differences"].as_array() : nullptr;
    expect.check(differences && !differences->empty(), "figures.candidates.candidate.differences lists the differences");
    if (differences && !differences->empty()) {
        const toml::table &first = *differences->front().as_table();
        const std::string base = first["baseline_value"].value_or(std::string());
        const std::string cand = first["candidate_value"].value_or(std::string());
        expect.check(!first["shape"].value_or(std::string()).empty(), "the first difference names its shape");
        expect.check(first["differing_elements"].value_or<std::int64_t>(0) > 0, "it counts the differing elements");
        expect.check(!base.empty() && !cand.empty() && base != cand, "it gives both values: " + base + " vs " + cand);
    }
    const std::string text = parity.out + parity.err;
    expect.check(contains(text, "differs in") && contains(text, "baseline 0x") && contains(text, "candidate 0x"),
                 "the printed report gives the differing-element count and both values");
}

void missing_barrier(const Pipeline &pipeline, const fs::path &manifest, Expectations &expect) {
    if (!prepare_and_build(pipeline, {"--manifest", manifest.string()}, expect)) return;
    // Several sanitizer processes at once on the one GPU, as by default on a host with cores to spare:
    // the race is caught all the same.
    const ProcessResult sanitize = pipeline.stage("sanitize", {"--jobs", "4"});
    expect.check(sanitize.exit_code == 1, "sanitize exits 1 (stop condition)");

    const Checkpoint c = pipeline.checkpoint("03-sanitize.toml");
    expect.check(c.status == StageStatus::failed, "the sanitize checkpoint records a failure");
    std::int64_t candidate_race_errors = 0, baseline_failures = 0;
    // Batched (one process per variant and tool): the failing batch was split, each failed check
    // carries the log of its own shape's process, and the batch's log is kept beside them.
    std::size_t failed_checks = 0, failed_alone = 0, batch_logs_kept = 0;
    if (const toml::array *checks = c.figures["checks"].as_array())
        for (const auto &node : *checks) {
            const toml::table &check = *node.as_table();
            const std::string variant = check["variant"].value_or(std::string());
            const std::string tool = check["tool"].value_or(std::string());
            if (variant == "candidate" && (tool == "racecheck" || tool == "synccheck"))
                candidate_race_errors += check["errors"].value_or<std::int64_t>(0);
            if (variant == "baseline" && !check["passed"].value_or(false)) ++baseline_failures;
            if (check["passed"].value_or(true)) continue;
            ++failed_checks;
            failed_alone += contains(check["log"].value_or(std::string()), "-shape");
            // Every log names the GPU that wrote it; the check records that GPU.
            const std::string gpu = std::to_string(check["gpu"].value_or<std::int64_t>(-1));
            batch_logs_kept += fs::is_regular_file(pipeline.run() / "logs/sanitize" /
                                                   (variant + "-" + tool + "-batch-gpu" + gpu + ".log"));
        }
    const std::string text = sanitize.out + sanitize.err;
    expect.check(contains(text, "processes for") && contains(text, "split into one process per shape"),
                 "the output counts the processes and says which batch was split");
    expect.check(failed_checks > 0 && failed_alone == failed_checks,
                 "each of the " + std::to_string(failed_checks) + " failed checks has its own shape's log");
    expect.check(batch_logs_kept == failed_checks, "the split batches' logs are kept");
    expect.check(candidate_race_errors > 0,
                 "the candidate's racecheck/synccheck errors are counted: " + std::to_string(candidate_race_errors));
    expect.check(baseline_failures == 0, "every baseline check passes");
    expect.check(c.figures["total_errors"].value_or<std::int64_t>(0) > 0, "figures.total_errors > 0");
}

void long_sequence_fault(const Pipeline &pipeline, const fs::path &manifest, Expectations &expect) {
    if (!prepare_and_build(pipeline, {"--manifest", manifest.string()}, expect)) return;
    expect.check(pipeline.stage("sanitize", {"--skip"}).exit_code == 0, "sanitize --skip exits 0");
    const ProcessResult parity = pipeline.stage("parity", {});
    expect.check(parity.exit_code == 1, "parity exits 1 (stop condition)");
    const Checkpoint c = pipeline.checkpoint("04-parity.toml");
    expect.check(c.status == StageStatus::failed, "the parity checkpoint records a failure");
    std::map<std::string, bool> passed;
    if (const toml::array *checks = c.figures["candidates"]["candidate"]["checks"].as_array())
        for (const auto &node : *checks) {
            const toml::table &check = *node.as_table();
            const std::string shape = check["shape"].value_or(std::string());
            passed[shape] = check["passed"].value_or(false);
            std::cout << "  " << shape << ": " << check["conditions"].value_or(std::string()) << std::endl;
        }
    // Besides the two accuracy shapes, parity checks the boundary shape of the workload's tails.
    bool short_checked = false, long_checked = false, short_passed = false, long_failed = false;
    for (const auto &[shape, ok] : passed) {
        if (contains(shape, "nq=32768")) short_checked = true, short_passed = ok;
        if (contains(shape, "nq=170000")) long_checked = true, long_failed = !ok;
    }
    expect.check(short_checked && long_checked, "the candidate has accuracy conditions for both accuracy shapes");
    expect.check(short_passed, "the 32,768-token shape passes (the fault is not there yet)");
    expect.check(long_failed, "the 170,000-token shape fails (the planted fault)");
    std::size_t baseline_checks = 0, baseline_passed = 0;
    if (const toml::array *checks = c.figures["baseline"]["checks"].as_array())
        for (const auto &node : *checks) {
            ++baseline_checks;
            baseline_passed += (*node.as_table())["passed"].value_or(false);
        }
    expect.check(baseline_checks == passed.size() && baseline_passed == baseline_checks,
                 "the baseline meets the limits on every shape");
    const std::string text = parity.out + parity.err;
    expect.check(contains(text, "nq=170000") && contains(text, "vs baseline"),
                 "the report names the long shape and the condition relative to the baseline");
}

// How a planted cheat must be caught by the time stage.
struct CheatExpectation {
    bool timed = true;  // false: caught by the first outputs, before any round
    std::int64_t min_unwritten = 1, max_unwritten = 0;  // the candidate's elements left NaN, inclusive
};

// Wan 480p's output: 40 heads x 32,760 tokens x 128.
constexpr std::int64_t kWanOutputElements = std::int64_t{40} * 32760 * 128;

std::int64_t unwritten_count(const std::string &text) {
    const std::string marker = "the candidate left ";
    const std::size_t at = text.find(marker);
    if (at == std::string::npos) return -1;
    return std::atoll(text.c_str() + at + marker.size());
}

void cheat(const Pipeline &pipeline, const fs::path &manifest, const CheatExpectation &caught, Expectations &expect) {
    if (!prepare_and_build(pipeline, {"--manifest", manifest.string()}, expect)) return;
    expect.check(pipeline.stage("sanitize", {"--skip"}).exit_code == 0, "sanitize --skip exits 0");
    expect.check(pipeline.stage("parity", {}).exit_code == 0, "parity exits 0 (its shapes are short: the cheat computes)");
    const ProcessResult time = pipeline.stage("time", {});
    expect.check(time.exit_code == 1, "time exits 1 (stop condition)");
    const std::string text = time.out + time.err;
    const std::int64_t unwritten = unwritten_count(text);
    expect.check(unwritten >= caught.min_unwritten && unwritten <= caught.max_unwritten,
                 "the reason counts the candidate's elements left unwritten: " + std::to_string(unwritten) + " in [" +
                     std::to_string(caught.min_unwritten) + ", " + std::to_string(caught.max_unwritten) + "]");
    const Checkpoint c = pipeline.checkpoint("05-time.toml");
    expect.check(c.status == StageStatus::failed, "the time checkpoint records a failure");
    if (caught.timed) {
        expect.check(contains(text, "unwritten (still the NaN poison) in timed round ") && contains(text, " on input set "),
                     "the reason names the timed round and the input set");
        expect.check(c.figures["stopped_by"].value_or(std::string()) == "recheck_failed", "figures.stopped_by = recheck_failed");
        expect.check(c.figures["recheck"]["candidate"]["failed"].value_or<std::int64_t>(0) >= 1,
                     "figures.recheck.candidate.failed >= 1");
        expect.check(c.figures["recheck"]["baseline"]["failed"].value_or<std::int64_t>(-1) == 0 &&
                         c.figures["recheck"]["baseline"]["rounds"].value_or<std::int64_t>(0) >= 1,
                     "the baseline's re-checks all held");
    } else {
        expect.check(contains(text, "not timed"), "nothing was timed");
    }
    const ProcessResult gate = pipeline.stage("gate", {});
    // 1: a FAIL verdict; 4: the gate refuses a run whose time stage failed. Either way, no PASS.
    expect.check(gate.exit_code == 1 || gate.exit_code == 4, "gate exits 1 or 4: no PASS for a cheat");
}

// A cheat whose bytes are right: only the gate's plausibility conditions can catch it.
void cheat_caught_by_gate(const Pipeline &pipeline, const fs::path &manifest, Expectations &expect) {
    if (!prepare_and_build(pipeline, {"--manifest", manifest.string()}, expect)) return;
    expect.check(pipeline.stage("sanitize", {"--skip"}).exit_code == 0, "sanitize --skip exits 0");
    expect.check(pipeline.stage("parity", {}).exit_code == 0, "parity exits 0");
    expect.check(pipeline.stage("time", {}).exit_code == 0, "time exits 0: every re-check finds the right bytes");
    const Checkpoint c = pipeline.checkpoint("05-time.toml");
    expect.check(c.figures["recheck"]["candidate"]["rounds"].value_or<std::int64_t>(0) >= 1 &&
                     c.figures["recheck"]["candidate"]["failed"].value_or<std::int64_t>(-1) == 0,
                 "the candidate's re-checks held");
    const double ratio = c.figures["candidates"]["candidate"]["ratio"]["median"].value_or(1.0);
    const double tops = c.figures["candidates"]["candidate"]["timing"]["tops_p50"].value_or(0.0);
    const double peak = c.figures["tensor_peak_tops"].value_or(0.0);
    std::cout << "  candidate/baseline " << ratio << ", " << tops << " TOPS against a peak of " << peak << std::endl;
    const ProcessResult gate = pipeline.stage("gate", {});
    expect.check(gate.exit_code == 1, "gate exits 1");
    const std::string text = gate.out + gate.err;
    expect.check(contains(text, "FAIL         plausible-ratio") && contains(text, "< 0.5"),
                 "gate FAILs plausible-ratio, the median below 0.5");
    expect.check(contains(text, "FAIL         tensor-peak") && contains(text, "> the dense tensor peak"),
                 "gate FAILs tensor-peak, above the GPU's dense peak");
    expect.check(contains(text, "PASS         checked-output"), "checked-output passes: the bytes were right");
}

void smem_tail_bug(const Pipeline &pipeline, const fs::path &manifest, Expectations &expect) {
    if (!prepare_and_build(pipeline, {"--manifest", manifest.string()}, expect)) return;
    expect.check(pipeline.stage("sanitize", {"--skip"}).exit_code == 0, "sanitize --skip exits 0");
    const ProcessResult parity = pipeline.stage("parity", {});
    expect.check(parity.exit_code == 1, "parity exits 1 (stop condition)");
    const Checkpoint c = pipeline.checkpoint("04-parity.toml");
    const std::int64_t differing = c.figures["candidates"]["candidate"]["shapes_differing"].value_or<std::int64_t>(0);
    expect.check(differing > 0, "shapes differ: " + std::to_string(differing));
    bool only_one_tile = true;
    if (const toml::array *differences = c.figures["candidates"]["candidate"]["differences"].as_array())
        for (const auto &node : *differences) {
            const toml::table &d = *node.as_table();
            const std::string shape = d["shape"].value_or(std::string());
            std::cout << "  differs: " << shape << ": " << d["differing_elements"].value_or<std::int64_t>(0)
                      << " elements, baseline " << d["baseline_value"].value_or(std::string()) << ", candidate "
                      << d["candidate_value"].value_or(std::string()) << std::endl;
            const std::size_t at = shape.find("nkv=");
            only_one_tile = only_one_tile && at != std::string::npos && std::atoll(shape.c_str() + at + 4) < 64;
        }
    expect.check(only_one_tile, "only one-tile shapes differ (a longer tail keeps the previous tile's V)");
}

void default_experiment(const Pipeline &pipeline, Expectations &expect) {
    if (!prepare_and_build(pipeline, {}, expect)) return;
    expect.check(pipeline.stage("sanitize", {}).exit_code == 0, "sanitize exits 0");
    expect.check(pipeline.checkpoint("03-sanitize.toml").figures["total_errors"].value_or<std::int64_t>(-1) == 0,
                 "sanitize records 0 errors");
    expect.check(pipeline.stage("parity", {}).exit_code == 0, "parity exits 0");
    expect.check(pipeline.checkpoint("04-parity.toml")
                         .figures["candidates"]["candidate"]["shapes_differing"]
                         .value_or<std::int64_t>(-1) == 0,
                 "parity records 0 differing shapes");
}

void workload_set(const Pipeline &pipeline, const fs::path &set, Expectations &expect) {
    if (!prepare_and_build(pipeline, {}, expect)) return;
    expect.check(pipeline.stage("sanitize", {"--skip"}).exit_code == 0, "sanitize --skip exits 0");
    expect.check(pipeline.stage("parity", {}).exit_code == 0, "parity exits 0");
    const ProcessResult time = pipeline.stage("time", {"--workload-set", set.string(), "--budget", "20"});
    expect.check(time.exit_code == 0, "time --workload-set exits 0");
    expect.check(contains(time.out + time.err, "[1/2] self-4k") && contains(time.out + time.err, "[2/2] cross-hd64"),
                 "time reports progress per shape");
    const Checkpoint c = pipeline.checkpoint("05-time.toml");
    expect.check(c.figures["workload_set"].value_or(std::string()) == "small-set", "figures.workload_set names the set");
    for (const char *shape : {"self-4k", "cross-hd64"}) {
        const auto ratio = c.figures["shapes"][shape]["figures"]["candidates"]["candidate"]["ratio"];
        expect.check(ratio["ci_low"].value<double>() && ratio["ci_high"].value<double>(),
                     std::string("shape ") + shape + " has the candidate's ratio interval");
    }
    const auto combined = c.figures["combined"]["candidate"];
    const std::optional<double> low = combined["geomean"]["ci_low"].value<double>();
    const std::optional<double> median = combined["geomean"]["median"].value<double>();
    const std::optional<double> high = combined["geomean"]["ci_high"].value<double>();
    expect.check(low && median && high && *low <= *median && *median <= *high,
                 "combined.candidate.geomean holds an interval around its median");
    expect.check(!combined["worst_shape"].value_or(std::string()).empty(), "combined.candidate.worst_shape is named");
    const ProcessResult gate = pipeline.stage("gate", {"--max-geomean-ratio", "100", "--max-worst-ratio", "100"});
    const std::string verdict = gate.out + gate.err;
    expect.check(contains(verdict, "relative-speed self-4k") && contains(verdict, "output-sha cross-hd64"),
                 "gate decides the real-workload conditions per shape");
    expect.check(contains(verdict, "geomean-speed") && contains(verdict, "worst-shape-speed"),
                 "gate decides the set conditions");
}

// Every stage of the default experiment, each one's wall time, and the sum after build: the time to a
// verdict once the cubins exist.
void stage_times(const Pipeline &pipeline, Expectations &expect) {
    double after_build = 0;
    std::cout << "stage      exit   seconds\n";
    for (const char *stage : {"prepare", "build", "sanitize", "parity", "time", "gate"}) {
        const std::vector<std::string> extra =
            std::string(stage) == "build" ? std::vector<std::string>{"--arch", "auto"} : std::vector<std::string>{};
        const ProcessResult r = pipeline.stage(stage, extra);
        std::printf("%-9s  %4d  %8.1f\n", stage, r.exit_code, r.seconds);
        if (std::string(stage) != "prepare" && std::string(stage) != "build") after_build += r.seconds;
        // The gate's "no" (exit 1) is a verdict too.
        if (r.exit_code != 0 && !(std::string(stage) == "gate" && r.exit_code == 1)) {
            expect.check(false, std::string(stage) + " exits 0");
            return;
        }
    }
    std::printf("verdict after build: %.1f s (sanitize + parity + time + gate)\n", after_build);
}

// Ten single-process intervals against the median of a five-process --repeat, per candidate.
void interval_coverage(const Pipeline &pipeline, Expectations &expect) {
    if (!prepare_and_build(pipeline, {}, expect)) return;
    // Only the timing is measured here: the sanitizers have nothing to say about it.
    if (pipeline.stage("sanitize", {"--skip"}).exit_code != 0) return expect.check(false, "sanitize --skip exits 0");
    if (pipeline.stage("parity", {}).exit_code != 0) return expect.check(false, "parity exits 0");
    constexpr int kSingles = 10;
    std::vector<TimeFigures> singles;
    for (int i = 0; i < kSingles; ++i) {
        if (pipeline.stage("time", {"--force"}).exit_code != 0) return expect.check(false, "a single time run exits 0");
        singles.push_back(TimeFigures::from_toml(pipeline.checkpoint("05-time.toml").figures));
    }
    if (pipeline.stage("time", {"--force", "--repeat", "5"}).exit_code != 0) return expect.check(false, "--repeat 5 exits 0");
    const TimeFigures repeated = TimeFigures::from_toml(pipeline.checkpoint("05-time.toml").figures);
    int held = 0, all = 0;
    std::cout << "candidate        repeat-5 median  single runs whose interval holds it\n";
    for (const CandidateTimeFigures &c : repeated.candidates) {
        if (!c.ratio || !c.ratio->median) continue;
        int here = 0;
        for (const TimeFigures &single : singles) {
            const CandidateTimeFigures *mine = single.candidate(c.name);
            const std::optional<RatioInterval> interval = mine && mine->ratio ? mine->ratio->interval() : std::nullopt;
            here += interval && interval->contains(*c.ratio->median);
        }
        std::printf("%-16s %15.5f  %d of %d\n", c.name.c_str(), *c.ratio->median, here, kSingles);
        held += here;
        all += kSingles;
    }
    std::printf("coverage: %d of %d (the goal: at least 95%%)\n", held, all);
}

}  // namespace

int main(int argc, char **argv) {
    const std::string mode = argc == 2 ? argv[1] : "";
    const std::map<std::string, CheatExpectation> cheats{
        {"cheat-early-exit", {true, kWanOutputElements, kWanOutputElements}},
        // The odd query tiles: 128 of 256, the last (odd) one holding 120 of 128 rows.
        {"cheat-half-work", {true, kWanOutputElements / 2 - 40 * 8 * 128, kWanOutputElements / 2}},
        {"cheat-no-op", {false, kWanOutputElements, kWanOutputElements}}};
    const bool is_cheat = cheats.count(mode) > 0 || mode == "cheat-input-cache";
    if (mode != "broken-rounding" && mode != "missing-barrier" && mode != "long-sequence-fault" && mode != "default" &&
        mode != "stage-times" && mode != "interval-coverage" && mode != "workload-set" && mode != "smem-tail-bug" &&
        !is_cheat) {
        std::cerr << "usage: gpu_pipeline_check broken-rounding|missing-barrier|long-sequence-fault|default|stage-times|"
                     "interval-coverage|workload-set|cheat-early-exit|cheat-half-work|cheat-no-op|cheat-input-cache|"
                     "smem-tail-bug\n";
        return kExitUsage;
    }
    const char *binary = std::getenv("SAGE2TP_BIN");
    const char *data_dir = std::getenv("SAGE2TP_DATA_DIR");
    if (!binary || !data_dir) {
        std::cerr << "gpu_pipeline_check needs SAGE2TP_BIN (the sage2tp binary) and SAGE2TP_DATA_DIR (the source root)\n";
        return kExitUsage;
    }
    const GpuProbe probe = probe_gpu();
    if (!probe.available) {
        std::cout << "SKIP: no usable GPU: " << probe.reason << std::endl;
        return kExitSkip;
    }
    if (mode != "broken-rounding" && mode != "long-sequence-fault" && mode != "workload-set" && !is_cheat &&
        mode != "smem-tail-bug" && mode != "interval-coverage" && !find_cuda_tool("compute-sanitizer")) {
        std::cout << "SKIP: compute-sanitizer is not installed" << std::endl;
        return kExitSkip;
    }

    const fs::path work = fs::temp_directory_path() / ("s2tp-gpu-pipeline-" + mode + "-" + std::to_string(::getpid()));
    fs::remove_all(work);
    fs::create_directories(work);
    const Pipeline pipeline(binary, work / "run");
    Expectations expect;
    try {
        if (mode == "broken-rounding")
            broken_rounding(pipeline, fs::path(data_dir) / "tests/manifests/broken-rounding.toml", expect);
        else if (mode == "long-sequence-fault")
            long_sequence_fault(pipeline, fs::path(data_dir) / "tests/manifests/long-sequence-fault.toml", expect);
        else if (mode == "missing-barrier")
            missing_barrier(pipeline, fs::path(data_dir) / "tests/manifests/missing-barrier.toml", expect);
        else if (mode == "workload-set")
            workload_set(pipeline, fs::path(data_dir) / "tests/data/small-set.toml", expect);
        else if (mode == "stage-times")
            stage_times(pipeline, expect);
        else if (mode == "interval-coverage")
            interval_coverage(pipeline, expect);
        else if (mode == "smem-tail-bug")
            smem_tail_bug(pipeline, fs::path(data_dir) / "tests/manifests/smem-tail-bug.toml", expect);
        else if (mode == "cheat-input-cache")
            cheat_caught_by_gate(pipeline, fs::path(data_dir) / "tests/manifests" / (mode + ".toml"), expect);
        else if (is_cheat)
            cheat(pipeline, fs::path(data_dir) / "tests/manifests" / (mode + ".toml"), cheats.at(mode), expect);
        else
            default_experiment(pipeline, expect);
    } catch (const std::exception &e) {
        expect.check(false, std::string("unexpected error: ") + e.what());
    }
    if (expect.passed()) {
        fs::remove_all(work);
        std::cout << "PASS " << mode << std::endl;
        return kExitPass;
    }
    std::cout << "FAIL " << mode << " (run directory kept: " << (work / "run").string() << ")" << std::endl;
    return kExitFailed;
}
