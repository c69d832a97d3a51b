/* <string.h> for NVRTC (kevo): memcpy and memset are built into device code. */
#pragma once
