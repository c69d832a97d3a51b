#include "launch.h"

#include "buf.h"
#include "luastate.h"
#include "proto.h"

#include <cjson/cJSON.h>
#include <lauxlib.h>
#include <lua.h>

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SCALAR_MT "kevo.launch.scalar"

enum {
  LAUNCH_MEM_LIMIT = 4 << 20,
  LAUNCH_INSTR_LIMIT = 2 * 1000 * 1000,
  LAUNCH_MAX_KERNELS = KEVO_PROTO_MAX_KERNELS,
  LAUNCH_MAX_ARGS = KEVO_PROTO_MAX_ARGS,
  LAUNCH_MAX_SCRATCH = 32,
};
#define LAUNCH_TIME_LIMIT_S 1.0
#define JSON_EXACT_INT 9007199254740992.0 /* 2^53: larger integers do not survive JSON */

/* ---- finding the block ---- */

static int line_of(const char *src, const char *at) {
  int line = 1;
  for (const char *p = src; p < at; p++)
    line += *p == '\n';
  return line;
}

static const char *find_in(const char *hay, size_t len, const char *needle, size_t from) {
  size_t n = strlen(needle);
  for (size_t i = from; i + n <= len; i++)
    if (memcmp(hay + i, needle, n) == 0) return hay + i;
  return NULL;
}

static int extract_cuda(const char *src, size_t len, launch_block *out, kevo_error *err) {
  for (size_t from = 0;;) {
    const char *m = find_in(src, len, "kevo:launch", from);
    if (!m) break;
    from = (size_t)(m - src) + 1;
    const char *p = m;
    while (p > src && (p[-1] == ' ' || p[-1] == '\t'))
      p--;
    while (p - src >= 3 && p[-1] == '*' && p[-2] == '*')
      p--; /* a doc comment: slash, two stars, kevo:launch */
    if (p - src < 2 || p[-2] != '/' || p[-1] != '*') continue; /* only inside a comment */
    const char *body = m + strlen("kevo:launch");
    const char *end = find_in(src, len, "*/", (size_t)(body - src));
    if (!end)
      return kevo_fail(err, KEVO_E_LAUNCH, "line %d: the kevo:launch comment is never closed",
                       line_of(src, m));
    out->text = body;
    out->len = (size_t)(end - body);
    while (out->len && body[out->len - 1] == '*')
      out->len--; /* the stars of a closing ** / */
    out->line = line_of(src, m);
    return KEVO_OK;
  }
  return kevo_fail(err, KEVO_E_LAUNCH,
                   "no launch description: add a /* kevo:launch return {kernels = {...}} */ "
                   "comment to the source (or pass launch=)");
}

static int extract_triton(const char *src, size_t len, launch_block *out, kevo_error *err) {
  static const char *const opens[] = {"'''kevo:launch", "\"\"\"kevo:launch"};
  const char *best = NULL;
  int q = 0;
  for (int i = 0; i < 2; i++) {
    const char *m = find_in(src, len, opens[i], 0);
    if (m && (!best || m < best)) best = m, q = i;
  }
  if (best) {
    const char *body = best + strlen(opens[q]);
    const char *end = find_in(src, len, q ? "\"\"\"" : "'''", (size_t)(body - src));
    if (!end)
      return kevo_fail(err, KEVO_E_LAUNCH, "line %d: the kevo:launch string is never closed",
                       line_of(src, best));
    out->text = body;
    out->len = (size_t)(end - body);
    out->line = line_of(src, best);
    return KEVO_OK;
  }
  /* KEVO_LAUNCH = """...""" (docs/triton.md): the string's text is the chunk */
  for (const char *k = find_in(src, len, "KEVO_LAUNCH", 0); k;
       k = find_in(src, len, "KEVO_LAUNCH", (size_t)(k - src) + 1)) {
    const char *p = k + strlen("KEVO_LAUNCH"), *end = src + len;
    while (p < end && (*p == ' ' || *p == '\t'))
      p++;
    if (p >= end || *p != '=') continue;
    p++;
    while (p < end && (*p == ' ' || *p == '\t'))
      p++;
    if (end - p < 3 || (memcmp(p, "'''", 3) && memcmp(p, "\"\"\"", 3))) continue;
    char quote[4] = {p[0], p[0], p[0], 0};
    const char *close = find_in(src, len, quote, (size_t)(p - src) + 3);
    if (!close)
      return kevo_fail(err, KEVO_E_LAUNCH, "line %d: the KEVO_LAUNCH string is never closed",
                       line_of(src, k));
    out->text = p + 3;
    out->len = (size_t)(close - (p + 3));
    out->line = line_of(src, p);
    return KEVO_OK;
  }
  const char *c = find_in(src, len, "# kevo:launch", 0);
  if (c)
    return kevo_fail(err, KEVO_E_LAUNCH,
                     "line %d: `# kevo:launch` comment lines are not read; put the chunk in a "
                     "'''kevo:launch ... ''' string instead",
                     line_of(src, c));
  return kevo_fail(err, KEVO_E_LAUNCH,
                   "no launch description: add a '''kevo:launch return {kernels = {...}} ''' "
                   "string to the source (or pass launch=)");
}

