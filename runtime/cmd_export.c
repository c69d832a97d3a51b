/* kevo export RUN DIR [--db PATH]: the best verified kernel of a run as files another project
 * can use without kevo. The work lives in lua/kevo/export.lua; this runs it in a trusted state
 * and gives it the one system call Lua lacks (mkdir). */
#include "lutil.h"
#include "registry.h"

static int export_main(int argc, char **argv) {
  return kevo_l_run_main("export", "kevo.export", argc, argv, NULL);
}

const struct kevo_command kevo_cmd_export = {
    "export", "write a run's best verified kernel as files usable without kevo",
    "usage: kevo export RUN|last DIR [--db PATH]\n\n"
    "Writes into DIR (made if missing): the kernel's source (kernel.cu or kernel.py), its cubin\n"
    "recompiled for the architecture it was measured on (kernel.cubin), the recipe's reference\n"
    "cubin, launch.json (tensors, shapes, launch plans, knobs), kernel_launch.h (C: load and\n"
    "launch with the CUDA driver API), torch_ext.py (PyTorch, through ctypes),\n"
    "make_test_vectors.py (inputs and reference outputs, made on a GPU), provenance.json and a\n"
    "README.md saying how to use each.\n\n"
    "Exit 0 written; 1 the run has no verified kernel, the archive is unreadable, or a file\n"
    "cannot be written; 2 bad usage, no archive, or no such run.\n",
    export_main, 0};
