/* eval_profile.c: from ncu's metrics to what a person or a model can act on (docs/profile.md).
 * summary: the kernels of one plan as one set of figures; diagnose: the figures read into
 * ranked one-line findings, each with its numbers and what to do; then the texts. */
#include "eval_profile.h"
#include "eval_result.h"

#include <cjson/cJSON.h>

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define M_STALL "smsp__average_warps_issue_stalled_"
#define M_STALL_END "_per_issue_active.ratio"

/* The stall reasons, with what each means for the kernel's author. */
static const struct {
  const char *reason, *meaning;
} stall_names[] = {
    {"long_scoreboard", "waiting for global/local memory"},
    {"short_scoreboard", "waiting for shared memory or special math"},
    {"mio_throttle", "shared-memory/MIO queue full"},
    {"lg_throttle", "too many global memory instructions in flight"},
    {"math_pipe_throttle", "an arithmetic pipe is saturated"},
    {"barrier", "waiting at __syncthreads"},
    {"wait", "fixed-latency dependencies"},
    {"not_selected", "ready but another warp issued (the SM is busy)"},
    {"selected", "issuing"},
    {"branch_resolving", "resolving branches"},
    {"membar", "memory fences"},
    {"drain", "draining stores at exit"},
    {"tex_throttle", "texture/L1 queue full"},
    {"imc_miss", "constant cache misses"},
    {"no_instruction", "instruction cache misses"},
    {"dispatch_stall", "dispatch stalls"},
    {"sleeping", "nanosleep"},
    {"gmma", "waiting for warpgroup MMA"},
    {"misc", "miscellaneous"},
};
enum { NSTALLS = sizeof stall_names / sizeof stall_names[0] };

/* The pipes besides the tensor cores' (ncu's Compute Workload Analysis), each measured by its
 * cycles active where the counter exists and by its instructions against the pipe's peak issue
 * rate; the larger of the two is the pipe's load. What each pipe runs and what lightens it. */
static const struct {
  const char *name, *cycles, *inst, *runs, *advice;
} pipe_names[] = {
    {"fma", "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
     "sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active",
     "FP32 multiply, add and fused multiply-add",
     "fewer FP32 instructions per result (hoist loop-invariant math, fold constants), or the "
     "matrix math on the tensor cores"},
    {"alu", "sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active",
     "sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active",
     "integer and logic operations, comparisons, min/max",
     "less index arithmetic and fewer comparisons per element (hoist address math out of "
     "loops, unroll, 32-bit indices)"},
    {"fp64", "sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_active",
     "sm__inst_executed_pipe_fp64.avg.pct_of_peak_sustained_active", "FP64 arithmetic",
     "FP32 where the tolerance allows (FP64 runs at a fraction of FP32's rate)"},
    {"xu", NULL, "sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active",
     "transcendentals (exp, log, sin, rsqrt) and conversions",
     "fewer special-function calls and conversions per element (reuse results, exp2 with a "
     "pre-scaled argument)"},
    {"lsu", NULL, "sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active",
     "load and store instructions (global, shared, local)",
     "more bytes per memory instruction (8- or 16-byte vector loads) and fewer shared-memory "
     "accesses"},
};
enum { NPIPES = sizeof pipe_names / sizeof pipe_names[0] };

static double metric(const cJSON *k, const char *name) {
  const cJSON *v =
      cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(k, "metrics"), name);
  return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* Sums over kernels (sum) or time-weighted averages (avg) of one metric; NAN when no kernel
 * had it. */
typedef struct acc {
  double sum, wsum, w;
  int n;
} acc;

static void acc_add(acc *a, double v, double w) {
  if (isnan(v)) return;
  a->sum += v;
  a->wsum += v * w;
  a->w += w;
  a->n++;
}
static double acc_sum(const acc *a) {
  return a->n ? a->sum : NAN;
}
static double acc_avg(const acc *a) {
  return a->n && a->w > 0 ? a->wsum / a->w : NAN;
}

static void put(cJSON *o, const char *k, double v, double round_to) {
  if (isnan(v) || isinf(v)) return;
  cJSON_AddNumberToObject(o, k, round(v / round_to) * round_to);
}

