#!/usr/bin/env bash
# The share of the reply corpus (tests/replies) that kevo takes to the GPU at the first try: the
# candidate it extracts compiles and its launch resolves on every shape. No GPU needed (a
# stand-in worker answers); Triton replies need a python3 with triton (KEVO_PYTHON).
# Usage: bench/replies_first_try.sh           with build/kevo
#        KEVO=/other/build/kevo bench/replies_first_try.sh   (an older kevo: before and after)
# Prints one line per reply and the totals; the corpus's expectations are not checked here
# (ctest's lua/test_replies does that).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
kevo="${KEVO:-$root/build/kevo}"
[ -x "$kevo" ] || { echo "replies_first_try: no kevo binary at $kevo (build first)" >&2; exit 2; }
if [ -z "${KEVO_PYTHON:-}" ] && [ -x "$root/.venv/bin/python3" ]; then
  export KEVO_PYTHON="$root/.venv/bin/python3"
fi
KEVO="$kevo" KEVO_SRC="$root" KEVO_REPLIES_MEASURE=1 "$kevo" script "$root/tests/lua/test_replies.lua"
