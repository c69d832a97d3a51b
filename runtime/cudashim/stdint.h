/* <stdint.h> for NVRTC (kevo): the fixed-width types come from kevo_prelude.h (the same types as
 * the toolkit's), their limits and constant macros (INT32_MAX, SIZE_MAX, UINT64_C) from the
 * toolkit's <cuda/std/cstdint>. */
#pragma once
#include <cuda/std/cstdint>
