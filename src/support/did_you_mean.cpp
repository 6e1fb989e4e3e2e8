#include "support/did_you_mean.h"

namespace s2tp {

bool one_edit_apart(const std::string &a, const std::string &b) {
    if (a == b) return false;
    const std::string &shorter = a.size() <= b.size() ? a : b;
    const std::string &longer = a.size() <= b.size() ? b : a;
    if (longer.size() - shorter.size() > 1) return false;
    std::size_t first = 0;
    while (first < shorter.size() && shorter[first] == longer[first]) ++first;
    if (shorter.size() != longer.size())  // one insertion: the rest matches after skipping it
        return shorter.compare(first, std::string::npos, longer, first + 1, std::string::npos) == 0;
    if (shorter.compare(first + 1, std::string::npos, longer, first + 1, std::string::npos) == 0) return true;
    return first + 1 < a.size() && a[first] == b[first + 1] && a[first + 1] == b[first] &&
           a.compare(first + 2, std::string::npos, b, first + 2, std::string::npos) == 0;
}

std::string closest_name(const std::string &word, const std::vector<std::string> &known) {
    for (const std::string &name : known)
        if (one_edit_apart(word, name)) return name;
    return "";
}

std::string did_you_mean(const std::string &word, const std::vector<std::string> &known) {
    const std::string name = closest_name(word, known);
    return name.empty() ? "" : "; did you mean '" + name + "'?";
}

}  // namespace s2tp
