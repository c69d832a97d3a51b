/* gpudevice.h: opening one device for the worker (gpudevice.c). */
#ifndef KEVO_GPUDEVICE_H
#define KEVO_GPUDEVICE_H

#include "gpucommon.h"
#include "status.h"

#include <stdio.h>

/* Loads the driver, opens device `ordinal`, makes its primary context current, sets the
 * context limits, compiles the worker's kernels and, when `measure` is set, measures the copy
 * bandwidth and the arithmetic rates (the floors of a timing). The profile replay child opens
 * with measure 0: it times nothing, and ncu would profile the probes' kernels too.
 * KEVO_E_NOGPU when there is no driver or no device; KEVO_E_CUDA for other failures. */
int kevo_gpu_open(int ordinal, int measure, kevo_gpu **out, kevo_error *err);
void kevo_gpu_close(kevo_gpu *g);

/* One line on f: how long kevo_gpu_open took, and to what (KEVO_WORKER_TIMING=1). */
void kevo_gpu_print_start(const kevo_gpu *g, FILE *f);

/* The "device" object of a hello reply (name, cc, sms, mem_bytes, l2_bytes, driver,
 * copy_gbps, peak_tflops, clock_mhz). The caller owns it. */
cJSON *kevo_gpu_device_json(const kevo_gpu *g);

/* Every device the driver sees, without making a context: *out a JSON array of {"index",
 * "name", "cc", "pci_bus", "mem_bytes"} (the `devices` op). KEVO_E_NOGPU without a driver or
 * a device. */
int kevo_gpu_list(cJSON **out, kevo_error *err);

#endif
