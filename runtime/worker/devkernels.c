/* devkernels.c: the worker's own kernels as CUDA C source, compiled with NVRTC at worker start
 * for the device in hand (no toolkit-version or arch guesswork baked into the binary). */
#include "devkernels.h"

#include <nvrtc.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char devk_source[] =
    "typedef unsigned long long u64; typedef unsigned int u32;\n"
    "typedef unsigned short u16; typedef unsigned char u8;\n"
    "enum { F32, F16, BF16, F64, I32, I64, U8, I8, BOOL, E4M3, E5M2 };\n"
    "__device__ int esize(int dt) { return (dt == F16 || dt == BF16) ? 2\n"
    "  : (dt == F64 || dt == I64) ? 8 : (dt == F32 || dt == I32) ? 4 : 1; }\n"
    "__device__ bool is_int(int dt) {\n"
    "  return dt == I32 || dt == I64 || dt == U8 || dt == I8 || dt == BOOL; }\n"
    /* splitmix64's finalizer: a counter-based generator, value i depends on (key, i) only */
    "__device__ u64 mix64(u64 z) {\n"
    "  z += 0x9E3779B97F4A7C15ull; z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;\n"
    "  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull; return z ^ (z >> 31); }\n"
    "__device__ double unit(u64 h) { return (double)(h >> 11) * (1.0 / 9007199254740992.0); }\n"
    "__device__ double draw(u64 key, u64 i, int kind, double a, double b) {\n"
    "  u64 h = mix64(key ^ mix64(i));\n"
    "  if (kind == 0) {\n"
    "    double u1 = ((double)(h >> 11) + 1.0) * (1.0 / 9007199254740992.0);\n"
    "    return a + b * sqrt(-2.0 * log(u1)) * cospi(2.0 * unit(mix64(h)));\n"
    "  }\n"
    "  if (kind == 1) return a + (b - a) * unit(h);\n"
    "  double span = b - a; if (span < 1.0) return a;\n"
    "  return a + floor(unit(h) * span);\n"
    "}\n"
    "__device__ u16 f2h(float x) { u16 r; asm(\"cvt.rn.f16.f32 %0, %1;\" : \"=h\"(r) : \"f\"(x));"
    " return r; }\n"
    "__device__ float h2f(u16 x) { float r; asm(\"cvt.f32.f16 %0, %1;\" : \"=f\"(r) : \"h\"(x));"
    " return r; }\n"
    /* bf16 round to nearest even by hand (works on every arch); NaN stays NaN */
    "__device__ u16 f2bf(float x) { u32 u = __float_as_uint(x);\n"
    "  if ((u & 0x7fffffffu) > 0x7f800000u) return (u16)((u >> 16) | 0x40u);\n"
    "  return (u16)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16); }\n"
    "__device__ float bf2f(u16 x) { return __uint_as_float((u32)x << 16); }\n"
    /* FP8 by hand (no sm_89 instructions needed): E4M3 ("fn") rounds to nearest even and
     * saturates at 448, NaN stays NaN (0x7F); E5M2 is an f16 rounded to its top byte */
    "__device__ u8 f2e4m3(float x) { u8 s = (__float_as_uint(x) >> 24) & 0x80u;\n"
    "  float a = fabsf(x); if (isnan(x)) return s | 0x7fu; if (a >= 448.f) return s | 0x7eu;\n"
    "  if (a < 0.015625f) return s | (u8)__float2int_rn(a * 512.f);\n"
    "  int e; float f = frexpf(a, &e); int E = e + 6, m = __float2int_rn((2.f * f - 1.f) * 8.f);\n"
    "  if (m == 8) { m = 0; E++; } if (E > 15 || (E == 15 && m == 7)) return s | 0x7eu;\n"
    "  return s | (u8)(E << 3) | (u8)m; }\n"
    "__device__ float e4m32f(u8 b) { int e = (b >> 3) & 15, m = b & 7; float v;\n"
    "  if (e == 15 && m == 7) v = __uint_as_float(0x7fc00000u);\n"
    "  else v = e ? ldexpf(1.f + m / 8.f, e - 7) : ldexpf((float)m, -9);\n"
    "  return b & 0x80u ? -v : v; }\n"
    "__device__ u8 f2e5m2(float x) { u16 h = f2h(x);\n"
    "  if ((h & 0x7fffu) > 0x7c00u) return (u8)((h >> 8) | 0x02u);\n"
    "  return (u8)((h + 0x7fu + ((h >> 8) & 1u)) >> 8); }\n"
    "__device__ float e5m22f(u8 b) { return h2f((u16)((u16)b << 8)); }\n"
    "extern \"C\" __global__ void kv_fill(void *p, u64 n, int dt, u64 key, int kind,\n"
    "                                     double a, double b) {\n"
    "  for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n;\n"
    "       i += (u64)gridDim.x * blockDim.x) {\n"
    "    double v = draw(key, i, kind, a, b);\n"
    "    switch (dt) {\n"
    "    case F32: ((float *)p)[i] = (float)v; break;\n"
    "    case F16: ((u16 *)p)[i] = f2h((float)v); break;\n"
    "    case BF16: ((u16 *)p)[i] = f2bf((float)v); break;\n"
    "    case F64: ((double *)p)[i] = v; break;\n"
    "    case I32: ((int *)p)[i] = (int)v; break;\n"
    "    case I64: ((long long *)p)[i] = (long long)v; break;\n"
    "    case I8: ((signed char *)p)[i] = (signed char)(int)v; break;\n"
    "    case BOOL: ((u8 *)p)[i] = v > 0.0; break;\n"
    "    case E4M3: ((u8 *)p)[i] = f2e4m3((float)v); break;\n"
    "    case E5M2: ((u8 *)p)[i] = f2e5m2((float)v); break;\n"
    "    default: ((u8 *)p)[i] = (u8)(int)v; break;\n"
    "    }\n"
    "  }\n"
    "}\n"
    "extern \"C\" __global__ void kv_pattern(u64 *p, u64 n, u64 pat) {\n"
    "  for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n;\n"
    "       i += (u64)gridDim.x * blockDim.x) p[i] = pat;\n"
    "}\n"
    "__device__ u64 warp_sum(u64 v) {\n"
    "  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o); return v; }\n"
    "__device__ u32 warp_max(u32 v) {\n"
    "  for (int o = 16; o > 0; o >>= 1) { u32 w = __shfl_down_sync(0xffffffffu, v, o);\n"
    "    v = w > v ? w : v; } return v; }\n"
    "__device__ u64 warp_min(u64 v) {\n"
    "  for (int o = 16; o > 0; o >>= 1) { u64 w = __shfl_down_sync(0xffffffffu, v, o);\n"
    "    v = w < v ? w : v; } return v; }\n"
    /* counts bytes in [start, end) that no longer hold the replicated pattern */
    "extern \"C\" __global__ void kv_guard(const u8 *p, u64 start, u64 end, u64 pat,\n"
    "                                      u64 *out) {\n"
    "  u64 bad = 0, stride = (u64)gridDim.x * blockDim.x;\n"
    "  for (u64 k = start + blockIdx.x * (u64)blockDim.x + threadIdx.x; k < end; k += stride)\n"
    "    bad += p[k] != (u8)(pat >> (8 * (k & 7)));\n"
    "  if (bad) atomicAdd(out, bad);\n"
    "}\n"
    /* a keyed, non-linear digest: word i's hash depends on its value, its index and the key,
     * so without the key no value can be chosen to make two buffers agree */
    "extern \"C\" __global__ void kv_digest(const u64 *p, u64 n, u64 key, u64 *out) {\n"
    "  u64 acc = 0, stride = (u64)gridDim.x * blockDim.x, k2 = mix64(key);\n"
    "  for (u64 base = blockIdx.x * (u64)blockDim.x; base < n; base += stride) {\n"
    "    u64 i = base + threadIdx.x;\n"
    "    if (i < n) acc += mix64((p[i] ^ k2) + mix64(i ^ key));\n"
    "  }\n"
    "  acc = warp_sum(acc); if ((threadIdx.x & 31) == 0) atomicAdd(out, acc);\n"
    "}\n"
    /* L2 reset: claim every line with our own loads at evict_last priority (lines a kernel
     * pinned with an evict_last policy are then the oldest of their priority and go first),
     * then demote ours to evict_normal: the L2 ends up holding nothing but our plain lines */
    "extern \"C\" __global__ void kv_l2_claim(const u64 *p, u64 n, u64 *sink) {\n"
    "  u64 acc = 0;\n"
    "  for (u64 i = (blockIdx.x * (u64)blockDim.x + threadIdx.x) * 16; i < n;\n"
    "       i += (u64)gridDim.x * blockDim.x * 16) {\n"
    "#if __CUDA_ARCH__ >= 800\n"
    "    u64 pol, v; asm volatile(\"createpolicy.fractional.L2::evict_last.b64 %0, 1.0;\" : "
    "\"=l\"(pol));\n"
    "    asm volatile(\"ld.global.L2::cache_hint.u64 %0, [%1], %2;\" : \"=l\"(v) : \"l\"(p + i), "
    "\"l\"(pol));\n"
    "    acc += v;\n"
    "#else\n"
    "    acc += p[i];\n"
    "#endif\n"
    "  }\n"
    "  if (acc == 0x5eed5eed5eed5eedull) *sink = acc;\n"
    "}\n"
    "extern \"C\" __global__ void kv_l2_release(const u64 *p, u64 n) {\n"
    "#if __CUDA_ARCH__ >= 800\n"
    "  for (u64 i = (blockIdx.x * (u64)blockDim.x + threadIdx.x) * 16; i < n;\n"
    "       i += (u64)gridDim.x * blockDim.x * 16)\n"
    "    asm volatile(\"applypriority.global.L2::evict_normal [%0], 128;\" :: \"l\"(p + i));\n"
    "#endif\n"
    "}\n"
    /* arithmetic-rate probes (devk_rate): independent chains of one instruction kind, so the
     * launch's time is the unit's throughput; the result reaches memory only if it is a value
     * no run gives, so nothing is optimised away */
    "#define RATE_SINK(v) if ((v) == 0x5eed5eedu) *sink = (v)\n"
    "#define MMA4(op, cons, d, a, b) asm volatile(op : cons(d[0]), cons(d[1]), cons(d[2]),"
    " cons(d[3]) : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"r\"(b[0]), \"r\"(b[1]))\n"
    "#define MMA_LOOP(T, op, cons) { T d[4][4] = {}; for (int i = 0; i < iters; i++) {\\\n"
    "  _Pragma(\"unroll\") for (int j = 0; j < 4; j++) MMA4(op, cons, d[j], a, b); }\\\n"
    "  u32 x = 0; for (int j = 0; j < 4; j++) for (int k = 0; k < 4; k++) x ^= (u32)d[j][k];\\\n"
    "  RATE_SINK(x); return; }\n"
    "extern \"C\" __global__ void kv_rate(int kind, int iters, u32 *sink) {\n"
    "  u32 s = threadIdx.x * 2654435761u + blockIdx.x;\n"
    "  if (kind == 0) {\n"
    "    float x[8], y = __uint_as_float(0x3f7ff000u | (s & 15u)), z = 1e-7f;\n"
    "    for (int j = 0; j < 8; j++) x[j] = (float)(s + j);\n"
    "    for (int i = 0; i < iters; i++)\n"
    "#pragma unroll\n"
    "      for (int j = 0; j < 8; j++) x[j] = fmaf(x[j], y, z);\n"
    "    u32 r = 0; for (int j = 0; j < 8; j++) r ^= __float_as_uint(x[j]);\n"
    "    RATE_SINK(r); return;\n"
    "  }\n"
    "  if (kind == 1) {\n"
    "    double x[8], y = 0.99999 + 1e-9 * (s & 15u), z = 1e-12;\n"
    "    for (int j = 0; j < 8; j++) x[j] = (double)(s + j);\n"
    "    for (int i = 0; i < iters; i++)\n"
    "#pragma unroll\n"
    "      for (int j = 0; j < 8; j++) x[j] = fma(x[j], y, z);\n"
    "    u32 r = 0; for (int j = 0; j < 8; j++) r ^= (u32)__double_as_longlong(x[j]);\n"
    "    RATE_SINK(r); return;\n"
    "  }\n"
    "#if __CUDA_ARCH__ >= 800\n"
    "  u32 a[4] = {s, s ^ 0x3c003c00u, s + 0x01000100u, s * 3u}, b[2] = {s >> 1, s ^ 0x3c00u};\n"
    "  if (kind == 2) MMA_LOOP(float, \"mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
    "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\", \"+f\")\n"
    "  if (kind == 3) MMA_LOOP(float, \"mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
    "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\", \"+f\")\n"
    "  if (kind == 4) MMA_LOOP(float, \"mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
    "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\", \"+f\")\n"
    "  if (kind == 5) MMA_LOOP(int, \"mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 "
    "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\", \"+r\")\n"
    "  if (kind == 6) {\n"
    "    double d[4][2] = {}, da = (double)(s & 255u), db = 0.5;\n"
    "    for (int i = 0; i < iters; i++)\n"
    "#pragma unroll\n"
    "      for (int j = 0; j < 4; j++)\n"
    "        asm volatile(\"mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, "
    "{%0,%1};\" : \"+d\"(d[j][0]), \"+d\"(d[j][1]) : \"d\"(da), \"d\"(db));\n"
    "    u32 r = 0; for (int j = 0; j < 4; j++) r ^= (u32)__double_as_longlong(d[j][0] + "
    "d[j][1]);\n"
    "    RATE_SINK(r);\n"
    "  }\n"
    "#endif\n"
    "}\n"
    "struct stats { u64 mismatches, nans, unwritten, nondet, first_unwritten, first_nondet;\n"
    "               u32 worst_key, pad; u64 worst_index; };\n"
    "__device__ u64 bits_at(const void *p, u64 i, int dt) {\n"
    "  switch (esize(dt)) { case 2: return ((const u16 *)p)[i];\n"
    "  case 8: return ((const u64 *)p)[i]; case 1: return ((const u8 *)p)[i];\n"
    "  default: return ((const u32 *)p)[i]; } }\n"
    "__device__ double as_double(u64 b, int dt) {\n"
    "  switch (dt) { case F32: return (double)__uint_as_float((u32)b);\n"
    "  case F16: return (double)h2f((u16)b); case BF16: return (double)bf2f((u16)b);\n"
    "  case F64: return __longlong_as_double((long long)b); case I32: return (double)(int)(u32)b;\n"
    "  case I64: return (double)(long long)b; case I8: return (double)(signed char)(u8)b;\n"
    "  case E4M3: return (double)e4m32f((u8)b); case E5M2: return (double)e5m22f((u8)b);\n"
    "  default: return (double)(u8)b; } }\n"
    /* ratio of the error to the tolerance as order-preserving float bits: > 1 is a mismatch;
     * a NaN/Inf disagreement is +Inf */
    "__device__ u32 score(u64 ab, u64 eb, int dt, double atol, double rtol, int *mis, int *nan) {\n"
    "  *mis = 0; *nan = 0;\n"
    "  if (is_int(dt)) {\n"
    "    if (ab == eb) return 0u; *mis = 1;\n"
    "    double d = fabs(as_double(ab, dt) - as_double(eb, dt));\n"
    "    return __float_as_uint((float)(d < 1.0 ? 1.0 : d)); }\n"
    "  double a = as_double(ab, dt), e = as_double(eb, dt);\n"
    "  if (isnan(a) || isnan(e)) { if (isnan(a) && isnan(e)) return 0u;\n"
    "    *mis = 1; *nan = isnan(a); return 0x7f800000u; }\n"
    "  if (isinf(a) || isinf(e)) { if (a == e) return 0u; *mis = 1; return 0x7f800000u; }\n"
    "  double d = fabs(a - e), tol = atol + rtol * fabs(e);\n"
    "  if (d > tol) *mis = 1;\n"
    "  double r = tol > 0.0 ? d / tol : (d > 0.0 ? 3.0e38 : 0.0);\n"
    "  return __float_as_uint((float)(r > 3.0e38 ? 3.0e38 : r));\n"
    "}\n"
    "extern \"C\" __global__ void kv_compare(const void *act, const void *snap, const void *exp,\n"
    "    u64 n, int dt, double atol, double rtol, u64 pa, u64 pb, struct stats *st) {\n"
    "  int esz = esize(dt);\n"
    "  u64 mask = esz == 8 ? ~0ull : ((1ull << (8 * esz)) - 1);\n"
    "  pa &= mask; pb &= mask;\n"
    "  u64 cm = 0, cn = 0, cu = 0, cd = 0, fu = ~0ull, fd = ~0ull; u32 worst = 0;\n"
    "  u64 stride = (u64)gridDim.x * blockDim.x;\n"
    "  for (u64 base = blockIdx.x * (u64)blockDim.x; base < n; base += stride) {\n"
    "    u64 i = base + threadIdx.x; if (i >= n) continue;\n"
    "    u64 ab = bits_at(act, i, dt), sb = bits_at(snap, i, dt);\n"
    "    if (ab == pb && sb == pa) { cu++; if (i < fu) fu = i; continue; }\n"
    "    if (ab != sb) { cd++; if (i < fd) fd = i; }\n"
    "    int mis, nan; u32 k = score(ab, bits_at(exp, i, dt), dt, atol, rtol, &mis, &nan);\n"
    "    cm += mis; cn += nan; if (k > worst) worst = k;\n"
    "  }\n"
    "  cm = warp_sum(cm); cn = warp_sum(cn); cu = warp_sum(cu); cd = warp_sum(cd);\n"
    "  fu = warp_min(fu); fd = warp_min(fd); worst = warp_max(worst);\n"
    "  if ((threadIdx.x & 31) == 0) {\n"
    "    if (cm) atomicAdd(&st->mismatches, cm); if (cn) atomicAdd(&st->nans, cn);\n"
    "    if (cu) atomicAdd(&st->unwritten, cu); if (cd) atomicAdd(&st->nondet, cd);\n"
    "    if (fu != ~0ull) atomicMin(&st->first_unwritten, fu);\n"
    "    if (fd != ~0ull) atomicMin(&st->first_nondet, fd);\n"
    "    atomicMax(&st->worst_key, worst);\n"
    "  }\n"
    "}\n"
    "extern \"C\" __global__ void kv_locate(const void *act, const void *snap, const void *exp,\n"
    "    u64 n, int dt, double atol, double rtol, u64 pa, u64 pb, struct stats *st) {\n"
    "  int esz = esize(dt);\n"
    "  u64 mask = esz == 8 ? ~0ull : ((1ull << (8 * esz)) - 1);\n"
    "  pa &= mask; pb &= mask; u32 want = st->worst_key;\n"
    "  for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n;\n"
    "       i += (u64)gridDim.x * blockDim.x) {\n"
    "    u64 ab = bits_at(act, i, dt);\n"
    "    if (ab == pb && bits_at(snap, i, dt) == pa) continue;\n"
    "    int mis, nan;\n"
    "    if (score(ab, bits_at(exp, i, dt), dt, atol, rtol, &mis, &nan) == want)\n"
    "      atomicMin(&st->worst_index, i);\n"
    "  }\n"
    "}\n";

