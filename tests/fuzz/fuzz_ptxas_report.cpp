// The ptxas -v report parser and the error-line picker: any text ends as a report or Error(usage).
#include "formats/ptxas_report.h"
#include "support/errors.h"

#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
    const std::string_view log(reinterpret_cast<const char *>(data), size);
    try {
        s2tp::parse_ptxas_report(log, "fuzz.log");
    } catch (const s2tp::Error &) {
    }
    s2tp::first_error_lines(log, 20);
    return 0;
}
