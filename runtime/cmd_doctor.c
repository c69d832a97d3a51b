/* kevo doctor: what this machine has for kevo, and what to do about what is missing.
 * The checks live in lua/kevo/doctor.lua (policy); this runs them in a trusted state. */
#include "lutil.h"
#include "registry.h"

static int doctor_main(int argc, char **argv) {
  return kevo_l_run_main("doctor", "kevo.doctor", argc, argv, NULL);
}

const struct kevo_command kevo_cmd_doctor = {
    "doctor", "say what this machine has for kevo (GPU, NVRTC, Triton, LLM) and what to do",
    "usage: kevo doctor [--json] [--offline]\n\n"
    "Checks what kevo can use here and prints one line per item with what to do if it is\n"
    "missing: the CUDA driver and GPU, NVRTC, the archive, python3 and Triton, the LLM\n"
    "configuration (and, unless --offline, whether the LLM endpoint answers).\n"
    "Exit 0 when kevo can run a search here (a GPU and NVRTC), 1 otherwise.\n",
    doctor_main, 0};
