/* <stddef.h> for NVRTC (kevo): size_t and ptrdiff_t come from kevo_prelude.h, read before every candidate. */
#pragma once