enum { DK_THREADS = 256, DK_MAX_BLOCKS = 4096 };

int devk_compile(int major, int minor, void **cubin_out, size_t *size_out, kevo_error *err) {
  *cubin_out = NULL;
  *size_out = 0;
  nvrtcProgram prog;
  nvrtcResult nr = nvrtcCreateProgram(&prog, devk_source, "kevo_devkernels.cu", 0, NULL, NULL);
  if (nr != NVRTC_SUCCESS) return kevo_fail(err, KEVO_E_CUDA, "NVRTC: %s", nvrtcGetErrorString(nr));
  char arch[64];
  snprintf(arch, sizeof arch, "--gpu-architecture=sm_%d%d", major, minor);
  const char *opts[] = {arch, "--std=c++17"};
  nr = nvrtcCompileProgram(prog, 2, opts);
  int rc = KEVO_OK;
  char *cubin = NULL;
  size_t size = 0;
  if (nr != NVRTC_SUCCESS) {
    size_t len = 0;
    nvrtcGetProgramLogSize(prog, &len);
    char *log = malloc(len + 1);
    if (log && nvrtcGetProgramLog(prog, log) == NVRTC_SUCCESS) log[len] = '\0';
    rc = kevo_fail(err, KEVO_E_CUDA, "compiling the worker's kernels for sm_%d%d: %s: %.1500s",
                   major, minor, nvrtcGetErrorString(nr), log ? log : "");
    free(log);
  } else if (nvrtcGetCUBINSize(prog, &size) != NVRTC_SUCCESS || !(cubin = malloc(size)) ||
             nvrtcGetCUBIN(prog, cubin) != NVRTC_SUCCESS) {
    free(cubin);
    cubin = NULL;
    rc = kevo_fail(err, KEVO_E_CUDA, "NVRTC gave no cubin for sm_%d%d", major, minor);
  }
  nvrtcDestroyProgram(&prog);
  *cubin_out = cubin;
  *size_out = cubin ? size : 0;
  return rc;
}

