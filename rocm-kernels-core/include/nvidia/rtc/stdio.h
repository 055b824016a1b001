// cargo-rocm: <stdio.h> for NVRTC, which has no C or C++ standard headers. Only NVRTC's include path
// has this folder (nvcc uses the host's headers). What hipcc's headers give device code from it
// is in hip/detail/rtc_std.h (for <algorithm>: min and max).
#pragma once
#include <hip/detail/rtc_std.h>
