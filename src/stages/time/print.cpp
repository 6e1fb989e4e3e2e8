#include "stages/time/print.h"

#include "figures/set_time_figures.h"
#include "figures/time_figures.h"

#include <string>

namespace s2tp {

void print_time_checkpoint(const Checkpoint &checkpoint, const Reporter &reporter) {
    if (SetTimeFigures::holds_set(checkpoint.figures)) {
        reporter.say(set_time_figures_text(SetTimeFigures::from_toml(checkpoint.figures)));
        return;
    }
    reporter.say(time_figures_text(TimeFigures::from_toml(checkpoint.figures),
                                   checkpoint.artifacts["time_svg"]["path"].value_or(std::string())));
}

}  // namespace s2tp
