#!/usr/bin/env bash
# The test command: set-up, a warnings-as-errors build with every test, then an
# AddressSanitizer + UndefinedBehaviorSanitizer build of the same tests.
# GPU tests skip loudly on machines without a GPU: after each ctest, scripts/ctest.sh lists
# every skipped test with its reason, and their count.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
if [ -d /usr/local/cuda/bin ]; then export PATH="/usr/local/cuda/bin:$PATH"; fi
jobs=$(nproc)

cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j "$jobs"
scripts/ctest.sh build --output-on-failure -j "$jobs"

echo "== sanitizer build (ASan + UBSan) =="
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DKEVO_SANITIZE=ON >/dev/null
cmake --build build-asan -j "$jobs"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
  scripts/ctest.sh build-asan --output-on-failure -j "$jobs" -L 'c|lua|integration' -LE slow
