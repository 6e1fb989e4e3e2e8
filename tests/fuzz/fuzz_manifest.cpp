// Experiment manifests: load_experiment on a file beside the shipped data/ (so the patch, workload
// and tensor paths of a real manifest resolve); any bytes end as an Experiment or Error(usage).
#include "fuzz_input_file.h"
#include "model/experiment_manifest.h"
#include "support/errors.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
    const std::filesystem::path file = s2tp::fuzz::scratch().write("experiments/fuzz.toml", data, size);
    try {
        s2tp::Experiment experiment = s2tp::load_experiment(file);
        s2tp::experiment_to_toml(experiment);
    } catch (const s2tp::Error &) {
    }
    return 0;
}
