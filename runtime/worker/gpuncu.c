/* gpuncu.c: the metric set kevo asks ncu for, and reading what ncu answers (docs/profile.md).
 * The names are Nsight Compute's (`ncu --query-metrics --chip gh100`, and the launch__ ones of its
 * LaunchStats and Occupancy sections); ncu refuses the whole run when one is unknown, so a name
 * is added only once a real run has read it back (tests/fixtures/ncu/ holds such runs). */
#include "gpuncu.h"

#include <cjson/cJSON.h>

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The stall reasons of the warp state statistics, each as warps stalled per issued instruction
 * (the cycles an instruction waits for that reason, on average). */
#define STALL(r) "smsp__average_warps_issue_stalled_" r "_per_issue_active.ratio,"

// clang-format off
static const char metrics[] =
    "gpu__time_duration.sum,"
    "dram__throughput.avg.pct_of_peak_sustained_elapsed,"
    "dram__bytes_read.sum,"
    "dram__bytes_write.sum,"
    "lts__t_sector_hit_rate.pct,"
    "sm__throughput.avg.pct_of_peak_sustained_elapsed,"
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed,"
    "sm__warps_active.avg.pct_of_peak_sustained_active,"
    "launch__occupancy_limit_registers,"
    "launch__occupancy_limit_shared_mem,"
    "launch__occupancy_limit_blocks,"
    "launch__occupancy_limit_warps,"
    "launch__registers_per_thread,"
    "launch__block_size,"
    "launch__grid_size,"
    "launch__waves_per_multiprocessor,"
    "launch__shared_mem_per_block_static,"
    "launch__shared_mem_per_block_dynamic,"
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,"
    "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,"
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,"
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,"
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum,"
    "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum,"
    "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct,"
    "smsp__sass_average_data_bytes_per_sector_mem_global_op_st.pct,"
    "smsp__sass_average_branch_targets_threads_uniform.pct,"
    "smsp__average_thread_inst_executed_per_inst_executed.ratio,"
    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active,"
    "sm__inst_executed_pipe_tensor.sum,"
    /* the other pipes (ncu's Compute Workload Analysis): cycles active where the counter
     * exists, else instructions against the pipe's peak issue rate */
    "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active,"
    "sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active,"
    "sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_active,"
    "sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active,"
    "sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active,"
    "sm__inst_executed_pipe_fp64.avg.pct_of_peak_sustained_active,"
    "sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active,"
    "sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active,"
    "sm__issue_active.avg.pct_of_peak_sustained_active,"
    STALL("barrier") STALL("branch_resolving") STALL("dispatch_stall") STALL("drain")
    STALL("gmma") STALL("imc_miss") STALL("lg_throttle") STALL("long_scoreboard")
    STALL("math_pipe_throttle") STALL("membar") STALL("mio_throttle") STALL("misc")
    STALL("no_instruction") STALL("not_selected") STALL("selected") STALL("short_scoreboard")
    STALL("sleeping") STALL("tex_throttle")
    "smsp__average_warps_issue_stalled_wait_per_issue_active.ratio";
// clang-format on

const char *wk_ncu_metrics(void) {
  const char *env = getenv("KEVO_NCU_METRICS"); /* a diagnosis aid: another set, same parsing */
  return env && *env ? env : metrics;
}

int wk_ncu_kernel_filter(const cJSON *plans, char *out, size_t cap) {
  size_t len = 0;
  int names = 0;
  const cJSON *p, *k;
  if (cap > 0) out[0] = '\0';
  if (cap < 16) return -1;
  len = (size_t)snprintf(out, cap, "regex:^(");
  cJSON_ArrayForEach(p, plans) {
    cJSON_ArrayForEach(k, cJSON_GetObjectItemCaseSensitive(
                              cJSON_GetObjectItemCaseSensitive(p, "plan"), "kernels")) {
      const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(k, "name"));
      if (!name || !*name) continue;
      char esc[1024];
      size_t n = 0;
      for (const char *c = name; *c && n + 2 < sizeof esc; c++) {
        if (!(isalnum((unsigned char)*c) || *c == '_')) esc[n++] = '\\';
        esc[n++] = *c;
      }
      esc[n] = '\0';
      /* a name already in the filter: "(" or "|" before it and "|" after */
      char dup[1100];
      snprintf(dup, sizeof dup, "%s|", esc);
      const char *at = strstr(out + 8, dup);
      int seen = 0;
      for (; at && !seen; at = strstr(at + 1, dup))
        seen = at[-1] == '(' || at[-1] == '|';
      if (seen) continue;
      if (len + n + 4 > cap) {
        out[0] = '\0';
        return -1;
      }
      len += (size_t)snprintf(out + len, cap - len, "%s|", esc);
      names++;
    }
  }
  if (!names) {
    out[0] = '\0';
    return -1;
  }
  snprintf(out + len - 1, cap - len + 1, ")$"); /* the last '|' becomes ")$" */
  return 0;
}

