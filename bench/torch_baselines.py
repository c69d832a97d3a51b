"""PyTorch eager and torch.compile baselines for kevo's recipes, on the recipes' benchmark
shapes (from bench/recipe_shapes.lua), timed like kevo times: CUDA events around each call,
an L2 flush between repetitions, warm-up first, the median of many repetitions.
usage: python3 bench/torch_baselines.py SHAPES.json > baselines.json"""
import json
import math
import statistics
import sys

import torch
import torch.nn.functional as F

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


def time_ms(fn, args, flush, reps=100, warm_ms=100.0):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    fn(*args)
    torch.cuda.synchronize()
    t = torch.cuda.Event(enable_timing=True)
    t.record()
    while True:  # warm-up by time
        fn(*args)
        e = torch.cuda.Event(enable_timing=True)
        e.record()
        e.synchronize()
        if t.elapsed_time(e) > warm_ms:
            break
    samples = []
    for _ in range(reps):
        flush.zero_()
        start.record()
        fn(*args)
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end))
    return statistics.median(samples)


def main():
    shapes = json.load(open(sys.argv[1]))
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")  # 256 MB > 4x the 60 MB L2
    out = {"device": torch.cuda.get_device_name(), "torch": torch.__version__}
    for name, spec in shapes.items():
        fn = op_for(name, spec)
        if fn is None:
            out[name] = {"error": "no PyTorch expression for this recipe"}
            continue
        xs = make(spec)
        args = [xs[t["name"]] for t in ins(spec)]
        row = {"eager_ms": time_ms(fn, args, flush)}
        try:
            cfn = torch.compile(fn)
            row["compile_ms"] = time_ms(cfn, args, flush)
        except Exception as e:  # noqa: BLE001 (reported, not hidden)
            row["compile_error"] = str(e).splitlines()[0][:200]
        out[name] = row
        print(name, row, file=sys.stderr, flush=True)
    json.dump(out, sys.stdout, indent=1)


if __name__ == "__main__":
    main()
