#!/usr/bin/env bash
# Needs a GPU. A launch with more than 4 KiB of kernel parameters (CUDA 12.1+ on Volta and
# later take 32764 bytes; ResNet101 and DenseNet201 pass 600-odd tensors): a recipe of 700
# inputs summed into one output. The reference adds them in seven launches of 100 pointers
# (under 4 KiB each); a candidate taking all 701 pointers in one launch (5.6 KiB) and adding
# them in the same order is ok, bit for bit; one that leaves out the last pointer (at the far
# end of the parameter buffer) is wrong; one of 4096 pointers is a launch_error that says how
# many bytes it asked for.
set -u
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 - "$tmp" <<'PY'
import sys
tmp, n = sys.argv[1], 700
ins = "\n".join("  w%d: {dtype: f32, shape: [N], init: normal}" % j for j in range(n))
open(tmp + "/many.yaml", "w").write("""kevo: 1
name: many_args
summary: 700 inputs summed with weights, one kernel taking them all.
params: {N: 4099}
inputs:
%s
outputs:
  y: {dtype: f32, shape: [N]}
tolerance:
  f32: {atol: 1e-3, rtol: 1e-4}
cost: {bytes: %d*N, flops: %d*N}
reference:
  lang: cuda
  file: ref.cu
""" % (ins, 4 * (n + 1), 2 * n))
names = ["w%d" % j for j in range(n)]
sig = lambda ws: ", ".join("const float *__restrict__ %s" % w for w in ws)
def kernel(skip_last=False):
    """The candidate: one launch of all 701 pointers (5.6 KiB of parameters), summing in
    order (leaving out the last one: wrong)."""
    body = "\n".join("  s += w%d[i];" % j for j in range(n) if not (skip_last and j == n - 1))
    return """/* kevo:launch
return {kernels = {{name = "many", grid = {cdiv(N, 256)}, block = {256},
                    args = {%s, "y", i32(N)}}}}
*/
extern "C" __global__ void many(%s, float *__restrict__ y, int N) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= N) return;
  float s = 0.0f;
%s
  y[i] = s;
}
""" % (", ".join('"%s"' % w for w in names), sig(names), body)
# the reference: seven launches of 100 pointers each (under 4 KiB of parameters), each adding
# its hundred to y in the same order, so a right candidate matches it bit for bit
ref, launches = [], []
for c in range(n // 100):
    ws = names[c * 100:(c + 1) * 100]
    ref.append("""extern "C" __global__ void part%d(%s, float *__restrict__ y, int N) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= N) return;
  float s = %s;
%s
  y[i] = s;
}""" % (c, sig(ws), "0.0f" if c == 0 else "y[i]", "\n".join("  s += %s[i];" % w for w in ws)))
    launches.append('{name = "part%d", grid = {cdiv(N, 256)}, block = {256}, args = {%s, "y", '
                    'i32(N)}}' % (c, ", ".join('"%s"' % w for w in ws)))
open(tmp + "/ref.cu", "w").write("/* kevo:launch\nreturn {kernels = {%s}}\n*/\n%s\n" % (
    ",\n  ".join(launches), "\n".join(ref)))
open(tmp + "/ok.cu", "w").write(kernel())
open(tmp + "/wrong.cu", "w").write(kernel(skip_last=True))
too = open(tmp + "/ok.cu").read().replace('"y", i32(N)}', '"y", i64(N), %s}' % ", ".join(
    '"w0"' for _ in range(3394)))  # 4096 arguments of 8 bytes
open(tmp + "/too_many.cu", "w").write(too)
PY
fail=0
judge() { # judge KERNEL WANT [TEXT]
  local out verdict
  out=$("$KEVO" eval --json "$tmp/many.yaml" "$tmp/$1" 2>&1)
  verdict=$(printf '%s' "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["verdict"])' 2>/dev/null)
  if [ "$verdict" = no_gpu ]; then
    echo "SKIPPED: gpu/test_many_args needs a GPU" >&2
    exit 77
  fi
  if [ "$verdict" = "$2" ] && { [ -z "${3:-}" ] || printf '%s' "$out" | grep -q "$3"; }; then
    echo "ok: $1 $verdict"
  else
    echo "FAIL: $1: verdict '$verdict', expected $2 ${3:-}"
    printf '%s\n' "$out" | tail -20
    fail=1
  fi
}
judge ok.cu ok
judge wrong.cu wrong
judge too_many.cu launch_error "4096 arguments take 32768 bytes"
exit $fail
