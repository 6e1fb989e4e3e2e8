// "Did you mean": the one rule for suggesting a known name for a mistyped one, used for manifest keys,
// commands, options and arch names alike.
//
// Usage:
//   std::string hint = s2tp::did_you_mean("bulid", {"build", "sanitize"});   // "; did you mean 'build'?"
#pragma once

#include <string>
#include <vector>

namespace s2tp {

// Whether `a` becomes `b` by one insertion, deletion, substitution or swap of two adjacent characters
// (the typing slips that a "did you mean" catches).
bool one_edit_apart(const std::string &a, const std::string &b);

// The first of `known` one edit away from `word`, or "" when none is.
std::string closest_name(const std::string &word, const std::vector<std::string> &known);

// "; did you mean 'NAME'?" for closest_name's answer, "" when there is none.
std::string did_you_mean(const std::string &word, const std::vector<std::string> &known);

}  // namespace s2tp
