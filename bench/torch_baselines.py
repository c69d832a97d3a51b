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
    """The inputs, drawn as the recipe's inits say (normal, uniform, randint with their bounds)."""
    g = torch.Generator(device="cuda").manual_seed(1)
    xs = {}
    p = spec["params"]
    for t in ins(spec):
        dt = DT[t["dtype"]]
        init = t.get("init") or {}
        lo, hi = init.get("lo"), init.get("hi")
        if dt.is_floating_point:
            x = torch.randn(t["dims"], device="cuda", generator=g, dtype=torch.float32)
            if init.get("kind") == "normal" and lo is not None:
                x = x * hi + lo
            elif init.get("kind") == "uniform":
                lo, hi = (-1.0, 1.0) if lo is None else (lo, hi)
                x = torch.rand(t["dims"], device="cuda", generator=g) * (hi - lo) + lo
            xs[t["name"]] = x.to(dt)
        else:  # class indices and the like: the randint bounds, else [0, last dim of the first input)
            if lo is None:
                lo, hi = 0, p.get("C") or p.get("N") or 2
            xs[t["name"]] = torch.randint(lo, hi, t["dims"], device="cuda", generator=g, dtype=dt)
    return xs


def rope_neox(pos, cs, q, k):
    """Rotary embedding, GPT-NeoX layout, as the rope_bf16 recipe states it (f32 math, bf16 out)."""
    h = cs.shape[1] // 2
    c, s = cs[pos, :h][:, None, :], cs[pos, h:][:, None, :]

    def rot(x):
        x1, x2 = x[..., :h].float(), x[..., h:].float()
        return torch.cat((x1 * c - x2 * s, x2 * c + x1 * s), -1).to(x.dtype)
    return rot(q), rot(k)


def fp8_quant(x, group):
    """FP8 e4m3 quantisation as the fp8_quant_* recipes state it: per row (group None) or per
    block of `group` elements of a row; scale = max(amax / 448, 1 / (448 * 512))."""
    m, n = x.shape
    xs = x.float().reshape(m, -1, group or n)
    s = (xs.abs().amax(-1, keepdim=True) / 448.0).clamp(min=1.0 / (448.0 * 512.0))
    q = (xs / s).clamp(-448.0, 448.0).to(torch.float8_e4m3fn).reshape(m, n)
    return q, s.reshape(m, -1).squeeze(-1) if group is None else s.reshape(m, -1)


def moe_offsets(counts, T):
    """The grouped_gemm_bf16 recipe's expert ends: running sums clipped at T, the last one T."""
    ends = torch.clamp(torch.cumsum(counts.clamp(min=0), 0), max=T).to(torch.int32)
    ends[-1] = T
    return ends


def grouped_loop(a, b, ends):
    """What a user writes without a grouped kernel: one matmul per expert."""
    out = torch.empty(a.shape[0], b.shape[2], device=a.device, dtype=a.dtype)
    start = 0
    for e, end in enumerate(ends):
        if end > start:
            torch.matmul(a[start:end], b[e], out=out[start:end])
        start = end
    return out


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
        "softmax_bf16": lambda x: torch.softmax(x, -1),
        "log_softmax_bf16": lambda x: F.log_softmax(x, -1),
        "add_rmsnorm_bf16": lambda x, r, w: (lambda h: (F.rms_norm(h, (n,), w, 1e-6), h))(x + r),
        "silu_mul_bf16": lambda x: F.silu(x[:, :n]) * x[:, n:],
        "rope_bf16": rope_neox,
        "fp8_quant_token": lambda x: fp8_quant(x, None),
        "fp8_quant_block": lambda x: fp8_quant(x, 128),
        "topk": lambda x: torch.topk(x, p.get("K", 1), dim=-1),
        # what a user calls: scaled_dot_product_attention (q as [B, HQ, 1, D], GQA by enable_gqa)
        "decode_attention": lambda q, k, v: F.scaled_dot_product_attention(
            q.unsqueeze(2), k, v, enable_gqa=True).squeeze(2),
    }
    return table.get(name)


def extras(name, spec, xs):
    """Further baselines a user would reach for: cuBLAS on the same total work and torch's grouped
    op for the grouped GEMM."""
    out = {}
    if name == "grouped_gemm_bf16":
        p = spec["params"]
        a, b = xs["A"], xs["B"]
        ends = moe_offsets(xs["counts"], p["T"])
        out["cublas_dense_ms"] = time_ms(lambda: a @ b[0], [])  # T x K @ K x N: the same flops
        gmm = getattr(F, "grouped_mm", None) or getattr(torch, "_grouped_mm", None)
        if gmm is not None:
            try:
                out["grouped_mm_ms"] = time_ms(lambda: gmm(a, b, offs=ends), [])
            except Exception as e:  # noqa: BLE001 (reported, not hidden)
                out["grouped_mm_error"] = str(e).splitlines()[0][:200]
                try:  # the weights stored column-major, as the op may want them (converted once)
                    bt = b.transpose(-2, -1).contiguous().transpose(-2, -1)
                    out["grouped_mm_ms"] = time_ms(lambda: gmm(a, bt, offs=ends), [])
                    out["grouped_mm_layout"] = "B column-major"
                except Exception as e2:  # noqa: BLE001
                    out["grouped_mm_error"] += " / column-major B: " + str(e2).splitlines()[0][:120]
    return out


def time_ms(fn, args):
    return kb_bridge.time_fn(torch, lambda: fn(*args), {"warmup_ms": 100, "min_reps": 100})["median_ms"]


def main():
    shapes = json.load(open(sys.argv[1]))
    out = {"device": torch.cuda.get_device_name(), "torch": torch.__version__}
    for name, spec in shapes.items():
        fn = op_for(name, spec)
        if fn is None and name != "grouped_gemm_bf16":
            out[name] = {"error": "no PyTorch expression for this recipe"}
            continue
        xs = make(spec)
        args = [xs[t["name"]] for t in ins(spec)]
        if name == "grouped_gemm_bf16":  # eager: a matmul per expert (ends known on the host)
            ends = moe_offsets(xs["counts"], spec["params"]["T"]).tolist()
            fn = lambda a, b, counts: grouped_loop(a, b, ends)  # noqa: E731
        row = {"eager_ms": time_ms(fn, args)}
        try:
            cfn = torch.compile(fn)
            row["compile_ms"] = time_ms(cfn, args)
        except Exception as e:  # noqa: BLE001 (reported, not hidden)
            row["compile_error"] = str(e).splitlines()[0][:200]
        try:
            row.update(extras(name, spec, xs))
        except Exception as e:  # noqa: BLE001 (reported, not hidden)
            row["extras_error"] = str(e).splitlines()[0][:200]
        if spec.get("bytes"):
            row["bytes"] = spec["bytes"]
        out[name] = row
        print(name, row, file=sys.stderr, flush=True)
    json.dump(out, sys.stdout, indent=1)


if __name__ == "__main__":
    main()
