/* Reading Nsight Compute's CSV (gpuncu.c) from a run recorded on an H200 (tests/fixtures/ncu/):
 * one entry per kernel in ncu's order, numbers without thousands separators, "n/a" left out,
 * rule rows skipped; and ncu's failures told apart by their message. */
#include "check.h"
#include "gpuncu.h"

#include <cjson/cJSON.h>

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *buf = malloc(1 << 22);
  size_t n = fread(buf, 1, (1 << 22) - 1, f);
  buf[n] = '\0';
  fclose(f);
  return buf;
}

static double metric(const cJSON *k, const char *name) {
  const cJSON *v =
      cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(k, "metrics"), name);
  return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

int main(void) {
  const char *src = getenv("KEVO_SRC");
  char path[4096];
  snprintf(path, sizeof path, "%s/tests/fixtures/ncu/probe_copy_bank.csv", src ? src : "..");
  char *text = slurp(path);
  CHECK(text != NULL);
  cJSON *ks = NULL;
  kevo_error err = {0};
  CHECK(wk_ncu_parse(text, &ks, &err) == KEVO_OK);
  CHECK(cJSON_GetArraySize(ks) == 2);
  const cJSON *copy = cJSON_GetArrayItem(ks, 0), *bank = cJSON_GetArrayItem(ks, 1);
  CHECK_STR_CONTAINS(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(copy, "name")), "copy(");
  CHECK(metric(copy, "dram__bytes.sum") == 2123563008.0);
  CHECK(metric(copy, "dram__throughput.avg.pct_of_peak_sustained_elapsed") == 89.10);
  CHECK(metric(bank, "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum") == 8132853.0);
  CHECK(metric(bank, "launch__occupancy_limit_shared_mem") == 3);
  cJSON_Delete(ks);
  /* the rows of whole lines (KEVO_PROFILE_EARLY_READ): 2 kernels x 17 metrics; a last line
   * still being written is not counted, nor are the child's own kv_* kernels */
  CHECK(wk_ncu_rows(text) == 34);
  size_t len = strlen(text);
  while (len > 0 && text[len - 1] == '\n')
    len--;
  text[len - 5] = '\0';
  CHECK(wk_ncu_rows(text) == 33);
  static const char copy_name[] = "\"copy(const float4 *, float4 *, unsigned long)\"";
  char *kv = malloc(strlen(text) + 1), *o = kv;
  for (const char *p = text; *p;) {
    if (!strncmp(p, copy_name, sizeof copy_name - 1)) {
      o += sprintf(o, "\"kv_fill\"");
      p += sizeof copy_name - 1;
    } else {
      *o++ = *p++;
    }
  }
  *o = '\0';
  CHECK(wk_ncu_rows(kv) == 16);
  CHECK(wk_ncu_rows("") == 0 && wk_ncu_rows(NULL) == 0);
  free(kv);
  free(text);

  /* quoting, n/a, scaled units, a rule row, lines that are not CSV */
  const char *t = "==PROF== Connected\n"
                  "\"ID\",\"Kernel Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n"
                  "\"0\",\"k(\"\"x\"\", int)\",\"a.sum\",\"Kbyte\",\"1,5\"\n"
                  "\"0\",\"k(\"\"x\"\", int)\",\"b.pct\",\"%\",\"n/a\"\n"
                  "\"0\",\"k(\"\"x\"\", int)\",\"\",\"\",\"\"\n"
                  "\"1\",\"j\",\"c.sum\",\"usecond\",\"2.5\"\r\n";
  CHECK(wk_ncu_parse(t, &ks, &err) == KEVO_OK);
  CHECK(cJSON_GetArraySize(ks) == 2);
  CHECK(!strcmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ks->child, "name")),
                "k(\"x\", int)"));
  CHECK(metric(ks->child, "a.sum") == 15000.0);
  CHECK(metric(ks->child, "b.pct") == -1);
  CHECK(metric(ks->child->next, "c.sum") == 2500.0);
  cJSON_Delete(ks);
  CHECK(wk_ncu_parse("==ERROR== nothing\n", &ks, &err) == KEVO_E_PARSE && !ks);

  char reason[32], why[256];
  CHECK(
      wk_ncu_failure("==PROF== x\n==ERROR== Failed to initialize the profiler: LibraryNotLoaded\n",
                     reason, why, sizeof why) == 1);
  CHECK(!strcmp(reason, "unsupported"));
  CHECK_STR_CONTAINS(why, "LibraryNotLoaded");
  CHECK(wk_ncu_failure("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission\n", reason,
                       why, sizeof why) == 1);
  CHECK(!strcmp(reason, "permission"));
  CHECK(wk_ncu_failure("==WARNING== No kernels were profiled.\n", reason, why, sizeof why) == 1);
  CHECK(!strcmp(reason, "no_kernels"));
  CHECK(wk_ncu_failure("\"ID\",\"x\"\n", reason, why, sizeof why) == 0);
  CHECK(strstr(wk_ncu_metrics(), "launch__occupancy_limit_registers") != NULL);

  /* the kernel filter: the plans' distinct names, escaped; none or too long: no filter */
  cJSON *plans = cJSON_Parse(
      "[{\"plan\": {\"kernels\": [{\"name\": \"copy_vec4\"}, {\"name\": \"_Z3sumPf$a\"}]}},"
      " {\"plan\": {\"kernels\": [{\"name\": \"copy_vec4\"}, {\"name\": \"copy_vec\"}]}},"
      " {\"plan\": {}}]");
  char filt[256];
  CHECK(wk_ncu_kernel_filter(plans, filt, sizeof filt) == 0);
  CHECK(!strcmp(filt, "regex:^(copy_vec4|_Z3sumPf\\$a|copy_vec)$"));
  CHECK(wk_ncu_kernel_filter(plans, filt, 30) == -1 && !filt[0]);
  cJSON *none = cJSON_Parse("[{\"plan\": {\"kernels\": []}}]");
  CHECK(wk_ncu_kernel_filter(none, filt, sizeof filt) == -1 && !filt[0]);
  cJSON_Delete(none);
  cJSON_Delete(plans);
  CHECK_DONE();
}
