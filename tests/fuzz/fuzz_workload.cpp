// Workload files and workload sets: load_workload and load_workload_set on a file beside the shipped
// data/ (so a set's `file = "../x.toml"` may reach a real workload); any bytes end as a WorkloadSpec, a
// WorkloadSet or Error(usage).
#include "fuzz_input_file.h"
#include "model/experiment_manifest.h"
#include "support/errors.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
    const std::filesystem::path file = s2tp::fuzz::scratch().write("workloads/fuzz.toml", data, size);
    try {
        s2tp::WorkloadSpec workload = s2tp::load_workload(file);
        s2tp::expected_output_sha256(workload, {s2tp::bare_pin_kernel, "sm_90a"});
        s2tp::workload_table(workload);
    } catch (const s2tp::Error &) {
    }
    try {
        const s2tp::WorkloadSet set = s2tp::load_workload_set(file);
        set.weights();
    } catch (const s2tp::Error &) {
    }
    return 0;
}
