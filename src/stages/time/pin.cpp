#include "stages/time/pin.h"

namespace s2tp {

std::string verify_time_outputs(const Checkpoint &c, const std::optional<std::string> &expected_sha256,
                                const PinKey &key) {
    // Every artifact the checkpoint records has been checked by inspect_run; the pin is no artifact's.
    // A pin added, changed or removed by hand after the stage ran must be checked again.
    if (TimeFigures::from_toml(c.figures).expected_sha256 != expected_sha256)
        return "the pinned output SHA-256 for " + key.text() + " changed";
    return "";
}

void pin_baseline_output(const TimeStageInputs &in, const std::string &baseline_sha256, TimeFigures &f,
                         const Reporter &reporter) {
    const PinKey key = in.kernels.pin_key();
    f.replaced_pin = pin_expected_output_sha256(in.run.pins(), in.workload, key, baseline_sha256);
    if (f.replaced_pin) reporter.warn("time: --pin replaced the earlier pin " + *f.replaced_pin + " for " + key.text());
    if (in.pin)
        reporter.progress("time: pinned the baseline's output sha256 " + baseline_sha256 + " for " + key.text() +
                          " in " + in.run.relative(in.run.pins()));
    else
        reporter.say("time: nothing pinned the output of " + key.text() + " on " + in.workload.name +
                     ": recorded the baseline's, sha256 " + baseline_sha256 + ", in " + in.run.relative(in.run.pins()) +
                     "; later runs check against it");
    f.recorded_pin = !in.pin;
    f.expected_sha256 = baseline_sha256;
}

}  // namespace s2tp