int launch_extract(const char *lang, const char *source, size_t len, launch_block *out,
                   kevo_error *err) {
  memset(out, 0, sizeof *out);
  if (lang && strcmp(lang, "cuda") == 0) return extract_cuda(source, len, out, err);
  if (lang && strcmp(lang, "triton") == 0) return extract_triton(source, len, out, err);
  return kevo_fail(err, KEVO_E_ARG, "unknown language '%s' (cuda or triton)", lang ? lang : "");
}

/* ---- the chunk's environment ---- */

/* Scalars (i32(x), ptr(name), null) are tables {kind, value} with a private metatable the
 * chunk cannot reach (it has no setmetatable), so they cannot be forged. */
static void push_scalar(lua_State *L, const char *kind, int value_idx) {
  value_idx = lua_absindex(L, value_idx);
  lua_createtable(L, 2, 0);
  lua_pushstring(L, kind);
  lua_rawseti(L, -2, 1);
  lua_pushvalue(L, value_idx);
  lua_rawseti(L, -2, 2);
  luaL_setmetatable(L, SCALAR_MT);
}

static int wrap_int(lua_State *L, const char *kind, lua_Integer lo, lua_Integer hi) {
  int isint;
  lua_Integer v = lua_tointegerx(L, 1, &isint);
  if (!isint)
    return luaL_error(L, "%s(x): x must be an integer, got %s", kind, luaL_tolstring(L, 1, NULL));
  if (v < lo || v > hi) return luaL_error(L, "%s(x): %I is out of range", kind, (LUAI_UACINT)v);
  if ((double)v >= JSON_EXACT_INT || (double)v <= -JSON_EXACT_INT)
    return luaL_error(L, "%s(x): %I is beyond 2^53, which a plan cannot carry exactly", kind,
                      (LUAI_UACINT)v);
  lua_pushinteger(L, v);
  push_scalar(L, kind, -1);
  return 1;
}

static int w_i32(lua_State *L) {
  return wrap_int(L, "i32", INT32_MIN, INT32_MAX);
}
static int w_u32(lua_State *L) {
  return wrap_int(L, "u32", 0, UINT32_MAX);
}
static int w_i64(lua_State *L) {
  return wrap_int(L, "i64", LUA_MININTEGER, LUA_MAXINTEGER);
}
static int w_u64(lua_State *L) {
  return wrap_int(L, "u64", 0, LUA_MAXINTEGER);
}

static int wrap_float(lua_State *L, const char *kind) {
  int isnum;
  lua_Number v = lua_tonumberx(L, 1, &isnum);
  if (!isnum || !isfinite(v))
    return luaL_error(L, "%s(x): x must be a finite number, got %s", kind,
                      luaL_tolstring(L, 1, NULL));
  lua_pushnumber(L, v);
  push_scalar(L, kind, -1);
  return 1;
}

static int w_f32(lua_State *L) {
  return wrap_float(L, "f32");
}
static int w_f64(lua_State *L) {
  return wrap_float(L, "f64");
}

