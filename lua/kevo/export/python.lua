-- kevo.export.python: the Python files kevo export writes. Constant text: the facts they need
-- (plans, tensors, shapes) are read from launch.json at run time, so nothing from the archive
-- is spliced into code.
local M = {}

M.torch_ext = [=[
"""torch_ext.py: launch the kernel kevo exported, from PyTorch, with no build step.

Loads kernel.cubin (and reference.cubin when exported) with the CUDA driver API through ctypes
(cuModuleLoadData, cuModuleGetFunction, cuLaunchKernel on torch's current stream) and launches
it with a plan from launch.json: the grid, block, shared memory and arguments kevo resolved for
each of the recipe's shapes. Only those shapes can be launched (the launch chunk in launch.json
says how the geometry follows from the params; resolve it again for another shape).

    import torch, torch_ext
    k = torch_ext.Kernel()                       # or Kernel("reference")
    shape = k.shapes[0]                          # the benchmark shape; k.shape_by_label("M=127,N=1000")
    ins = k.make_inputs(shape, seed=0)           # dict name -> tensor, as the recipe says
    outs = k(shape, **ins)                       # allocates outputs, launches, returns them

Needs: PyTorch with CUDA, and libcuda.so.1 (the NVIDIA driver).
"""
import ctypes
import json
import os

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16, "f64": torch.float64,
          "i32": torch.int32, "i64": torch.int64, "u8": torch.uint8, "i8": torch.int8,
          "bool": torch.bool, "f8e4m3": torch.float8_e4m3fn, "f8e5m2": torch.float8_e5m2}
SCALARS = {"i32": ctypes.c_int32, "i64": ctypes.c_int64, "u32": ctypes.c_uint32, "u64": ctypes.c_uint64,
           "f32": ctypes.c_float, "f64": ctypes.c_double}

_cuda = None


def _driver():
    global _cuda
    if _cuda is None:
        _cuda = ctypes.CDLL("libcuda.so.1")
    return _cuda


def _check(rc, what):
    if rc != 0:
        name = ctypes.c_char_p()
        _driver().cuGetErrorName(rc, ctypes.byref(name))
        raise RuntimeError("%s failed: %s (%d)" % (what, (name.value or b"?").decode(), rc))


class Kernel:
    def __init__(self, which="kernel", directory=HERE):
        with open(os.path.join(directory, "launch.json")) as f:
            self.launch = json.load(f)
        side = self.launch if which == "kernel" else self.launch.get(which)
        if not side or not side.get("cubin"):
            raise RuntimeError("no %s cubin was exported (see README.md)" % which)
        self.which = which
        self.shapes = [s for s in self.launch["shapes"] if s.get(which == "kernel" and "plan" or which + "_plan")]
        torch.cuda.init()
        torch.empty(1, device="cuda")  # makes torch's context current on this thread
        with open(os.path.join(directory, side["cubin"]), "rb") as f:
            self._image = f.read()
        self._module = ctypes.c_void_p()
        _check(_driver().cuModuleLoadData(ctypes.byref(self._module), self._image), "cuModuleLoadData")
        self._fns = {}

    def shape_by_label(self, label):
        for s in self.shapes:
            if s["label"] == label:
                return s
        raise KeyError(label)

    def _fn(self, name):
        if name not in self._fns:
            fn = ctypes.c_void_p()
            _check(_driver().cuModuleGetFunction(ctypes.byref(fn), self._module, name.encode()), "cuModuleGetFunction")
            self._fns[name] = fn
        return self._fns[name]

    def make_inputs(self, shape, seed=0):
        g = torch.Generator(device="cuda").manual_seed(seed)
        out = {}
        for t in self.launch["tensors"]:
            if t["role"] != "input":
                continue
            dims, dt = shape["dims"][t["name"]], DTYPES[t["dtype"]]
            init = t.get("init") or {"kind": "normal"}
            if init["kind"] == "randint":
                out[t["name"]] = torch.randint(int(init.get("a_value", 0)), int(init.get("b_value", 100)), dims,
                                               generator=g, device="cuda", dtype=dt)
            elif init["kind"] == "uniform":
                a, b = float(init.get("a_value", -1)), float(init.get("b_value", 1))
                out[t["name"]] = (torch.rand(dims, generator=g, device="cuda") * (b - a) + a).to(dt)
            else:
                a, b = float(init.get("a_value", 0)), float(init.get("b_value", 1))
                out[t["name"]] = (torch.randn(dims, generator=g, device="cuda") * b + a).to(dt)
        return out

    def __call__(self, shape, **tensors):
        plan = shape["plan"] if self.which == "kernel" else shape[self.which + "_plan"]
        bufs = dict(tensors)
        outs = {}
        for t in self.launch["tensors"]:
            if t["role"] == "output" and t["name"] not in bufs:
                outs[t["name"]] = bufs[t["name"]] = torch.empty(shape["dims"][t["name"]], device="cuda",
                                                                dtype=DTYPES[t["dtype"]])
        for s in plan.get("scratch", []):
            make = torch.zeros if s.get("zero") else torch.empty
            bufs[s["name"]] = make(max(int(s["bytes"]), 1), device="cuda", dtype=torch.uint8)
        stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
        for k in plan["kernels"]:
            keep = []
            for a in k["args"]:
                (kind, v), = a.items()
                if kind == "buf":
                    keep.append(ctypes.c_uint64(bufs[v].data_ptr()))
                elif kind == "null":
                    keep.append(ctypes.c_uint64(0))
                else:
                    keep.append(SCALARS[kind](v))
            ptrs = (ctypes.c_void_p * max(len(keep), 1))(*[ctypes.cast(ctypes.pointer(x), ctypes.c_void_p) for x in keep])
            g, b = k["grid"], k["block"]
            fn = self._fn(k["name"])
            if k["shared"] > 48 * 1024:
                _check(_driver().cuFuncSetAttribute(fn, 8, ctypes.c_int(k["shared"])), "cuFuncSetAttribute")
            _check(_driver().cuLaunchKernel(fn, g[0], g[1], g[2], b[0], b[1], b[2], k["shared"], stream, ptrs, None),
                   "cuLaunchKernel(%s)" % k["name"])
        return outs
]=]

