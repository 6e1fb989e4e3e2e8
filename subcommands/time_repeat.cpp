// sage2tp time-repeat: internal, one repeat of `time --repeat` in a fresh process, started by the time
// stage with the words RepeatChildRequest::to_argv writes (stages/time/repeat_protocol.h). It reads the
// run its parent holds (no lock, no checkpoint), with the values its parent derived: nothing in its
// request was typed by a user, so no user range applies to it.
#include "subcommands.h"

#include "pipeline/cli.h"
#include "pipeline/run_directory.h"
#include "stages/time/repeat_protocol.h"

namespace s2tp {

int time_repeat_command(const Args &args) {
    CommandLine cl(repeat_child_command, "Internal: one repeat of time --repeat, measured in this fresh process.", args);
    RepeatChildRequest::add_options(cl);
    if (!cl.parse()) return 0;
    const RepeatChildRequest request = RepeatChildRequest::from_args(cl, require_existing_run(cl.selection()));
    run_repeat_child(request, cl.reporter());
    cl.reporter().emit_json(toml::table{{"command", repeat_child_command}, {"status", "measured"},
                                        {"measurement_file", request.measurement_file.string()}});
    return 0;
}

}  // namespace s2tp