static int w_ptr(lua_State *L) {
  if (lua_type(L, 1) != LUA_TSTRING) return luaL_error(L, "ptr(name): name must be a string");
  push_scalar(L, "buf", 1);
  return 1;
}

static int l_cdiv(lua_State *L) {
  int ia, ib;
  lua_Integer a = lua_tointegerx(L, 1, &ia), b = lua_tointegerx(L, 2, &ib);
  if (!ia || !ib) return luaL_error(L, "cdiv(a, b): a and b must be integers");
  if (b <= 0) return luaL_error(L, "cdiv(a, b): b must be > 0, got %I", (LUAI_UACINT)b);
  lua_pushinteger(L, a >= 0 ? (a + b - 1) / b : -((-a) / b));
  return 1;
}

static int env_index(lua_State *L) {
  return luaL_error(L,
                    "unknown name '%s' (a launch chunk sees the shape's params, the knobs, cdiv, "
                    "min, max, i32 i64 u32 u64 f32 f64, ptr, null and device)",
                    lua_tostring(L, 2));
}

static int env_newindex(lua_State *L) {
  return luaL_error(L, "assignment to global '%s' (use local)", lua_tostring(L, 2));
}

static int device_unknown(lua_State *L) {
  return luaL_error(L, "E_NOGPU: device.%s is not known: no GPU here", lua_tostring(L, 2));
}

static void push_knob_value(lua_State *L, const char *v) {
  char *end;
  if (!v) {
    lua_pushboolean(L, 1); /* a bare define */
    return;
  }
  long long i = strtoll(v, &end, 0);
  if (*v && !*end) {
    lua_pushinteger(L, (lua_Integer)i);
    return;
  }
  double d = strtod(v, &end);
  if (*v && !*end && !isspace((unsigned char)*v)) {
    lua_pushnumber(L, d);
    return;
  }
  if (!strcmp(v, "true") || !strcmp(v, "false")) {
    lua_pushboolean(L, v[0] == 't');
    return;
  }
  lua_pushstring(L, v);
}

/* Pushes the chunk's environment table. Raises on a name given twice. */
static int push_env(lua_State *L) {
  const launch_env *env = lua_touserdata(L, 1);
  lua_newtable(L);
  int e = lua_gettop(L);
  static const luaL_Reg fns[] = {{"i32", w_i32}, {"i64", w_i64},   {"u32", w_u32},
                                 {"u64", w_u64}, {"f32", w_f32},   {"f64", w_f64},
                                 {"ptr", w_ptr}, {"cdiv", l_cdiv}, {NULL, NULL}};
  luaL_setfuncs(L, fns, 0);
  lua_getglobal(L, "math");
  lua_getfield(L, -1, "min");
  lua_setfield(L, e, "min");
  lua_getfield(L, -1, "max");
  lua_setfield(L, e, "max");
  lua_pop(L, 1);
  lua_pushboolean(L, 1);
  push_scalar(L, "null", -1);
  lua_setfield(L, e, "null");
  lua_pop(L, 1);

  lua_newtable(L); /* stack: env device */
  if (env->device && env->device->name) {
    lua_pushstring(L, env->device->name);
    lua_setfield(L, -2, "name");
    lua_pushinteger(L, env->device->sms);
    lua_setfield(L, -2, "sms");
    lua_createtable(L, 2, 0);
    lua_pushinteger(L, env->device->cc_major);
    lua_rawseti(L, -2, 1);
    lua_pushinteger(L, env->device->cc_minor);
    lua_rawseti(L, -2, 2);
    lua_setfield(L, -2, "cc");
  } else {
    lua_createtable(L, 0, 1);
    lua_pushcfunction(L, device_unknown);
    lua_setfield(L, -2, "__index");
    lua_setmetatable(L, -2);
  }
  lua_setfield(L, e, "device");

  for (size_t i = 0; i < env->nparams + env->nknobs; i++) {
    int is_param = i < env->nparams;
    const char *name = is_param ? env->params[i].name : env->knobs[i - env->nparams].name;
    if (lua_getfield(L, e, name) != LUA_TNIL)
      return luaL_error(L, "%s '%s' clashes with a name the chunk already has",
                        is_param ? "param" : "knob", name);
    lua_pop(L, 1);
    if (is_param)
      lua_pushinteger(L, (lua_Integer)env->params[i].value);
    else
      push_knob_value(L, env->knobs[i - env->nparams].value);
    lua_setfield(L, e, name);
  }
  lua_createtable(L, 0, 2);
  lua_pushcfunction(L, env_index);
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, env_newindex);
  lua_setfield(L, -2, "__newindex");
  lua_setmetatable(L, e);
  return 1;
}

