/* Launch chunks: finding the block in CUDA and Triton sources, the chunk's environment,
 * strict checking with the chunk's line in every message, and the sandbox. */
#include "check.h"
#include "buf.h"
#include "launch.h"

#include <cjson/cJSON.h>

static const launch_param shape[] = {{"M", 1000}, {"N", 4099}};
static const kevo_define knobs[] = {{"BLOCK", "256"}, {"SCALE", "0.5"}, {"MODE", "fast"}};
static const char *const tensors[] = {"x", "y"};
static const launch_device h200 = {"NVIDIA H200", 132, 9, 0};

static launch_env env_with(const launch_device *dev) {
  launch_env e = {.params = shape,
                  .nparams = 2,
                  .knobs = knobs,
                  .nknobs = 3,
                  .buffers = tensors,
                  .nbuffers = 2,
                  .device = dev,
                  .module = 1};
  return e;
}

/* Resolves chunk (as if it started on line 10 of k.cu); returns status, plan text in out. */
static int resolve(const char *chunk, const launch_device *dev, char *out, size_t cap) {
  launch_env e = env_with(dev);
  cJSON *plan = NULL;
  kevo_error err = {0};
  int rc = launch_resolve(chunk, strlen(chunk), "k.cu", 10, &e, &plan, &err);
  if (rc == KEVO_OK) {
    char *t = cJSON_PrintUnformatted(plan);
    snprintf(out, cap, "%s", t);
    free(t);
    cJSON_Delete(plan);
  } else {
    snprintf(out, cap, "%s", err.msg);
    CHECK(plan == NULL);
  }
  return rc;
}

static void expect_plan(const char *chunk, const char *needle) {
  char out[4096];
  CHECK(resolve(chunk, &h200, out, sizeof out) == KEVO_OK);
  CHECK_STR_CONTAINS(out, needle);
}

static void expect_error(const char *chunk, int status, const char *needle) {
  char out[4096];
  int rc = resolve(chunk, &h200, out, sizeof out);
  CHECK(rc == status);
  if (rc != status) fprintf(stderr, "  status %d for: %s\n", rc, chunk);
  CHECK_STR_CONTAINS(out, needle);
}

static void test_extract(void) {
  launch_block b;
  kevo_error err = {0};
  const char *cu = "#include <x>\n"
                   "// kevo:launch in a line comment is not a block\n"
                   "/* kevo:launch\n"
                   "return {kernels = {{name = 'k', grid = {1}, block = {1}, args = {}}}}\n"
                   "*/\n__global__ void k() {}\n";
  CHECK(launch_extract("cuda", cu, strlen(cu), &b, &err) == KEVO_OK);
  CHECK(b.line == 3);
  CHECK(b.len > 0 && memmem(b.text, b.len, "return {kernels", 15) != NULL);
  CHECK(memmem(b.text, b.len, "*/", 2) == NULL);

  const char *doc = "/** kevo:launch return {kernels = {}} **/\n";
  CHECK(launch_extract("cuda", doc, strlen(doc), &b, &err) == KEVO_OK);
  CHECK(b.len == strlen(" return {kernels = {}} ") && !memcmp(b.text, " return", 7));

  const char *open = "/* kevo:launch\nreturn {}\n";
  CHECK(launch_extract("cuda", open, strlen(open), &b, &err) == KEVO_E_LAUNCH);
  CHECK_STR_CONTAINS(err.msg, "line 1: the kevo:launch comment is never closed");
  CHECK(launch_extract("cuda", "int x;", 6, &b, &err) == KEVO_E_LAUNCH);
  CHECK_STR_CONTAINS(err.msg, "no launch description");

  const char *py = "import triton\n\n"
                   "'''kevo:launch\n"
                   "return {kernels = {{name = 'k', grid = {1}, block = {128}, args = {'x'}}}}\n"
                   "'''\n@triton.jit\ndef k(x): pass\n";
  CHECK(launch_extract("triton", py, strlen(py), &b, &err) == KEVO_OK);
  CHECK(b.line == 3);
  CHECK(memmem(b.text, b.len, "'''", 3) == NULL);
  const char *py2 = "x = 1\n\"\"\"kevo:launch\nreturn {}\n\"\"\"\n";
  CHECK(launch_extract("triton", py2, strlen(py2), &b, &err) == KEVO_OK);
  CHECK(b.line == 2 && memmem(b.text, b.len, "return {}", 9) != NULL);
  const char *assigned = "import triton\nKEVO_LAUNCH = \"\"\"\nreturn {}\n\"\"\"\n";
  CHECK(launch_extract("triton", assigned, strlen(assigned), &b, &err) == KEVO_OK);
  CHECK(b.line == 2 && memmem(b.text, b.len, "return {}", 9) != NULL);
  CHECK(memmem(b.text, b.len, "\"", 1) == NULL);
  const char *comments = "# kevo:launch\n# return {}\n";
  CHECK(launch_extract("triton", comments, strlen(comments), &b, &err) == KEVO_E_LAUNCH);
  CHECK_STR_CONTAINS(err.msg, "'''kevo:launch");
  CHECK(launch_extract("fortran", "x", 1, &b, &err) == KEVO_E_ARG);
}

