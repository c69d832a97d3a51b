"""bench/kb_sweep.py's canned replies for `kevo run --loopback` are right, not only compiling:
each is written for the contract `kevo import` makes of a KernelBench-shaped problem (from a
description written here, at small sizes, with KernelBench's size names), compiled by kevo
(NVRTC; no GPU: kevo eval stops at no_gpu), then compiled for the CPU (g++, blockIdx and
threadIdx looped over the launch block's grid) and its output compared with the operation
computed in Python. No torch, no GPU."""
import json
import math
import os
import random
import re
import struct
import subprocess
import sys
import tempfile

KEVO = os.environ["KEVO"]
SRC = os.environ["KEVO_SRC"]
sys.path.insert(0, os.path.join(SRC, "bench"))
import kb_sweep  # noqa: E402

SHIM = r"""
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
struct kb_dim3 { unsigned x, y, z; };
static kb_dim3 blockIdx, threadIdx, blockDim, gridDim;
#define __global__
"""

MAIN = r"""
int main(int argc, char **argv) {
  long long nin[%(n)d] = {%(sizes)s};
  float *t[%(n)d];
  for (int i = 0; i < %(n)d; i++) {
    t[i] = (float *)calloc(nin[i] ? nin[i] : 1, sizeof(float));
    if (i < %(nins)d) {
      FILE *f = fopen(argv[1 + i], "rb");
      if (!f || fread(t[i], sizeof(float), nin[i], f) != (size_t)nin[i]) return 3;
      fclose(f);
    }
  }
  gridDim.x = %(grid)d; blockDim.x = 256; gridDim.y = gridDim.z = blockDim.y = blockDim.z = 1;
  for (blockIdx.x = 0; blockIdx.x < gridDim.x; blockIdx.x++)
    for (threadIdx.x = 0; threadIdx.x < 256; threadIdx.x++)
      %(call)s;
  fwrite(t[%(n)d - 1], sizeof(float), nin[%(n)d - 1], stdout);
  return 0;
}
"""


def gelu(v):
    return 0.5 * v * (1.0 + math.erf(v / math.sqrt(2.0)))


def matmul(a, b, m, k, n, ta=False, tb=False):
    return [sum(a[(kk * m + r) if ta else (r * k + kk)] * b[(c * k + kk) if tb else (kk * n + c)]
                for kk in range(k)) for r in range(m) for c in range(n)]


