/* launch.h: launch chunks (docs/architecture.md "Launch chunks").
 *
 * A candidate says how it is launched in a short Lua chunk: from the recipe, from the caller,
 * or from a block in the source itself:
 *   CUDA:   a comment    / * kevo:launch ... * /   (the first one in the file)
 *   Triton: a Python triple-quoted string that starts with kevo:launch, either quote kind:
 *           '''kevo:launch ... '''   or   """kevo:launch ... """   (the first one in the file),
 *           else the string assigned to KEVO_LAUNCH = """...""" (docs/triton.md).
 *           `# kevo:launch` comment lines are not read: put the chunk in the string.
 * The chunk runs in a fresh sandbox (small memory, instruction and time budget) whose only
 * globals are the shape's params, the candidate's knobs, cdiv, min, max, the scalar wrappers
 * i32 i64 u32 u64 f32 f64, ptr(name), null (a null pointer argument) and device. Its result is
 * checked strictly and resolved into a plan: plain JSON data that the worker replays with no
 * Lua in the timed loop. Knows nothing of the recipe loader: the caller passes names and values. */
#ifndef KEVO_LAUNCH_H
#define KEVO_LAUNCH_H

#include <stddef.h>
#include <stdint.h>

#include "cuda_compile.h"
#include "status.h"

typedef struct cJSON cJSON;

/* A launch block found in a source: its text (a pointer into the source, not owned), and the
 * 1-based line of the source where that text begins (the marker's line). */
typedef struct launch_block {
  const char *text;
  size_t len;
  int line;
} launch_block;

/* Finds the kevo:launch block of a source in language `lang` ("cuda" or "triton").
 * KEVO_OK with *out filled; KEVO_E_LAUNCH when there is none, or it is not closed, with a
 * message a person can act on; KEVO_E_ARG for an unknown language. */
int launch_extract(const char *lang, const char *source, size_t len, launch_block *out,
                   kevo_error *err);

typedef struct launch_param {
  const char *name;
  int64_t value;
} launch_param;

/* What a chunk may see of the device. name NULL means unknown: then reading any device field
 * fails with E_NOGPU (the chunk needs a GPU to resolve). */
typedef struct launch_device {
  const char *name;
  int sms;
  int cc_major, cc_minor;
} launch_device;

typedef struct launch_env {
  const launch_param *params; /* the shape */
  size_t nparams;
  const kevo_define *knobs; /* values as text: integers become Lua integers, other numbers
                               floats, true/false booleans, anything else a string */
  size_t nknobs;
  const char *const *buffers; /* tensor names that args may name (inputs and outputs) */
  size_t nbuffers;
  const launch_device *device; /* NULL: unknown */
  int module;                  /* index written into every kernel's "module" */
  int block_optional;          /* 1: a launch may leave out block (Triton sources: the block
                                  comes from num_warps); the plan then has no "block" */
} launch_env;

/* Runs chunk `text` (named `chunkname`, e.g. "softmax.cu"; its first line is line `first_line`
 * of that file) in a sandbox with env, checks what it returns and resolves it into a plan:
 *   {"scratch": [{"name","bytes","zero"}...], "kernels": [{"module","name","grid":[x,y,z],
 *    "block":[x,y,z],"shared","args":[{"buf":n}|{"i32":v}|...|{"null":true}]}...]}
 * KEVO_OK with *plan (caller frees with cJSON_Delete). KEVO_E_LAUNCH when the chunk fails or
 * returns something malformed: the message starts "chunkname:LINE:" (the line the Lua error
 * names, or the chunk's first line for a bad result) and names the key path
 * ("kernels[1].block[2]"). KEVO_E_NOGPU when it read a device field and no device is known.
 * KEVO_E_SANDBOX when it broke the sandbox or spent its budget. */
int launch_resolve(const char *text, size_t len, const char *chunkname, int first_line,
                   const launch_env *env, cJSON **plan, kevo_error *err);

#endif