/* ---- CSV ------------------------------------------------------------------------------ */

enum { MAX_FIELDS = 32, FIELD_CAP = 1024 };

/* Splits one CSV line (ncu quotes every field; "" inside is a quote) into fields. Returns the
 * count; *next points past the line. Fields longer than FIELD_CAP are cut. */
static int csv_line(const char *p, char f[MAX_FIELDS][FIELD_CAP], const char **next) {
  int n = 0;
  for (;;) {
    size_t len = 0;
    char *out = n < MAX_FIELDS ? f[n] : NULL;
    if (*p == '"') {
      p++;
      while (*p && !(*p == '"' && p[1] != '"')) {
        if (*p == '"') p++; /* "" */
        if (out && len + 1 < FIELD_CAP) out[len++] = *p;
        p++;
      }
      if (*p == '"') p++;
    }
    while (*p && *p != ',' && *p != '\n' && *p != '\r') { /* unquoted, or junk after quotes */
      if (out && len + 1 < FIELD_CAP) out[len++] = *p;
      p++;
    }
    if (out) out[len] = '\0';
    n++;
    if (*p == ',') {
      p++;
      continue;
    }
    while (*p == '\r')
      p++;
    if (*p == '\n') p++;
    *next = p;
    return n < MAX_FIELDS ? n : MAX_FIELDS;
  }
}

/* The number in an ncu value ("2,123,563,008", "89.10"), scaled to base units; 0 when it is
 * not a number ("n/a"). */
static int csv_number(const char *text, const char *unit, double *out) {
  char digits[128];
  size_t n = 0;
  for (const char *p = text; *p && n + 1 < sizeof digits; p++)
    if (*p != ',') digits[n++] = *p;
  digits[n] = '\0';
  char *end;
  double v = strtod(digits, &end);
  if (end == digits || *end) return 0;
  static const struct {
    const char *unit;
    double scale;
  } scaled[] = {
      {"Kbyte", 1e3},        {"Mbyte", 1e6},        {"Gbyte", 1e9},  {"Tbyte", 1e12},
      {"usecond", 1e3},      {"msecond", 1e6},      {"second", 1e9}, {"Kbyte/second", 1e3},
      {"Mbyte/second", 1e6}, {"Gbyte/second", 1e9}, {NULL, 0}};
  for (int i = 0; scaled[i].unit; i++)
    if (!strcmp(unit, scaled[i].unit)) v *= scaled[i].scale;
  *out = v;
  return 1;
}

