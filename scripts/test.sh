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

# The Redis tests (tests/c/test_evalredis.c) need a server they may flush: one on loopback for
# this run unless KEVO_TEST_REDIS names one; stopped on the way out.
if [ -z "${KEVO_TEST_REDIS:-}" ] && command -v redis-server >/dev/null; then
  redis_dir=$(mktemp -d)
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  redis-server --port "$port" --bind 127.0.0.1 --dir "$redis_dir" --save "" --appendonly no \
    --logfile "$redis_dir/redis.log" &
  redis_pid=$!
  trap 'kill "$redis_pid" 2>/dev/null; wait "$redis_pid" 2>/dev/null; rm -rf "$redis_dir"' EXIT
  for _ in $(seq 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
  export KEVO_TEST_REDIS="redis://127.0.0.1:$port"
fi

cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j "$jobs"
scripts/ctest.sh build --output-on-failure -j "$jobs"

echo "== sanitizer build (ASan + UBSan) =="
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DKEVO_SANITIZE=ON >/dev/null
cmake --build build-asan -j "$jobs"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
  scripts/ctest.sh build-asan --output-on-failure -j "$jobs" -L 'c|lua|integration' -LE slow