M.make_test_vectors = [=[
"""make_test_vectors.py: test vectors for the exported kernel, made on a GPU.

kevo does not store tensors in its archive, so the vectors are made here: inputs drawn as the
recipe says (seeded), expected outputs from the recipe's REFERENCE kernel (reference.cubin,
exported beside the kernel), and the exported kernel's outputs checked against them with the
recipe's tolerance. Writes test_vectors.pt: {"shape", "inputs", "expected", "tolerance"}.

    python3 make_test_vectors.py [--shape LABEL] [--seed N] [--out test_vectors.pt]

The default shape is the smallest of the recipe's shapes. Exit 1 if the kernel disagrees.
"""
import argparse
import json
import math
import os
import sys

import torch

import torch_ext

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=os.path.join(HERE, "test_vectors.pt"))
    a = ap.parse_args()
    kern = torch_ext.Kernel()
    ref = torch_ext.Kernel("reference")
    labels = {s["label"] for s in ref.shapes}
    shapes = [s for s in kern.shapes if s["label"] in labels]
    if a.shape:
        shape = kern.shape_by_label(a.shape)
    else:
        shape = min(shapes, key=lambda s: sum(math.prod(d) for d in s["dims"].values()))
    inputs = kern.make_inputs(shape, seed=a.seed)
    keep = {k: v.clone() for k, v in inputs.items()}
    expected = ref(ref.shape_by_label(shape["label"]), **inputs)
    actual = kern(shape, **inputs)
    torch.cuda.synchronize()
    tol = kern.launch.get("tolerance", {})
    bad = False
    for name, e in expected.items():
        t = tol.get(next(t["dtype"] for t in kern.launch["tensors"] if t["name"] == name), {"atol": 0, "rtol": 0})
        ok = torch.allclose(actual[name].double(), e.double(), atol=t["atol"], rtol=t["rtol"])
        print("%s %s: %s" % (shape["label"], name, "matches the reference" if ok else "DIFFERS from the reference"))
        bad = bad or not ok
    torch.save({"shape": shape["label"], "params": shape["params"], "inputs": {k: v.cpu() for k, v in keep.items()},
                "expected": {k: v.cpu() for k, v in expected.items()}, "tolerance": tol}, a.out)
    print("wrote", a.out)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
]=]

return M