static void test_env(void) {
  expect_plan("return {kernels = {{name = 'softmax_rows', grid = {M}, block = {BLOCK},\n"
              "  args = {'x', 'y', i32(M), i32(N)}}}}",
              "\"kernels\":[{\"module\":1,\"name\":\"softmax_rows\",\"grid\":[1000,1,1],"
              "\"block\":[256,1,1],\"shared\":0,\"args\":[{\"buf\":\"x\"},{\"buf\":\"y\"},"
              "{\"i32\":1000},{\"i32\":4099}]}]");
  /* cdiv, min, max, knobs of each kind, device, every wrapper, plain numbers */
  expect_plan("return {kernels = {{name = 'k', grid = {cdiv(N, BLOCK), min(M, 7), max(1, 2)},\n"
              "  block = {32, 2}, shared = 4 * BLOCK,\n"
              "  args = {ptr('x'), i64(N * 1000000), u32(7), u64(8), f32(SCALE), f64(1.5), 3, 2.5,"
              " null, device.sms, MODE == 'fast' and 1 or 0}}}}",
              "\"grid\":[17,7,2],\"block\":[32,2,1],\"shared\":1024,\"args\":[{\"buf\":\"x\"},"
              "{\"i64\":4099000000},{\"u32\":7},{\"u64\":8},{\"f32\":0.5},{\"f64\":1.5},"
              "{\"i32\":3},{\"f32\":2.5},{\"null\":true},{\"i32\":132},{\"i32\":1}]");
  /* scratch buffers, sorted by name, usable as args */
  expect_plan("return {scratch = {zz = {bytes = 64}, partial = {bytes = M * 4, zero = true}},\n"
              " kernels = {{name = 'a', grid = {1}, block = {1}, args = {'partial'}},\n"
              "            {name = 'b', grid = {1}, block = {1}, args = {'zz', 'y'}}}}",
              "\"scratch\":[{\"name\":\"partial\",\"bytes\":4000,\"zero\":true},"
              "{\"name\":\"zz\",\"bytes\":64,\"zero\":false}]");
  /* an unknown device: reading it is E_NOGPU, not reading it is fine */
  char out[2048];
  CHECK(resolve("return {kernels = {{name = 'k', grid = {device.sms}, block = {1}, args = {}}}}",
                NULL, out, sizeof out) == KEVO_E_NOGPU);
  CHECK_STR_CONTAINS(out, "device.sms is not known");
  CHECK(resolve("return {kernels = {{name = 'k', grid = {1}, block = {1}, args = {}}}}", NULL, out,
                sizeof out) == KEVO_OK);
}

