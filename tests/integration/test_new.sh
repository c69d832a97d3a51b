#!/usr/bin/env bash
# kevo new: a recipe from a user's own kernel. The example becomes a recipe kevo check accepts
# and whose seed compiles (kevo eval reaches the no-GPU verdict); bad input exits 2 with what to
# fix and leaves nothing behind.
set -u
fail=0
out=$(mktemp)
t() { # t NAME EXPECTED_RC CMD... : runs CMD, checks its exit code
  local name=$1 want=$2; shift 2
  "$@" >"$out" 2>&1; local rc=$?
  if [ "$rc" != "$want" ]; then
    echo "FAIL $name: exit $rc, want $want"; sed 's/^/  | /' "$out"; fail=1
  else echo "ok   $name"; fi
}
has() { grep -qF -- "$1" "$out" || { echo "FAIL: output lacks '$1'"; sed 's/^/  | /' "$out"; fail=1; }; }
lacks() { ! grep -qF -- "$1" "$out" || { echo "FAIL: output has '$1'"; sed 's/^/  | /' "$out"; fail=1; }; }
absent() { [ ! -e "$1" ] || { echo "FAIL: $1 was left behind"; fail=1; }; }

tmp=$(mktemp -d)
cd "$tmp" || exit 1
ex=$KEVO_SRC/examples/own_kernel/bias_relu.cu

t "new --help" 0 "$KEVO" new --help;                      has "usage: kevo new NAME KERNEL.cu"
t "new without args" 2 "$KEVO" new;                       has "expected NAME and KERNEL.cu"
t "new bad option" 2 "$KEVO" new x "$ex" --frob;          has "unknown option '--frob'"
t "new unreadable file" 2 "$KEVO" new x nothere.cu --param N=4; has "nothere.cu: cannot read it"

# the example, as its README runs it
t "example becomes a recipe" 0 "$KEVO" new bias_relu "$ex" --param M=4096 --param N=4096 \
  --shape x=[M,N] --shape bias=[N] --shape y=[M,N] --extra M=1,N=1000 --extra M=37,N=4097 \
  --space BLOCK=128,256,512
has "wrote recipes/bias_relu.yaml"; has "inputs   x f32 [M, N], bias f32 [N]"
has "outputs  y f32 [M, N]"; has "shapes   M=4096,N=4096 (benchmark) M=1,N=1000 M=37,N=4097"
has "bytes 8*M*N + 4*N = 134.2 MB"; has "BLOCK {128, 256, 512}"; lacks "warning"
cmp -s "$ex" recipes/bias_relu/reference.cu && cmp -s "$ex" recipes/bias_relu/seed.cu \
  || { echo "FAIL: reference.cu and seed.cu are not copies of the kernel"; fail=1; }
t "kevo check accepts it" 0 "$KEVO" check recipes/bias_relu.yaml
has "input  x   f32 [M=4096, N=4096]"; has "input  bias f32 [N=4096]"; has "output y   f32"
has "bytes 8*M*N + 4*N = 134 MB"; has "BLOCK {128, 256, 512} = 3 points"
has "seed 1     cuda recipes/bias_relu/seed.cu (kernel bias_relu), launch at recipes/bias_relu/seed.cu:5"
has "reference  cuda recipes/bias_relu/reference.cu (kernel bias_relu), launch at recipes/bias_relu.yaml:"
grep -qF 'extern "C" __global__ void bias_relu(const float* x, const float* bias, float* y, int M, int N)' \
  recipes/bias_relu.yaml || { echo "FAIL: the prompt lacks the signature"; fail=1; }
grep -qF "local BLOCK = 256" recipes/bias_relu.yaml || { echo "FAIL: the reference's launch lacks the BLOCK default"; fail=1; }
t "recipe found by name from ./recipes" 0 "$KEVO" check -q bias_relu

export CUDA_VISIBLE_DEVICES=
if ! "$KEVO" help worker >/dev/null 2>&1; then
  export KEVO_WORKER="python3 $KEVO_SRC/tests/integration/fake_worker.py nogpu"
