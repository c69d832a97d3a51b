/* <stdio.h> for NVRTC (kevo): printf is built into device code; nothing else of stdio exists
 * on the device. */
#pragma once
