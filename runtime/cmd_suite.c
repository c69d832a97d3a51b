/* kevo suite PATH...: a search on each of many problems as one resumable job (docs/suite.md).
 * The policy is lua/kevo/suite.lua, run in the same sandboxed driver state as kevo run
 * (cmd_run.h), with a larger instruction budget: the state drives every problem's search. */
#include "cmd_run.h"
#include "registry.h"

#define SUITE_INSTR_LIMIT 400000000000ULL

static int suite_main(int argc, char **argv) {
  return kevo_run_host_main("kevo.suite", SUITE_INSTR_LIMIT, argc, argv);
}

const struct kevo_command kevo_cmd_suite = {
    "suite", "search for fast kernels for many problems as one resumable job",
    "usage: kevo suite PATH... [kevo run's options] [--json FILE]\n"
    "       kevo suite --resume SUITE [--gpus ...|--eval ...] [--jobs N] [--db PATH]\n"
    "                  [--out DIR] [--json FILE]\n\n"
    "PATH: a recipe (file or packaged name), a KernelBench problem file (.py: imported first,\n"
    "into OUT/suite-ID/problems/NN/), or a folder of them (its *.yaml and *.py files, by name).\n"
    "Each problem gets a search with kevo run's options (--strategy, --llm, --set, --seed,\n"
    "--arch, --gpus, --eval redis://HOST:PORT/DB [--eval-password-env VAR], --out);\n"
    "--max-evals, --time and --budget-tokens are per problem. Problems run one after another;\n"
    "each batch is spread over the GPUs --gpus gives, or over the Redis workers of --eval\n"
    "(docs/redis.md). KernelBench problems are refused with --eval: their PyTorch reference\n"
    "stays beside one worker; judge them with --gpus on a GPU host. --jobs N (with --eval)\n"
    "searches N problems at once, each in a child kevo (its output in\n"
    "OUT/suite-ID/problem-NN.log); the Redis workers still judge one job at a time each.\n\n"
    "The suite is one job in the archive (kevo runs lists it, strategy 'suite'); each problem's\n"
    "search is a run of its own. --resume SUITE goes on after a kill: finished problems are read\n"
    "back, the one cut short is resumed from its journal, the rest run.\n\n"
    "A progress bar on stderr shows problems done, evaluations, the current problem's best,\n"
    "tokens and time. At the end: a table per problem (best speed-up over the reference, over\n"
    "PyTorch eager and torch.compile where the reference is PyTorch, % of roofline, verdict\n"
    "counts) and fast_p at p = 0, 1, 1.5, 2 and the geometric mean speed-up; --json FILE writes\n"
    "them as JSON; kevo report SUITE [--html FILE] shows them again.\n\n"
    "exit: 0 a verified kernel was found for some problem, 1 none (or the suite failed or was\n"
    "stopped), 2 bad usage or input\n",
    suite_main, 0};
