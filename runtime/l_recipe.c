/* kevo.recipe: recipes as plain Lua tables.
 *   recipe.load(name_or_path) -> table | nil, msg, "E_RECIPE"|"E_PARSE"|"E_IO"
 *     {name, summary, path, dir, version, params = {M = 16384, ...}, param_names = {"M", ...},
 *      shapes = {{label =, params = {M =, ...}}, ...} (shapes[1] the benchmark shape),
 *      inputs/outputs = {{name, dtype, shape = {"M", "N"}, init = {kind, a, b}}, ...},
 *      tolerance = {f32 = {atol =, rtol =}} (given or default, for every dtype used),
 *      cost = {bytes =, flops =} (expressions), reference = source, seeds = {source, ...},
 *      prompt}; a source is {lang, file, kernel, launch, launch_line,
 *      space = {BLOCK = {128, 256}}, knobs = {"BLOCK", ...}} (knob values as numbers when
 *      they read as numbers, else strings; knobs keeps their order).
 *   recipe.find(name_or_path) -> path | nil, msg, "E_IO"
 *   recipe.list() -> {{name =, path =}, ...} along the search path
 *   recipe.eval(expr, params) -> number (an integer when exact) | nil, msg, "E_PARSE"
 *   recipe.knob_defaults(lang, source) -> {NAME = "value", ...}: the defaults a source gives its
 *     knobs itself (CUDA `#ifndef NAME` + `#define NAME value`; Triton `NAME: tl.constexpr =
 *     value`), the values it compiles with when a knob is not given */
#include "lutil.h"
#include "recipe.h"
#include "recipe_knobs.h"

#include <stdlib.h>
#include <string.h>

enum { EVAL_MAX_PARAMS = 64 };

static void set_str(lua_State *L, const char *key, const char *v) {
  if (!v) return;
  lua_pushstring(L, v);
  lua_setfield(L, -2, key);
}

static void push_params(lua_State *L, const kevo_shape *sh) {
  lua_createtable(L, 0, (int)sh->nparams);
  for (size_t k = 0; k < sh->nparams; k++) {
    lua_pushinteger(L, (lua_Integer)sh->params[k].value);
    lua_setfield(L, -2, sh->params[k].name);
  }
}

/* A knob value as written: an integer or a number when it reads as one, else the string. */
static void push_knob_value(lua_State *L, const char *v) {
  if (lua_stringtonumber(L, v) == 0) lua_pushstring(L, v);
}

static void push_source(lua_State *L, const kevo_source *s) {
  lua_createtable(L, 0, 8);
  set_str(L, "lang", s->lang);
  set_str(L, "file", s->file);
  set_str(L, "kernel", s->kernel);
  set_str(L, "launch", s->launch);
  if (s->launch) {
    lua_pushinteger(L, s->launch_line);
    lua_setfield(L, -2, "launch_line");
  }
  lua_createtable(L, 0, (int)s->nknobs); /* stack: src space */
  lua_createtable(L, (int)s->nknobs, 0); /* stack: src space knobs */
  for (size_t k = 0; k < s->nknobs; k++) {
    lua_createtable(L, (int)s->knobs[k].nvalues, 0);
    for (size_t j = 0; j < s->knobs[k].nvalues; j++) {
      push_knob_value(L, s->knobs[k].values[j]);
      lua_rawseti(L, -2, (lua_Integer)j + 1);
    }
    lua_setfield(L, -3, s->knobs[k].name);
    lua_pushstring(L, s->knobs[k].name);
    lua_rawseti(L, -2, (lua_Integer)k + 1);
  }
  lua_setfield(L, -3, "knobs");
  lua_setfield(L, -2, "space");
}

static void push_tensors(lua_State *L, const kevo_recipe *r, kevo_role role) {
  lua_newtable(L);
  lua_Integer i = 1;
  for (size_t k = 0; k < r->ntensors; k++) {
    const kevo_tensor *t = &r->tensors[k];
    if (t->role != role) continue;
    lua_createtable(L, 0, 5);
    set_str(L, "name", t->name);
    set_str(L, "dtype", kevo_dtype_name(t->dtype));
    lua_createtable(L, (int)t->rank, 0);
    for (size_t d = 0; d < t->rank; d++) {
      lua_pushstring(L, t->dims[d]);
      lua_rawseti(L, -2, (lua_Integer)d + 1);
    }
    lua_setfield(L, -2, "shape");
    if (role == KEVO_ROLE_INPUT) {
      static const char *const kinds[] = {"normal", "uniform", "randint"};
      lua_createtable(L, 0, 3);
      set_str(L, "kind", kinds[t->init.kind]);
      set_str(L, "a", t->init.a);
      set_str(L, "b", t->init.b);
      lua_setfield(L, -2, "init");
    }
    lua_pushinteger(L, t->line);
    lua_setfield(L, -2, "line");
    lua_rawseti(L, -2, i++);
  }
}