/* ---- checking the result ---- */

typedef struct checker {
  lua_State *L;
  const launch_env *env;
  const char *where; /* "chunkname:LINE" */
  kevo_error *err;
  char scratch_names[LAUNCH_MAX_SCRATCH][64];
  size_t nscratch;
} checker;

#define bad(c, ...) bad(c, __VA_ARGS__)
__attribute__((format(printf, 2, 3))) static int bad(checker *c, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return kevo_fail(c->err, KEVO_E_LAUNCH, "%s: kevo:launch: %s", c->where, msg);
}

/* Is the table at idx a sequence 1..n with no other keys? n returned (0 for an empty table). */
static int is_sequence(lua_State *L, int idx, size_t *n) {
  idx = lua_absindex(L, idx);
  size_t count = 0;
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    lua_pop(L, 1);
    count++;
    if (!lua_isinteger(L, -1)) {
      lua_pop(L, 1);
      return 0;
    }
  }
  *n = lua_rawlen(L, idx);
  return count == *n;
}

/* Only keys from `allowed` (NULL-terminated) in the table at idx. */
static int check_keys(checker *c, int idx, const char *path, const char *const allowed[]) {
  lua_State *L = c->L;
  idx = lua_absindex(L, idx);
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    lua_pop(L, 1);
    int ok = 0;
    if (lua_type(L, -1) == LUA_TSTRING)
      for (const char *const *a = allowed; *a && !ok; a++)
        ok = !strcmp(*a, lua_tostring(L, -1));
    if (!ok) {
      char keys[256] = "";
      for (const char *const *a = allowed; *a; a++)
        snprintf(keys + strlen(keys), sizeof keys - strlen(keys), "%s%s", a == allowed ? "" : ", ",
                 *a);
      const char *k = luaL_tolstring(L, -1, NULL);
      return bad(c, "%s: unknown key '%s' (allowed: %s)", path, k, keys);
    }
  }
  return KEVO_OK;
}

static int valid_ident(const char *s) {
  if (!s || !(isalpha((unsigned char)*s) || *s == '_')) return 0;
  for (; *s; s++)
    if (!isalnum((unsigned char)*s) && *s != '_') return 0;
  return 1;
}

/* A dim3 at the top of the stack: 1 to 3 positive integers, each under its limit. */
static int check_dim3(checker *c, const char *path, const int64_t limits[3], int64_t product_max,
                      cJSON *out) {
  lua_State *L = c->L;
  size_t n;
  if (!lua_istable(L, -1) || !is_sequence(L, -1, &n) || n < 1 || n > 3)
    return bad(c, "%s: must be a list of 1 to 3 integers, like {%s}", path,
               strcmp(path + strlen(path) - 4, "grid") ? "256" : "cdiv(N, 256)");
  int64_t product = 1;
  for (size_t i = 0; i < 3; i++) {
    int64_t v = 1;
    if (i < n) {
      lua_rawgeti(L, -1, (lua_Integer)i + 1);
      int isint;
      lua_Integer x = lua_tointegerx(L, -1, &isint);
      lua_pop(L, 1);
      if (!isint) return bad(c, "%s[%zu]: must be an integer", path, i + 1);
      if (x <= 0) return bad(c, "%s[%zu]: must be > 0, got %lld", path, i + 1, (long long)x);
      if (x > limits[i])
        return bad(c, "%s[%zu]: %lld is over the limit of %lld", path, i + 1, (long long)x,
                   (long long)limits[i]);
      v = x;
    }
    product *= v;
    cJSON_AddItemToArray(out, cJSON_CreateNumber((double)v));
  }
  if (product_max && product > product_max)
    return bad(c, "%s: %lld threads in a block, over the limit of %lld", path, (long long)product,
               (long long)product_max);
  return KEVO_OK;
}

