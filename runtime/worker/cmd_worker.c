/* kevo worker: the evaluator process that owns one GPU (docs/worker.md). Reads request frames
 * on stdin, writes one reply frame per request on stdout, and nothing else there: fd 1 is
 * moved aside at start and pointed at stderr, so even a kernel's printf cannot corrupt the
 * stream. Started by the driver, one per GPU; dies with its parent. */
#include "gpudevice.h"
#include "gpueval.h"
#include "gpuextref.h"
#include "gpuprofile.h"
#include "proto.h"
#include "registry.h"

#include <cjson/cJSON.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

/* Writes msg (with the request's id) and blobs; frees both. */
static int reply(int fd, cJSON *msg, const cJSON *id, kevo_blob *blobs, size_t nblobs) {
  if (id) cJSON_AddItemToObject(msg, "id", cJSON_Duplicate(id, 1));
  kevo_error err = {0};
  int rc = kevo_frame_write(fd, msg, blobs, nblobs, &err);
  if (rc) fprintf(stderr, "kevo worker: %s\n", err.msg);
  cJSON_Delete(msg);
  for (size_t i = 0; i < nblobs; i++)
    free(blobs[i].data);
  return rc;
}

/* An evaluate request where no GPU could be opened: the result's verdict no_gpu. */
static cJSON *no_gpu_result(const char *why) {
  cJSON *r = cJSON_CreateObject();
  char text[2300];
  snprintf(text, sizeof text, "E_NOGPU: %s", why);
  cJSON_AddBoolToObject(r, "ok", 0);
  cJSON_AddStringToObject(r, "verdict", "no_gpu");
  cJSON_AddStringToObject(r, "stage", "verify");
  cJSON_AddStringToObject(r, "message", text);
  return r;
}

