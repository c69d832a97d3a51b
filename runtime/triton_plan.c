/* triton_plan.c: turning a resolved launch plan (docs/architecture.md "Launch chunks") into
 * what a Triton cubin needs: the signature triton.compile is asked for, and the launch the
 * worker replays (block from num_warps, Triton's shared memory, the calling convention's extra
 * trailing pointers). See triton.h. */
#include "triton.h"

#include <cjson/cJSON.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int triton_is_option(const char *name) {
  return name && (!strcmp(name, "num_warps") || !strcmp(name, "num_stages"));
}

int triton_option_value(const char *name, const char *value, int *out, kevo_error *err) {
  int warps = !strcmp(name, "num_warps");
  const char *v = value ? value : "";
  char *end;
  errno = 0;
  long n = strtol(v, &end, 10);
  int ok = *v && !*end && !errno;
  if (warps)
    ok = ok && n >= 1 && n <= TRITON_MAX_WARPS && (n & (n - 1)) == 0;
  else
    ok = ok && n >= 1 && n <= TRITON_MAX_STAGES;
  if (!ok)
    return warps ? kevo_fail(err, KEVO_E_ARG,
                             "num_warps must be a power of two from 1 to %d (a block of 32 * "
                             "num_warps threads), got '%.40s'",
                             TRITON_MAX_WARPS, v)
                 : kevo_fail(err, KEVO_E_ARG, "%s must be an integer from 1 to %d, got '%.40s'",
                             name, TRITON_MAX_STAGES, v);
  if (out) *out = (int)n;
  return KEVO_OK;
}

const char *triton_pointer_type(const char *dtype) {
  static const char *const map[][2] = {
      {"f32", "*fp32"},    {"f16", "*fp16"}, {"bf16", "*bf16"}, {"f64", "*fp64"},
      {"i32", "*i32"},     {"i64", "*i64"},  {"u8", "*u8"},     {"i8", "*i8"},
      {"u32", "*u32"},     {"u64", "*u64"},  {"bool", "*i1"},   {"f8e4m3", "*fp8e4nv"},
      {"f8e5m2", "*fp8e5"}};
  for (size_t i = 0; dtype && i < sizeof map / sizeof *map; i++)
    if (!strcmp(dtype, map[i][0])) return map[i][1];
  return NULL;
}

/* Triton's scalar type for a plan's scalar kind ("f32" -> "fp32"), or NULL. */
static const char *scalar_type(const char *kind) {
  static const char *const map[][2] = {{"i32", "i32"}, {"i64", "i64"},  {"u32", "u32"},
                                       {"u64", "u64"}, {"f32", "fp32"}, {"f64", "fp64"}};
  for (size_t i = 0; i < sizeof map / sizeof *map; i++)
    if (!strcmp(kind, map[i][0])) return map[i][1];
  return NULL;
}

int triton_plan_signature(const cJSON *launch, const char *(*dtype_of)(const char *, void *),
                          void *ud, cJSON **out, kevo_error *err) {
  *out = NULL;
  const cJSON *args = cJSON_GetObjectItem(launch, "args");
  if (!cJSON_IsArray(args)) return kevo_fail(err, KEVO_E_ARG, "the launch has no args list");
  cJSON *sig = cJSON_CreateArray();
  if (!sig) return kevo_fail(err, KEVO_E_NOMEM, "out of memory");
  int i = 0;
  for (const cJSON *a = args->child; a; a = a->next, i++) {
    const cJSON *kv = cJSON_IsObject(a) ? a->child : NULL;
    const char *type = NULL;
    if (kv && !strcmp(kv->string, "buf") && cJSON_IsString(kv)) {
      const char *dt = dtype_of ? dtype_of(kv->valuestring, ud) : NULL;
      type = triton_pointer_type(dt);
      if (!type) {
        cJSON_Delete(sig);
        return kevo_fail(err, KEVO_E_ARG, "argument %d ('%s'): no Triton pointer type for dtype %s",
                         i + 1, kv->valuestring, dt ? dt : "(unknown buffer)");
      }
    } else if (kv && !strcmp(kv->string, "null")) {
      cJSON_Delete(sig);
      return kevo_fail(err, KEVO_E_ARG,
                       "argument %d: a Triton launch does not pass null pointers itself (kevo "
                       "appends the calling convention's trailing pointers)",
                       i + 1);
    } else if (kv) {
      type = scalar_type(kv->string);
    }
    if (!type) {
      cJSON_Delete(sig);
      return kevo_fail(err, KEVO_E_ARG, "argument %d: not a buffer or a typed scalar", i + 1);
    }
    cJSON_AddItemToArray(sig, cJSON_CreateString(type));
  }
  *out = sig;
  return KEVO_OK;
}

