#!/usr/bin/env bash
# Needs a GPU. The narrow dtypes end to end through `kevo eval` (tests/recipes/dtypes.yaml: i8,
# bool and f8e4m3 inputs drawn by the worker, f8e5m2 and f8e4m3 outputs compared by it): the
# reference itself is ok, a kernel one FP8 unit in the last place off is ok (the default
# f8e4m3 tolerance), two units off is wrong, the bool mask read the wrong way round is wrong.
set -u
recipe="$KEVO_SRC/tests/recipes/dtypes.yaml"
kernels="$KEVO_SRC/tests/gpu/dtype_kernels"
fail=0
judge() { # judge KERNEL WANT
  local out verdict
  out=$("$KEVO" eval --json "$recipe" "$1" 2>&1)
  verdict=$(printf '%s' "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["verdict"])' 2>/dev/null)
  if [ "$verdict" = no_gpu ]; then
    echo "SKIPPED: gpu/test_dtypes needs a GPU" >&2
    exit 77
  fi
  if [ "$verdict" = "$2" ]; then
    echo "ok: $(basename "$1") $verdict"
  else
    echo "FAIL: $(basename "$1"): verdict '$verdict', expected $2"
    printf '%s\n' "$out" | tail -20
    fail=1
  fi
}
judge "$KEVO_SRC/tests/recipes/good/narrow.cu" ok
judge "$kernels/narrow_ulp1.cu" ok
judge "$kernels/narrow_ulp2.cu" wrong
judge "$kernels/narrow_mask.cu" wrong
exit $fail
