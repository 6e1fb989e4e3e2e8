// Configure-time probe: can clang++ build a libFuzzer binary with ASan and UBSan here?
#include <cstddef>
#include <cstdint>
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *, std::size_t) { return 0; }