static int int_at(const cJSON *arr, int i, int def) {
  const cJSON *v = cJSON_GetArrayItem(arr, i);
  return cJSON_IsNumber(v) ? v->valueint : def;
}

static void set_item(cJSON *obj, const char *key, cJSON *value) {
  if (cJSON_HasObjectItem(obj, key))
    cJSON_ReplaceItemInObject(obj, key, value);
  else
    cJSON_AddItemToObject(obj, key, value);
}

int triton_plan_finish(cJSON *plan, cJSON *launch, int index, const triton_module *m,
                       kevo_error *err) {
  if (!m || !m->ok) return kevo_fail(err, KEVO_E_ARG, "no compiled Triton module");
  if (m->num_ctas > 1 || m->launch_cooperative_grid)
    return kevo_fail(
        err, KEVO_E_LAUNCH, "kernel '%s' needs %s, which kevo's launcher does not do", m->name,
        m->num_ctas > 1 ? "a thread-block cluster (num_ctas > 1)" : "a cooperative launch");
  const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(launch, "name"));
  if (name && strcmp(name, m->name))
    return kevo_fail(err, KEVO_E_LAUNCH, "the launch names kernel '%s' but the cubin's is '%s'",
                     name, m->name);
  const cJSON *block = cJSON_GetObjectItem(launch, "block");
  if (block &&
      (int_at(block, 0, 1) != m->threads || int_at(block, 1, 1) != 1 || int_at(block, 2, 1) != 1))
    return kevo_fail(err, KEVO_E_LAUNCH,
                     "block for Triton kernel '%s' comes from num_warps (%d threads); leave it "
                     "out of the launch (it gave {%d, %d, %d})",
                     m->name, m->threads, int_at(block, 0, 1), int_at(block, 1, 1),
                     int_at(block, 2, 1));
  const cJSON *shared = cJSON_GetObjectItem(launch, "shared");
  if (cJSON_IsNumber(shared) && shared->valueint != 0 && shared->valueint != m->shared)
    return kevo_fail(err, KEVO_E_LAUNCH,
                     "shared memory for Triton kernel '%s' is Triton's (%d bytes); leave it out "
                     "of the launch (it gave %d)",
                     m->name, m->shared, shared->valueint);
  cJSON *args = cJSON_GetObjectItem(launch, "args");
  const cJSON *grid = cJSON_GetObjectItem(launch, "grid");
  if (!cJSON_IsArray(args) || !cJSON_IsArray(grid))
    return kevo_fail(err, KEVO_E_ARG, "the launch lacks args or grid");
  int64_t programs = 1;
  for (int i = 0; i < 3; i++)
    programs *= int_at(grid, i, 1);

  set_item(launch, "name", cJSON_CreateString(m->name));
  cJSON *b = cJSON_CreateArray();
  cJSON_AddItemToArray(b, cJSON_CreateNumber(m->threads));
  cJSON_AddItemToArray(b, cJSON_CreateNumber(1));
  cJSON_AddItemToArray(b, cJSON_CreateNumber(1));
  set_item(launch, "block", b);
  set_item(launch, "shared", cJSON_CreateNumber(m->shared));
  for (size_t i = 0; i < m->nextra; i++) {
    const triton_extra_arg *x = &m->extra[i];
    cJSON *arg = cJSON_CreateObject();
    if (x->bytes_per_program <= 0) {
      cJSON_AddBoolToObject(arg, "null", 1);
    } else {
      /* Triton's launcher gives each program its slice: size * programs * num_ctas. */
      char sname[96];
      snprintf(sname, sizeof sname, "triton_%s_%d", x->name, index);
      int64_t align = x->align > 0 ? x->align : 1;
      int64_t bytes = x->bytes_per_program * programs * (m->num_ctas > 0 ? m->num_ctas : 1);
      bytes = (bytes + align - 1) / align * align;
      cJSON *scratch = cJSON_GetObjectItem(plan, "scratch");
      if (!scratch) scratch = cJSON_AddArrayToObject(plan, "scratch");
      cJSON *entry = cJSON_CreateObject();
      cJSON_AddStringToObject(entry, "name", sname);
      cJSON_AddNumberToObject(entry, "bytes", (double)bytes);
      cJSON_AddBoolToObject(entry, "zero", 1);
      cJSON_AddItemToArray(scratch, entry);
      cJSON_AddStringToObject(arg, "buf", sname);
    }
    cJSON_AddItemToArray(args, arg);
  }
  return KEVO_OK;
}
