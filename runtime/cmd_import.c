/* kevo import FILE.py: a KernelBench-format problem as a recipe (docs/kbench.md). The policy
 * (naming, the contract, the YAML) is lua/kevo/kbench.lua; this runs it in a trusted state and
 * writes the files it plans. */
#include "lutil.h"
#include "registry.h"

static int import_main(int argc, char **argv) {
  return kevo_l_run_main("import", "kevo.kbench", argc, argv, NULL);
}

const struct kevo_command kevo_cmd_import = {
    "import", "turn a KernelBench-format PyTorch problem into a recipe",
    "usage: kevo import FILE.py [--out DIR] [--name NAME] [--description DESC.json] [--force]\n"
    "                   [--python PYTHON]\n\n"
    "FILE.py defines class Model(nn.Module), get_inputs() and get_init_inputs(). kevo runs the\n"
    "model once through its PyTorch bridge (python3 with torch: --python, $KEVO_TORCH_PYTHON or\n"
    "python3 on PATH) and writes DIR/NAME.yaml (DIR: ./recipes, NAME: the file's name) and\n"
    "DIR/NAME/ (problem.py, the reference; description.json; README.md, the candidate's\n"
    "contract). The forward's tensor arguments, then the model's parameters and buffers, are\n"
    "the candidate's inputs, in that order. --description uses a recorded description instead\n"
    "of running python. A degenerate problem (constant output, or one that ignores its inputs)\n"
    "is refused. Exit 0 written, 1 the bridge failed, 2 bad usage or a problem kevo refuses.\n",
    import_main, 0};
