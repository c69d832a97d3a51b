#!/usr/bin/env bash
# Stands in for Nsight Compute in CI (no GPU): runs the program it is given as ncu would (so the
# replay child's own path is exercised: without a GPU it writes a manifest saying why), then
# writes FAKE_NCU_CSV (a recorded ncu CSV, tests/fixtures/ncu/) to --log-file and, when
# FAKE_NCU_MANIFEST is set, puts that manifest in place of the child's. FAKE_NCU_ERROR: print
# that line (as ncu prints its errors) and write no CSV. FAKE_NCU_SLEEP: seconds to wait first
# (ncu's own start-up). FAKE_NCU_ARGS: a file to write the arguments to, one a line.
# FAKE_NCU_LINGER: seconds to wait after the CSV is written (ncu's own exit).
[ -n "${FAKE_NCU_SLEEP:-}" ] && sleep "$FAKE_NCU_SLEEP"
[ -n "${FAKE_NCU_ARGS:-}" ] && printf '%s\n' "$@" >"$FAKE_NCU_ARGS"
log=""
while [ $# -gt 0 ]; do
  case $1 in
    --log-file) log=$2; shift 2 ;;
    --csv) shift ;;
    --*) shift 2 ;;
    *) break ;;
  esac
done
dir=""
for ((i = 1; i <= $#; i++)); do
  [ "${!i}" = --profile-replay ] && { j=$((i + 1)); dir=${!j}; }
done
"$@" >/dev/null 2>&1
if [ -n "${FAKE_NCU_ERROR:-}" ]; then
  echo "==ERROR== $FAKE_NCU_ERROR"
  exit 1
fi
[ -n "${FAKE_NCU_CSV:-}" ] && [ -n "$log" ] && cp "$FAKE_NCU_CSV" "$log"
[ -n "${FAKE_NCU_MANIFEST:-}" ] && [ -n "$dir" ] && printf '%s' "$FAKE_NCU_MANIFEST" >"$dir/manifest"
[ -n "${FAKE_NCU_LINGER:-}" ] && sleep "$FAKE_NCU_LINGER"
exit 0