static int known_buffer(checker *c, const char *name) {
  for (size_t i = 0; i < c->env->nbuffers; i++)
    if (!strcmp(c->env->buffers[i], name)) return 1;
  for (size_t i = 0; i < c->nscratch; i++)
    if (!strcmp(c->scratch_names[i], name)) return 1;
  return 0;
}

static int buffer_list(checker *c, char *out, size_t cap) {
  out[0] = '\0';
  for (size_t i = 0; i < c->env->nbuffers + c->nscratch; i++) {
    const char *n =
        i < c->env->nbuffers ? c->env->buffers[i] : c->scratch_names[i - c->env->nbuffers];
    snprintf(out + strlen(out), cap - strlen(out), "%s%s", i ? ", " : "", n);
  }
  return 0;
}

/* One argument at the top of the stack into args. */
/* One argument (at the top of the stack) into args; *bytes grows by its parameter's size. */
static int check_arg(checker *c, const char *path, cJSON *args, size_t *bytes) {
  lua_State *L = c->L;
  cJSON *a = cJSON_CreateObject();
  cJSON_AddItemToArray(args, a);
  int t = lua_type(L, -1);
  if (t == LUA_TSTRING) {
    const char *name = lua_tostring(L, -1);
    if (!known_buffer(c, name)) {
      char names[512];
      buffer_list(c, names, sizeof names);
      return bad(c, "%s: '%s' names no tensor or scratch buffer (known: %s)", path, name, names);
    }
    cJSON_AddStringToObject(a, "buf", name);
    *bytes = kevo_proto_param_add(*bytes, "buf");
    return KEVO_OK;
  }
  if (t == LUA_TNUMBER) {
    *bytes = kevo_proto_param_add(*bytes, "i32"); /* a plain number is an i32 or an f32 */
    if (lua_isinteger(L, -1)) {
      lua_Integer v = lua_tointeger(L, -1);
      if (v < INT32_MIN || v > INT32_MAX)
        return bad(c, "%s: %lld does not fit a plain i32 argument (wrap it: i64(x))", path,
                   (long long)v);
      cJSON_AddNumberToObject(a, "i32", (double)v);
    } else {
      double v = lua_tonumber(L, -1);
      if (!isfinite(v)) return bad(c, "%s: not a finite number", path);
      cJSON_AddNumberToObject(a, "f32", v);
    }
    return KEVO_OK;
  }
  if (t == LUA_TTABLE && lua_getmetatable(L, -1)) {
    luaL_getmetatable(L, SCALAR_MT);
    int ours = lua_rawequal(L, -1, -2);
    lua_pop(L, 2);
    if (ours) {
      lua_rawgeti(L, -1, 1);
      const char *kind = lua_tostring(L, -1);
      lua_rawgeti(L, -2, 2); /* stack: arg kind value */
      int rc = KEVO_OK;
      *bytes = kevo_proto_param_add(*bytes, kind);
      if (!strcmp(kind, "buf")) {
        const char *name = lua_tostring(L, -1);
        if (!known_buffer(c, name)) {
          char names[512];
          buffer_list(c, names, sizeof names);
          rc = bad(c, "%s: ptr('%s') names no tensor or scratch buffer (known: %s)", path, name,
                   names);
        } else {
          cJSON_AddStringToObject(a, "buf", name);
        }
      } else if (!strcmp(kind, "null")) {
        cJSON_AddBoolToObject(a, "null", 1);
      } else {
        cJSON_AddNumberToObject(a, kind, lua_tonumber(L, -1));
      }
      lua_pop(L, 2);
      return rc;
    }
  }
  return bad(c,
             "%s: an argument is a tensor name, a number or a wrapped scalar (i32(x)...), "
             "not a %s",
             path, luaL_typename(L, -1));
}

static int name_cmp(const void *a, const void *b) {
  return strcmp(a, b);
}

