// The compute-sanitizer output reader: any text, for every tool, ends as a verdict and never throws.
#include "formats/sanitizer_report.h"

#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
    if (size < 1) return 0;
    // The first byte picks the tool and the exit status, the rest is the output.
    const auto tool = static_cast<s2tp::SanitizerTool>(data[0] % 4);
    const int exit_code = (data[0] >> 2) % 2 ? s2tp::kSanitizerErrorExitCode : 0;
    const std::string_view output(reinterpret_cast<const char *>(data + 1), size - 1);
    const s2tp::SanitizerReport report = s2tp::parse_sanitizer_output(tool, output, exit_code, 5);
    if (report.verdict.empty() || report.first_error_lines.size() > 5 || report.errors < 0) std::abort();
    return 0;
}
