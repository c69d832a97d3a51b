/* <stdlib.h> for NVRTC (kevo): abs, labs and llabs come from kevo_prelude.h, read before every candidate. */
#pragma once