/* scratch = {name = {bytes = n, zero = bool}, ...} at the top of the stack. */
static int check_scratch(checker *c, cJSON *plan) {
  lua_State *L = c->L;
  cJSON *arr = cJSON_AddArrayToObject(plan, "scratch");
  if (lua_isnil(L, -1)) return KEVO_OK;
  if (!lua_istable(L, -1)) return bad(c, "scratch: must be a table {name = {bytes = n}}");
  lua_pushnil(L);
  while (lua_next(L, -2)) {
    lua_pop(L, 1);
    if (lua_type(L, -1) != LUA_TSTRING || !valid_ident(lua_tostring(L, -1)) ||
        strlen(lua_tostring(L, -1)) >= sizeof c->scratch_names[0])
      return bad(c, "scratch: keys must be names (letters, digits, _), got '%s'",
                 luaL_tolstring(L, -1, NULL));
    if (c->nscratch == LAUNCH_MAX_SCRATCH)
      return bad(c, "scratch: more than %d buffers", LAUNCH_MAX_SCRATCH);
    const char *name = lua_tostring(L, -1);
    for (size_t i = 0; i < c->env->nbuffers; i++)
      if (!strcmp(c->env->buffers[i], name))
        return bad(c, "scratch.%s: a tensor already has that name", name);
    strcpy(c->scratch_names[c->nscratch++], name);
  }
  qsort(c->scratch_names, c->nscratch, sizeof c->scratch_names[0], name_cmp);
  for (size_t i = 0; i < c->nscratch; i++) {
    char path[128];
    snprintf(path, sizeof path, "scratch.%s", c->scratch_names[i]);
    lua_getfield(L, -1, c->scratch_names[i]);
    if (!lua_istable(L, -1)) return bad(c, "%s: must be a table {bytes = n, zero = bool}", path);
    int rc = check_keys(c, -1, path, (const char *const[]){"bytes", "zero", NULL});
    if (rc) return rc;
    lua_getfield(L, -1, "bytes");
    int isint;
    lua_Integer bytes = lua_tointegerx(L, -1, &isint);
    if (!isint || bytes <= 0 || (double)bytes >= JSON_EXACT_INT)
      return bad(c, "%s.bytes: must be an integer > 0", path);
    lua_getfield(L, -2, "zero");
    if (!lua_isnil(L, -1) && !lua_isboolean(L, -1))
      return bad(c, "%s.zero: must be true or false", path);
    cJSON *s = cJSON_CreateObject();
    cJSON_AddItemToArray(arr, s);
    cJSON_AddStringToObject(s, "name", c->scratch_names[i]);
    cJSON_AddNumberToObject(s, "bytes", (double)bytes);
    cJSON_AddBoolToObject(s, "zero", lua_toboolean(L, -1));
    lua_pop(L, 3);
  }
  return KEVO_OK;
}