/* Loads the cubin devk_compile made into k (the caller frees it). */
static int load_cubin(const cudrv *d, const void *cubin, devk *k, kevo_error *err) {
  int rc;
  CUresult r = d->cuModuleLoadData(&k->mod, cubin);
  if (r != CUDA_SUCCESS)
    return kevo_fail(err, KEVO_E_CUDA, "loading the worker's kernels: %s", cudrv_errname(d, r));
  struct {
    CUfunction *f;
    const char *name;
  } fns[] = {
      {&k->fill, "kv_fill"},         {&k->pattern, "kv_pattern"},       {&k->compare, "kv_compare"},
      {&k->locate, "kv_locate"},     {&k->guard, "kv_guard"},           {&k->digest, "kv_digest"},
      {&k->l2_claim, "kv_l2_claim"}, {&k->l2_release, "kv_l2_release"}, {&k->rate, "kv_rate"}};
  for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
    r = d->cuModuleGetFunction(fns[i].f, k->mod, fns[i].name);
    if (r != CUDA_SUCCESS) {
      rc = kevo_fail(err, KEVO_E_CUDA, "worker kernel %s: %s", fns[i].name, cudrv_errname(d, r));
      devk_unload(d, k);
      return rc;
    }
  }
  return KEVO_OK;
}