cJSON *eval_profile_summary(const cJSON *kernels) {
  cJSON *s = cJSON_CreateObject();
  enum {
    T,
    DRAM_PCT,
    RD,
    WR,
    L2,
    SM,
    MEM,
    OCC,
    BANK,
    WAVE,
    LDS,
    LDR,
    STS,
    STR,
    LDE,
    STE,
    BR,
    TPI,
    TENSOR,
    ISSUE,
    NACC
  };
  static const char *const names[NACC] = {
      "gpu__time_duration.sum",
      "dram__throughput.avg.pct_of_peak_sustained_elapsed",
      "dram__bytes_read.sum",
      "dram__bytes_write.sum",
      "lts__t_sector_hit_rate.pct",
      "sm__throughput.avg.pct_of_peak_sustained_elapsed",
      "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
      "sm__warps_active.avg.pct_of_peak_sustained_active",
      "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum",
      "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum",
      "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
      "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
      "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
      "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
      "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct",
      "smsp__sass_average_data_bytes_per_sector_mem_global_op_st.pct",
      "smsp__sass_average_branch_targets_threads_uniform.pct",
      "smsp__average_thread_inst_executed_per_inst_executed.ratio",
      "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
      "sm__issue_active.avg.pct_of_peak_sustained_active"};
  acc a[NACC] = {{0}}, stall[NSTALLS] = {{0}}, pipe[NPIPES][2] = {{{0}}};
  const cJSON *k, *longest = NULL;
  double longest_t = -1, dram_all = NAN;
  int n = 0;
  cJSON_ArrayForEach(k, kernels) {
    double t = metric(k, names[T]);
    double w = isnan(t) || t <= 0 ? 1 : t;
    for (int i = 0; i < NACC; i++)
      acc_add(&a[i], metric(k, names[i]), w);
    for (int i = 0; i < NSTALLS; i++) {
      char name[128];
      snprintf(name, sizeof name, M_STALL "%s" M_STALL_END, stall_names[i].reason);
      acc_add(&stall[i], metric(k, name), w);
    }
    for (int i = 0; i < NPIPES; i++) {
      if (pipe_names[i].cycles) acc_add(&pipe[i][0], metric(k, pipe_names[i].cycles), w);
      acc_add(&pipe[i][1], metric(k, pipe_names[i].inst), w);
    }
    double all = metric(k, "dram__bytes.sum"); /* the probe's older set */
    if (!isnan(all)) dram_all = (isnan(dram_all) ? 0 : dram_all) + all;
    if (w > longest_t) longest_t = w, longest = k;
    n++;
  }
  cJSON_AddNumberToObject(s, "kernels", n);
  double t_ns = acc_sum(&a[T]);
  put(s, "time_ms", t_ns / 1e6, 1e-4);
  put(s, "dram_pct", acc_avg(&a[DRAM_PCT]), 0.1);
  double bytes = isnan(acc_sum(&a[RD])) && isnan(acc_sum(&a[WR]))
                     ? dram_all
                     : (isnan(acc_sum(&a[RD])) ? 0 : acc_sum(&a[RD])) +
                           (isnan(acc_sum(&a[WR])) ? 0 : acc_sum(&a[WR]));
  put(s, "dram_bytes", bytes, 1);
  if (!isnan(t_ns) && t_ns > 0) put(s, "dram_gbps", bytes / t_ns, 0.1);
  put(s, "l2_hit_pct", acc_avg(&a[L2]), 0.1);
  put(s, "sm_pct", acc_avg(&a[SM]), 0.1);
  put(s, "mem_pct", acc_avg(&a[MEM]), 0.1);
  put(s, "occupancy_pct", acc_avg(&a[OCC]), 0.1);
  if (longest) { /* launch figures: the kernel that takes the longest */
    double lim[4] = {metric(longest, "launch__occupancy_limit_registers"),
                     metric(longest, "launch__occupancy_limit_shared_mem"),
                     metric(longest, "launch__occupancy_limit_blocks"),
                     metric(longest, "launch__occupancy_limit_warps")};
    static const char *const lim_name[4] = {"registers", "shared memory", "blocks per SM", "none"};
    int at = -1;
    for (int i = 0; i < 4; i++) /* the smallest limit; on a tie the first (registers) names it */
      if (!isnan(lim[i]) && (at < 0 || lim[i] < lim[at])) at = i;
    double block = metric(longest, "launch__block_size");
    if (at >= 0) {
      /* the warps' own limit is the SM's natural ceiling, not a limiter */
      int natural = !isnan(lim[3]) && lim[at] >= lim[3];
      cJSON_AddStringToObject(s, "limiter", natural ? "none" : lim_name[at]);
      put(s, "blocks_per_sm", lim[at], 1);
      double wpb = isnan(block) ? NAN : ceil(block / 32);
      if (!isnan(wpb) && !isnan(lim[3]) && lim[3] > 0) /* max warps ~ limit_warps x wpb */
        put(s, "theoretical_pct", 100.0 * lim[at] / lim[3], 0.1);
    }
    put(s, "registers", metric(longest, "launch__registers_per_thread"), 1);
    put(s, "block", block, 1);
    put(s, "grid", metric(longest, "launch__grid_size"), 1);
    put(s, "waves", metric(longest, "launch__waves_per_multiprocessor"), 0.01);
    double sh = metric(longest, "launch__shared_mem_per_block_static"),
           shd = metric(longest, "launch__shared_mem_per_block_dynamic");
    if (!isnan(sh) || !isnan(shd))
      put(s, "shared_per_block", (isnan(sh) ? 0 : sh) + (isnan(shd) ? 0 : shd), 1);
  }
  /* top three stall reasons, as cycles per issued instruction and share of all stalls */
  double total = 0;
  int have = 0;
  for (int i = 0; i < NSTALLS; i++)
    if (!isnan(acc_avg(&stall[i])) && strcmp(stall_names[i].reason, "selected")) {
      total += acc_avg(&stall[i]);
      have = 1;
    }
  if (have) {
    cJSON *top = cJSON_AddArrayToObject(s, "stalls");
    int used[NSTALLS] = {0};
    for (int r = 0; r < 3; r++) {
      int best = -1;
      for (int i = 0; i < NSTALLS; i++) {
        double v = acc_avg(&stall[i]);
        if (used[i] || isnan(v) || !strcmp(stall_names[i].reason, "selected")) continue;
        if (best < 0 || v > acc_avg(&stall[best])) best = i;
      }
      if (best < 0 || acc_avg(&stall[best]) <= 0) break;
      used[best] = 1;
      cJSON *o = cJSON_CreateObject();
      cJSON_AddStringToObject(o, "reason", stall_names[best].reason);
      cJSON_AddStringToObject(o, "meaning", stall_names[best].meaning);
      put(o, "cycles", acc_avg(&stall[best]), 0.1);
      put(o, "pct", total > 0 ? 100 * acc_avg(&stall[best]) / total : NAN, 0.1);
      cJSON_AddItemToArray(top, o);
    }
  }
  double bank = acc_sum(&a[BANK]), wave = acc_sum(&a[WAVE]);
  if (!isnan(bank) && !isnan(wave) && wave > 0) put(s, "bank_conflict_pct", 100 * bank / wave, 0.1);
  if (!isnan(bank)) put(s, "bank_conflicts", bank, 1);
  double lds = acc_sum(&a[LDS]), ldr = acc_sum(&a[LDR]), sts = acc_sum(&a[STS]),
         str = acc_sum(&a[STR]);
  if (ldr > 0) put(s, "ld_sectors_per_req", lds / ldr, 0.01);
  if (str > 0) put(s, "st_sectors_per_req", sts / str, 0.01);
  if (ldr > 0) put(s, "ld_efficiency_pct", acc_avg(&a[LDE]), 0.1);
  /* the share of DRAM's reads that plain global loads asked for: a kernel that streams its
     input by cp.async (LDGSTS) leaves only a few ld requests in these counters, and their
     bytes-per-sector figure (0% there) says nothing about how the kernel reads */
  double rd = acc_sum(&a[RD]);
  if (ldr > 0 && !isnan(rd) && rd > 0) put(s, "ld_share_pct", 100 * 32 * lds / rd, 0.1);
  if (str > 0) put(s, "st_efficiency_pct", acc_avg(&a[STE]), 0.1);
  put(s, "branch_uniform_pct", acc_avg(&a[BR]), 0.1);
  put(s, "threads_per_inst", acc_avg(&a[TPI]), 0.01);
  put(s, "tensor_pct", acc_avg(&a[TENSOR]), 0.1);
  put(s, "issue_pct", acc_avg(&a[ISSUE]), 0.1);
  /* each pipe's load (the larger of its two measures), and the busiest one */
  cJSON *pipes = NULL;
  int busiest = -1, by_cycles = 0;
  double top = -1;
  for (int i = 0; i < NPIPES; i++) {
    double c = acc_avg(&pipe[i][0]), in = acc_avg(&pipe[i][1]);
    double v = isnan(c) ? in : isnan(in) ? c : fmax(c, in);
    if (isnan(v)) continue;
    if (!pipes) pipes = cJSON_AddObjectToObject(s, "pipes");
    put(pipes, pipe_names[i].name, v, 0.1);
    if (v > top) top = v, busiest = i, by_cycles = !isnan(c) && c >= v;
  }
  if (busiest >= 0) {
    cJSON_AddStringToObject(s, "pipe", pipe_names[busiest].name);
    put(s, "pipe_pct", top, 0.1);
    cJSON_AddStringToObject(s, "pipe_measure", by_cycles ? "cycles" : "instructions");
  }
  return s;
}

