// The GPU session now lives in tools/gpu_session/. This header remains only for the time stage's files
// (stages/time_stage.h, stages/time_set.cpp), which are being restructured on another branch; once they
// include "tools/gpu_session/gpu_session.h" themselves, delete it.
#pragma once

#include "tools/gpu_session/gpu_session.h"