static void push_recipe(lua_State *L, const kevo_recipe *r) {
  lua_createtable(L, 0, 16);
  set_str(L, "name", r->name);
  set_str(L, "summary", r->summary);
  set_str(L, "path", r->path);
  set_str(L, "dir", r->dir);
  set_str(L, "prompt", r->prompt);
  lua_pushinteger(L, r->version);
  lua_setfield(L, -2, "version");
  push_params(L, &r->shapes[0]);
  lua_setfield(L, -2, "params");
  lua_createtable(L, (int)r->nparams, 0);
  for (size_t k = 0; k < r->nparams; k++) {
    lua_pushstring(L, r->params[k].name);
    lua_rawseti(L, -2, (lua_Integer)k + 1);
  }
  lua_setfield(L, -2, "param_names");
  lua_createtable(L, (int)r->nshapes, 0);
  for (size_t s = 0; s < r->nshapes; s++) {
    lua_createtable(L, 0, 2);
    set_str(L, "label", r->shapes[s].label);
    push_params(L, &r->shapes[s]);
    lua_setfield(L, -2, "params");
    lua_rawseti(L, -2, (lua_Integer)s + 1);
  }
  lua_setfield(L, -2, "shapes");
  lua_createtable(L, 0, (int)r->nparams); /* domain.M = {min =, max =, multiple =, inferred =} */
  for (size_t k = 0; r->domain && k < r->nparams; k++) {
    lua_createtable(L, 0, 4);
    lua_pushinteger(L, r->domain[k].min);
    lua_setfield(L, -2, "min");
    lua_pushinteger(L, r->domain[k].max);
    lua_setfield(L, -2, "max");
    lua_pushinteger(L, r->domain[k].multiple);
    lua_setfield(L, -2, "multiple");
    lua_pushboolean(L, r->domain[k].inferred);
    lua_setfield(L, -2, "inferred");
    lua_setfield(L, -2, r->params[k].name);
  }
  lua_setfield(L, -2, "domain");
  lua_pushinteger(L, (lua_Integer)r->nstress);
  lua_setfield(L, -2, "stress_trials");
  push_tensors(L, r, KEVO_ROLE_INPUT);
  lua_setfield(L, -2, "inputs");
  push_tensors(L, r, KEVO_ROLE_OUTPUT);
  lua_setfield(L, -2, "outputs");
  lua_newtable(L); /* tolerance for every dtype the tensors use, given or default */
  for (size_t k = 0; k < r->ntensors; k++) {
    kevo_tolerance tol = kevo_recipe_tolerance(r, r->tensors[k].dtype);
    lua_createtable(L, 0, 2);
    lua_pushnumber(L, tol.atol);
    lua_setfield(L, -2, "atol");
    lua_pushnumber(L, tol.rtol);
    lua_setfield(L, -2, "rtol");
    lua_setfield(L, -2, kevo_dtype_name(tol.dtype));
  }
  lua_setfield(L, -2, "tolerance");
  lua_createtable(L, 0, 2);
  set_str(L, "bytes", r->cost_bytes);
  set_str(L, "flops", r->cost_flops);
  lua_setfield(L, -2, "cost");
  push_source(L, &r->reference);
  lua_setfield(L, -2, "reference");
  lua_createtable(L, (int)r->nseeds, 0);
  for (size_t k = 0; k < r->nseeds; k++) {
    push_source(L, &r->seeds[k]);
    lua_rawseti(L, -2, (lua_Integer)k + 1);
  }
  lua_setfield(L, -2, "seeds");
}

#define RECIPE_BOX_MT "kevo.recipe.box"

static int box_gc(lua_State *L) {
  kevo_recipe **box = luaL_checkudata(L, 1, RECIPE_BOX_MT);
  kevo_recipe_free(*box);
  *box = NULL;
  return 0;
}