/* ---- diagnosis ---------------------------------------------------------------------------- */

static void finding(cJSON *list, const char *kind, double score, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void finding(cJSON *list, const char *kind, double score, const char *fmt, ...) {
  char text[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  cJSON *f = cJSON_CreateObject();
  cJSON_AddStringToObject(f, "kind", kind);
  cJSON_AddNumberToObject(f, "score", score); /* rounded once ranked */
  cJSON_AddStringToObject(f, "text", text);
  cJSON_AddItemToArray(list, f);
}

static int by_score(const void *a, const void *b) {
  double x = eval_jnum(*(cJSON *const *)a, "score"), y = eval_jnum(*(cJSON *const *)b, "score");
  return x < y ? 1 : x > y ? -1 : 0;
}

static double num(const cJSON *s, const char *k) {
  return eval_jnum(s, k);
}

static void human_bytes(double b, char *out, size_t cap) {
  if (b >= 1e9)
    snprintf(out, cap, "%.2f GB", b / 1e9);
  else if (b >= 1e6)
    snprintf(out, cap, "%.1f MB", b / 1e6);
  else
    snprintf(out, cap, "%.0f KB", b / 1e3);
}

/* A finding that says why a general limit is reached (which pipe, which waste) is worth more
 * to the reader than the limit itself: when both are found, the specific one ranks just above
 * the general one, whatever their own scores. Several specifics of one general keep their own
 * order among themselves. */
static const struct {
  const char *specific, *general;
} explains[] = {
    {"tensor_busy", "compute_bound"},    /* the tensor pipe is what the SMs are busy with */
    {"tensor_idle", "compute_bound"},    /* the math runs on the slower pipes */
    {"pipe_busy", "compute_bound"},      /* which other pipe the SMs are busy with */
    {"bank_conflicts", "compute_bound"}, /* replays fill the shared-memory pipe */
    {"divergence", "compute_bound"},     /* idle lanes cost instructions */
    {"uncoalesced", "dram_peak"},        /* most of the bytes moved are not used */
    {"occupancy", "latency"},            /* too few warps to hide the latency */
    {"small_grid", "latency"},
};

static cJSON *find_kind(cJSON **items, int n, const char *kind) {
  for (int i = 0; i < n; i++)
    if (!strcmp(eval_jstr(items[i], "kind"), kind)) return items[i];
  return NULL;
}

/* The findings of list ordered most important first (scores lifted by `explains`, rounded),
 * at most 6; returns list. */
static cJSON *rank(cJSON *list) {
  int n = cJSON_GetArraySize(list);
  cJSON **items = calloc((size_t)(n ? n : 1), sizeof *items);
  for (int i = 0; items && i < n; i++)
    items[i] = cJSON_DetachItemFromArray(list, 0);
  for (size_t r = 0; items && r < sizeof explains / sizeof explains[0]; r++) {
    cJSON *gen = find_kind(items, n, explains[r].general);
    for (int i = 0; gen && i < n; i++) {
      if (strcmp(eval_jstr(items[i], "kind"), explains[r].specific)) continue;
      double own = eval_jnum(items[i], "score"), above = eval_jnum(gen, "score") + 1 + own / 1000;
      if (own < above)
        cJSON_SetNumberValue(cJSON_GetObjectItemCaseSensitive(items[i], "score"), above);
    }
  }
  if (items) qsort(items, (size_t)n, sizeof *items, by_score);
  for (int i = 0; items && i < n; i++) {
    cJSON *score = cJSON_GetObjectItemCaseSensitive(items[i], "score");
    cJSON_SetNumberValue(score, round(score->valuedouble));
    if (i < 6)
      cJSON_AddItemToArray(list, items[i]);
    else
      cJSON_Delete(items[i]);
  }
  free(items);
  return list;
}

cJSON *eval_profile_diagnose(const cJSON *s, const char *bound) {
  cJSON *list = cJSON_CreateArray();
  double dram = num(s, "dram_pct"), sm = num(s, "sm_pct"), occ = num(s, "occupancy_pct");
  double theo = num(s, "theoretical_pct"), lde = num(s, "ld_efficiency_pct"),
         ste = num(s, "st_efficiency_pct"), bank = num(s, "bank_conflict_pct"),
         bankn = num(s, "bank_conflicts"), tpi = num(s, "threads_per_inst"),
         tensor = num(s, "tensor_pct"), waves = num(s, "waves"), mem = num(s, "mem_pct");
  const char *lim = eval_jstr(s, "limiter");
  int compute_recipe = bound && !strcmp(bound, "compute");
  char by[48] = "", amount[32]; /* " (2.12 GB moved)", or nothing without the bytes */
  if (!isnan(num(s, "dram_bytes"))) {
    human_bytes(num(s, "dram_bytes"), amount, sizeof amount);
    snprintf(by, sizeof by, " (%s moved)", amount);
  }

  if (dram >= 75)
    finding(list, "dram_peak", 60 + (dram - 75),
            "memory-bound at %.0f%% of DRAM bandwidth%s: nothing left to win here but "
            "moving fewer bytes",
            dram, by);
  double ld_share = num(s, "ld_share_pct");
  if (!isnan(lde) && lde < 60 && num(s, "ld_sectors_per_req") > 0 &&
      (isnan(ld_share) || ld_share >= 10))
    finding(list, "uncoalesced", 50 + (60 - lde),
            "uncoalesced global loads: %.0f%% of each 32-byte sector used (%.1f sectors per "
            "request): let neighbouring threads read neighbouring addresses",
            lde, num(s, "ld_sectors_per_req"));
  if (!isnan(ste) && ste < 60 && num(s, "st_sectors_per_req") > 0)
    finding(list, "uncoalesced", 45 + (60 - ste),
            "uncoalesced global stores: %.0f%% of each 32-byte sector used (%.1f sectors per "
            "request): let neighbouring threads write neighbouring addresses",
            ste, num(s, "st_sectors_per_req"));
  if (!isnan(bank) && bank >= 20 && bankn > 1e4)
    finding(list, "bank_conflicts", 50 + bank / 2,
            "shared-memory bank conflicts: %.0f%% of shared-memory wavefronts are conflict "
            "replays (about %.0f-way): pad the array (+1 column) or swizzle the index",
            bank, bank < 99.5 ? 100 / (100 - bank) : 32.0);
  if ((!strcmp(lim, "registers") || !strcmp(lim, "shared memory")) && !isnan(theo) && theo <= 50) {
    if (!strcmp(lim, "registers"))
      finding(list, "occupancy", 40 + (50 - theo),
              "occupancy limited by %.0f registers per thread: %.0f block(s) of %.0f threads "
              "per SM, %.0f%% of the warps an SM can hold (achieved %.0f%%): keep fewer values "
              "live or cap registers with __launch_bounds__",
              num(s, "registers"), num(s, "blocks_per_sm"), num(s, "block"), theo, occ);
    else
      finding(list, "occupancy", 40 + (50 - theo),
              "occupancy limited by shared memory (%.0f B per block): %.0f block(s) per SM, "
              "%.0f%% of the warps an SM can hold (achieved %.0f%%): use less shared memory "
              "per block or more threads per block",
              num(s, "shared_per_block"), num(s, "blocks_per_sm"), theo, occ);
  }
  int compute_bound = !isnan(sm) && sm >= 60 && (isnan(dram) || dram < 60);
  if (compute_bound) {
    finding(list, "compute_bound", 45 + (sm - 60) / 2,
            "compute-bound: the SMs at %.0f%% of their peak throughput, DRAM at %.0f%%", sm,
            isnan(dram) ? 0 : dram);
    if (!isnan(tensor) && tensor < 10 && compute_recipe)
      finding(list, "tensor_idle", 55,
              "the tensor cores are idle (%.0f%% of cycles) in a compute-bound kernel: do the "
              "matrix math with mma/wgmma (16-bit or TF32 inputs)",
              tensor);
  }
  if (!isnan(tensor) && tensor >= 30) {
    if (compute_bound)
      finding(list, "tensor_busy", 30 + tensor / 4,
              "compute-bound on the tensor cores: busy %.0f%% of cycles, the SMs at %.0f%% of "
              "peak: keep them fed (operands staged in shared memory, fewer other instructions "
              "per MMA) or use a faster form (wgmma on sm_90, lower precision)",
              tensor, sm);
    else
      finding(list, "tensor_busy", 30 + tensor / 4, "tensor cores busy %.0f%% of cycles", tensor);
  }
  /* the busiest other pipe, where it (not the tensor pipe) is what the SMs are busy with */
  double pipe = num(s, "pipe_pct");
  const char *pname = eval_jstr(s, "pipe");
  if (compute_bound && !isnan(pipe) && pipe >= 50 && (isnan(tensor) || pipe > tensor)) {
    int at = 0;
    while (at < NPIPES - 1 && strcmp(pipe_names[at].name, pname))
      at++;
    char upper[8];
    size_t u = 0;
    for (; pname[u] && u + 1 < sizeof upper; u++)
      upper[u] = (char)(pname[u] >= 'a' && pname[u] <= 'z' ? pname[u] - 32 : pname[u]);
    upper[u] = '\0';
    finding(list, "pipe_busy", 50 + pipe / 10,
            "compute-bound on the %s pipe (%s): busy %.0f%% of %s, the SMs at %.0f%% of peak: "
            "%s",
            upper, pipe_names[at].runs, pipe,
            strcmp(eval_jstr(s, "pipe_measure"), "cycles") ? "its peak instruction rate" : "cycles",
            sm, pipe_names[at].advice);
  }
  if (!isnan(waves) && waves > 0 && waves < 1 && (isnan(dram) || dram < 60))
    finding(list, "small_grid", 45,
            "the grid fills only %.2f waves of the GPU (%.0f blocks): launch more blocks (smaller "
            "tiles, split the reduction)",
            waves, num(s, "grid"));
  if (!isnan(dram) && dram < 40 && !isnan(sm) && sm < 40 && (isnan(mem) || mem < 40))
    finding(list, "latency", 35,
            "latency-bound: neither DRAM (%.0f%%) nor the SMs (%.0f%%) are busy: put more "
            "independent work in flight per thread (more loads before the first use, unrolling)",
            dram, sm);
  if (!isnan(tpi) && tpi < 24)
    finding(list, "divergence", 30 + (24 - tpi),
            "branch divergence: %.1f of 32 threads active per instruction on average: make "
            "branches uniform across a warp",
            tpi);
  const cJSON *st = cJSON_GetObjectItemCaseSensitive(s, "stalls"), *x;
  if (cJSON_GetArraySize(st) > 0) {
    char text[400] = "";
    size_t len = 0;
    cJSON_ArrayForEach(x, st) {
      len += (size_t)snprintf(text + len, sizeof text - len, "%s%s %.1f cycles (%.0f%%: %s)",
                              len ? ", " : "", eval_jstr(x, "reason"), eval_jnum(x, "cycles"),
                              eval_jnum(x, "pct"), eval_jstr(x, "meaning"));
      if (len >= sizeof text) break;
    }
    finding(list, "stalls", 25, "warps stall on: %s", text);
  }
  return rank(list);
}

/* ---- the result's profile object, and its texts ------------------------------------------ */

const cJSON *eval_profile_plan(const cJSON *reply, const char *label) {
  const cJSON *p;
  cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(reply, "plans")) {
    if (!strcmp(eval_jstr(p, "label"), label)) return p;
  }
  return NULL;
}

static void add_feedback(cJSON *o) {
  kevo_buf b;
  kevo_buf_init(&b, 8192);
  eval_profile_feedback(&b, o);
  char *text = kevo_buf_steal(&b, NULL);
  cJSON_AddStringToObject(o, "feedback", text ? text : "");
  free(text);
}

cJSON *eval_profile_object(const cJSON *reply, const cJSON *cand, const cJSON *ref,
                           const char *bound) {
  cJSON *o = cJSON_CreateObject();
  int ok = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(reply, "ok"));
  const char *perr = cand ? eval_jstr(cand, "error") : "";
  if (ok && cand && *perr) {
    ok = 0;
    cJSON_AddStringToObject(o, "reason", "failed");
    cJSON_AddStringToObject(o, "error", perr);
  } else if (!ok || !cand) {
    cJSON_AddStringToObject(o, "reason",
                            *eval_jstr(reply, "reason") ? eval_jstr(reply, "reason") : "failed");
    cJSON_AddStringToObject(o, "error",
                            *eval_jstr(reply, "error") ? eval_jstr(reply, "error")
                                                       : "no profile of this plan");
    ok = 0;
  }
  cJSON_AddBoolToObject(o, "ok", ok);
  cJSON_AddStringToObject(o, "tool", "ncu");
  if (!isnan(eval_jnum(reply, "ms"))) cJSON_AddNumberToObject(o, "ms", eval_jnum(reply, "ms"));
  if (!ok) {
    add_feedback(o);
    return o;
  }
  cJSON *sum = eval_profile_summary(cJSON_GetObjectItemCaseSensitive(cand, "kernels"));
  cJSON_AddItemToObject(o, "diagnosis", eval_profile_diagnose(sum, bound));
  cJSON_AddItemToObject(o, "candidate", sum);
  if (ref && !*eval_jstr(ref, "error"))
    cJSON_AddItemToObject(o, "reference",
                          eval_profile_summary(cJSON_GetObjectItemCaseSensitive(ref, "kernels")));
  add_feedback(o);
  return o;
}