static int check_kernel(checker *c, size_t k, cJSON *kernels) {
  lua_State *L = c->L;
  char path[160];
  snprintf(path, sizeof path, "kernels[%zu]", k);
  if (!lua_istable(L, -1)) return bad(c, "%s: must be a table {name=, grid=, block=, args=}", path);
  int rc = check_keys(c, -1, path,
                      (const char *const[]){"name", "grid", "block", "shared", "args", NULL});
  if (rc) return rc;
  cJSON *kj = cJSON_CreateObject();
  cJSON_AddItemToArray(kernels, kj);
  cJSON_AddNumberToObject(kj, "module", c->env->module);
  lua_getfield(L, -1, "name");
  if (lua_type(L, -1) != LUA_TSTRING || !valid_ident(lua_tostring(L, -1)))
    return bad(c, "%s.name: must be the kernel's entry name (an identifier)", path);
  cJSON_AddStringToObject(kj, "name", lua_tostring(L, -1));
  lua_pop(L, 1);

  static const int64_t grid_lim[3] = {INT32_MAX, 65535, 65535};
  static const int64_t block_lim[3] = {1024, 1024, 64};
  char sub[200];
  lua_getfield(L, -1, "grid");
  snprintf(sub, sizeof sub, "%s.grid", path);
  rc = check_dim3(c, sub, grid_lim, 0, cJSON_AddArrayToObject(kj, "grid"));
  lua_pop(L, 1);
  if (rc) return rc;
  lua_getfield(L, -1, "block");
  snprintf(sub, sizeof sub, "%s.block", path);
  if (lua_isnil(L, -1) && c->env->block_optional) /* Triton: num_warps decides it */
    rc = KEVO_OK;
  else
    rc = check_dim3(c, sub, block_lim, 1024, cJSON_AddArrayToObject(kj, "block"));
  lua_pop(L, 1);
  if (rc) return rc;

  lua_getfield(L, -1, "shared");
  lua_Integer shared = 0;
  if (!lua_isnil(L, -1)) {
    int isint;
    shared = lua_tointegerx(L, -1, &isint);
    if (!isint || shared < 0 || shared > INT32_MAX)
      return bad(c, "%s.shared: must be an integer >= 0 (dynamic shared bytes)", path);
  }
  lua_pop(L, 1);
  cJSON_AddNumberToObject(kj, "shared", (double)shared);

  lua_getfield(L, -1, "args");
  size_t n;
  if (!lua_istable(L, -1) || !is_sequence(L, -1, &n))
    return bad(c, "%s.args: must be a list, like {\"x\", \"y\", i32(N)}", path);
  if (n > LAUNCH_MAX_ARGS) return bad(c, "%s.args: more than %d arguments", path, LAUNCH_MAX_ARGS);
  cJSON *args = cJSON_AddArrayToObject(kj, "args");
  size_t bytes = 0;
  for (size_t i = 1; i <= n; i++) {
    snprintf(sub, sizeof sub, "%s.args[%zu]", path, i);
    lua_rawgeti(L, -1, (lua_Integer)i);
    rc = check_arg(c, sub, args, &bytes);
    lua_pop(L, 1);
    if (rc) return rc;
  }
  if (bytes > KEVO_PROTO_MAX_PARAM_BYTES)
    return bad(c,
               "%s.args: %zu arguments take %zu bytes of kernel parameters, more than the %d "
               "CUDA allows (12.1 and later, Volta and later GPUs)",
               path, n, bytes, KEVO_PROTO_MAX_PARAM_BYTES);
  lua_pop(L, 1);
  return KEVO_OK;
}