fi
t "the seed compiles, then needs a GPU" 1 "$KEVO" eval recipes/bias_relu.yaml recipes/bias_relu/seed.cu --set BLOCK=512
has "no_gpu"; has "bias_relu: "; has "registers"
t "existing files need --force" 2 "$KEVO" new bias_relu "$ex" --param M=64 --param N=64 \
  --shape x=[M,N] --shape bias=[N] --shape y=[M,N] --extra M=1
has "recipes/bias_relu.yaml already exist"; has "--force to overwrite"
grep -q "M: 4096" recipes/bias_relu.yaml || { echo "FAIL: the recipe was overwritten without --force"; fail=1; }
t "--force overwrites" 0 "$KEVO" new bias_relu "$ex" --param M=64 --param N=64 \
  --shape x=[M,N] --shape bias=[N] --shape y=[M,N] --extra M=1 --force
grep -q "M: 64" recipes/bias_relu.yaml || { echo "FAIL: --force did not overwrite"; fail=1; }

# a signature with comments, __restrict__, const on either side, a float constant, no launch block
cat > saxpy.cu <<'X'
// saxpy, out-of-place: out = alpha * x + y
#ifndef BLOCK
#define BLOCK 128
#endif
#define UNUSED_HELPER 3
template <typename T> __device__ T twice(T v) { return v + v; }
extern "C" __global__ void
__launch_bounds__(BLOCK) saxpy( /* the scale */ float alpha, const float *__restrict__ x,
       float const* y, // read only, const after the type
       float * __restrict__ out, /* written */ long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) out[i] = alpha * x[i] + y[i];
}
X
t "missing launch block" 2 "$KEVO" new saxpy saxpy.cu --param n=1000000 --extra n=1
has "saxpy.cu has no kevo:launch block, and kevo new does not guess one"
has "a wrong launch would verify against itself"
has "/* kevo:launch"; has 'name = "saxpy", grid = {cdiv(n, BLOCK)}, block = {BLOCK}'
has 'args = {f32(1.0), "x", "y", "out", i64(n)}'
absent recipes/saxpy.yaml; absent recipes/saxpy
cat > saxpy_launch.lua <<'X'
return {kernels = {{name = "saxpy", grid = {cdiv(n, BLOCK)}, block = {BLOCK},
                    args = {f32(2.5), "x", "y", "out", i64(n)}}}}
X
t "comments, __restrict__, const placement, --launch" 0 "$KEVO" new saxpy saxpy.cu \
  --param n=1000000 --extra n=1 --extra n=4099 --launch saxpy_launch.lua --flops 2*n --out mine
has "inputs   x f32 [n], y f32 [n]"; has "outputs  out f32 [n]"; has "flops 2*n"
t "check the saxpy recipe" 0 "$KEVO" check mine/saxpy.yaml
has "input  x   f32 [n=1000000]"; has "input  y   f32 [n=1000000]"; has "output out f32 [n=1000000]"
has "BLOCK {128} = 1 point"; lacks "1 points"; has "bytes 12*n = 12 MB, flops 2*n = 2 MFLOP"
grep -qF "alpha (float) is a constant: the launch passes f32(2.5)" mine/saxpy.yaml \
  || { echo "FAIL: the prompt lacks the float constant"; fail=1; }
grep -qF "UNUSED_HELPER" mine/saxpy.yaml && { echo "FAIL: a plain #define became a knob"; fail=1; }
t "saxpy seed compiles" 1 "$KEVO" eval mine/saxpy.yaml mine/saxpy/seed.cu --lang cuda
has "no_gpu"