int devk_load(const cudrv *d, int major, int minor, devk *k, kevo_error *err) {
  memset(k, 0, sizeof *k);
  void *cubin = NULL;
  size_t size = 0;
  int rc = devk_compile(major, minor, &cubin, &size, err);
  if (rc) return rc;
  rc = load_cubin(d, cubin, k, err);
  free(cubin);
  return rc;
}

void devk_unload(const cudrv *d, devk *k) {
  if (k->mod) d->cuModuleUnload(k->mod);
  memset(k, 0, sizeof *k);
}

static unsigned blocks_for(uint64_t n) {
  uint64_t b = (n + DK_THREADS - 1) / DK_THREADS;
  if (b < 1) b = 1;
  return b > DK_MAX_BLOCKS ? DK_MAX_BLOCKS : (unsigned)b;
}

static CUresult launch(const cudrv *d, CUfunction f, CUstream s, uint64_t n, void **args) {
  return d->cuLaunchKernel(f, blocks_for(n), 1, 1, DK_THREADS, 1, 1, 0, s, args, NULL);
}

CUresult devk_fill(const cudrv *d, const devk *k, CUstream s, CUdeviceptr p, uint64_t n, int dt,
                   uint64_t key, int kind, double a, double b) {
  void *args[] = {&p, &n, &dt, &key, &kind, &a, &b};
  return launch(d, k->fill, s, n, args);
}

