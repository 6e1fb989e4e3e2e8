// Workload files: load_workload on a file beside the shipped data/; any bytes end as a WorkloadSpec
// or Error(usage).
#include "fuzz_input_file.h"
#include "model/experiment_manifest.h"
#include "support/errors.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
    const std::filesystem::path file = s2tp::fuzz::scratch().write("workloads/fuzz.toml", data, size);
    try {
        s2tp::WorkloadSpec workload = s2tp::load_workload(file);
        s2tp::expected_output_sha256(workload, "sm_90a");
    } catch (const s2tp::Error &) {
    }
    return 0;
}
