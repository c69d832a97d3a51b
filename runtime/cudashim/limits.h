/* <limits.h> for NVRTC (kevo): CHAR_BIT, INT_MAX, LLONG_MAX and the other integer limits come from kevo_prelude.h, read before every candidate. */
#pragma once
