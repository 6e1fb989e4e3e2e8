// The time stage's output pin: the baseline's output SHA-256 recorded in the run's pins as its kernel's
// expected one on its arch (--pin, or the first passing run of a kernel nothing pinned), and the check
// that a kept checkpoint was made under the pin the run holds now.
#pragma once

#include "figures/time_figures.h"
#include "formats/checkpoint_store.h"
#include "stages/time/inputs.h"

#include <optional>
#include <string>

namespace s2tp {

// Why a passed time checkpoint no longer describes the run: the pin for its kernel and arch added,
// changed or removed by hand since (its artifacts inspect_run has checked), or "" when it still does.
std::string verify_time_outputs(const Checkpoint &checkpoint, const std::optional<std::string> &expected_sha256,
                                const PinKey &key);

// --pin, or the first passing run of a kernel nothing pinned: the baseline's digest into the run's pins,
// once the timed launches showed its bytes stable.
void pin_baseline_output(const TimeStageInputs &in, const std::string &baseline_sha256, TimeFigures &f,
                         const Reporter &reporter);

}  // namespace s2tp
