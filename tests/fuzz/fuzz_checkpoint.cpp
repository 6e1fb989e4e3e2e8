// Stage checkpoints: read_checkpoint never throws and never trusts a file it cannot verify; any
// bytes end as a checkpoint or a problem string.
#include "formats/checkpoint_store.h"
#include "fuzz_input_file.h"

#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
    const std::filesystem::path file = s2tp::fuzz::scratch().write("checkpoint.toml", data, size);
    const s2tp::CheckpointRead read = s2tp::read_checkpoint(file);
    // Exactly one of: a verified checkpoint, or the reason it is not trusted.
    if (!read.exists || read.checkpoint.has_value() == !read.problem.empty()) std::abort();
    return 0;
}
