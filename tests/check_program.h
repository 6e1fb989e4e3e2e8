// The main() of the GPU check and benchmark programs (gpu_kernel_check, gpu_time_helpers_check,
// bench_time_overhead): the program's own exit status, an s2tp::Error's exit code with its message,
// and any other exception as an internal error, each message prefixed with the program's name.
#pragma once

#include "support/errors.h"

#include <exception>
#include <iostream>

namespace s2tp {

template <typename Run>
int run_check_program(const char *program, Run run) {
    try {
        return run();
    } catch (const Error &error) {
        std::cerr << program << ": " << error.what() << "\n";
        return static_cast<int>(error.code());
    } catch (const std::exception &error) {
        std::cerr << program << ": internal error: " << error.what() << "\n";
        return static_cast<int>(ExitCode::internal);
    }
}

}  // namespace s2tp
