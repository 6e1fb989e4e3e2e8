// Part of sage2tp's subset of torch's C++ API: everything is in <torch/extension.h>.
#pragma once
#include <torch/extension.h>
