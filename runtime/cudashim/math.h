/* <math.h> for NVRTC (kevo): the math functions, INFINITY, NAN, HUGE_VAL and M_PI come from kevo_prelude.h, read before every candidate. */
#pragma once