/* The chunk's result at the top of the stack, into a plan. */
static int check_result(checker *c, cJSON *plan) {
  lua_State *L = c->L;
  if (!lua_istable(L, -1))
    return bad(c, "the chunk must return a table {kernels = {...}}, it returned %s",
               luaL_typename(L, -1));
  int rc = check_keys(c, -1, "result", (const char *const[]){"kernels", "scratch", NULL});
  if (rc) return rc;
  lua_getfield(L, -1, "scratch");
  rc = check_scratch(c, plan);
  lua_pop(L, 1);
  if (rc) return rc;
  lua_getfield(L, -1, "kernels");
  size_t n;
  if (!lua_istable(L, -1) || !is_sequence(L, -1, &n) || n == 0)
    return bad(c, "kernels: must be a non-empty list of launches");
  if (n > LAUNCH_MAX_KERNELS) return bad(c, "kernels: more than %d launches", LAUNCH_MAX_KERNELS);
  cJSON *kernels = cJSON_AddArrayToObject(plan, "kernels");
  for (size_t k = 1; k <= n && !rc; k++) {
    lua_rawgeti(L, -1, (lua_Integer)k);
    rc = check_kernel(c, k, kernels);
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  return rc;
}

/* ---- running it ---- */

/* The first line of a Lua error (the traceback after it is about kevo, not the chunk). */
static void first_line(const char *msg, char *out, size_t cap) {
  size_t n = strcspn(msg ? msg : "", "\n");
  if (n >= cap) n = cap - 1;
  memcpy(out, msg ? msg : "", n);
  out[n] = '\0';
}

/* Strings keep their methods (s:sub(), ("%d"):format()) but lose the pattern ones (find,
 * match, gmatch, gsub): a backtracking pattern runs in C, where no instruction budget reaches.
 * With no setmetatable, load, require or coroutine in the chunk's environment, this leaves it
 * no code the budgets do not bound: no finalizer, no __close, no pattern, no module. */
static void strip_string_patterns(lua_State *L) {
  static const char *const keep[] = {"byte",  "char",    "format", "len", "lower",
                                     "upper", "reverse", "rep",    "sub", NULL};
  lua_pushliteral(L, "");
  if (lua_getmetatable(L, -1)) { /* stack: "" mt */
    lua_newtable(L);
    lua_getglobal(L, "string"); /* stack: "" mt safe string */
    for (const char *const *k = keep; *k; k++) {
      lua_getfield(L, -1, *k);
      lua_setfield(L, -3, *k);
    }
    lua_pop(L, 1);
    lua_setfield(L, -2, "__index");
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
}

int launch_resolve(const char *text, size_t len, const char *chunkname, int first_line_no,
                   const launch_env *env, cJSON **plan, kevo_error *err) {
  *plan = NULL;
  if (first_line_no < 1) first_line_no = 1;
  kevo_lua_opts o = {.sandbox = 1,
                     .mem_limit = LAUNCH_MEM_LIMIT,
                     .instr_limit = LAUNCH_INSTR_LIMIT,
                     .time_limit_s = LAUNCH_TIME_LIMIT_S,
                     .seed = 1};
  lua_State *L = kevo_lua_new(&o, err);
  if (!L) return err ? err->status : KEVO_E_NOMEM;
  luaL_newmetatable(L, SCALAR_MT);
  lua_pop(L, 1);
  strip_string_patterns(L);

  /* Lines before the chunk become empty lines, so Lua's line numbers are the file's. */
  kevo_buf code;
  kevo_buf_init(&code, (size_t)1 << 20);
  int rc = KEVO_OK;
  for (int i = 1; i < first_line_no && !rc; i++)
    rc = kevo_buf_append(&code, "\n", 1);
  if (!rc) rc = kevo_buf_append(&code, text, len);
  if (rc) {
    rc = kevo_fail(err, KEVO_E_LAUNCH, "%s:%d: the launch chunk is too long", chunkname,
                   first_line_no);
    goto out;
  }
  char name[512], msg[1024];
  snprintf(name, sizeof name, "@%s", chunkname);
  int st = kevo_lua_load(L, code.data, code.len, name);
  if (st == LUA_OK) {
    lua_pushcfunction(L, push_env);
    lua_pushlightuserdata(L, (void *)env);
    st = kevo_lua_pcall(L, 1, 1); /* stack: chunk env */
    if (st == LUA_OK) {
      lua_setupvalue(L, -2, 1); /* the chunk's _ENV */
      st = kevo_lua_pcall(L, 0, 1);
    }
  }
  if (st != LUA_OK) {
    first_line(lua_tostring(L, -1), msg, sizeof msg);
    int status = KEVO_E_LAUNCH;
    if (st == LUA_ERRMEM || strstr(msg, "not enough memory")) {
      status = KEVO_E_SANDBOX;
      snprintf(msg, sizeof msg, "%s:%d: E_SANDBOX: the chunk used more than %d bytes", chunkname,
               first_line_no, LAUNCH_MEM_LIMIT);
    } else if (strstr(msg, "E_SANDBOX")) {
      status = KEVO_E_SANDBOX;
    } else if (strstr(msg, "E_NOGPU")) {
      status = KEVO_E_NOGPU;
    }
    if (strncmp(msg, chunkname, strlen(chunkname)) == 0)
      rc = kevo_fail(err, status, "%s", msg);
    else /* no position in it (a budget, a syntax error at the end) */
      rc = kevo_fail(err, status, "%s:%d: %s", chunkname, first_line_no, msg);
    goto out;
  }
  char where[600];
  snprintf(where, sizeof where, "%s:%d", chunkname, first_line_no);
  checker c = {.L = L, .env = env, .where = where, .err = err};
  cJSON *p = cJSON_CreateObject();
  rc = check_result(&c, p);
  if (rc)
    cJSON_Delete(p);
  else
    *plan = p;
out:
  kevo_buf_free(&code);
  kevo_lua_close(L);
  return rc;
}
