// prepare, telling `sage2tp run` which run directory it prepared, so that run can pin the later stages
// to it: a prepare in another shell, which moves latest, must not redirect them.
#pragma once

#include "subcommands.h"

#include <filesystem>

namespace s2tp {

// prepare_command, also setting `prepared_run` to the (absolute) run directory when it passes.
int prepare_command(const Args &args, std::filesystem::path &prepared_run);

}  // namespace s2tp
