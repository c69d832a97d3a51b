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
    "model once through its PyTorch bridge (python3 with torch: --python, $KEVO_PYTHON, else\n"
    "the older $KEVO_TORCH_PYTHON, else python3 on PATH) and writes DIR/NAME.yaml (DIR:\n"
    "./recipes, NAME: the file's name) and DIR/NAME/ (problem.py, the reference;\n"
    "description.json; README.md, the candidate's contract). The forward's tensor arguments,\n"
    "then the model's parameters and buffers, are the candidate's inputs, in that order.\n"
    "--description uses a recorded description instead of running python. A degenerate\n"
    "problem (constant output, or one that ignores its inputs) is refused. Exit 0 written, 1\n"
    "the bridge failed, 2 bad usage or a problem kevo refuses.\n",
    import_main, 0};