CUresult devk_pattern(const cudrv *d, const devk *k, CUstream s, CUdeviceptr p, uint64_t nbytes,
                      uint64_t pattern) {
  uint64_t n = nbytes / 8;
  void *args[] = {&p, &n, &pattern};
  return launch(d, k->pattern, s, n, args);
}

CUresult devk_digest(const cudrv *d, const devk *k, CUstream s, CUdeviceptr p, uint64_t nbytes,
                     uint64_t key, CUdeviceptr out) {
  uint64_t n = nbytes / 8;
  void *args[] = {&p, &n, &key, &out};
  return launch(d, k->digest, s, n, args);
}

CUresult devk_l2_reset(const cudrv *d, const devk *k, CUstream s, CUdeviceptr p, uint64_t nbytes,
                       CUdeviceptr sink) {
  uint64_t n = nbytes / 8;
  void *a1[] = {&p, &n, &sink}, *a2[] = {&p, &n};
  CUresult r = launch(d, k->l2_claim, s, n / 16, a1);
  return r ? r : launch(d, k->l2_release, s, n / 16, a2);
}

CUresult devk_guard(const cudrv *d, const devk *k, CUstream s, CUdeviceptr p, uint64_t start,
                    uint64_t end, uint64_t pattern, CUdeviceptr out) {
  void *args[] = {&p, &start, &end, &pattern, &out};
  return launch(d, k->guard, s, end > start ? end - start : 1, args);
}

