// .npy parser: any bytes end as a tensor or Error(usage), under ASan and UBSan.
#include "formats/tensor_io.h"
#include "support/errors.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
    s2tp::TensorRequest as_bf16;
    as_bf16.dtype = s2tp::DType::bf16;
    for (const s2tp::TensorRequest &request : {s2tp::TensorRequest{}, as_bf16}) {
        try {
            s2tp::parse_npy(data, size, "fuzz.npy", request);
        } catch (const s2tp::Error &) {
        }
    }
    return 0;
}