int wk_ncu_parse(const char *text, cJSON **kernels, kevo_error *err) {
  *kernels = NULL;
  static char f[MAX_FIELDS][FIELD_CAP]; /* one line's fields: too big for the stack */
  int c_id = -1, c_name = -1, c_metric = -1, c_unit = -1, c_value = -1;
  cJSON *list = NULL, *cur = NULL;
  char cur_id[64] = "";
  const char *p = text ? text : "";
  while (*p) {
    const char *line = p;
    if (*line != '"') { /* ==PROF==, ==WARNING==, the program's own output */
      const char *nl = strchr(line, '\n');
      p = nl ? nl + 1 : line + strlen(line);
      continue;
    }
    int n = csv_line(line, f, &p);
    if (c_id < 0) {
      if (strcmp(f[0], "ID")) continue;
      for (int i = 0; i < n; i++) {
        if (!strcmp(f[i], "ID")) c_id = i;
        if (!strcmp(f[i], "Kernel Name")) c_name = i;
        if (!strcmp(f[i], "Metric Name")) c_metric = i;
        if (!strcmp(f[i], "Metric Unit")) c_unit = i;
        if (!strcmp(f[i], "Metric Value")) c_value = i;
      }
      if (c_name < 0 || c_metric < 0 || c_unit < 0 || c_value < 0)
        return kevo_fail(err, KEVO_E_PARSE, "ncu's CSV header lacks a column kevo reads");
      list = cJSON_CreateArray();
      continue;
    }
    if (n <= c_value || n <= c_name || !f[c_metric][0]) continue; /* a rule row, or short */
    if (!cur || strcmp(cur_id, f[c_id])) {
      cur = cJSON_CreateObject();
      snprintf(cur_id, sizeof cur_id, "%s", f[c_id]);
      cJSON_AddNumberToObject(cur, "id", atof(f[c_id]));
      cJSON_AddStringToObject(cur, "name", f[c_name]);
      cJSON_AddObjectToObject(cur, "metrics");
      cJSON_AddItemToArray(list, cur);
    }
    double v;
    cJSON *m = cJSON_GetObjectItemCaseSensitive(cur, "metrics");
    if (csv_number(f[c_value], f[c_unit], &v) && !cJSON_GetObjectItemCaseSensitive(m, f[c_metric]))
      cJSON_AddNumberToObject(m, f[c_metric], v);
  }
  if (!list) return kevo_fail(err, KEVO_E_PARSE, "ncu printed no CSV table");
  *kernels = list;
  return KEVO_OK;
}

int wk_ncu_rows(const char *text) {
  static char f[MAX_FIELDS][FIELD_CAP];
  int c_name = -1, c_metric = -1, rows = 0;
  const char *p = text ? text : "";
  while (*p) {
    const char *nl = strchr(p, '\n');
    if (!nl) break; /* a line still being written */
    if (*p != '"') {
      p = nl + 1;
      continue;
    }
    const char *next;
    int n = csv_line(p, f, &next);
    p = nl + 1;
    if (c_name < 0) {
      for (int i = 0; i < n && !strcmp(f[0], "ID"); i++) {
        if (!strcmp(f[i], "Kernel Name")) c_name = i;
        if (!strcmp(f[i], "Metric Name")) c_metric = i;
      }
      if (c_metric < 0) c_name = -1;
      continue;
    }
    if (n > c_metric && f[c_metric][0] && strncmp(f[c_name], "kv_", 3)) rows++;
  }
  return rows;
}

/* ---- why it failed -------------------------------------------------------------------- */

int wk_ncu_failure(const char *text, char reason[32], char *why, size_t whylen) {
  snprintf(reason, 32, "failed");
  snprintf(why, whylen, "ncu failed");
  if (!text) return 0;
  const char *e = strstr(text, "==ERROR==");
  if (!e) {
    if (strstr(text, "No kernels were profiled")) {
      snprintf(reason, 32, "no_kernels");
      snprintf(why, whylen, "ncu profiled no kernel");
      return 1;
    }
    return 0;
  }
  size_t n = strcspn(e, "\r\n");
  if (n > 400) n = 400;
  if (strstr(text, "ERR_NVGPUCTRPERM"))
    snprintf(reason, 32, "permission");
  else if (strstr(text, "LibraryNotLoaded") || strstr(text, "not supported") ||
           strstr(text, "Unsupported") || strstr(text, "Failed to initialize the profiler"))
    snprintf(reason, 32, "unsupported");
  snprintf(why, whylen, "%.*s", (int)n, e);
  return 1;
}

int wk_ncu_find(char *path, size_t len) {
  const char *env = getenv("KEVO_NCU");
  if (env && *env) {
    snprintf(path, len, "%s", env);
    return access(path, X_OK) ? -1 : 0;
  }
  const char *dirs = getenv("PATH");
  while (dirs && *dirs) {
    size_t n = strcspn(dirs, ":");
    if (n) {
      snprintf(path, len, "%.*s/ncu", (int)n, dirs);
      if (!access(path, X_OK)) return 0;
    }
    dirs += n + (dirs[n] == ':');
  }
  snprintf(path, len, "/usr/local/cuda/bin/ncu");
  return access(path, X_OK) ? -1 : 0;
}
