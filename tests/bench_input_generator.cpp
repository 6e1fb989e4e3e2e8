// Benchmark (meson benchmark, not a test): how long the host takes to generate a workload's q, k and v,
// which the time stage does before it samples. Prints one line per workload file given.
#include "model/experiment_manifest.h"
#include "model/input_generator.h"

#include <chrono>
#include <iostream>
#include <thread>

int main(int argc, char **argv) {
    for (int i = 1; i < argc; ++i) {
        const s2tp::WorkloadSpec workload = s2tp::load_workload(argv[i]);
        const auto started = std::chrono::steady_clock::now();
        const s2tp::GeneratedInputs inputs =
            s2tp::generate_inputs(workload.problem.shape, workload.problem.dtype, workload.seed);
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        const double bytes = static_cast<double>(inputs.q.nbytes() + inputs.k.nbytes() + inputs.v.nbytes());
        std::cout << workload.name << ": " << workload.problem.describe() << ": generated " << bytes / 1e9
                  << " GB in " << seconds << " s on " << std::thread::hardware_concurrency() << " threads\n";
    }
    return 0;
}
