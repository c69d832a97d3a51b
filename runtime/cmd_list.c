/* kevo list [--json]: the recipes on the search path and the strategies kevo can run. */
#include "buf.h"
#include "recipe.h"
#include "registry.h"
#include "resources.h"

#include <cjson/cJSON.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Adds {name, summary, path[, error]} for each recipe on the search path to array `ud`. */
static int add_recipe(const char *path, const char *name, void *ud) {
  cJSON *item = cJSON_CreateObject();
  if (!item) return KEVO_E_NOMEM;
  cJSON_AddItemToArray(ud, item);
  cJSON_AddStringToObject(item, "name", name);
  cJSON_AddStringToObject(item, "path", path);
  kevo_recipe *r = NULL;
  kevo_error err = {0};
  if (kevo_recipe_load(path, &r, &err)) {
    cJSON_AddStringToObject(item, "error", err.msg);
    return KEVO_OK; /* a broken recipe is listed with its error, not hidden */
  }
  cJSON_AddStringToObject(item, "summary", r->summary ? r->summary : "");
  kevo_recipe_free(r);
  return KEVO_OK;
}

/* A strategy's description: its first line, by convention "-- <name>: <description>". */
static void first_line_description(const char *text, const char *name, char *out, size_t n) {
  const char *nl = strchr(text, '\n');
  size_t len = nl ? (size_t)(nl - text) : strlen(text);
  char line[512];
  snprintf(line, sizeof line, "%.*s", (int)(len < sizeof line ? len : sizeof line - 1), text);
  const char *d = line;
  if (strncmp(d, "--", 2)) {
    snprintf(out, n, "%s", "");
    return;
  }
  d += 2;
  while (*d == ' ')
    d++;
  size_t nl_name = strlen(name);
  if (!strncmp(d, name, nl_name) && d[nl_name] == ':') d += nl_name + 1;
  while (*d == ' ')
    d++;
  snprintf(out, n, "%s", d);
}

static cJSON *find_named(cJSON *array, const char *name) {
  cJSON *it;
  cJSON_ArrayForEach(it, array) {
    if (!strcmp(cJSON_GetObjectItem(it, "name")->valuestring, name)) return it;
  }
  return NULL;
}

static void add_strategy(cJSON *array, const char *name, const char *text, const char *source) {
  char desc[512];
  first_line_description(text, name, desc, sizeof desc);
  cJSON *item = find_named(array, name);
  if (item) { /* ./strategies/<name>.lua takes the place of the embedded one */
    cJSON_ReplaceItemInObject(item, "description", cJSON_CreateString(desc));
    cJSON_ReplaceItemInObject(item, "source", cJSON_CreateString(source));
    return;
  }
  item = cJSON_CreateObject();
  cJSON_AddItemToArray(array, item);
  cJSON_AddStringToObject(item, "name", name);
  cJSON_AddStringToObject(item, "description", desc);
  cJSON_AddStringToObject(item, "source", source);
}

static void list_strategies(cJSON *array) {
  static const char prefix[] = "strategies/";
  for (const struct kevo_resource *r = kevo_resources; r->name; r++) {
    size_t n = strlen(r->name);
    if (strncmp(r->name, prefix, strlen(prefix)) || n < 5 || strcmp(r->name + n - 4, ".lua"))
      continue;
    char name[256];
    snprintf(name, sizeof name, "%.*s", (int)(n - strlen(prefix) - 4), r->name + strlen(prefix));
    if (strchr(name, '/')) continue;
    add_strategy(array, name, r->data, "embedded");
  }
  struct dirent **entries = NULL;
  int count = scandir("strategies", &entries, NULL, alphasort);
  for (int i = 0; i < count; i++) {
    const char *f = entries[i]->d_name;
    size_t n = strlen(f);
    if (f[0] != '.' && n > 4 && !strcmp(f + n - 4, ".lua")) {
      char path[1024], text[512] = "";
      snprintf(path, sizeof path, "strategies/%s", f);
      FILE *fp = kevo_regular_file(path, NULL) ? NULL : fopen(path, "r"); /* no FIFO hang */
      if (fp) {
        if (!fgets(text, sizeof text, fp)) text[0] = 0;
        fclose(fp);
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)(n - 4), f);
        add_strategy(array, name, text, path);
      }
    }
    free(entries[i]);
  }
  free(entries);
}