static const char *failure_words(const char *reason) {
  if (!strcmp(reason, "no_tool")) return "Nsight Compute (ncu) is not installed here";
  if (!strcmp(reason, "permission")) return "no permission to read the GPU's counters";
  if (!strcmp(reason, "unsupported")) return "the profiler cannot run on this GPU or host";
  if (!strcmp(reason, "no_gpu")) return "no GPU";
  if (!strcmp(reason, "timeout")) return "it took longer than its deadline";
  return "it failed";
}

/* " DRAM 89% of peak, L2 hit 51%, ..." with only the figures the summary has. */
static void figures(kevo_buf *b, const cJSON *s) {
  static const struct {
    const char *key, *fmt;
  } f[] = {{"time_ms", " %.4g ms"},
           {"dram_pct", " DRAM %.0f%% of peak"},
           {"l2_hit_pct", " L2 hit %.0f%%"},
           {"sm_pct", " SM throughput %.0f%%"},
           {"occupancy_pct", " achieved occupancy %.0f%%"}};
  int first = 1;
  for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
    double v = num(s, f[i].key);
    if (isnan(v)) continue;
    if (!first) kevo_buf_puts(b, ",");
    kevo_buf_printf(b, f[i].fmt, v);
    first = 0;
  }
  if (*eval_jstr(s, "pipe") && !isnan(num(s, "pipe_pct")))
    kevo_buf_printf(b, "%s busiest pipe %s %.0f%%", first ? "" : ",", eval_jstr(s, "pipe"),
                    num(s, "pipe_pct"));
}