static void test_errors(void) {
  /* Lua errors name the file's line: the chunk starts on line 10 */
  expect_error("\nlocal b = BLOCKK\n", KEVO_E_LAUNCH, "k.cu:11: unknown name 'BLOCKK'");
  expect_error("return {kernels = {{name = 'k', grid = {1}, block = {1},\n"
               "  args = {i32(1.5)}}}}",
               KEVO_E_LAUNCH, "k.cu:11: i32(x): x must be an integer");
  expect_error(
      "return {kernels = {{name = 'k', grid = {1}, block = {1}, args = {i32(2^40 // 1)}}}}",
      KEVO_E_LAUNCH, "i32(x): 1099511627776 is out of range");
  expect_error("return {kernels = {{name = 'k', grid = {1}, block = {1}, args = {u32(-1)}}}}",
               KEVO_E_LAUNCH, "out of range");
  expect_error("return {kernels = {", KEVO_E_LAUNCH, "k.cu:10:");
  expect_error("x = 1", KEVO_E_LAUNCH, "k.cu:10: assignment to global 'x'");
  /* the result, checked strictly: chunk line and key path */
  expect_error("return 5", KEVO_E_LAUNCH, "k.cu:10: kevo:launch: the chunk must return a table");
  expect_error("return {kernel = {}}", KEVO_E_LAUNCH,
               "k.cu:10: kevo:launch: result: unknown key 'kernel' (allowed: kernels, scratch)");
  expect_error("return {kernels = {}}", KEVO_E_LAUNCH, "kernels: must be a non-empty list");
  expect_error("return {kernels = {{name = 'k', grid = {1}, block = {1}, args = {}, smem = 4}}}",
               KEVO_E_LAUNCH, "kernels[1]: unknown key 'smem'");
  expect_error("return {kernels = {{name = 'k', grid = {1}, block = {1, 0}, args = {}}}}",
               KEVO_E_LAUNCH, "kernels[1].block[2]: must be > 0, got 0");
  expect_error("return {kernels = {{name = 'k', grid = {0}, block = {1}, args = {}}}}",
               KEVO_E_LAUNCH, "kernels[1].grid[1]: must be > 0");
  expect_error("return {kernels = {{name = 'k', grid = {1, 1, 1, 1}, block = {1}, args = {}}}}",
               KEVO_E_LAUNCH, "kernels[1].grid: must be a list of 1 to 3 integers");
  expect_error("return {kernels = {{name = 'k', grid = {1}, block = {64, 32}, args = {}}}}",
               KEVO_E_LAUNCH, "2048 threads in a block");
  expect_error("return {kernels = {{name = 'k', grid = {1}, block = {1}, args = {}},\n"
               " {name = 'k2', grid = {1}, block = {1.5}, args = {}}}}",
               KEVO_E_LAUNCH, "kernels[2].block[1]: must be an integer");
  expect_error("return {kernels = {{name = 'k', grid = {1}, block = {1}, args = {'x', 'z'}}}}",
               KEVO_E_LAUNCH,
               "kernels[1].args[2]: 'z' names no tensor or scratch buffer (known: x, y)");
  expect_error("return {kernels = {{name = 'k', grid = {1}, block = {1}, args = {ptr('w')}}}}",
               KEVO_E_LAUNCH, "ptr('w') names no tensor");
  expect_error("return {kernels = {{name = 'k', grid = {1}, block = {1}, args = {{}}}}}",
               KEVO_E_LAUNCH, "kernels[1].args[1]: an argument is");
  expect_error("return {kernels = {{name = 'k', grid = {1}, block = {1}, args = {5000000000}}}}",
               KEVO_E_LAUNCH, "does not fit a plain i32");
  expect_error("return {kernels = {{name = 'k', grid = {1}, block = {1}, shared = -1, args = {}}}}",
               KEVO_E_LAUNCH, "kernels[1].shared: must be an integer >= 0");
  expect_error("return {kernels = {{name = 'k()', grid = {1}, block = {1}, args = {}}}}",
               KEVO_E_LAUNCH, "kernels[1].name");
  expect_error("return {scratch = {x = {bytes = 4}}, kernels = {{name = 'k', grid = {1}, "
               "block = {1}, args = {}}}}",
               KEVO_E_LAUNCH, "scratch.x: a tensor already has that name");
  expect_error("return {scratch = {s = {bytes = 0}}, kernels = {{name = 'k', grid = {1}, "
               "block = {1}, args = {}}}}",
               KEVO_E_LAUNCH, "scratch.s.bytes: must be an integer > 0");
  expect_error("return {kernels = {{name = 'k', grid = {cdiv(N, 0)}, block = {1}, args = {}}}}",
               KEVO_E_LAUNCH, "cdiv(a, b): b must be > 0");

  /* a knob with a param's name is refused */
  static const kevo_define clash[] = {{"M", "3"}};
  launch_env e = env_with(&h200);
  e.knobs = clash;
  e.nknobs = 1;
  cJSON *plan;
  kevo_error err = {0};
  const char *ok = "return {kernels = {{name = 'k', grid = {1}, block = {1}, args = {}}}}";
  CHECK(launch_resolve(ok, strlen(ok), "k.cu", 1, &e, &plan, &err) == KEVO_E_LAUNCH);
  CHECK_STR_CONTAINS(err.msg, "knob 'M' clashes");
}

