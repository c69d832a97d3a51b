/* kevo report RUN|last [--db PATH] [--html FILE] [--json]: what a run found. The views live in
 * lua/kevo/report.lua (policy); this runs them in a trusted state. */
#include "lutil.h"
#include "registry.h"

static int report_main(int argc, char **argv) {
  return kevo_l_run_main("report", "kevo.report", argc, argv, NULL);
}

const struct kevo_command kevo_cmd_report = {
    "report", "summarize a run: the best kernel, progress, lineage (terminal, JSON or HTML)",
    "usage: kevo report RUN|last [--db PATH] [--html FILE] [--json]\n\n"
    "Prints what run RUN (an id, or last) found: recipe, strategy, status, duration,\n"
    "evaluations by verdict, LLM tokens and cost, and the best verified kernel (speed-up over\n"
    "the reference, median time, % of roofline, GB/s, where it was measured, its lineage).\n"
    "  --json       the same as one JSON object\n"
    "  --html FILE  also write one self-contained HTML page (no external resources): the best\n"
    "               kernel's source, progress charts over evaluations and over tokens, the\n"
    "               lineage tree, every candidate, the measurement fingerprints\n"
    "  --db PATH    the archive (default $KEVO_DB or ./kevo.db); it is only read\n\n"
    "Exit 0 done; 1 the archive is unreadable or FILE cannot be written; 2 bad usage, no\n"
    "archive, or no such run.\n",
    report_main, 0};
