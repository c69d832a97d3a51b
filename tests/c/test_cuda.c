/* test_cuda: NVRTC compiles for real here (no GPU needed): diagnostics in source coordinates,
 * ptxas resources, the include policy, defines, the cache (memory, disk, corrupt entries),
 * compile_many, the log cap and the timeout. */
#include "check.h"
#include "cuda_compile.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char *VADD =
    "extern \"C\" __global__ void vector_add(const float* a, const float* b, float* c, int n) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) c[i] = a[i] + b[i];\n"
    "}\n";

static int compile_src(const char *src, const kevo_define *defs, size_t ndefs, cuda_module **m,
                       kevo_error *err) {
  cuda_compile_opts o = {.source = src, .len = strlen(src), .defines = defs, .ndefines = ndefs};
  return cuda_compile(&o, m, err);
}

static const cuda_kernel_info *kernel(const cuda_module *m, const char *name) {
  for (size_t i = 0; m && i < m->nkernels; i++)
    if (strcmp(m->kernels[i].name, name) == 0) return &m->kernels[i];
  return NULL;
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void test_basics(void) {
  int major, minor;
  cuda_nvrtc_version(&major, &minor);
  CHECK(major >= 12);
  CHECK(strncmp(cuda_default_arch(), "sm_", 3) == 0);
  cuda_module *m = NULL;
  kevo_error err = {0};
  CHECK(compile_src(VADD, NULL, 0, &m, &err) == KEVO_OK);
  CHECK(m && m->ok && m->cubin_size > 64 &&
        memcmp(m->cubin,
               "\x7f"
               "ELF",
               4) == 0);
  CHECK(m && strlen(m->hash) == 64 && strcmp(m->arch, "sm_90") == 0);
  const cuda_kernel_info *k = kernel(m, "vector_add");
  CHECK(k && k->registers > 0 && k->registers < 64 && k->local_bytes == 0);
  CHECK(m && m->ndiags == 0);
  cuda_module_free(m);

  /* fp16/bf16 headers of the toolkit work */
  const char *half = "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n"
                     "extern \"C\" __global__ void h(__half* x, __nv_bfloat16* y) {\n"
                     "  x[0] = __float2half(1.0f); y[0] = __float2bfloat16(2.0f);\n}\n";
  CHECK(compile_src(half, NULL, 0, &m, &err) == KEVO_OK);
  cuda_module_free(m);
}

static void test_resources(void) {
  const char *src =
      "extern \"C\" __global__ void shm(float* o) {\n"
      "  __shared__ float s[4096];\n"
      "  s[threadIdx.x] = o[threadIdx.x];\n  __syncthreads();\n"
      "  o[threadIdx.x] = s[4095 - threadIdx.x];\n}\n"
      "extern \"C\" __global__ void stack(float* o, int k) {\n"
      "  float a[1024];\n"
      "  for (int i = 0; i < 1024; i++) a[(i * k) & 1023] = o[i];\n"
      "  o[threadIdx.x] = a[(threadIdx.x * k) & 1023];\n}\n"
      "extern \"C\" __global__ void __launch_bounds__(1024, 2) spill(const float* in, float* "
      "out) {\n"
      "  float v[64];\n"
      "#pragma unroll\n"
      "  for (int i = 0; i < 64; i++) v[i] = in[threadIdx.x * 64 + i];\n"
      "  float acc = 0.f;\n"
      "#pragma unroll\n"
      "  for (int r = 0; r < 8; r++)\n"
      "#pragma unroll\n"
      "    for (int i = 0; i < 64; i++) acc += v[i] * v[(i * 7 + r) & 63];\n"
      "  out[threadIdx.x] = acc;\n}\n"
      "template <int B> __global__ void tmpl(float* o) { o[threadIdx.x] = B; }\n"
      "template __global__ void tmpl<3>(float*);\n";
  cuda_module *m = NULL;
  kevo_error err = {0};
  CHECK(compile_src(src, NULL, 0, &m, &err) == KEVO_OK);
  const cuda_kernel_info *k = kernel(m, "shm");
  CHECK(k && k->shared_static == 16384 && k->local_bytes == 0 && k->spill_stores == 0);
  k = kernel(m, "stack");
  CHECK(k && k->local_bytes >= 4096 && k->shared_static == 0);
  k = kernel(m, "spill");
  CHECK(k && k->registers > 0 && k->registers <= 32 && k->spill_stores > 0 && k->spill_loads > 0);
  CHECK(kernel(m, "_Z4tmplILi3EEvPf") != NULL); /* the cubin's (mangled) entry name */
  CHECK(m && m->nkernels == 4);
  CHECK(m && m->log && !strstr(m->log, "ptxas info")); /* resources are in kernels[] */
  cuda_module_free(m);

  /* a ptxas error (too much static shared memory): NVRTC drops it from a verbose log, so
   * the compile runs again quietly to have the message */
  const char *big = "extern \"C\" __global__ void big(float* o) {\n"
                    "  __shared__ float s[20000];\n  s[threadIdx.x] = 1;\n  __syncthreads();\n"
                    "  o[threadIdx.x] = s[19999 - threadIdx.x];\n}\n";
  CHECK(compile_src(big, NULL, 0, &m, &err) == KEVO_E_COMPILE);
  CHECK(m && !m->ok && m->ndiags >= 1);
  CHECK_STR_CONTAINS(err.msg, "too much shared data");
  cuda_module_free(m);
}

static void test_diagnostics(void) {
  const char *src = "#include <cuda_fp16.h>\n"
                    "extern \"C\" __global__ void f(float* out) {\n"
                    "\tint unused = 1;\n"
                    "  out[0] = yy + 1;\n"
                    "}\n";
  cuda_module *m = NULL;
  kevo_error err = {0};
  cuda_compile_opts o = {.source = src, .name = "cand.cu"};
  CHECK(cuda_compile(&o, &m, &err) == KEVO_E_COMPILE);
  CHECK(m && !m->ok && !m->cubin);
  CHECK_STR_CONTAINS(err.msg, "cand.cu:4:12: identifier \"yy\" is undefined");
  int saw_error = 0, saw_warning = 0;
  for (size_t i = 0; m && i < m->ndiags; i++) {
    cuda_diag *d = &m->diags[i];
    if (strcmp(d->severity, "error") == 0 && d->line == 4 && d->col == 12) saw_error = 1;
    if (strcmp(d->severity, "warning") == 0 && d->line == 3 && d->col == 6) saw_warning = 1;
  }
  CHECK(saw_error && saw_warning);
  CHECK(m && strstr(m->log, "cand.cu(4): error"));
  cuda_module_free(m);

  /* the log is capped and says so */
  kevo_error e2 = {0};
  char *many = malloc(400000);
  strcpy(many, "extern \"C\" __global__ void f(float* o) {\n");
  for (int i = 0; i < 3000; i++)
    sprintf(many + strlen(many), "  int unused_variable_number_%d = %d;\n", i, i);
  strcat(many, "  o[0] = nope;\n}\n");
  CHECK(compile_src(many, NULL, 0, &m, &e2) == KEVO_E_COMPILE);
  CHECK(m && strlen(m->log) <= 65536 + 64);
  CHECK_STR_CONTAINS(m ? m->log : NULL, "[log truncated at 65536 bytes]");
  CHECK_STR_CONTAINS(e2.msg, "candidate.cu:3002:"); /* the error is found past the cap */
  cuda_module_free(m);
  free(many);
}

static void expect_refused(const char *src, int line, const char *why) {
  cuda_module *m = NULL;
  kevo_error err = {0};
  int rc = compile_src(src, NULL, 0, &m, &err);
  CHECK(rc == KEVO_E_COMPILE);
  CHECK(m && m->ndiags == 1 && m->diags[0].line == line);
  CHECK_STR_CONTAINS(err.msg, why);
  if (rc != KEVO_E_COMPILE || !m || m->diags[0].line != line)
    fprintf(stderr, "  source: %s\n  got: %s\n", src, err.msg);
  cuda_module_free(m);
}

static void test_includes(void) {
  FILE *f = fopen("kevo_local_header.h", "w"); /* NVRTC would read this from the cwd */
  if (f) {
    fputs("#define LOCAL 1\n", f);
    fclose(f);
  }
  expect_refused("#include \"/etc/hostname\"\n", 1, "absolute paths are not allowed");
  expect_refused("\n\n  #  include <../include/cuda_fp16.h>\n", 3, "'..'");
  expect_refused("#include \"kevo_local_header.h\"\n", 1, "no such header: kevo compiles the one");
  expect_refused("#define H \"/etc/hostname\"\n#include H\n", 2, "computed");
  expect_refused("int x;\n%:include </etc/hostname>\n", 2, "absolute");
  expect_refused("/* c */ #\\\ninclude \"/etc/hostname\"\n", 1, "absolute");
  expect_refused("int a = 1'000;\n#if __has_include(\"/etc/hostname\")\n#endif\n", 2,
                 "__has_include");
  expect_refused("#include_next <stdio.h>\n", 1, "not a CUDA toolkit header");
  expect_refused("#include <cmath>\n#include <torch/extension.h>\n", 2,
                 "a host header: kevo compiles device code only");
  expect_refused("#include <vector>\n", 1, "a host header");
  expect_refused("extern \"C\" __global__ void f(float* o) {\n  o[0] = 1;\n}\n"
                 "#include \"a\\b.h\"\n",
                 4, "backslash");
  /* mentions in comments, strings and raw strings are not directives */
  const char *fine = "// #include \"/etc/hostname\"\n/* #include </etc/x> */\n"
                     "#include <cuda_fp16.h>\n#include \"cuda_bf16.h\"\n"
                     "__device__ const char* s = \"#include </etc/x>\";\n"
                     "__device__ const char* r = R\"x(\n#include </etc/x>\n)x\";\n"
                     "__device__ char c = '#';\n"
                     "extern \"C\" __global__ void f(float* o) { o[0] = 1'000; }\n";
  cuda_module *m = NULL;
  kevo_error err = {0};
  CHECK(compile_src(fine, NULL, 0, &m, &err) == KEVO_OK);
  if (!m || !m->ok) fprintf(stderr, "  %s\n", err.msg);
  cuda_module_free(m);
  remove("kevo_local_header.h");
}

/* What nvcc gives CUDA C without an #include, and the C and C++ headers kernels name, compile
 * under NVRTC too (runtime/cudashim). */
static void test_c_headers(void) {
  const char *implicit = "extern \"C\" __global__ void f(float* o, int64_t n) {\n"
                         "  constexpr float lo = -INFINITY;\n"
                         "  float m = lo, pi = (float)M_PI;\n"
                         "  if (n < INT_MAX && !isnan(NAN)) m = std::max(m, std::exp(o[0]));\n"
                         "  o[0] = m + pi + FLT_MAX * 0 + HUGE_VALF * 0;\n"
                         "}\n";
  const char *named = "#include <cfloat>\n#include <cmath>\n#include <math.h>\n"
                      "#include <cstdint>\n#include <climits>\n#include <cassert>\n"
                      "#include <limits>\n#include <cstdio>\n#include <algorithm>\n"
                      "#include <cuda_fp16.h>\n#include <cub/cub.cuh>\n"
                      "extern \"C\" __global__ void f(float* o, uint32_t n) {\n"
                      "  float lo = std::numeric_limits<float>::lowest();\n"
                      "  assert(n < UINT32_MAX);\n"
                      "  typedef cub::BlockReduce<float, 128> R;\n"
                      "  __shared__ typename R::TempStorage t;\n"
                      "  float s = R(t).Reduce(o[threadIdx.x], cub::Max());\n"
                      "  if (threadIdx.x == 0) o[0] = fmaxf(lo, s) + FLT_EPSILON;\n"
                      "}\n";
  const char *srcs[] = {implicit, named};
  for (int i = 0; i < 2; i++) {
    cuda_module *m = NULL;
    kevo_error err = {0};
    CHECK(compile_src(srcs[i], NULL, 0, &m, &err) == KEVO_OK);
    if (!m || !m->ok) fprintf(stderr, "  source %d: %s\n", i, err.msg);
    cuda_module_free(m);
  }
}

static void test_defines_and_arch(void) {
  const char *src = "#if BLOCK != 256\n#error BLOCK must be 256\n#endif\n"
                    "#ifndef USE_X\n#error no USE_X\n#endif\n"
                    "extern \"C\" __global__ void f(float* o) { o[0] = BLOCK; }\n";
  cuda_module *m = NULL, *m2 = NULL;
  kevo_error err = {0};
  kevo_define good[] = {{"USE_X", NULL}, {"BLOCK", "256"}};
  CHECK(compile_src(src, good, 2, &m, &err) == KEVO_OK);
  kevo_define swapped[] = {{"BLOCK", "256"}, {"USE_X", NULL}};
  CHECK(compile_src(src, swapped, 2, &m2, &err) == KEVO_OK);
  CHECK(m && m2 && strcmp(m->hash, m2->hash) == 0); /* order of defines does not matter */
  cuda_module_free(m);
  cuda_module_free(m2);
  kevo_define other[] = {{"BLOCK", "128"}, {"USE_X", NULL}};
  CHECK(compile_src(src, other, 2, &m, &err) == KEVO_E_COMPILE);
  CHECK_STR_CONTAINS(err.msg, "candidate.cu:2:");
  cuda_module_free(m);

  kevo_define bad1[] = {{"2BAD", "1"}};
  CHECK(compile_src(src, bad1, 1, &m, &err) == KEVO_E_ARG && !m);
  kevo_define bad2[] = {{"A", "1\n#include </etc/hostname>"}};
  CHECK(compile_src(src, bad2, 1, &m, &err) == KEVO_E_ARG && !m);
  kevo_define bad3[] = {{"A", "1"}, {"A", "2"}};
  CHECK(compile_src(src, bad3, 2, &m, &err) == KEVO_E_ARG && !m);
  kevo_define bad4[] = {{"A-B", NULL}};
  CHECK(compile_src(src, bad4, 1, &m, &err) == KEVO_E_ARG && !m);

  const char *arches[] = {"sm_9", "compute_90", "sm_90x", "sm_20", "", "sm_9000"};
  for (size_t i = 0; i < sizeof arches / sizeof arches[0]; i++) {
    cuda_compile_opts o = {.source = VADD, .arch = arches[i]};
    CHECK(cuda_compile(&o, &m, &err) == KEVO_E_ARG && !m);
  }
  cuda_compile_opts o = {.source = VADD, .arch = "sm_80", .lineinfo = 1};
  CHECK(cuda_compile(&o, &m, &err) == KEVO_OK && m && strcmp(m->arch, "sm_80") == 0);
  cuda_compile_opts o2 = {.source = VADD, .arch = "sm_80"};
  CHECK(cuda_compile(&o2, &m2, &err) == KEVO_OK && m2);
  CHECK(m && m2 && strcmp(m->hash, m2->hash) != 0); /* lineinfo is part of the key */
  cuda_module_free(m);
  cuda_module_free(m2);
  cuda_compile_opts o3 = {.source = VADD, .name = "../x.cu"};
  CHECK(cuda_compile(&o3, &m, &err) == KEVO_E_ARG && !m);
}

static void test_cache(const char *dir) {
  /* a source no other test compiles, so the first compile is a miss */
  char src[512];
  snprintf(src, sizeof src, "%s// cache test %ld\n", VADD, (long)getpid());
  cuda_module *m = NULL;
  kevo_error err = {0};
  CHECK(compile_src(src, NULL, 0, &m, &err) == KEVO_OK && m && m->cached == 0);
  char hash[KEVO_HASH_HEX];
  snprintf(hash, sizeof hash, "%s", m ? m->hash : "");
  size_t size = m ? m->cubin_size : 0;
  cuda_module_free(m);
  CHECK(compile_src(src, NULL, 0, &m, &err) == KEVO_OK && m && m->cached == 1);
  CHECK(m && m->cubin_size == size && kernel(m, "vector_add"));
  cuda_module_free(m);

  cuda_cache_clear();
  CHECK(compile_src(src, NULL, 0, &m, &err) == KEVO_OK && m && m->cached == 2);
  const cuda_kernel_info *k = kernel(m, "vector_add");
  CHECK(m && m->cubin_size == size && k && k->registers > 0);
  cuda_module_free(m);

  /* a corrupt cubin on disk is a miss, and the entry is written again */
  char path[1024];
  snprintf(path, sizeof path, "%s/cuda/%.2s/%s.cubin", dir, hash, hash);
  FILE *f = fopen(path, "r+b");
  CHECK(f != NULL);
  if (f) {
    fseek(f, 100, SEEK_SET);
    fputc(0x5a, f);
    fputc(0xa5, f);
    fclose(f);
  }
  cuda_cache_clear();
  CHECK(compile_src(src, NULL, 0, &m, &err) == KEVO_OK && m && m->cached == 0);
  cuda_module_free(m);
  cuda_cache_clear();
  CHECK(compile_src(src, NULL, 0, &m, &err) == KEVO_OK && m && m->cached == 2);
  cuda_module_free(m);
  /* truncated JSON too */
  snprintf(path, sizeof path, "%s/cuda/%.2s/%s.json", dir, hash, hash);
  CHECK(truncate(path, 10) == 0);
  cuda_cache_clear();
  CHECK(compile_src(src, NULL, 0, &m, &err) == KEVO_OK && m && m->cached == 0);
  cuda_module_free(m);

  /* compile errors are cached with their diagnostics */
  const char *bad = "extern \"C\" __global__ void f(float* o) {\n  o[0] = zz;\n}\n";
  CHECK(compile_src(bad, NULL, 0, &m, &err) == KEVO_E_COMPILE);
  cuda_module_free(m);
  cuda_cache_clear();
  CHECK(compile_src(bad, NULL, 0, &m, &err) == KEVO_E_COMPILE && m && m->cached == 2);
  CHECK(m && m->ndiags == 1 && m->diags[0].line == 2 && m->diags[0].col == 10);
  CHECK_STR_CONTAINS(err.msg, "candidate.cu:2:10:");
  cuda_module_free(m);

  /* no_cache neither reads nor writes */
  cuda_compile_opts o = {.source = src, .no_cache = 1};
  CHECK(cuda_compile(&o, &m, &err) == KEVO_OK && m && m->cached == 0);
  cuda_module_free(m);
}

static void test_many(void) {
  char srcs[4][512];
  for (int i = 0; i < 4; i++)
    snprintf(srcs[i], sizeof srcs[i], "%s// many %d %ld\n", VADD, i, (long)getpid());
  cuda_compile_opts opts[7] = {
      {.source = srcs[0]}, {.source = srcs[1]},
      {.source = srcs[0]}, {.source = "extern \"C\" __global__ void f(float* o) { o[0] = q; }\n"},
      {.source = srcs[2]}, {.source = srcs[3], .arch = "sm_bad"},
      {.source = srcs[1]},
  };
  cuda_module *out[7];
  int rcs[7];
  kevo_error errs[7];
  cuda_compile_many(opts, 7, out, rcs, errs);
  CHECK(rcs[0] == KEVO_OK && rcs[1] == KEVO_OK && rcs[2] == KEVO_OK && rcs[4] == KEVO_OK);
  CHECK(rcs[3] == KEVO_E_COMPILE && out[3] && out[3]->ndiags == 1);
  CHECK_STR_CONTAINS(errs[3].msg, "candidate.cu:1:");
  CHECK(rcs[5] == KEVO_E_ARG && !out[5]);
  CHECK(rcs[6] == KEVO_OK && out[6] && out[6]->cached == 1);
  CHECK(out[0] && out[2] && strcmp(out[0]->hash, out[2]->hash) == 0 && out[2]->cached == 1);
  CHECK(out[0] && out[0]->cached == 0 && out[1] && strcmp(out[0]->hash, out[1]->hash) != 0);
  for (int i = 0; i < 7; i++)
    cuda_module_free(out[i]);
}

static void test_timeout(void) {
  /* 2^18 statements from nested macros: the front end takes seconds, and NVRTC calls no flow
   * callback inside it, so this is the case where the compile is given up on */
  const char *slow = "#define A1(x) x x\n#define A2(x) A1(A1(x))\n#define A4(x) A2(A2(x))\n"
                     "#define A8(x) A4(A4(x))\n#define A16(x) A8(A8(x))\n"
                     "extern \"C\" __global__ void k(float* o) {\n  float s = 0.f;\n"
                     "  A16(A2(s += o[threadIdx.x & 7] * 1.0001f;))\n  o[0] = s;\n}\n";
  cuda_module *m = NULL;
  kevo_error err = {0};
  cuda_compile_opts o = {.source = slow, .timeout_s = 0.3, .no_cache = 1};
  double t0 = now_s();
  CHECK(cuda_compile(&o, &m, &err) == KEVO_E_TIMEOUT && !m);
  double waited = now_s() - t0;
  CHECK(waited < 0.3 + 2.0);
  CHECK_STR_CONTAINS(err.msg, "took longer than 0.3 s");
  CHECK(cuda_compile_drain(300) == 0); /* the abandoned compile ends by itself */
  cuda_compile_opts bad = {.source = VADD, .timeout_s = -1};
  CHECK(cuda_compile(&bad, &m, &err) == KEVO_E_ARG);
}

int main(void) {
  char dir[] = "kevo-cuda-cache-XXXXXX";
  if (!mkdtemp(dir)) return 1;
  char abs[1024];
  if (!realpath(dir, abs)) return 1;
  setenv("KEVO_CACHE", abs, 1);
  test_basics();
  test_resources();
  test_diagnostics();
  test_includes();
  test_c_headers();
  test_defines_and_arch();
  test_cache(abs);
  test_many();
  test_timeout();
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", abs);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", abs);
  CHECK_DONE();
}