static void test_sandbox(void) {
  expect_error("while true do end", KEVO_E_SANDBOX, "budget spent");
  expect_error("local function f(n) return f(n + 1) end\nreturn f(1)", KEVO_E_SANDBOX,
               "budget spent");
  expect_error("local function f(n) return 1 + f(n + 1) end\nreturn f(1)", KEVO_E_SANDBOX,
               "k.cu:10: E_SANDBOX: the chunk used more than");
  expect_error("os.exit(1)", KEVO_E_LAUNCH, "k.cu:10: unknown name 'os'");
  expect_error("return io.open('/etc/passwd')", KEVO_E_LAUNCH, "unknown name 'io'");
  expect_error("return require 'kevo.sys'", KEVO_E_LAUNCH, "unknown name 'require'");
  expect_error("return load('return 1')", KEVO_E_LAUNCH, "unknown name 'load'");
  expect_error("local t = {} for i = 1, 1e7 do t[i] = i end", KEVO_E_SANDBOX, "");
  expect_error("return setmetatable({}, {})", KEVO_E_LAUNCH, "unknown name 'setmetatable'");
  /* Nothing a chunk can run escapes the budgets (issue 13): no pattern (C code no hook
   * reaches), no finalizer or __close handler (no metatables), no module, no coroutine. */
  expect_error("return ('a'):rep(60):find(('a*'):rep(60) .. 'b')", KEVO_E_LAUNCH, "find");
  expect_error("return ('a'):rep(60):match(('a*'):rep(60) .. 'b')", KEVO_E_LAUNCH, "match");
  expect_error("return ('a'):gsub('a', 'b')", KEVO_E_LAUNCH, "gsub");
  expect_error("for w in ('a b'):gmatch('%a') do end", KEVO_E_LAUNCH, "gmatch");
  expect_error("return getmetatable('')", KEVO_E_LAUNCH, "unknown name 'getmetatable'");
  expect_error("local x <close> = {}", KEVO_E_LAUNCH, "non-closable");
  expect_error("return coroutine.wrap(function() end)", KEVO_E_LAUNCH, "unknown name 'coroutine'");
  expect_error("return pcall(error)", KEVO_E_LAUNCH, "unknown name 'pcall'");
  expect_error("return ('x'):rep(1 << 30)", KEVO_E_SANDBOX, "");
  expect_error("local s = 'x' while true do s = s .. s end", KEVO_E_SANDBOX, "");
  char out[2048];
  CHECK(resolve("return {kernels = {{name = ('k%d'):format(BLOCK):sub(1, 4), grid = {1}, "
                "block = {1}, args = {}}}}",
                NULL, out, sizeof out) == KEVO_OK);
  CHECK_STR_CONTAINS(out, "\"k256\"");
}

/* A KernelBench model passes every weight: 1500 tensors in one launch, the parameter bytes
 * counted as the compiler lays them out (each aligned to its size), 32764 the most CUDA takes. */
static void test_many_args(void) {
  enum { NT = 4100 };
  static char names[NT][16];
  static const char *ptrs[NT];
  for (int i = 0; i < NT; i++) {
    snprintf(names[i], sizeof names[i], "w%d", i);
    ptrs[i] = names[i];
  }
  launch_env e = env_with(&h200);
  e.buffers = ptrs;
  e.nbuffers = NT;
  kevo_buf chunk;
  kevo_buf_init(&chunk, 1 << 20);
  /* n pointers (then the sizes), as kevo import's contract writes them */
  int counts[] = {1500, 4095, 4096, 4092};
  for (int c = 0; c < 4; c++) {
    int n = counts[c];
    kevo_buf_reset(&chunk);
    kevo_buf_printf(&chunk, "return {kernels = {{name = 'k', grid = {1}, block = {1}, args = {");
    for (int i = 0; i < n; i++)
      kevo_buf_printf(&chunk, "'w%d', ", i);
    /* 32736 + 4, 8 aligned to 32744, 4, 8 aligned to 32760: 32768 (32760 packed) */
    if (c == 3) kevo_buf_printf(&chunk, "i32(M), 'w0', i32(N), 'w1'");
    kevo_buf_printf(&chunk, "}}}}");
    cJSON *plan = NULL;
    kevo_error err = {0};
    int rc = launch_resolve(chunk.data, chunk.len, "k.cu", 10, &e, &plan, &err);
    if (n == 4096) {
      CHECK(rc == KEVO_E_LAUNCH);
      CHECK_STR_CONTAINS(err.msg, "4096 arguments take 32768 bytes of kernel parameters, more "
                                  "than the 32764");
    } else if (c == 3) {
      CHECK(rc == KEVO_E_LAUNCH);
      CHECK_STR_CONTAINS(err.msg, "4096 arguments take 32768 bytes");
    } else {
      CHECK(rc == KEVO_OK);
      cJSON *args =
          cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(plan, "kernels"), 0), "args");
      CHECK(cJSON_GetArraySize(args) == n);
      const char *last =
          cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(args, n - 1), "buf"));
      CHECK(last && !strcmp(last, names[n - 1]));
    }
    cJSON_Delete(plan);
  }
  kevo_buf_free(&chunk);
  expect_plan("return {kernels = {{name = 'k', grid = {1}, block = {1}, args = {"
              "i32(1), 'x', 1.5, i64(2), f32(1), u32(3), f64(2)}}}}",
              "\"args\":[{\"i32\":1},{\"buf\":\"x\"},{\"f32\":1.5}");
}

int main(void) {
  test_many_args();
  test_extract();
  test_env();
  test_errors();
  test_sandbox();
  CHECK_DONE();
}
