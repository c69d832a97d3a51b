/* main.c: the kevo command line. Finds the command in the generated table and runs it. */
#include "cuda_compile.h"
#include "registry.h"
#include "version.h"

#include <stdio.h>
#include <unistd.h>
#include <string.h>

static void print_usage(FILE *f) {
  fprintf(f,
          "kevo %s: searches for fast GPU kernels (CUDA C and Triton)\n\n"
          "usage: kevo <command> [options]\n       kevo <command> --help\n\ncommands:\n",
          KEVO_VERSION);
  for (const struct kevo_command *const *c = kevo_commands; *c; c++)
    if (!(*c)->hidden) fprintf(f, "  %-9s %s\n", (*c)->name, (*c)->summary);
  fprintf(f, "\nexit codes: 0 success, 1 the job failed, 2 bad usage or bad input\n"
             "the archive is ./kevo.db in the current directory (override with KEVO_DB)\n");
}

static const struct kevo_command *find_command(const char *name) {
  for (const struct kevo_command *const *c = kevo_commands; *c; c++)
    if (strcmp((*c)->name, name) == 0) return *c;
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    print_usage(stderr);
    return KEVO_EXIT_USAGE;
  }
  const char *name = argv[1];
  if (!strcmp(name, "--help") || !strcmp(name, "-h") || !strcmp(name, "help")) {
    if (argc > 2 && strcmp(name, "help") == 0) {
      const struct kevo_command *c = find_command(argv[2]);
      if (!c) {
        fprintf(stderr, "kevo: unknown command '%s' (see kevo --help)\n", argv[2]);
        return KEVO_EXIT_USAGE;
      }
      fputs(c->help, stdout);
      return KEVO_EXIT_OK;
    }
    print_usage(stdout);
    return KEVO_EXIT_OK;
  }
  if (!strcmp(name, "--version")) name = "version";
  const struct kevo_command *c = find_command(name);
  if (!c) {
    fprintf(stderr, "kevo: unknown command '%s' (see kevo --help)\n", name);
    return KEVO_EXIT_USAGE;
  }
  for (int i = 2; i < argc; i++) {
    if (!strcmp(argv[i], "--")) break;
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      fputs(c->help, stdout);
      return KEVO_EXIT_OK;
    }
  }
  int rc = c->main(argc - 1, argv + 1);
  /* A compile given up on (kevo run's --time, a compile timeout) may still run on a thread of
   * its own, NVRTC seeing its cancel only at its next checkpoint. exit() would tear NVRTC's
   * static state down under it and crash a run that has ended well: end without the
   * libraries' destructors instead (kevo's own state is closed by now). */
  if (cuda_compile_abandoned() > 0) {
    fflush(NULL);
    _exit(rc);
  }
  return rc;
}