# name, globals, inputs [(name, dims as numbers)], output dims, reference(inputs, globals)
CASES = [
    ("19_ReLU", {"batch_size": 3, "dim": 37}, [("x", [3, 37])], [3, 37],
     lambda x, g: [max(v, 0.0) for v in x[0]]),
    ("26_GELU_", {"batch_size": 4, "dim": 33}, [("x", [4, 33])], [4, 33],
     lambda x, g: [gelu(v) for v in x[0]]),
    ("1_Square_matrix_multiplication_", {"N": 9}, [("A", [9, 9]), ("B", [9, 9])], [9, 9],
     lambda x, g: matmul(x[0], x[1], 9, 9, 9)),
    ("2_Standard_matrix_multiplication_", {"M": 5, "K": 7, "N": 3},
     [("A", [5, 7]), ("B", [7, 3])], [5, 3], lambda x, g: matmul(x[0], x[1], 5, 7, 3)),
    ("6_Matmul_with_large_K_dimension_", {"M": 3, "N": 4, "K": 50},
     [("A", [3, 50]), ("B", [50, 4])], [3, 4], lambda x, g: matmul(x[0], x[1], 3, 50, 4)),
    ("7_Matmul_with_small_K_dimension_", {"M": 6, "N": 7, "K": 3},
     [("A", [6, 3]), ("B", [3, 7])], [6, 7], lambda x, g: matmul(x[0], x[1], 6, 3, 7)),
    # tall and skinny: the inner dimension is named N, the output M x M
    ("9_Tall_skinny_matrix_multiplication_", {"M": 9, "N": 2},
     [("A", [9, 2]), ("B", [2, 9])], [9, 9], lambda x, g: matmul(x[0], x[1], 9, 2, 9)),
    # einsum("bijl,lk->bijk"): sizes named b, i, j, l, k like the kernel's own loop counters
    ("11_4D_tensor_matrix_multiplication", {"b": 2, "i": 3, "j": 4, "l": 5, "k": 6},
     [("A", [2, 3, 4, 5]), ("B", [5, 6])], [2, 3, 4, 6],
     lambda x, g: matmul(x[0], x[1], 24, 5, 6)),
    ("16_Matmul_with_transposed_A", {"M": 5, "K": 7, "N": 3},
     [("A", [7, 5]), ("B", [7, 3])], [5, 3], lambda x, g: matmul(x[0], x[1], 5, 7, 3, ta=True)),
    ("17_Matmul_with_transposed_B", {"M": 5, "K": 7, "N": 3},
     [("A", [5, 7]), ("B", [3, 7])], [5, 3], lambda x, g: matmul(x[0], x[1], 5, 7, 3, tb=True)),
    ("18_Matmul_with_transposed_both", {"M": 5, "K": 7, "N": 3},
     [("A", [7, 5]), ("B", [3, 7])], [5, 3],
     lambda x, g: matmul(x[0], x[1], 5, 7, 3, ta=True, tb=True)),
    ("14_Matmul_for_upper_triangular_matrices", {"N": 6}, [("A", [6, 6]), ("B", [6, 6])],
     [6, 6], lambda x, g: [v if i % 6 >= i // 6 else 0.0
                           for i, v in enumerate(matmul(x[0], x[1], 6, 6, 6))]),
    ("15_Matmul_for_lower_triangular_matrices", {"M": 6}, [("A", [6, 6]), ("B", [6, 6])],
     [6, 6], lambda x, g: [v if i % 6 <= i // 6 else 0.0
                           for i, v in enumerate(matmul(x[0], x[1], 6, 6, 6))]),
    # N and M share a value: the dims stay numbers, both sizes are still arguments
    ("12_Matmul_with_diagonal_matrices_", {"M": 6, "N": 6}, [("A", [6]), ("B", [6, 6])],
     [6, 6], lambda x, g: [x[0][i // 6] * x[1][i] for i in range(36)]),
    ("3_Batched_matrix_multiplication", {"batch_size": 2, "m": 3, "k": 4, "n": 5},
     [("A", [2, 3, 4]), ("B", [2, 4, 5])], [2, 3, 5],
     lambda x, g: [v for bt in range(2) for v in matmul(x[0][bt * 12:(bt + 1) * 12],
                                                         x[1][bt * 20:(bt + 1) * 20], 3, 4, 5)]),
    ("10_3D_tensor_matrix_multiplication", {"N": 2, "M": 3, "K": 4, "L": 5},
     [("A", [2, 3, 4]), ("B", [4, 5])], [2, 3, 5], lambda x, g: matmul(x[0], x[1], 6, 4, 5)),
]


def numel(dims):
    n = 1
    for d in dims:
        n *= d
    return n


def check(tmp, name, globs, inputs, out_dims, ref):
    desc = {"kevo_description": 1, "problem": name + ".py", "torch": "2.11.0",
            "device": "cuda", "device_name": "NVIDIA H200",
            "globals": [{"name": k, "value": v} for k, v in globs.items()],
            "inputs": [{"name": n, "dtype": "f32", "shape": d, "init": "normal"}
                       for n, d in inputs],
            "weights": [], "scalars": [],
            "outputs": [{"name": "out", "dtype": "f32", "shape": out_dims,
                         "stats": {"min": -9.0, "max": 9.0, "absmax": 9.0}}],
            "cost": {"bytes": 4 * (sum(numel(d) for _, d in inputs) + numel(out_dims))},
            "tolerance": {"f32": 1e-5, "measured": 1e-7}, "forward_ms": 1.0,
            "degenerate": None}
    py = os.path.join(tmp, name + ".py")
    open(py, "w").write("# stands in for the KernelBench file (the description says the rest)\n"
                        "class Model:\n    pass\n\n\ndef get_inputs():\n    return []\n\n\n"
                        "def get_init_inputs():\n    return []\n")
    open(py + ".json", "w").write(json.dumps(desc))
    r = subprocess.run([KEVO, "import", py, "--description", py + ".json", "--out",
                        os.path.join(tmp, "r")], capture_output=True, text=True)
    if r.returncode != 0:
        return "import: " + r.stderr[-300:]
    readme = os.path.join(tmp, "r", name, "README.md")
    reply = kb_sweep.llm_reply(name, readme)
    if reply is None:
        return "no reply"
    code = re.search(r"```cuda\n(.*?)```", reply, re.S).group(1)
    # NVRTC compiles it and the launch block resolves (no GPU here: no_gpu at verify)
    open(os.path.join(tmp, name + ".cu"), "w").write(code)
    r = subprocess.run([KEVO, "eval", os.path.join(tmp, "r", name + ".yaml"),
                        os.path.join(tmp, name + ".cu"), "--json"], capture_output=True, text=True)
    try:
        verdict = json.loads(r.stdout).get("verdict")
    except ValueError:
        verdict = r.stdout[-300:] + r.stderr[-300:]
    if verdict != "no_gpu":
        return "kevo eval: %s" % verdict
    sig, ptrs, sizes, _, launch = kb_sweep.contract(readme)
    kname = re.search(r"void (\w+)\(", sig).group(1)
    args = ["t[%d]" % i for i in range(len(ptrs))] + ["%d" % globs[z] for z in sizes]
    total = numel(out_dims)
    cpp = os.path.join(tmp, name + ".cpp")
    open(cpp, "w").write(SHIM + code + MAIN % {
        "n": len(ptrs), "nins": len(inputs),
        "sizes": ", ".join(str(numel(d)) for _, d in inputs) + ", %d" % total,
        "grid": (total + 255) // 256, "call": "%s(%s)" % (kname, ", ".join(args))})
    exe = os.path.join(tmp, name)
    r = subprocess.run(["g++", "-O1", "-w", "-o", exe, cpp], capture_output=True, text=True)
    if r.returncode != 0:
        return "g++: " + r.stderr[-600:]
    rnd = random.Random(name)
    xs, files = [], []
    for n, d in inputs:
        v = [rnd.uniform(-2, 2) for _ in range(numel(d))]
        v = list(struct.unpack("%df" % len(v), struct.pack("%df" % len(v), *v)))
        f = os.path.join(tmp, "%s.%s.bin" % (name, n))
        open(f, "wb").write(struct.pack("%df" % len(v), *v))
        xs.append(v)
        files.append(f)
    r = subprocess.run([exe] + files, capture_output=True)
    if r.returncode != 0:
        return "the kernel's run: exit %d" % r.returncode
    got = struct.unpack("%df" % total, r.stdout)
    want = ref(xs, globs)
    worst = max(abs(a - b) / (1 + abs(b)) for a, b in zip(got, want))
    if len(got) != len(want) or worst > 1e-5:
        return "wrong: worst relative error %.3g" % worst
    return None


def main():
    fails = 0
    with tempfile.TemporaryDirectory() as tmp:
        for case in CASES:
            why = check(tmp, *case)
            print(("FAIL %s: %s" % (case[0], why)) if why else ("ok   %s" % case[0]))
            fails += why is not None
    names = {c[0] for c in CASES}
    for n in kb_sweep.MATMUL:  # 13 (symmetric inputs) is the plain product of 1
        if n not in names and n != "13_Matmul_for_symmetric_matrices":
            print("FAIL %s: a MATMUL reply with no case here" % n)
            fails += 1
    print("%d failure(s)" % fails)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
