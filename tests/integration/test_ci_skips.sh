#!/usr/bin/env bash
# scripts/ctest.sh (what scripts/test.sh, hence CI, runs ctest through): a skipped test's
# reason and the count of skipped tests are printed, not only ctest's `***Skipped`, and
# ctest's exit status is kept. Runs it on a throwaway ctest project with one test that passes,
# two that skip (exit 77, one saying why on stderr, one on stdout) and, second time, one that
# fails.
set -u
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
command -v cmake >/dev/null && command -v ctest >/dev/null || { echo "SKIP: no cmake/ctest" >&2; exit 77; }
mkdir -p "$tmp/src"
cat > "$tmp/src/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.16)
project(skips NONE)
enable_testing()
add_test(NAME passes COMMAND sh -c "echo fine")
add_test(NAME needs_gpu COMMAND sh -c "echo 'SKIP: no GPU here (nvidia-smi -L failed)' >&2; exit 77")
add_test(NAME needs_tool COMMAND sh -c "echo some output; echo 'SKIPPED: frob is not installed'; exit 77")
set_tests_properties(needs_gpu needs_tool PROPERTIES SKIP_RETURN_CODE 77)
if(WITH_FAILURE)
  add_test(NAME fails COMMAND sh -c "exit 3")
endif()
CMAKE
cmake -S "$tmp/src" -B "$tmp/build" >/dev/null || { echo "FAIL: cmake"; exit 1; }
"$KEVO_SRC/scripts/ctest.sh" "$tmp/build" > "$tmp/out" 2>&1; rc=$?
cat "$tmp/out"
[ $rc = 0 ] || { echo "FAIL: exit $rc with tests that pass or skip"; fail=1; }
grep -q "^== 2 tests skipped:" "$tmp/out" || { echo "FAIL: no count of skipped tests"; fail=1; }
grep -q "needs_gpu: SKIP: no GPU here (nvidia-smi -L failed)$" "$tmp/out" \
  || { echo "FAIL: the reason of needs_gpu is not shown"; fail=1; }
grep -q "needs_tool: SKIPPED: frob is not installed$" "$tmp/out" \
  || { echo "FAIL: the reason of needs_tool is not shown"; fail=1; }
cmake -S "$tmp/src" -B "$tmp/build" -DWITH_FAILURE=ON >/dev/null
"$KEVO_SRC/scripts/ctest.sh" "$tmp/build" > "$tmp/out" 2>&1; rc=$?
[ $rc != 0 ] || { echo "FAIL: a failing test did not make scripts/ctest.sh fail"; fail=1; }
grep -q "^== 2 tests skipped:" "$tmp/out" || { echo "FAIL: no skip list after a failure"; fail=1; }
[ $fail = 0 ] && echo "ci skips: all passed"
exit $fail