# bad input: exit 2, what to fix, nothing left behind
launch='/* kevo:launch
return {kernels = {{name = "k", grid = {cdiv(n, 256)}, block = {256}, args = {"x", "y", i32(n)}}}}
*/'
printf '%s\nextern "C" __global__ void k(const float* x, float* y, int n) { if (threadIdx.x < n) y[0] = x[0]; }\n' "$launch" > k.cu
t "unknown scalar param" 2 "$KEVO" new k k.cu --param N=1024 --param M=3
has "integer parameter 'int n' is a size: give it with --param n=VALUE (params given: N, M)"
t "missing shape" 2 "$KEVO" new k k.cu --param n=1024 --param m=3 --shape x=[n]
has "tensor 'y' has no shape: give --shape y=[...] over the params (n, m)"
t "no params" 2 "$KEVO" new k k.cu;                       has "no params"
t "--shape of a non-tensor" 2 "$KEVO" new k k.cu --param n=4 --shape z=[n]; has "'z' is no pointer parameter of k"
t "bad --shape expression" 2 "$KEVO" new k k.cu --param n=4 --shape x=[n+] ; has "--shape x: 'n+': column 3"
t "--extra of an unknown param" 2 "$KEVO" new k k.cu --param n=4 --extra q=3; has "unknown param 'q' (params: n)"
t "--space of an unknown knob" 2 "$KEVO" new k k.cu --param n=4 --space BLOCK=1,2; has "no knob BLOCK in k.cu"
sed 's/const float\* x/const float2* x/' k.cu > k2.cu
t "unsupported type" 2 "$KEVO" new k k2.cu --param n=4;   has "element type 'float2' is not one kevo has"
sed 's/int n)/short n)/' k.cu > k3.cu
t "unsupported scalar" 2 "$KEVO" new k k3.cu --param n=4; has "scalar type 'short' is not supported"
sed 's/extern "C" //' k.cu > k4.cu
t "not extern C" 2 "$KEVO" new k k4.cu --param n=4;       has "is not extern \"C\""
t "--kernel unknown" 2 "$KEVO" new k k.cu --kernel nope --param n=4; has "no __global__ kernel named 'nope' (kernels: k)"
sed 's/args = {"x", "y", i32(n)}/args = {"x", i32(n)}/' k.cu > k5.cu
t "launch arity" 2 "$KEVO" new k k5.cu --param n=4;       has "2 arguments for k, whose signature takes 3"
sed 's/args = {"x", "y", i32(n)}/args = {"y", "x", i32(n)}/' k.cu > k6.cu
t "launch swaps tensors" 2 "$KEVO" new k k6.cu --param n=4; has "argument 1 is \"y\" but the parameter is x"
sed 's/cdiv(n, 256)/cdiv(N, 256)/' k.cu > k7.cu
t "launch reads an unknown name" 2 "$KEVO" new k k7.cu --param n=4; has "reads 'N', which is neither a param (n)"
sed 's/cdiv(n, 256)/n - 4/' k.cu > k8.cu
t "launch grid of 0 on an extra shape" 2 "$KEVO" new k k8.cu --param n=1024 --extra n=4; has "(at extra shape 1): kernels[1].grid: 0 is not a positive integer"
sed 's/y\[0\] = x\[0\]/y[0] = undeclared_thing/' k.cu > k9.cu
t "compile error" 2 "$KEVO" new k k9.cu --param n=4;      has "k9.cu does not compile with NVRTC"; has "undeclared_thing"
t "the loader refuses: nothing left" 2 "$KEVO" new k k.cu --param n=4 --init x="bogus(1)" --out fresh/dir
has "does not load, so nothing was left behind"; absent fresh
t "good with a warning" 0 "$KEVO" new k k.cu --param n=4 --out fresh/dir
has "warning: no extra shape"; has "wrote fresh/dir/k.yaml"
cp fresh/dir/k.yaml before.yaml
t "--force, then the loader refuses: the old recipe is restored" 2 "$KEVO" new k k.cu --param n=8 \
  --init x="bogus(1)" --out fresh/dir --force
cmp -s before.yaml fresh/dir/k.yaml || { echo "FAIL: the recipe --force replaced was not restored"; fail=1; }
[ -f fresh/dir/k/seed.cu ] || { echo "FAIL: the seed --force replaced was removed"; fail=1; }
absent recipes/k.yaml

cd / && rm -rf "$tmp" "$out"
[ $fail = 0 ] && echo "new: all passed"
exit $fail
