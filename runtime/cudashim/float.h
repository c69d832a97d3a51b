/* <float.h> for NVRTC (kevo): FLT_MAX, FLT_MIN, FLT_EPSILON and the DBL_ limits come from kevo_prelude.h, read before every candidate. */
#pragma once