void eval_profile_feedback(kevo_buf *b, const cJSON *p) {
  if (!cJSON_IsObject(p)) return;
  if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(p, "ok"))) {
    kevo_buf_printf(b, "No hardware profile: %s (%s).\n", failure_words(eval_jstr(p, "reason")),
                    eval_jstr(p, "error"));
    return;
  }
  const cJSON *c = cJSON_GetObjectItemCaseSensitive(p, "candidate");
  const cJSON *r = cJSON_GetObjectItemCaseSensitive(p, "reference");
  kevo_buf_printf(b, "Hardware profile (Nsight Compute), most important first:\n");
  int i = 1;
  const cJSON *f;
  cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(p, "diagnosis")) {
    kevo_buf_printf(b, "%d. %s.\n", i++, eval_jstr(f, "text"));
  }
  kevo_buf_puts(b, "Figures:");
  figures(b, c);
  if (cJSON_IsObject(r)) {
    kevo_buf_puts(b, "; the reference:");
    figures(b, r);
  }
  kevo_buf_puts(b, ".\n");
}

/* One row of the table: label, then the value in each column (or "-"). */
static void row(kevo_buf *b, const char *label, const char *key, const char *fmt, double scale,
                const cJSON *cols[3], int ncols) {
  int any = 0;
  for (int i = 0; i < ncols; i++)
    any |= !isnan(num(cols[i], key));
  if (!any) return;
  kevo_buf_printf(b, "  %-26s", label);
  for (int i = 0; i < ncols; i++) {
    char v[48] = "-";
    if (!isnan(num(cols[i], key))) snprintf(v, sizeof v, fmt, num(cols[i], key) * scale);
    kevo_buf_printf(b, " %14s", v);
  }
  kevo_buf_puts(b, "\n");
}