static int worker_main(int argc, char **argv) {
  /* --redis: the bridge that takes jobs from Redis for a worker like this one (docs/redis.md);
   * it lives with the driver's files, reached through the command table */
  for (int i = 1; i < argc; i++)
    if (!strcmp(argv[i], "--redis"))
      for (const struct kevo_command *const *c = kevo_commands; *c; c++)
        if (!strcmp((*c)->name, "worker-redis")) return (*c)->main(argc, argv);
  int ordinal = 0;
  const char *replay = NULL;
  pid_t standby_for = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--device") && i + 1 < argc) {
      ordinal = atoi(argv[++i]);
    } else if (!strcmp(argv[i], "--profile-replay") && i + 1 < argc) {
      replay = argv[++i]; /* the profile stage's child, run under ncu (gpuprofile.c) */
    } else if (!strcmp(argv[i], "--profile-standby") && i + 1 < argc) {
      standby_for = (pid_t)atol(argv[++i]); /* ... started ahead, waiting for that worker */
    } else {
      fprintf(stderr, "usage: kevo worker [--device N]\n"
                      "       kevo worker --redis URL ... (kevo worker-redis --help)\n");
      return KEVO_EXIT_USAGE;
    }
  }
  if (replay) return kevo_gpu_profile_replay(replay, ordinal, standby_for);
  pid_t parent = getppid();
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) return KEVO_EXIT_FAILED; /* the parent died before prctl */
  signal(SIGPIPE, SIG_IGN);                         /* a gone driver is an EPIPE, handled */
  int out = dup(STDOUT_FILENO);
  if (out < 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
    fprintf(stderr, "kevo worker: cannot set up stdout: %s\n", strerror(errno));
    return KEVO_EXIT_FAILED;
  }
  kevo_gpu *gpu = NULL;
  kevo_error gerr = {0};
  int opened = 0, rc = KEVO_EXIT_OK;
  for (;;) {
    kevo_frame f;
    kevo_error err = {0};
    if (kevo_frame_read(STDIN_FILENO, &f, -1, &err)) {
      if (err.status == KEVO_E_IO) break; /* the driver closed the pipe: done */
      fprintf(stderr, "kevo worker: %s\n", err.msg);
      rc = KEVO_EXIT_USAGE;
      break;
    }
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(f.header, "id");
    const char *op = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(f.header, "op"));
    int stop = 0, fatal = 0;
    cJSON *msg;
    kevo_blob out_blobs[KEVO_PROTO_MAX_BLOBS];
    size_t nout = 0;
    int needs_gpu = op && (!strcmp(op, "hello") || !strcmp(op, "evaluate") ||
                           !strcmp(op, "inputs") || !strcmp(op, "put_reference"));
    if (needs_gpu && !opened) {
      opened = 1;
      if (kevo_gpu_open(ordinal, 1, &gpu, &gerr)) gpu = NULL;
      const char *timing = getenv("KEVO_WORKER_TIMING");
      if (gpu && timing && *timing == '1') kevo_gpu_print_start(gpu, stderr);
    }
    if (gpu) kevo_gpu_release_lent(gpu);
    if (!op) {
      msg = kevo_gpu_error_reply("E_PARSE", "a request needs an \"op\"");
    } else if (!strcmp(op, "bye")) {
      msg = cJSON_CreateObject();
      cJSON_AddBoolToObject(msg, "ok", 1);
      stop = 1;
    } else if (!strcmp(op, "hello")) {
      if (gpu) {
        msg = cJSON_CreateObject();
        cJSON_AddBoolToObject(msg, "ok", 1);
        cJSON_AddItemToObject(msg, "device", kevo_gpu_device_json(gpu));
      } else {
        msg = kevo_gpu_error_reply(kevo_code(gerr.status), gerr.msg);
      }
    } else if (!strcmp(op, "devices")) { /* every GPU this worker could see (kevo --gpus all) */
      cJSON *list = NULL;
      kevo_error lerr = {0};
      if (kevo_gpu_list(&list, &lerr)) {
        msg = kevo_gpu_error_reply(kevo_code(lerr.status), lerr.msg);
      } else {
        msg = cJSON_CreateObject();
        cJSON_AddBoolToObject(msg, "ok", 1);
        cJSON_AddItemToObject(msg, "devices", list);
      }
    } else if (!strcmp(op, "evaluate")) {
      msg = gpu ? kevo_gpu_evaluate(gpu, f.header, f.blobs, f.nblobs, &fatal)
                : no_gpu_result(gerr.msg);
    } else if (!strcmp(op, "profile")) { /* a child of its own opens the device */
      msg = kevo_gpu_profile(ordinal, f.header, f.blobs, f.nblobs);
    } else if (!strcmp(op, "profile_standby")) {
      msg = kevo_gpu_profile_standby(ordinal);
    } else if (!gpu && needs_gpu) { /* inputs, put_reference */
      msg = kevo_gpu_error_reply("E_NOGPU", gerr.msg);
    } else if (!strcmp(op, "inputs")) {
      msg = kevo_gpu_inputs(gpu, f.header, out_blobs, &nout, &fatal);
    } else if (!strcmp(op, "put_reference")) {
      msg = kevo_gpu_put_reference(gpu, f.header, f.blobs, f.nblobs);
    } else {
      char text[256];
      snprintf(text, sizeof text, "unknown op '%.100s'", op);
      msg = kevo_gpu_error_reply("E_PARSE", text);
    }
    int wrc = reply(out, msg, id, out_blobs, nout);
    kevo_frame_free(&f);
    if (fatal) {
      rc = KEVO_EXIT_FAILED; /* the context is gone: exit, the driver starts a fresh worker */
      gpu = NULL;            /* nothing of it can be released safely */
      break;
    }
    if (stop || wrc) break;
  }
  kevo_gpu_profile_standby_stop();
  kevo_gpu_release_lent(gpu);
  kevo_gpu_close(gpu);
  close(out);
  return rc;
}

const struct kevo_command kevo_cmd_worker = {
    "worker", "the evaluator process that owns a GPU (started by kevo itself)",
    "usage: kevo worker [--device N]\n\n"
    "Reads request frames on stdin and writes reply frames on stdout (docs/worker.md): hello,\n"
    "devices, evaluate, inputs, put_reference, profile, profile_standby, bye. Not meant to be run "
    "by hand: the "
    "driver starts "
    "one\n"
    "per GPU.\n\n"
    "kevo worker --redis redis://host:port/db [--password-env VAR] [--device N] takes jobs from\n"
    "Redis for GPU N instead (kevo worker-redis --help, docs/redis.md).\n",
    worker_main, 1};
