// .safetensors parser: any bytes end as tensors or Error(usage), under ASan and UBSan.
#include "formats/tensor_io.h"
#include "support/errors.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
    for (bool require_finite : {true, false}) {
        try {
            s2tp::parse_safetensors(data, size, "fuzz.safetensors", require_finite);
        } catch (const s2tp::Error &) {
        }
    }
    return 0;
}
