#!/usr/bin/env bash
# A KernelBench model with hundreds of parameters and buffers (ResNet101 and DenseNet201 pass
# 600-odd tensors, past the old 512-argument limit): kevo import writes a contract with every
# one of 1500 weights in the signature and the launch block, bench/kb_sweep.py's stub kernel
# compiles with NVRTC (12 KiB of kernel parameters: CUDA 12.1+ takes up to 32764 bytes), and
# kevo eval resolves its launch into a plan and stops only at the GPU. Past 32764 bytes the
# launch is refused with the byte count. No torch and no GPU needed: the description is
# written here as the bridge would write it.
set -u
kevo="${KEVO:?}"
src="${KEVO_SRC:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }

# problem.py (a model whose 1500 parameters and buffers all take part) and its description
python3 - "$tmp" <<'PY' || { echo "FAIL cannot write the problem"; exit 1; }
import json, sys
tmp = sys.argv[1]
open(tmp + "/many.py", "w").write('''import torch
import torch.nn as nn


class Model(nn.Module):
    """Scales x by 1000 weights in turn and adds 500 biases: 1500 tensors a kernel receives."""

    def __init__(self):
        super().__init__()
        self.scale = nn.ParameterList([nn.Parameter(torch.rand(features)) for _ in range(1000)])
        for i in range(500):
            self.register_buffer("shift_%d" % i, torch.randn(features))

    def forward(self, x):
        for w in self.scale:
            x = x * w
        for i in range(500):
            x = x + getattr(self, "shift_%d" % i)
        return x


batch_size = 64
features = 256


def get_inputs():
    return [torch.randn(batch_size, features)]


def get_init_inputs():
    return []
''')
weights = [{"name": "scale.%d" % i, "dtype": "f32", "shape": [256], "init": "uniform(0, 1)",
            "kind": "parameter"} for i in range(1000)]
weights += [{"name": "shift_%d" % i, "dtype": "f32", "shape": [256], "init": "normal",
             "kind": "buffer"} for i in range(500)]
d = {"kevo_description": 1, "problem": "many.py", "torch": "2.11.0", "device": "cuda",
     "device_name": "NVIDIA H200",
     "globals": [{"name": "batch_size", "value": 64}, {"name": "features", "value": 256}],
     "inputs": [{"name": "x", "dtype": "f32", "shape": [64, 256], "init": "normal"}],
     "weights": weights, "scalars": [],
     "outputs": [{"name": "out", "dtype": "f32", "shape": [64, 256],
                  "stats": {"min": -50.0, "max": 50.0, "absmax": 50.0}}],
     "cost": {"bytes": 4 * (2 * 64 * 256 + 1500 * 256), "flops": 1500 * 64 * 256},
     "tolerance": {"f32": 1e-5, "measured": 1e-7}, "forward_ms": 1.0, "degenerate": None}
json.dump(d, open(tmp + "/many.json", "w"))
PY

if "$kevo" import "$tmp/many.py" --description "$tmp/many.json" --out "$tmp/r" >"$tmp/import.out" 2>&1; then
  ok "import: 1500 weights"
else
  bad "import: $(tail -3 "$tmp/import.out")"
fi
sig=$(grep -m1 '^ *extern "C" __global__ void' "$tmp/r/many/README.md")
n=$(printf '%s' "$sig" | tr ',' '\n' | grep -c '__restrict__')
[ "$n" = 1502 ] && ok "the contract's signature has 1502 tensors" || bad "signature has $n tensors"
printf '%s' "$sig" | grep -q 'const float \*__restrict__ scale_999, const float \*__restrict__ shift_0,' \
  && printf '%s' "$sig" | grep -q 'float \*__restrict__ out, int batch_size, int features)' \
  && ok "weights in order, then the output and the sizes" || bad "signature order: ${sig:0:200}"
grep -q '"shift_499", "out", i32(batch_size), i32(features)}' "$tmp/r/many/README.md" \
  && ok "the launch block passes every tensor" || bad "the launch block lacks tensors"

# the sweep's stub (the contract's signature and launch block, an empty body) compiles and its
# launch resolves into a plan of 1504 arguments; kevo eval stops only at the GPU
python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import kb_sweep
open(sys.argv[3], "w").write(kb_sweep.stub_source(sys.argv[2]))' \
  "$src/bench" "$tmp/r/many/README.md" "$tmp/stub.cu" || bad "no stub"
"$kevo" eval "$tmp/r/many.yaml" "$tmp/stub.cu" --json >"$tmp/eval.json" 2>"$tmp/eval.err"
got=$(python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
ks = [k["name"] for k in (d.get("compile") or {}).get("kernels") or []]
print(d["verdict"], d["stage"], ",".join(ks), d.get("message", "")[:300])' "$tmp/eval.json" 2>&1)
case "$got" in
  "no_gpu verify many_kernel "*) ok "stub compiled with NVRTC, launch resolved, stopped at the GPU" ;;
  *) bad "kevo eval: $got $(tail -2 "$tmp/eval.err")" ;;
esac

# past 32764 bytes of parameters the launch is refused, with the count
python3 - "$tmp" <<'PY'
import sys
tmp = sys.argv[1]
src = open(tmp + "/stub.cu").read()
extra = ", ".join("i64(%d)" % i for i in range(2592))  # 4096 arguments of 8 bytes
src = src.replace('i32(batch_size), i32(features)}', 'i64(batch_size), i64(features), %s}' % extra)
open(tmp + "/big.cu", "w").write(src)
PY
"$kevo" eval "$tmp/r/many.yaml" "$tmp/big.cu" --json >"$tmp/big.json" 2>/dev/null
if grep -q 'launch_error' "$tmp/big.json" && grep -q '4096 arguments take 32768 bytes of kernel parameters, more than the 32764' "$tmp/big.json"; then
  ok "past 32764 bytes: launch_error with the byte count"
else
  bad "past 32764 bytes: $(head -c 600 "$tmp/big.json")"
fi

echo "$fails failure(s)"
[ $fails -eq 0 ]
