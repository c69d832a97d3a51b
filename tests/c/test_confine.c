/* test_confine.c: a confined process (confine.h) cannot open files (even to read, where the
 * kernel has Landlock), write or create them, make sockets, exec, fork, or ptrace; it can still
 * compute, allocate, and read and write the descriptors it holds. Each case runs in a child
 * that reports one byte per check over a pipe. */
#include "check.h"
#include "confine.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

enum { N_CHECKS = 12 };

static void child(int out, const char *dir) {
  char r[N_CHECKS];
  memset(r, '?', sizeof r);
  kevo_confine_opts o = {.cpu_s = 30, .as_bytes = (size_t)4 << 30, .max_fds = 64};
  int abi = 0;
  char note[256];
  kevo_error err = {0};
  if (kevo_confine(&o, &abi, note, sizeof note, &err)) {
    dprintf(2, "confine: %s\n", err.msg);
    _exit(3);
  }
  char path[512];
  snprintf(path, sizeof path, "%s/written", dir);
  r[0] = open(path, O_WRONLY | O_CREAT, 0600) < 0 && errno == EPERM ? '1' : '0';
  r[1] = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600) < 0 ? '1' : '0';
  r[2] = socket(AF_INET, SOCK_STREAM, 0) < 0 && errno == EPERM ? '1' : '0';
  r[3] = socket(AF_UNIX, SOCK_STREAM, 0) < 0 ? '1' : '0';
  char *argv[] = {"/bin/true", NULL}, *envp[] = {NULL};
  r[4] = execve("/bin/true", argv, envp) < 0 && errno == EPERM ? '1' : '0';
  pid_t p = fork();
  if (p == 0) _exit(0);
  r[5] = p < 0 ? '1' : '0';
  r[6] = ptrace(PTRACE_TRACEME, 0, NULL, NULL) < 0 ? '1' : '0';
  /* reading a file: refused by Landlock (where the kernel has it) */
  int fd = open("/etc/hostname", O_RDONLY);
  r[7] = abi == 0 ? 's' : (fd < 0 ? '1' : '0');
  if (fd >= 0) close(fd);
  void *m = malloc(64 << 20); /* memory still comes */
  r[8] = m ? '1' : '0';
  if (m) memset(m, 1, 64 << 20);
  free(m);
  struct rlimit rl;
  r[9] = getrlimit(RLIMIT_FSIZE, &rl) == 0 && rl.rlim_max == 0 ? '1' : '0';
  r[10] = mkdir(path, 0700) < 0 ? '1' : '0';
  r[11] = unlink("/etc/hostname") < 0 ? '1' : '0';
  ssize_t w = write(out, r, sizeof r); /* the descriptors it holds still work */
  (void)w;
  _exit(0);
}

int main(void) {
  char dir[] = "/tmp/kevo_confine_XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  int pp[2];
  CHECK(pipe(pp) == 0);
  pid_t pid = fork();
  if (pid == 0) {
    close(pp[0]);
    child(pp[1], dir);
  }
  close(pp[1]);
  char r[N_CHECKS + 1] = {0};
  ssize_t n = read(pp[0], r, N_CHECKS);
  int st = 0;
  waitpid(pid, &st, 0);
  CHECK(n == N_CHECKS);
  printf("landlock ABI %d here; checks: %s\n", kevo_landlock_abi(), r);
  for (int i = 0; i < N_CHECKS; i++) {
    if (r[i] != '1' && r[i] != 's') fprintf(stderr, "check %d failed in the confined child\n", i);
    CHECK(r[i] == '1' || r[i] == 's');
  }
  char path[600];
  snprintf(path, sizeof path, "%s/written", dir);
  CHECK(access(path, F_OK) != 0); /* nothing was made */
  rmdir(dir);
  CHECK_DONE();
}
