/* nvml.h: the few NVML readings the worker samples while timing (SM clock, temperature),
 * loaded at run time with dlopen("libnvidia-ml.so.1"). Optional: without NVML the readings are
 * simply absent. Knows nothing of Lua. */
#ifndef KEVO_NVML_H
#define KEVO_NVML_H

typedef struct kevo_nvml kevo_nvml;

/* Opens NVML for the device at PCI bus id `busid` ("0000:01:00.0"). NULL when NVML or the
 * device cannot be had; never fails loudly. */
kevo_nvml *kevo_nvml_open(const char *busid);
/* Current SM clock in MHz and GPU temperature in degrees C; -1 when not readable. */
int kevo_nvml_sm_clock(kevo_nvml *n);
int kevo_nvml_temp(kevo_nvml *n);
/* Maximum SM clock in MHz, -1 when not readable. */
int kevo_nvml_sm_clock_max(kevo_nvml *n);
void kevo_nvml_close(kevo_nvml *n);

#endif
