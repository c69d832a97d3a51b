/* eval_profile.h: reading the profile stage's metrics (docs/profile.md): a plan's kernels
 * summed into one summary, the summary read into a ranked diagnosis (one line each, with the
 * numbers), and the texts the model, `kevo eval --profile` and the report show. Knows nothing of
 * Lua; never prints. */
#ifndef KEVO_EVAL_PROFILE_H
#define KEVO_EVAL_PROFILE_H

#include "buf.h"

typedef struct cJSON cJSON;

/* One plan's kernels (the worker's reply: [{"name", "metrics": {ncu name: value}}]) as one
 * summary: sums of bytes and counts, time-weighted averages of rates, the longest kernel's
 * launch figures. Fields (absent when no kernel had the metric): time_ms, kernels, dram_pct,
 * dram_bytes, dram_gbps, l2_hit_pct, sm_pct, mem_pct, occupancy_pct (achieved),
 * theoretical_pct, limiter ("registers" | "shared memory" | "blocks per SM" | "none"),
 * registers, block, blocks_per_sm, waves, stalls ([{reason, cycles, pct}], the top three of
 * cycles per issued instruction), bank_conflict_pct (replays among shared wavefronts),
 * ld_sectors_per_req, st_sectors_per_req, ld_efficiency_pct, st_efficiency_pct (bytes used of
 * each 32-byte sector), branch_uniform_pct, threads_per_inst, tensor_pct. Never NULL. */
cJSON *eval_profile_summary(const cJSON *kernels);

/* The ranked diagnosis of a summary: [{kind, score, text}], most important first, at most 6.
 * bound: the roofline's "memory" or "compute" from the bench (NULL or "": not known), for
 * whether idle tensor cores matter. kinds: dram_peak, uncoalesced, bank_conflicts, occupancy,
 * compute_bound, tensor_idle, tensor_busy, latency, small_grid, divergence, stalls. */
cJSON *eval_profile_diagnose(const cJSON *summary, const char *bound);

/* The plan labelled `label` in the worker's reply to a profile request, or NULL. */
const cJSON *eval_profile_plan(const cJSON *reply, const char *label);

/* Builds a result's "profile" object from the worker's reply to a profile request of one
 * candidate (its plan `cand`), the reference's plan (`ref`, or NULL) and the bench's bound:
 * {ok, tool, ms, candidate = summary, reference = summary?, diagnosis, feedback}; a failed reply
 * gives {ok = false, reason, error, feedback}. feedback: eval_profile_feedback's text. Never
 * NULL. */
cJSON *eval_profile_object(const cJSON *reply, const cJSON *cand, const cJSON *ref,
                           const char *bound);

/* The profile part of the model's feedback: "Profile (Nsight Compute, ...): ranked
 * diagnosis: 1. ... " with the numbers and the reference beside them; a profile that failed
 * says why in one line. Appends to b. */
void eval_profile_feedback(kevo_buf *b, const cJSON *profile);

/* The table `kevo eval --profile` prints: every summary figure for the candidate, the
 * reference and (when given) the parent, then the diagnosis. Appends to b. */
void eval_profile_table(kevo_buf *b, const cJSON *profile, const cJSON *parent);

#endif