/* Prints s with its terminal controls escaped (names and descriptions come from files anyone
 * may have written), padded to `width` columns when width > 0. */
static void put_text(const char *s, int width) {
  kevo_buf b;
  kevo_buf_init(&b, 0);
  const char *t = kevo_buf_put_printable(&b, s, strlen(s)) ? "?" : (b.data ? b.data : "");
  printf("%-*s", width, t);
  kevo_buf_free(&b);
}

static void print_text(const cJSON *recipes, const cJSON *strategies) {
  const cJSON *it;
  int width = 8;
  cJSON_ArrayForEach(it, recipes) {
    int w = (int)strlen(cJSON_GetObjectItem(it, "name")->valuestring);
    width = w > width ? w : width;
  }
  cJSON_ArrayForEach(it, strategies) {
    int w = (int)strlen(cJSON_GetObjectItem(it, "name")->valuestring);
    width = w > width ? w : width;
  }
  printf("recipes (kevo check NAME for details):\n");
  if (!cJSON_GetArraySize(recipes)) printf("  (none yet)\n");
  cJSON_ArrayForEach(it, recipes) {
    const cJSON *err = cJSON_GetObjectItem(it, "error");
    printf("  ");
    put_text(cJSON_GetObjectItem(it, "name")->valuestring, width);
    printf("  ");
    put_text(err ? "(does not load: run kevo check on it)"
                 : cJSON_GetObjectItem(it, "summary")->valuestring,
             0);
    printf("\n");
  }
  printf("\nstrategies:\n");
  if (!cJSON_GetArraySize(strategies)) printf("  (none yet)\n");
  cJSON_ArrayForEach(it, strategies) {
    const char *src = cJSON_GetObjectItem(it, "source")->valuestring;
    printf("  ");
    put_text(cJSON_GetObjectItem(it, "name")->valuestring, width);
    printf("  ");
    put_text(cJSON_GetObjectItem(it, "description")->valuestring, 0);
    if (strcmp(src, "embedded")) {
      printf(" (");
      put_text(src, 0);
      printf(")");
    }
    printf("\n");
  }
}

static int list_main(int argc, char **argv) {
  int json = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--json")) {
      json = 1;
    } else {
      fprintf(stderr, "kevo list: unknown argument '%s' (see kevo list --help)\n", argv[i]);
      return KEVO_EXIT_USAGE;
    }
  }
  cJSON *root = cJSON_CreateObject();
  cJSON *recipes = cJSON_AddArrayToObject(root, "recipes");
  cJSON *strategies = cJSON_AddArrayToObject(root, "strategies");
  kevo_error err = {0};
  int rc = kevo_recipe_each(add_recipe, recipes, &err);
  if (rc) {
    fprintf(stderr, "kevo list: %s\n", err.msg[0] ? err.msg : kevo_strerror(rc));
    cJSON_Delete(root);
    return KEVO_EXIT_FAILED;
  }
  list_strategies(strategies);
  if (json) {
    char *text = cJSON_Print(root);
    if (text) puts(text);
    free(text);
  } else {
    print_text(recipes, strategies);
  }
  cJSON_Delete(root);
  return KEVO_EXIT_OK;
}

const struct kevo_command kevo_cmd_list = {
    "list", "list the recipes and search strategies kevo can use",
    "usage: kevo list [--json]\n\n"
    "Lists the recipes found on the recipe search path ($KEVO_RECIPES, colon-separated, then\n"
    "./recipes, then the source tree's recipes/ in a dev build; an earlier directory's recipe\n"
    "hides a later one of the same name) with their summaries, and the strategies: those built\n"
    "into kevo and ./strategies/*.lua (which take the place of a built-in one of the same name),\n"
    "each with its first line's description (\"-- <name>: <description>\").\n\n"
    "  --json   print {\"recipes\": [{name, path, summary | error}],\n"
    "                  \"strategies\": [{name, description, source}]}\n",
    list_main, 0};
