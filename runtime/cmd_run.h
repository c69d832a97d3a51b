/* cmd_run.h: the sandboxed driver state `kevo run` and `kevo suite` share (runtime/cmd_run.c):
 * a sandbox with the run's memory cap and the given instruction budget, seeded by --seed,
 * Ctrl-C noticed, and require(module).main(argv, host) called with the privileged host table
 * (read and write files, the progress line, the LLM and gpus settings, list_dir, import). */
#ifndef KEVO_CMD_RUN_H
#define KEVO_CMD_RUN_H

#include <stdint.h>

/* Returns main's exit code; a state that breaks marks the run it had started failed. */
int kevo_run_host_main(const char *module, uint64_t instr_limit, int argc, char **argv);

#endif
