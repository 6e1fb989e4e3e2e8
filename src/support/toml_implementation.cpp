// toml++ is used in its compiled mode (TOML_HEADER_ONLY=0 for the whole project) with its
// implementation built here, once, into sage2tp itself: no libtomlplusplus.so at run time, so the
// binary runs on GPU hosts that do not have the package.
#define TOML_IMPLEMENTATION
#include <toml++/toml.h>
