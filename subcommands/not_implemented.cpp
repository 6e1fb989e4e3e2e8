// Stages whose issues have not landed yet. They say so plainly and exit 3 ("not available"), so a
// pipeline never mistakes a missing stage for a passed one.
#include "subcommands.h"

#include "cli.h"

namespace s2tp {
namespace {

int not_implemented(const std::string &stage, const std::string &summary, const Args &args) {
    CommandLine cl(stage, summary, args);
    cl.add_options()("force", "run even when the checkpoint is up to date");
    if (!cl.parse()) return 0;
    fail(ExitCode::missing_tool, "sage2tp " + stage + " is not implemented in this version (" + sage2tp_version() +
                                     "); no checkpoint was written");
}

}  // namespace

int sanitize_command(const Args &args) {
    return not_implemented("sanitize", "Run both builds under compute-sanitizer.", args);
}
int parity_command(const Args &args) {
    return not_implemented("parity", "Compare baseline and candidate outputs byte for byte.", args);
}
int time_command(const Args &args) {
    return not_implemented("time", "Time baseline and candidate on the real workload, interleaved.", args);
}

}  // namespace s2tp