static int recipe_load(lua_State *L) {
  const char *arg = luaL_checkstring(L, 1);
  char path[4096];
  kevo_error err = {0};
  /* the C recipe sits in a box with a __gc while its table is built: a memory error raised
   * half-way leaks nothing */
  kevo_recipe **box = lua_newuserdatauv(L, sizeof *box, 0);
  *box = NULL;
  luaL_setmetatable(L, RECIPE_BOX_MT);
  if (kevo_recipe_find(arg, path, sizeof path, &err) || kevo_recipe_load(path, box, &err))
    return kevo_l_fail_err(L, &err);
  push_recipe(L, *box);
  kevo_recipe_free(*box);
  *box = NULL;
  return 1;
}

static int recipe_find(lua_State *L) {
  const char *arg = luaL_checkstring(L, 1);
  char path[4096];
  kevo_error err = {0};
  if (kevo_recipe_find(arg, path, sizeof path, &err)) return kevo_l_fail_err(L, &err);
  lua_pushstring(L, path);
  return 1;
}

static int list_visit(const char *path, const char *name, void *ud) {
  lua_State *L = ud;
  lua_createtable(L, 0, 2);
  set_str(L, "name", name);
  set_str(L, "path", path);
  lua_rawseti(L, -2, (lua_Integer)lua_rawlen(L, -2) + 1);
  return 0;
}

static int recipe_list(lua_State *L) {
  kevo_error err = {0};
  lua_newtable(L);
  if (kevo_recipe_each(list_visit, L, &err)) return kevo_l_fail_err(L, &err);
  return 1;
}

static int recipe_eval(lua_State *L) {
  const char *expr = luaL_checkstring(L, 1);
  kevo_param params[EVAL_MAX_PARAMS];
  kevo_shape shape = {"eval", 0, params};
  if (!lua_isnoneornil(L, 2)) {
    luaL_checktype(L, 2, LUA_TTABLE);
    lua_pushnil(L);
    while (lua_next(L, 2)) { /* stack: key value */
      if (lua_type(L, -2) != LUA_TSTRING) return luaL_argerror(L, 2, "param names must be strings");
      int isint;
      lua_Integer v = lua_tointegerx(L, -1, &isint);
      if (!isint)
        return luaL_error(L, "bad argument #2 to 'eval' (param '%s' must be an integer)",
                          lua_tostring(L, -2));
      if (shape.nparams == EVAL_MAX_PARAMS) return luaL_argerror(L, 2, "too many params");
      params[shape.nparams++] = (kevo_param){(char *)lua_tostring(L, -2), (int64_t)v};
      lua_pop(L, 1);
    }
  }
  /* the names point into the table's keys, which live as long as argument 2 */
  kevo_error err = {0};
  int64_t iv;
  int is_int;
  double dv;
  if (kevo_expr_eval_exact(expr, &shape, &iv, &is_int, &dv, &err)) return kevo_l_fail_err(L, &err);
  if (is_int)
    lua_pushinteger(L, (lua_Integer)iv);
  else
    lua_pushnumber(L, dv);
  return 1;
}

static int recipe_knob_defaults(lua_State *L) {
  const char *lang = luaL_checkstring(L, 1);
  size_t len;
  const char *src = luaL_checklstring(L, 2, &len);
  recipe_knobs ks;
  recipe_knobs_declared(lang, src, len, &ks);
  lua_createtable(L, 0, (int)ks.n);
  for (size_t i = 0; i < ks.n; i++) {
    lua_pushstring(L, ks.d[i].value);
    lua_setfield(L, -2, ks.d[i].name);
  }
  recipe_knobs_free(&ks);
  return 1;
}

int luaopen_kevo_recipe(lua_State *L);
int luaopen_kevo_recipe(lua_State *L) {
  static const luaL_Reg fns[] = {{"load", recipe_load},
                                 {"find", recipe_find},
                                 {"list", recipe_list},
                                 {"eval", recipe_eval},
                                 {"knob_defaults", recipe_knob_defaults},
                                 {NULL, NULL}};
  if (luaL_newmetatable(L, RECIPE_BOX_MT)) {
    lua_pushcfunction(L, box_gc);
    lua_setfield(L, -2, "__gc");
  }
  lua_pop(L, 1);
  luaL_newlib(L, fns);
  return 1;
}
