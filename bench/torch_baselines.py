"""PyTorch eager and torch.compile baselines for kevo's recipes, on the recipes' benchmark
shapes (from bench/recipe_shapes.lua), timed by the PyTorch bridge's time_fn
(python/kb_bridge.py), as kevo times its kernels: GPU time by CUDA events, an L2 flush between
repetitions, Python's issue overhead hidden behind a GPU-side wait, warm-up first, the median.
usage: python3 bench/torch_baselines.py SHAPES.json > baselines.json"""
import json
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import kb_bridge  # noqa: E402 (the one timing method for every PyTorch baseline)

DT = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16, "f64": torch.float64,
      "i32": torch.int32, "i64": torch.int64, "u8": torch.uint8}


def ins(spec, role="input"):
    return [t for t in spec["tensors"] if t["role"] == role]


def make(spec):
    g = torch.Generator(device="cuda").manual_seed(1)
    xs = {}
    p = spec["params"]
    for t in ins(spec):
        dt = DT[t["dtype"]]
        if dt.is_floating_point:
            xs[t["name"]] = torch.randn(t["dims"], device="cuda", generator=g, dtype=torch.float32).to(dt)
        else:  # class indices and the like: [0, last dim of the first input)
            hi = p.get("C") or p.get("N") or 2
            xs[t["name"]] = torch.randint(0, hi, t["dims"], device="cuda", generator=g, dtype=dt)
    return xs


def op_for(name, spec):
    """The PyTorch expression of each recipe (inputs by position, as the recipe declares them)."""
    p = spec["params"]
    n = p.get("N")
    eps = {"layernorm": 1e-5, "rmsnorm": 1e-6}
    table = {
        "vector_add": lambda a, b: a + b,
        "softmax": lambda x: torch.softmax(x, -1),
        "log_softmax": lambda x: F.log_softmax(x, -1),
        "gelu": lambda x: F.gelu(x, approximate="none"),  # the recipe is the erf form
        "layernorm": lambda x, w, b: F.layer_norm(x, (n,), w, b, eps["layernorm"]),
        "rmsnorm": lambda x, w: F.rms_norm(x, (n,), w, eps["rmsnorm"]),
        "row_sum": lambda x: x.sum(-1),
        "transpose": lambda x: x.t().contiguous(),
        "cross_entropy": lambda logits, target: F.cross_entropy(logits, target.long(), reduction="none"),
        "matmul_bf16": lambda a, b: a @ b,
    }
    return table.get(name)


def time_ms(fn, args):
    return kb_bridge.time_fn(torch, lambda: fn(*args), {"warmup_ms": 100, "min_reps": 100})["median_ms"]


def main():
    shapes = json.load(open(sys.argv[1]))
    out = {"device": torch.cuda.get_device_name(), "torch": torch.__version__}
    for name, spec in shapes.items():
        fn = op_for(name, spec)
        if fn is None:
            out[name] = {"error": "no PyTorch expression for this recipe"}
            continue
        xs = make(spec)
        args = [xs[t["name"]] for t in ins(spec)]
        row = {"eager_ms": time_ms(fn, args)}
        try:
            cfn = torch.compile(fn)
            row["compile_ms"] = time_ms(cfn, args)
        except Exception as e:  # noqa: BLE001 (reported, not hidden)
            row["compile_error"] = str(e).splitlines()[0][:200]
        out[name] = row
        print(name, row, file=sys.stderr, flush=True)
    json.dump(out, sys.stdout, indent=1)


if __name__ == "__main__":
    main()