void eval_profile_table(kevo_buf *b, const cJSON *p, const cJSON *parent) {
  if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(p, "ok"))) {
    kevo_buf_printf(b, "profile: none: %s (%s)\n", failure_words(eval_jstr(p, "reason")),
                    eval_jstr(p, "error"));
    return;
  }
  const cJSON *cols[3] = {cJSON_GetObjectItemCaseSensitive(p, "candidate"),
                          cJSON_GetObjectItemCaseSensitive(p, "reference"), parent};
  int ncols = 1 + (cols[1] != NULL);
  if (parent) {
    if (!cols[1]) cols[1] = parent;
    ncols = cols[1] == parent ? 2 : 3;
  }
  kevo_buf_printf(b, "profile (Nsight Compute, %.1f s, clocks as they are):\n  %-26s %14s",
                  num(p, "ms") / 1000, "", "candidate");
  if (ncols > 1) kevo_buf_printf(b, " %14s", cols[1] == parent ? "parent" : "reference");
  if (ncols > 2) kevo_buf_printf(b, " %14s", "parent");
  kevo_buf_puts(b, "\n");
  row(b, "kernel time (ms)", "time_ms", "%.4f", 1, cols, ncols);
  row(b, "DRAM throughput (% peak)", "dram_pct", "%.1f", 1, cols, ncols);
  row(b, "DRAM bytes (MB)", "dram_bytes", "%.1f", 1e-6, cols, ncols);
  row(b, "L2 hit rate (%)", "l2_hit_pct", "%.1f", 1, cols, ncols);
  row(b, "SM throughput (% peak)", "sm_pct", "%.1f", 1, cols, ncols);
  row(b, "achieved occupancy (%)", "occupancy_pct", "%.1f", 1, cols, ncols);
  row(b, "theoretical occupancy (%)", "theoretical_pct", "%.1f", 1, cols, ncols);
  row(b, "registers per thread", "registers", "%.0f", 1, cols, ncols);
  row(b, "waves per SM", "waves", "%.2f", 1, cols, ncols);
  row(b, "bank conflicts (% waves)", "bank_conflict_pct", "%.1f", 1, cols, ncols);
  row(b, "load sectors/request", "ld_sectors_per_req", "%.2f", 1, cols, ncols);
  row(b, "load bytes used/sector (%)", "ld_efficiency_pct", "%.1f", 1, cols, ncols);
  row(b, "store sectors/request", "st_sectors_per_req", "%.2f", 1, cols, ncols);
  row(b, "store bytes used/sector(%)", "st_efficiency_pct", "%.1f", 1, cols, ncols);
  row(b, "threads per instruction", "threads_per_inst", "%.1f", 1, cols, ncols);
  row(b, "uniform branches (%)", "branch_uniform_pct", "%.1f", 1, cols, ncols);
  row(b, "tensor cores (% cycles)", "tensor_pct", "%.1f", 1, cols, ncols);
  row(b, "issue slots busy (%)", "issue_pct", "%.1f", 1, cols, ncols);
  row(b, "busiest other pipe (%)", "pipe_pct", "%.1f", 1, cols, ncols);
  const char *lim = eval_jstr(cols[0], "limiter");
  if (*lim) kevo_buf_printf(b, "  occupancy limiter: %s\n", lim);
  if (*eval_jstr(cols[0], "pipe"))
    kevo_buf_printf(b, "  busiest other pipe: %s\n", eval_jstr(cols[0], "pipe"));
  const cJSON *x;
  int i = 1;
  cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(cols[0], "stalls")) {
    kevo_buf_printf(b, "  stall %d: %s, %.1f cycles per instruction (%.0f%%): %s\n", i++,
                    eval_jstr(x, "reason"), eval_jnum(x, "cycles"), eval_jnum(x, "pct"),
                    eval_jstr(x, "meaning"));
  }
  kevo_buf_puts(b, "diagnosis:\n");
  i = 1;
  cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(p, "diagnosis")) {
    kevo_buf_printf(b, "  %d. %s\n", i++, eval_jstr(x, "text"));
  }
}
