/* kevo new NAME KERNEL.cu --param N=...: a recipe from a user's own CUDA kernel, which is both
 * its reference and its seed. The work lives in lua/kevo/new.lua (policy); this runs it in a
 * trusted state and gives it the one system call Lua lacks (mkdir). */
#include "lutil.h"
#include "registry.h"

static int new_main(int argc, char **argv) {
  return kevo_l_run_main("new", "kevo.new", argc, argv, NULL);
}

const struct kevo_command kevo_cmd_new = {
    "new", "make a recipe from your own CUDA kernel (it is both reference and seed)",
    "usage: kevo new NAME KERNEL.cu --param N=16777216 [--param M=...]... [--kernel FN]\n"
    "                [--shape TENSOR=[M,N]]... [--extra N=1000[,M=3]]... [--launch FILE.lua]\n"
    "                [--space KNOB=128,256,512]... [--init TENSOR=INIT]... [--flops EXPR]\n"
    "                [--tolerance f32:1e-5:1e-5]... [--summary TEXT] [--out DIR] [--force]\n\n"
    "Reads the extern \"C\" __global__ kernel FN (default: the first) of KERNEL.cu and writes\n"
    "DIR/NAME.yaml (DIR: ./recipes) with DIR/NAME/reference.cu and DIR/NAME/seed.cu, copies of\n"
    "the file: the kernel is the reference every candidate is checked against and the seed the\n"
    "search starts from (docs/recipes.md, \"Your own kernel\").\n"
    "  const T* parameters are inputs, T* outputs (T: float double __half __nv_bfloat16 int\n"
    "  int32_t long long int64_t unsigned char uint8_t); integer parameters are params, given\n"
    "  by name with --param; float and double parameters are constants the launch passes.\n"
    "  --shape     a tensor's dims over the params (default [P] when there is one param P)\n"
    "  --extra     another shape every candidate must verify on (missing params keep their\n"
    "              value); give at least one: 1, a prime, one past a power of two\n"
    "  --launch    the launch chunk, when the file has no /* kevo:launch ... */ block; kevo\n"
    "              never guesses one (a wrong launch would verify against itself)\n"
    "  --space     the seed's values for a knob (#ifndef X / #define X v / #endif); by default\n"
    "              each knob has its default only\n"
    "  --init      an input's fill (normal, uniform(lo, hi), randint(lo, hi), ...)\n"
    "  --flops     the flops at a shape, an expression over the params (default: none)\n"
    "  --tolerance DTYPE:ATOL:RTOL (default: f32 1e-5, f16 1e-3, bf16 1e-2, f64 1e-12)\n"
    "  --force     overwrite existing files\n"
    "The launch chunk is run on every shape and checked against the signature, the kernel is\n"
    "compiled with NVRTC, and the recipe is loaded back; nothing is left behind on failure.\n"
    "Exit 0 written; 1 a file could not be written; 2 bad input (the message says what to fix).\n",
    new_main, 0};