/* Flops (or int8 ops) one thread does in one iteration of kv_rate's loop, per kind. */
static const double rate_flops[DK_RATE_KINDS] = {16, 16, 512, 512, 256, 1024, 64};

CUresult devk_rate(const cudrv *d, const devk *k, CUstream s, int kind, int iters, unsigned blocks,
                   CUdeviceptr sink, double *flops) {
  *flops = rate_flops[kind] * iters * (double)blocks * DK_THREADS;
  void *args[] = {&kind, &iters, &sink};
  return d->cuLaunchKernel(k->rate, blocks, 1, 1, DK_THREADS, 1, 1, 0, s, args, NULL);
}

CUresult devk_compare(const cudrv *d, const devk *k, CUstream s, const devk_cmp *c,
                      devk_stats *out) {
  devk_stats init = {0};
  init.first_unwritten = init.first_nondet = init.worst_index = UINT64_MAX;
  CUresult r = d->cuStreamSynchronize(s);
  if (!r) r = d->cuMemcpyHtoD(c->stats, &init, sizeof init);
  devk_cmp a = *c;
  void *args[] = {&a.actual, &a.snapshot, &a.expected, &a.n,        &a.dt,
                  &a.atol,   &a.rtol,     &a.poison_a, &a.poison_b, &a.stats};
  if (!r) r = launch(d, k->compare, s, c->n, args);
  if (!r) r = launch(d, k->locate, s, c->n, args);
  if (!r) r = d->cuStreamSynchronize(s);
  if (!r) r = d->cuMemcpyDtoH(out, c->stats, sizeof *out);
  return r;
}
