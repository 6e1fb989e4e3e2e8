// Splitting tool output into lines, the one way every log parser in sage2tp does it.
#pragma once

#include <string_view>
#include <vector>

namespace s2tp {

// Splits on '\n' and drops a trailing '\r' (logs captured on Windows). The views point into `text`.
inline std::vector<std::string_view> split_lines(std::string_view text) {
    std::vector<std::string_view> lines;
    std::size_t start = 0;
    while (start < text.size()) {
        std::size_t end = text.find('\n', start);
        if (end == std::string_view::npos) end = text.size();
        std::string_view line = text.substr(start, end - start);
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        lines.push_back(line);
        start = end + 1;
    }
    return lines;
}

}  // namespace s2tp
