"""kevo's PyTorch bridge for KernelBench-format problems (docs/kbench.md).

A problem is a Python file with an nn.Module `Model`, `get_inputs()` and `get_init_inputs()`.
This bridge is the only place kevo runs PyTorch. It never runs a candidate: kevo's own worker
draws the inputs, verifies and times candidates; the bridge only

  describe FILE.py   prints a JSON description of the problem: the forward's inputs, the
                     model's parameters and buffers (which become inputs of the candidate, in
                     this order), the outputs, scalar arguments, a cost estimate, a tolerance
                     measured against float64, and whether the reference is degenerate.
  serve FILE.py      a long-lived server speaking kevo frames (u32 LE header length, JSON
                     header, blobs) on stdin/stdout: "reference" computes the outputs for
                     given inputs and weights, "baseline" times eager and torch.compile.

stdout carries only the JSON (describe) or frames (serve): it is moved aside at start and
fd 1 pointed at stderr, so a print() in the problem file cannot corrupt it.
"""
import ctypes
import hashlib
import importlib.util
import inspect
import json
import math
import os
import struct
import sys
import time

PROTO_OUT = None  # the real stdout, set by main()

DTYPES = {}  # torch dtype -> kevo name, filled once torch is imported
SIZES = {"f32": 4, "f16": 2, "bf16": 2, "f64": 8, "i32": 4, "i64": 8, "u8": 1, "i8": 1,
         "bool": 1, "f8e4m3": 1, "f8e5m2": 1}


class ProblemError(Exception):
    """The problem file is not a usable KernelBench problem (exit 2)."""


def load_problem(path):
    if not os.path.isfile(path):
        raise ProblemError("%s: no such file" % path)
    spec = importlib.util.spec_from_file_location("kevo_problem", path)
    if spec is None or spec.loader is None:
        raise ProblemError("%s: not a Python file" % path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["kevo_problem"] = mod
    try:
        spec.loader.exec_module(mod)
    except Exception as e:  # the user's file: report what broke, not a traceback of ours
        raise ProblemError("%s: importing it failed: %s: %s" % (path, type(e).__name__, e))
    missing = [n for n in ("Model", "get_inputs", "get_init_inputs") if not hasattr(mod, n)]
    if missing:
        raise ProblemError("%s: no %s (a KernelBench problem defines class Model, get_inputs() "
                           "and get_init_inputs())" % (path, ", ".join(missing)))
    return mod


def setup_torch():
    import torch
    # The reference is computed at full precision: TF32 would make it less exact than an
    # honest f32 candidate (cuDNN convolutions use TF32 by default).
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    DTYPES.update({torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16",
                   torch.float64: "f64", torch.int32: "i32", torch.int64: "i64",
                   torch.uint8: "u8", torch.int8: "i8", torch.bool: "bool"})
    for name, attr in (("f8e4m3", "float8_e4m3fn"), ("f8e5m2", "float8_e5m2")):
        if hasattr(torch, attr):  # torch >= 2.1
            DTYPES[getattr(torch, attr)] = name
    return torch


def kevo_dtype(torch, t, what):
    name = DTYPES.get(t.dtype)
    if name is None:
        raise ProblemError("%s has dtype %s, which kevo does not handle (f32 f16 bf16 f64 i32 "
                           "i64 u8 i8 bool f8e4m3 f8e5m2)" % (what, t.dtype))
    return name


def torch_dtype(torch, name):
    for k, v in DTYPES.items():
        if v == name:
            return k
    raise ValueError("unknown dtype %r" % name)


def made_on(torch, device, fn):
    """fn() with torch's factory functions making their tensors on device: a problem's
    weights and inputs are drawn on the GPU (drawing 6 GB on the CPU and copying it over took
    most of a large problem's import); again on the CPU when that fails (a problem that needs
    the CPU for its draws). fn seeds itself, so both ways start from the same seed."""
    if device.type == "cuda":
        try:
            with torch.device(device):
                return fn()
        except ProblemError:
            raise
        except Exception:
            pass
    return fn()


class Problem:
    """The model built as KernelBench builds it, and the order of the candidate's inputs:
    the forward's tensor arguments, then parameters, then buffers."""

    def __init__(self, torch, path, seed=0):
        self.torch = torch
        self.mod = load_problem(path)
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

        def build():
            torch.manual_seed(seed)
            return self.mod.Model(*list(self.mod.get_init_inputs()))
        try:
            self.model = made_on(torch, self.device, build)
        except Exception as e:
            raise ProblemError("building Model(*get_init_inputs()) failed: %s: %s"
                               % (type(e).__name__, e))
        if not isinstance(self.model, torch.nn.Module):
            raise ProblemError("Model is not a torch.nn.Module")
        self.model = self.model.to(self.device)
        self.weights = []  # (torch name, tensor) of parameters then buffers
        for n, p in self.model.named_parameters():
            self.weights.append((n, "parameter", p))
        for n, b in self.model.named_buffers():
            self.weights.append((n, "buffer", b))
        try:
            sig = inspect.signature(self.model.forward)
            self.arg_names = [p.name for p in sig.parameters.values()
                              if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        except (TypeError, ValueError):
            self.arg_names = []
        self.draw_inputs(seed)

    def draw_inputs(self, seed):
        torch = self.torch

        def draw():
            torch.manual_seed(seed)
            return list(self.mod.get_inputs())
        # the previous draw goes first: it and a new one together would take the import's
        # peak past twice the problem's footprint (masked_cumsum: 22 GiB for 9)
        self.args = []
        try:
            args = made_on(torch, self.device, draw)
        except Exception as e:
            raise ProblemError("get_inputs() failed: %s: %s" % (type(e).__name__, e))
        self.args = []  # ("tensor", tensor) or ("value", python scalar), in call order
        for i, a in enumerate(args):
            name = self.arg_names[i] if i < len(self.arg_names) else "x%d" % i
            if isinstance(a, torch.Tensor):
                self.args.append(("tensor", name, a.to(self.device)))
            elif isinstance(a, bool) or isinstance(a, int) or isinstance(a, float):
                self.args.append(("value", name, a))
            else:
                raise ProblemError("get_inputs()[%d] (%s) is a %s; kevo takes tensors, ints and "
                                   "floats" % (i, name, type(a).__name__))
        return [a for a in self.args if a[0] == "tensor"]

    def forget_inputs(self):
        """Keeps only the drawn inputs' dtypes and shapes (serve: every input comes from the
        worker, and the GPU memory is the worker's to use)."""
        self.args = [(k, n, v.to("meta") if k == "tensor" else v) for k, n, v in self.args]

    def tensor_inputs(self):
        return [a for a in self.args if a[0] == "tensor"]

    def forward(self, model=None, tensors=None):
        """Runs forward with the given tensor inputs (default: the drawn ones); a tuple of
        output tensors."""
        torch = self.torch
        it = iter(tensors) if tensors is not None else None
        call = []
        for kind, _, v in self.args:
            call.append(next(it) if (kind == "tensor" and it is not None) else v)
        with torch.no_grad():
            out = (model if model is not None else self.model)(*call)
        outs = out if isinstance(out, (tuple, list)) else (out,)
        for i, o in enumerate(outs):
            if not isinstance(o, torch.Tensor):
                raise ProblemError("forward's output %d is a %s, not a tensor"
                                   % (i, type(o).__name__))
        return tuple(outs)

    def load_weights(self, tensors):
        with self.torch.no_grad():
            for (_, _, w), t in zip(self.weights, tensors):
                w.copy_(t)


# ---- describe ------------------------------------------------------------------------------


def snap(v, grid):
    return round(v / grid) * grid if grid > 0 else v


def fmt(v):
    s = "%.6g" % v
    return "0" if s in ("-0", "0") else s


def guess_init(torch, t):
    """An init spec (recipe syntax) that draws values like the sample t: its exact range
    (chunk by chunk, on the device), its mean and spread from at most 2^20 elements spread
    over it (never a float64 copy of a large tensor)."""
    flat = t.detach().reshape(-1)
    if flat.numel() == 0:
        return "normal"
    lo, hi = math.inf, -math.inf
    for c in chunks(flat):
        c = c.double()  # every dtype has min and max then (bool, FP8 do not all)
        lo, hi = min(lo, float(c.min())), max(hi, float(c.max()))
    if not t.dtype.is_floating_point:
        return "randint(%d, %d)" % (int(lo), int(hi) + 1)
    step = max(1, flat.numel() >> 20)
    x = flat[::step].double().cpu()
    mean = float(x.mean())
    std = float(x.std()) if x.numel() > 1 else 0.0
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return "normal"
    if hi - lo <= 1e-12 * max(1.0, abs(lo)):
        # a constant (ones, zeros): kevo draws near it, keeping its sign, so the candidate
        # cannot hard-code the constant
        width = max(abs(lo), 1.0) / 2
        return "uniform(%s, %s)" % (fmt(lo), fmt(lo + width))
    width = hi - lo
    if x.numel() >= 64 and abs(std - width / math.sqrt(12)) < 0.05 * width / math.sqrt(12) \
            and abs(mean - (lo + hi) / 2) < 0.05 * width:
        g = width / 200
        return "uniform(%s, %s)" % (fmt(snap(lo, g)), fmt(snap(hi, g)))
    if (lo >= 0 or hi <= 0) and abs(mean) < 5 * std:
        # values of one sign (probabilities, a softmax's output) that a normal draw would take
        # past zero, where the problem may take their log or square root: their range instead
        g = width / 200
        return "uniform(%s, %s)" % (fmt(snap(lo, g)), fmt(snap(hi, g)))
    if abs(mean) < 0.05 * std and abs(std - 1) < 0.05:
        return "normal"
    m = 0.0 if abs(mean) < 0.05 * std else mean
    return "normal(%s, %s)" % (fmt(m), fmt(std if std > 0 else 1.0))


def tensor_desc(torch, name, t, what, extra=None):
    d = {"name": name, "dtype": kevo_dtype(torch, t, what), "shape": list(t.shape),
         "init": guess_init(torch, t)}
    if extra:
        d.update(extra)
    return d


def count_flops(torch, prob):
    try:
        from torch.utils.flop_counter import FlopCounterMode
    except ImportError:
        return None
    try:
        with FlopCounterMode(display=False) as fc:
            prob.forward()
        return int(fc.get_total_flops())
    except Exception:
        return None


CHUNK = 1 << 24  # elements a chunked pass over a tensor handles at once (128 MiB as float64)


def chunks(t):
    """Flat chunks of t (no copy where t is contiguous)."""
    flat = t.reshape(-1)
    for s in range(0, flat.numel(), CHUNK):
        yield flat[s:s + CHUNK]


def rel_error(torch, a, e):
    """The largest |a - e| / (1 + |e|) over the elements where e is finite (0 when none), in
    float64 chunk by chunk: never a float64 copy of a whole output."""
    worst = 0.0
    for ca, ce in zip(chunks(a), chunks(e)):
        ca, ce = ca.double(), ce.double()
        ok = torch.isfinite(ce)
        if ok.any():
            worst = max(worst, float(((ca - ce).abs() / (1 + ce.abs()))[ok].max()))
    return worst


def nbytes(ts):
    return sum(t.numel() * t.element_size() for t in ts)


def gpu_bytes(torch):
    """Bytes torch holds on the GPU now (0 on the CPU)."""
    return torch.cuda.memory_allocated() if torch.cuda.is_available() else 0


class Peaks:
    """The import's peak GPU bytes by step (above its start). torch has one peak counter: a step
    that measures a part of itself (the float64 pass's probe) resets it through measure(), which
    folds the peak so far into the step's. Does nothing without a GPU."""

    def __init__(self, torch):
        self.torch, self.gpu = torch, torch.cuda.is_available()
        self.by_step, self.carried = {}, 0
        if self.gpu:
            torch.cuda.reset_peak_memory_stats()
        self.base = gpu_bytes(torch)

    def _reset(self):
        self.carried = max(self.carried, self.torch.cuda.max_memory_allocated())
        self.torch.cuda.reset_peak_memory_stats()

    def step(self, name):
        """Ends step `name`: its peak is kept, the counter starts again."""
        if self.gpu:
            self.torch.cuda.synchronize()
            self.by_step[name] = max(0, max(self.carried, self.torch.cuda.max_memory_allocated())
                                     - self.base)
            self.carried = 0
            self.torch.cuda.reset_peak_memory_stats()

    def measure(self, fn, *args):
        """fn(*args)'s result and the GPU bytes it added at its peak (None without a GPU)."""
        if not self.gpu:
            return fn(*args), None
        self.torch.cuda.synchronize()
        before = gpu_bytes(self.torch)
        self._reset()
        r = fn(*args)
        self.torch.cuda.synchronize()
        return r, max(0, self.torch.cuda.max_memory_allocated() - before)


def first_line(e):
    return str(e).splitlines()[0] if str(e) else ""


def tolerance_of(worst):
    """kevo's f32 tolerance for a measured error: 8x it for headroom, rounded up to 1, 2 or 5 x
    10^k, in [1e-5, 1e-2]."""
    t = 8 * worst
    for k in range(-5, -1):
        for m in (1, 2, 5):
            if m * 10.0 ** k >= t:
                return m * 10.0 ** k
    return 1e-2


def model64(torch, model):
    """model with its floating-point tensors in float64, as a callable: its parameters and
    buffers (a float64 set of them through functional_call, not a converted copy of the model:
    the copy's f32 weights beside the float64 ones took level2/68, a 1 GiB weight, past its
    import's 4 GiB; and a module a lambda of the model's holds, level3/44, is the model's own),
    and for the call, the tensors its modules keep as plain attributes and the tensors its
    forward makes (torch's default dtype: level3/35_LSTM draws its initial state in forward).
    .double() on a copy converted none of these three."""
    from torch.func import functional_call
    named = list(model.named_parameters()) + list(model.named_buffers())
    with torch.no_grad():
        w64 = {n: t.double() if t.is_floating_point() else t for n, t in named}

    def call(*args):
        plain = [(m, k, v) for m in model.modules() for k, v in list(vars(m).items())
                 if isinstance(v, torch.Tensor) and v.is_floating_point()]
        dtype = torch.get_default_dtype()
        try:
            for m, k, v in plain:
                setattr(m, k, v.double())
            torch.set_default_dtype(torch.float64)  # what forward makes (a random h0)
            return functional_call(model, w64, args)
        finally:
            torch.set_default_dtype(dtype)
            for m, k, v in plain:
                setattr(m, k, v)
    return call


def measured_tolerance(torch, prob, outs, budget, fwd_extra=0, peaks=None):
    """Compares the reference at its own precision with the same model in float64 on the same
    inputs: the largest error, scaled as kevo's tolerance is (atol + rtol*|e| with atol = rtol)
    (tolerance_of). When it cannot be measured: {"f32": None, "why": ...}, so the import says
    which tolerance it used.

    budget: the GPU bytes the pass may add. Its cost is first estimated: the model and its
    inputs in float64 take twice their f32 bytes, its outputs and intermediates twice what the
    f32 forward added (fwd_extra, measured; at least the outputs), and the f32 forward computed
    again beside it. A loss over 8 GiB of inputs adds 8 GiB of intermediates: counting the
    outputs alone let such a pass reach 3x the footprint. But a float64 forward may take
    another path than the f32 one and hold far more (attention has no fused float64 kernel and
    its plain path holds every score; a float64 convolution unfolds its input): so on the GPU,
    where the estimate is over an eighth of the budget and the inputs share a batch dimension
    (dimension 0 of every input), the pass runs first on as few rows as the estimate puts at an
    eighth of the budget, its peak is measured (peaks.measure), and the rows the budget allows
    (less a tenth) are taken from that measure. When they are fewer than the batch, or the
    estimate alone is over the budget without a GPU, the pass runs on the first rows, f32 and
    float64 alike, and says so ("subsample"): the outputs need not follow the batch (a loss
    over it is measured on its first rows too)."""
    if not all(o.dtype == torch.float32 for o in outs):
        return {"f32": None, "why": "not every output is float32 (%s)"
                % ", ".join(str(o.dtype).replace("torch.", "") for o in outs)}
    ins = [t for _, _, t in prob.tensor_inputs()]
    weights = nbytes(t for _, _, t in prob.weights)
    extra = max(fwd_extra, nbytes(outs))
    # outs may be meta tensors (describe frees the first draw's outputs early): the f32
    # reference is then computed again here, and held through the pass
    resident = all(not o.is_meta for o in outs)
    need = 2 * weights + 2 * nbytes(ins) + 2 * extra + (0 if resident else nbytes(outs))
    batch = ins[0].shape[0] if ins and ins[0].dim() > 0 else None
    same = bool(batch) and all(t.dim() > 0 and t.shape[0] == batch for t in ins)
    spare = budget - 2 * weights
    per_row = (2 * nbytes(ins) + 3 * extra) / batch if same else 0
    measure = peaks is not None and peaks.gpu and any(t.is_cuda for t in ins)
    if need > budget and not same:
        return {"f32": None, "why": "the float64 pass needs %.3g GiB, over the %.3g GiB this "
                "import may add (twice the problem's footprint), and the inputs share no batch "
                "dimension to take a subsample of" % (need / 2**30, budget / 2**30)}
    if need > budget and spare < per_row:
        return {"f32": None, "why": "the float64 pass needs about %.3g GiB even on one row of "
                "%d (the weights in float64 take %.3g GiB), over the %.3g GiB this import may "
                "add (twice the problem's footprint)" % ((2 * weights + per_row) / 2**30, batch,
                                                         2 * weights / 2**30, budget / 2**30)}

    def run(rows, m64):
        """The f32 and the float64 outputs on the first `rows` rows (None: all of them)."""
        sub = [t[:rows] for t in ins] if rows else ins
        ref = outs if resident and not rows else prob.forward(tensors=sub)
        t64 = [t.double() if t.dtype.is_floating_point else t for t in sub]
        return ref, prob.forward(m64, t64)

    def subsample(m64):
        """The rows a probe on a few of them says the budget allows (None: all), and the pass
        on them."""
        probe = max(1, min(batch, int(spare / 8 // per_row)))
        if probe >= batch:
            return None, run(None, m64)
        (ref, o64), cost = peaks.measure(run, probe, m64)
        fit = int(0.9 * spare // max(1.0, cost / probe))
        if fit <= probe:
            return probe, (ref, o64)
        del ref, o64
        rows = fit if fit < batch else None
        return rows, run(rows, m64)

    rows = None
    try:
        m64 = model64(torch, prob.model)
        if measure and same and need > budget / 8:
            try:
                rows, (ref, o64) = subsample(m64)
            except Exception as e:
                if need > budget:
                    return {"f32": None, "why": "the float64 pass on the first rows failed (is "
                            "dimension 0 a batch?): %s: %s" % (type(e).__name__,
                                                              first_line(e))}
                # dimension 0 was no batch the model takes a part of (A @ B, both square): the
                # whole pass, which the estimate fits
                rows, (ref, o64) = None, run(None, m64)
        else:
            if need > budget:
                rows = max(1, min(batch, int(spare // per_row)))
            ref, o64 = run(rows, m64)
    except Exception as e:
        return {"f32": None, "why": "the model in float64 failed: %s: %s"
                % (type(e).__name__, first_line(e))}
    worst = 0.0
    for a, e in zip(ref, o64):
        if a.shape != e.shape:
            return {"f32": None, "why": "the float64 model's output has another shape"}
        worst = max(worst, rel_error(torch, a, e))
    del m64, o64, ref
    got = {"f32": tolerance_of(worst), "measured": worst}
    if rows:
        got["subsample"] = "the first %d of %d rows" % (rows, batch)
    return got


def output_stats(torch, o):
    """The finite values' range of an output: what an all-zero or constant kernel is up against.
    With it, how many elements sit exactly at the minimum and at the maximum (a ReLU or a clamp
    that leaves all but a few elements at its bound: a constant kernel is right on those)."""
    lo, hi, amax = math.inf, -math.inf, 0.0
    for c in chunks(o.detach()):
        c = c.double()
        v = c[torch.isfinite(c)]
        if v.numel():
            lo, hi = min(lo, float(v.min())), max(hi, float(v.max()))
            amax = max(amax, float(v.abs().max()))
    if lo > hi:
        return None
    at_lo = at_hi = 0
    for c in chunks(o.detach()):
        c = c.double()
        at_lo += int((c == lo).sum())
        at_hi += int((c == hi).sum())
    return {"min": lo, "max": hi, "absmax": amax, "numel": o.numel(), "at_min": at_lo,
            "at_max": at_hi}


SAMPLE = 1 << 24  # elements of an output kept to measure how far it moves between draws


def output_sample(o):
    """A copy of at most SAMPLE elements of o, evenly strided (all of them up to SAMPLE)."""
    flat = o.detach().reshape(-1)
    step = max(1, -(-flat.numel() // SAMPLE))
    return flat[::step].clone(), step


def moved(torch, samples, outs):
    """Per output, the largest |a - b| between the kept sample a of a first draw and the same
    elements b of outs (finite in both); None for an output that is not floating point."""
    res = []
    for (a, step), o in zip(samples, outs):
        if not o.dtype.is_floating_point:
            res.append(None)
            continue
        b = o.detach().reshape(-1)[::step]
        worst = 0.0
        for ca, cb in zip(chunks(a), chunks(b)):
            ca, cb = ca.double(), cb.double()
            ok = torch.isfinite(ca) & torch.isfinite(cb)
            if ok.any():
                worst = max(worst, float((ca - cb).abs()[ok].max()))
        res.append(worst)
    return res


# What in a Model's source draws random numbers (a reference that does cannot be matched).
RANDOM_CALLS = ("torch.randn", "torch.rand(", "torch.rand_like", "torch.randn_like",
                "torch.randint", "torch.randperm", "torch.bernoulli", "torch.multinomial",
                "torch.normal", "dropout(", ".normal_(", ".uniform_(", ".bernoulli_(")


def first_draw(torch, outs):
    """What the later steps need of the first draw's outputs, so that they can be freed before
    the model runs again (a second set of outputs beside them took the import past twice the
    footprint: level1/7 and 9, a 4 GiB product): why they cannot judge a kernel (empty, NaN or
    Inf everywhere, constant) or None, their digest, a sample of each (output_sample) and a
    meta tensor of each (dtype and shape, no data)."""
    early = None
    for i, o in enumerate(outs):
        flat = o.flatten()
        if flat.numel() == 0:
            early = "output %d is empty" % i
        elif flat.dtype.is_floating_point and not any(bool(torch.isfinite(c).any())
                                                      for c in chunks(flat)):
            early = "output %d is NaN or Inf everywhere" % i
        elif flat.numel() > 1 and all(bool((c == flat[0]).all()) for c in chunks(flat)):
            early = ("output %d is constant (every element is %s in the import's draw): a kernel "
                     "that writes one value everywhere matches it" % (i, fmt(float(flat[0]))))
        del flat
        if early:
            break
    return (early, device_digest(torch, outs), [output_sample(o) for o in outs],
            [o.to("meta") for o in outs])


def randomness(torch, prob, first):
    """Runs the reference again on the same inputs and weights and compares with the first
    draw (first_draw): by digest, then element by element on its sample (every element up to
    SAMPLE). Returns (why it is random or None, the largest difference, scaled as kevo's
    tolerance is). A difference at the level of rounding (a reduction in a different order) is
    nondeterminism, not randomness."""
    _, digest, samples, metas = first
    again = list(prob.forward())
    worst = 0.0
    if device_digest(torch, again) != digest:
        for (a, step), m, b in zip(samples, metas, again):
            if m.shape != b.shape:
                worst = float("inf")
                break
            bs = b.reshape(-1)[::step]
            if b.dtype.is_floating_point:
                for ca, cb in zip(chunks(a), chunks(bs)):
                    if bool((torch.isfinite(ca) != torch.isfinite(cb)).any()):
                        worst = float("inf")
                        break
                if math.isfinite(worst):
                    worst = max(worst, rel_error(torch, bs, a))
            elif not torch.equal(a, bs):
                worst = float("inf")
    del again
    if worst <= 1e-4:
        return None, worst
    causes = []
    for name, m in prob.model.named_modules():
        p = getattr(m, "p", None)
        if m.training and "Dropout" in type(m).__name__ and isinstance(p, float) and p > 0:
            causes.append("%s (nn.%s, p=%s) in training mode" % (name or "the model",
                                                                type(m).__name__, fmt(p)))
    try:
        src = inspect.getsource(prob.mod.Model)
    except (OSError, TypeError):
        src = ""
    causes += ["%s in Model" % c.rstrip("(") for c in RANDOM_CALLS if c in src]
    return ("the reference is random: two runs on the same inputs and weights differ by up to "
            "%s (relative); cause: %s. A kernel cannot match a random reference" %
            (fmt(worst), "; ".join(causes) if causes else
             "no random call found in Model's source (a random op inside a library call?)")), worst


def parse_init(spec, dtype):
    """(kind, a, b) of an input's init as the recipe states it (lua/kevo/kbench.lua writes
    ints and bool without a randint as randint(0, 100) and randint(0, 2))."""
    import re
    s = str(spec or "normal").replace(" ", "")
    if dtype == "bool" and not s.startswith("randint"):
        s = "randint(0,2)"
    elif dtype[:1] in ("i", "u") and not s.startswith("randint"):
        s = "randint(0,100)"
    m = re.match(r"^(normal|uniform|randint)(?:\(([^,()]+),([^,()]+)\))?$", s)
    if not m:
        return ("normal", 0.0, 1.0)
    if m.group(2) is None:
        return (m.group(1), 0.0, 1.0)
    return (m.group(1), float(m.group(2)), float(m.group(3)))


def draw_like_kevo(torch, t, init):
    """Fills t in place from its init as kevo's worker draws it (normal, uniform, randint: the
    integer part of a uniform draw; bool: 1 where that is above 0), chunk by chunk through a
    float32 scratch, from torch's global generator."""
    kind, a, b = init
    dest = t if t.is_contiguous() else torch.empty_like(t, memory_format=torch.contiguous_format)
    for c in chunks(dest):
        tmp = torch.empty(c.shape, dtype=torch.float32, device=c.device)
        if kind == "normal":
            tmp.normal_(a, b)
        else:
            tmp.uniform_(a, b)
        if kind == "randint":
            tmp.floor_()
        c.copy_(tmp)
    if dest is not t:
        t.copy_(dest)


TRIAL_SEED = 0x6b65766f  # the draws like kevo's trials: fixed, so an import is repeatable


def trial_stats(torch, prob, inits, stats):
    """Adds stats[i]["trials"]: an output's statistics (as output_stats, with moved and others)
    over two draws of every input and weight like kevo's trials make them, from the inits the
    recipe states. The worker judges on those draws, not on get_inputs(): a problem whose
    get_inputs() scales its inputs by a random factor (level1/98_KLDivLoss) moves between its
    own draws and far less between kevo's. Left out when a draw fails. Returns why the
    reference cannot judge a kernel on such draws (an output NaN or Inf everywhere, or constant,
    or the two draws alike), or None."""
    tensors = [t for _, _, t in prob.tensor_inputs()] + [t for _, _, t in prob.weights]
    if len(tensors) != len(inits):
        return

    def draw(seed):
        torch.manual_seed(seed)
        with torch.no_grad():
            for t, init in zip(tensors, inits):
                draw_like_kevo(torch, t, init)
        return list(prob.forward())
    where = "in draws like kevo's trials (every input and weight drawn from its stated init)"
    try:
        outs = draw(TRIAL_SEED)
        first = [output_stats(torch, o) for o in outs]
        for i, (tr, o) in enumerate(zip(first, outs)):
            if tr is None and o.dtype.is_floating_point:
                return "%s, output %d is NaN or Inf everywhere" % (where, i)
            if tr is not None and o.numel() > 1 and tr["at_min"] == o.numel():
                return "%s, output %d is constant (every element is %s)" % (where, i,
                                                                            fmt(tr["min"]))
        digest = device_digest(torch, outs)
        samples = [output_sample(o) for o in outs]
        o = None  # the loop's last output would outlive `del outs` (round B: 2x F, level1/7)
        del outs
        outs = draw(TRIAL_SEED + 1)
        if device_digest(torch, outs) == digest:
            return "%s, two draws give identical outputs" % where
        for st, tr, mv, o in zip(stats, first, moved(torch, samples, outs), outs):
            if st is None or tr is None:
                continue
            second = output_stats(torch, o)
            offs = [x["numel"] - max(x["at_min"], x["at_max"]) for x in (tr, second) if x]
            tr["others"] = min(offs)
            if mv is not None:
                tr["moved"] = mv
            st["trials"] = tr
    except Exception as e:  # the problem's own code failed on such inputs: say so, go on
        for st in stats:
            if st is not None:
                st["trials_error"] = "%s: %s" % (type(e).__name__, str(e)[:200])
    return None


def degenerate(torch, prob, path, first, stats, inits=None):
    """Why the reference cannot tell a right kernel from a wrong one, or None. Frees prob's
    inputs and outs on the way (the caller is done with them): the draws it compares are
    reduced to digests and samples (at most SAMPLE elements an output), so at most one extra
    set of inputs and outputs exists at a time. Adds to each output's stats (a list, None where
    an output has none) what the other draws show: `moved`, the largest element-wise
    difference from the first draw (exact up to SAMPLE elements, then on a strided sample),
    and `others`, the fewest elements off the output's bound (min or max) in any draw; with
    inits (each input's and weight's (kind, a, b)), `trials`: the same over two draws like
    kevo's trials (trial_stats)."""
    early, first, samples, _ = first
    if early:
        return early
    for st in stats:
        if st is not None:
            st["others"] = st["numel"] - max(st["at_min"], st["at_max"])

    def note(new):
        for st, mv, o in zip(stats, moved(torch, samples, new), new):
            if st is None:
                continue
            if mv is not None:
                st["moved"] = max(st.get("moved", 0.0), mv)
            o2 = output_stats(torch, o)
            if o2 is not None:
                off = o2["numel"] - max(o2["at_min"], o2["at_max"])
                st["others"] = min(st.get("others", off), off)
    ninputs = len(prob.tensor_inputs())
    if ninputs:
        prob.draw_inputs(1)
        new = list(prob.forward())
        if device_digest(torch, new) == first:
            return ("the outputs do not depend on the inputs (two different draws of %d input "
                    "tensor%s give identical outputs): a kernel that ignores them matches it"
                    % (ninputs, "" if ninputs == 1 else "s"))
        note(new)
        del new
    prob.args = []  # prob2 draws its own, and builds its own model: two models' weights
    prob.model, prob.weights = None, []  # at once would double them
    release(torch)
    prob2 = Problem(torch, path, seed=1)
    new = list(prob2.forward())
    if device_digest(torch, new) == first:
        return "the outputs do not depend on the seed (new inputs and weights give identical outputs)"
    note(new)
    del new
    if inits is not None:
        return trial_stats(torch, prob2, inits, stats)
    return None


def release(torch):
    """Gives memory torch no longer uses back to the driver (the worker, another process,
    allocates next)."""
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def describe(path):
    """The description `kevo import` turns into a recipe. The problem's footprint is the peak
    of one reference forward, which the problem cannot avoid: its inputs and weights plus what
    the forward adds above them (its outputs and intermediates; at least the outputs), and the
    import's peak GPU memory stays within twice that (within 4 GiB for small problems). A
    problem whose judging cannot fit the GPU is refused with its footprint (ProblemError)."""
    torch = setup_torch()
    try:
        return describe_within(torch, path)
    except torch.cuda.OutOfMemoryError as e:
        free, total = torch.cuda.mem_get_info()
        raise ProblemError("the GPU ran out of memory running the model (%.3g GiB of %.3g GiB "
                           "free): %s" % (free / 2**30, total / 2**30, str(e).splitlines()[0]))


TRIALS = 5  # verify's trials for an imported problem (the worker's minimum, one shape)
GRAIN = 2 << 20  # the worker rounds every allocation up to this


def judge_bytes(ins, weights, outs, fwd_extra, ntensors):
    """GPU bytes judging and timing a problem takes at its peak, both processes together.
    Evaluating: the worker's three buffer sets of every input (weights included) and output
    (sets 0, 3 and 4 of docs/worker.md; the five sets the timing loop rotates over are taken
    only when they fit: wk_bench_sets), the bridge's model weights and the reference's outputs
    of every trial, kept for the worker. Supplying a trial's reference before that: the
    worker's one set of inputs, the bridge's outputs of the earlier trials, and the forward's
    own peak (or its outputs twice while they are copied into the kept allocation)."""
    evaluating = 3 * (ins + outs + ntensors * GRAIN) + TRIALS * outs + weights
    supplying = ins + (TRIALS - 1) * outs + weights + max(fwd_extra, 2 * outs)
    return max(evaluating, supplying)


def describe_within(torch, path):
    peaks = Peaks(torch)
    base = peaks.base
    prob = Problem(torch, path)
    t0 = time.time()
    # what the forward adds above its inputs and weights (its outputs and intermediates),
    # measured: the footprint and the float64 pass are sized from it
    before = gpu_bytes(torch)
    phase = peaks.step
    phase("build")
    outs = list(prob.forward())
    fwd_extra = 0
    if prob.device.type == "cuda":
        torch.cuda.synchronize()
        fwd_extra = max(0, torch.cuda.max_memory_allocated() - before)
    phase("forward")
    ins = nbytes(t for _, _, t in prob.tensor_inputs())
    weights = nbytes(t for _, _, t in prob.weights)
    io_bytes = ins + weights + nbytes(outs)
    footprint = ins + weights + max(fwd_extra, nbytes(outs))
    if prob.device.type == "cuda":
        # refuse what cannot be judged on this GPU, with the figures
        ntensors = len(prob.tensor_inputs()) + len(prob.weights) + len(outs)
        judge = judge_bytes(ins + weights, weights, nbytes(outs), fwd_extra, ntensors)
        total = torch.cuda.mem_get_info()[1]
        if judge > 0.9 * total:
            raise ProblemError("the problem's footprint is %.3g GiB (inputs and weights %.3g "
                               "GiB, outputs %.3g GiB, its forward's peak above its inputs "
                               "%.3g GiB); judging it takes about %.3g GiB (three sets of every "
                               "tensor in the worker, the reference's outputs of %d trials and "
                               "its weights in the bridge), more than the %.3g GiB kevo may "
                               "use of this GPU's %.3g GiB (90%%)"
                               % (footprint / 2**30, (ins + weights) / 2**30,
                                  nbytes(outs) / 2**30, fwd_extra / 2**30, judge / 2**30,
                                  TRIALS, 0.9 * total / 2**30, total / 2**30))
    d = {"kevo_description": 1, "problem": os.path.basename(path),
         "torch": torch.__version__, "device": str(prob.device),
         "device_name": torch.cuda.get_device_name() if prob.device.type == "cuda" else "cpu"}
    d["globals"] = [{"name": k, "value": v} for k, v in vars(prob.mod).items()
                    if not k.startswith("_") and isinstance(v, int) and not isinstance(v, bool)]
    d["inputs"] = [tensor_desc(torch, n, t, "input %s" % n) for _, n, t in prob.tensor_inputs()]
    d["weights"] = [tensor_desc(torch, n, t, "%s %s" % (kind, n), {"kind": kind})
                    for n, kind, t in prob.weights]
    d["scalars"] = [{"name": n, "type": "float" if isinstance(v, float) else "int",
                     "value": v if not isinstance(v, bool) else int(v)}
                    for kind, n, v in prob.args if kind == "value"]
    d["outputs"] = [{"name": "out" if len(outs) == 1 else "out%d" % i,
                     "dtype": kevo_dtype(torch, o, "output %d" % i), "shape": list(o.shape),
                     "stats": output_stats(torch, o)}
                    for i, o in enumerate(outs)]
    # what the later steps need of these outputs is kept; the outputs go before the model runs
    # again, so no step holds two sets of them (the peak stays near the footprint)
    first = first_draw(torch, outs)
    del outs[:]
    release(torch)
    phase("stats")
    d["random"], spread = randomness(torch, prob, first)
    d["nondeterminism"] = spread if math.isfinite(spread) else None
    phase("random")
    d["cost"] = {"bytes": io_bytes, "flops": count_flops(torch, prob)}
    phase("flops")
    release(torch)
    # the float64 pass may take the peak to twice the footprint (4 GiB for small problems,
    # where memory is no concern and a subsample would only make the figure rougher)
    d["tolerance"] = measured_tolerance(torch, prob, first[3],
                                        max(0, base + max(2 * footprint, 4 << 30) -
                                            gpu_bytes(torch)), fwd_extra, peaks)
    phase("float64")
    release(torch)
    d["forward_ms"] = round((time.time() - t0) * 1e3, 3)
    inits = [parse_init(t["init"], t["dtype"]) for t in d["inputs"] + d["weights"]]
    d["degenerate"] = degenerate(torch, prob, path, first, [o["stats"] for o in d["outputs"]],
                                 inits)
    phase("degenerate")
    d["footprint_bytes"] = footprint
    d["io_bytes"] = io_bytes
    d["forward_extra_bytes"] = fwd_extra
    if peaks.by_step:
        d["peak_gpu_bytes"] = max(peaks.by_step.values())
        d["peak_by_step"] = peaks.by_step  # where the peak is (build, forward, ..., degenerate)
    return d


# ---- serve ---------------------------------------------------------------------------------


def read_exact(f, n):
    buf = bytearray()
    while len(buf) < n:
        chunk = f.read(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


def read_frame(f):
    head = read_exact(f, 4)
    if head is None:
        return None, None
    (n,) = struct.unpack("<I", head)
    header = json.loads(read_exact(f, n))
    blobs = [read_exact(f, size) for size in header.get("blobs", [])]
    return header, blobs


def write_frame(header, blobs=()):
    header = dict(header)
    header["blobs"] = [len(b) for b in blobs]
    text = json.dumps(header).encode()
    PROTO_OUT.write(struct.pack("<I", len(text)) + text)
    for b in blobs:
        PROTO_OUT.write(b)
    PROTO_OUT.flush()


def tensors_from(torch, prob, header, blobs, ipc=None, mapped=None):
    """The request's tensors (forward inputs then weights, in the description's order), on the
    device, checked against the problem's own dtypes and shapes. With header["ipc"] (the
    worker's handles) they are the worker's own device memory, mapped (pointers appended to
    mapped: the caller closes them once the GPU is done with them)."""
    expect = [(n, t) for _, n, t in prob.tensor_inputs()] + [(n, t) for n, _, t in prob.weights]
    specs = header.get("tensors", [])
    handles = header.get("ipc")
    if handles is not None:
        if ipc is None:
            raise IpcError("E_IPC: tensors given as IPC handles, and CUDA IPC is not available")
        blobs = handles
    if len(specs) != len(expect) or len(blobs) != len(expect):
        raise ValueError("%d tensors and %d blobs given, the problem takes %d"
                         % (len(specs), len(blobs), len(expect)))
    out = []
    for (name, like), spec, blob in zip(expect, specs, blobs):
        dt = torch_dtype(torch, spec["dtype"])
        shape = [int(s) for s in spec["shape"]]
        if dt != like.dtype or shape != list(like.shape):
            raise ValueError("tensor %s: %s %s given, the problem has %s %s"
                             % (name, spec["dtype"], shape, DTYPES.get(like.dtype), list(like.shape)))
        want = like.numel() * like.element_size()
        if handles is not None:
            if int(blob.get("bytes", -1)) != want:
                raise ValueError("tensor %s: %s bytes shared, %d expected"
                                 % (name, blob.get("bytes"), want))
            ptr = ipc.open(blob["handle"])
            mapped.append(ptr)
            out.append(ipc.tensor(ptr, want, dt, shape))
            continue
        if len(blob) != want:
            raise ValueError("tensor %s: %d bytes given, %d expected" % (name, len(blob), want))
        t = torch.frombuffer(bytearray(blob), dtype=torch.uint8).view(dt).reshape(shape) \
            if blob else torch.empty(shape, dtype=dt)
        out.append(t.to(prob.device))
    n = len(prob.tensor_inputs())
    return out[:n], out[n:]


# ---- CUDA IPC: tensors that never cross a pipe ----------------------------------------------


class IpcError(ValueError):
    """CUDA IPC itself failed (the driver falls back to tensors in the frames)."""


class CudaIpc:
    """The CUDA driver API through ctypes, for what torch does not offer: mapping the worker's
    allocations from their IPC handles, and allocations of the bridge's own, outside torch's
    caching allocator, whose handles the worker maps (a freed one can never be handed out
    again under the same handle, as a reused block of torch's cache could)."""

    class Handle(ctypes.Structure):
        _fields_ = [("reserved", ctypes.c_ubyte * 64)]

    def __init__(self, torch):
        self.torch = torch
        torch.zeros(1, device="cuda")  # torch's primary context, current on this thread
        try:
            lib = ctypes.CDLL("libcuda.so.1")
        except OSError as e:
            raise IpcError("E_IPC: cannot load libcuda.so.1: %s" % e)

        def fn(names, argtypes):
            for n in names:
                f = getattr(lib, n, None)
                if f is not None:
                    f.restype, f.argtypes = ctypes.c_int, argtypes
                    return f
            raise IpcError("E_IPC: libcuda has no %s" % names[0])
        u64 = ctypes.c_uint64
        self._open = fn(("cuIpcOpenMemHandle_v2", "cuIpcOpenMemHandle"),
                        [ctypes.POINTER(u64), self.Handle, ctypes.c_uint])
        self._close = fn(("cuIpcCloseMemHandle",), [u64])
        self._get = fn(("cuIpcGetMemHandle",), [ctypes.POINTER(self.Handle), u64])
        self._alloc = fn(("cuMemAlloc_v2", "cuMemAlloc"), [ctypes.POINTER(u64), ctypes.c_size_t])
        self._free = fn(("cuMemFree_v2", "cuMemFree"), [u64])
        self.kept = {}  # "label/trial" -> (pointer, bytes): reference outputs for the worker

    def check(self, r, what):
        if r != 0:
            raise IpcError("E_IPC: %s failed (CUresult %d)" % (what, r))

    def open(self, hexhandle):
        h = self.Handle()
        raw = bytes.fromhex(hexhandle)
        if len(raw) != 64:
            raise IpcError("E_IPC: an IPC handle is 64 bytes, %d given" % len(raw))
        ctypes.memmove(h.reserved, raw, 64)
        p = ctypes.c_uint64(0)
        self.check(self._open(ctypes.byref(p), h, 1), "cuIpcOpenMemHandle")  # lazy peer access
        return p.value

    def close(self, ptr):
        self._close(ptr)

    def tensor(self, ptr, nbytes, dtype, shape):
        """A torch tensor over device memory torch does not own (no copy)."""
        torch = self.torch
        if nbytes == 0:
            return torch.empty(shape, dtype=dtype, device="cuda")

        class Mem:
            __cuda_array_interface__ = {"shape": (nbytes,), "typestr": "|u1",
                                        "data": (ptr, False), "version": 2}
        try:
            return torch.as_tensor(Mem(), device="cuda").view(dtype).reshape(shape)
        except Exception as e:  # torch could not wrap it: IPC is not usable here
            raise IpcError("E_IPC: wrapping shared memory as a tensor: %s: %s"
                           % (type(e).__name__, e))

    def keep(self, key, outs):
        """Copies outputs into one allocation of the bridge's own (256-byte aligned each),
        kept under key until replaced: [{handle, offset, bytes}] per output."""
        torch = self.torch
        old = self.kept.pop(key, None)
        if old:
            self._free(old[0])
        sizes = [o.numel() * o.element_size() for o in outs]
        offsets, total = [], 0
        for n in sizes:
            offsets.append(total)
            total += (n + 255) // 256 * 256
        p = ctypes.c_uint64(0)
        self.check(self._alloc(ctypes.byref(p), max(total, 256)), "cuMemAlloc")
        self.kept[key] = (p.value, total)
        for o, off, n in zip(outs, offsets, sizes):
            if n:
                dst = self.tensor(p.value + off, n, torch.uint8, [n])
                dst.copy_(o.contiguous().reshape(-1).view(torch.uint8))
        torch.cuda.synchronize()
        h = self.Handle()
        self.check(self._get(ctypes.byref(h), p.value), "cuIpcGetMemHandle")
        hexh = bytes(h.reserved).hex()
        return [{"handle": hexh, "offset": off, "bytes": n} for off, n in zip(offsets, sizes)]


def device_digest(torch, outs):
    """A digest of the outputs' bytes computed on the device in chunks (no host copy): equal
    outputs give equal digests; different ones, different digests but by a freak chance."""
    h = hashlib.sha256()
    step = 1 << 24
    for o in outs:
        h.update(("%s %s;" % (o.dtype, list(o.shape))).encode())
        if not o.numel():
            continue
        b = o.contiguous().reshape(-1).view(torch.uint8)
        for s in range(0, b.numel(), step):
            c = b[s:s + step].to(torch.int64)
            w = torch.arange(1, c.numel() + 1, device=c.device, dtype=torch.int64)
            h.update(("%d,%d;" % (int(c.sum()), int((c * w).sum()))).encode())
    return h.hexdigest()


def to_bytes(torch, t):
    t = t.detach().contiguous().cpu()
    return t.view(torch.uint8).numpy().tobytes() if t.numel() else b""


_SLEEP_CYCLES_PER_MS = None  # of torch.cuda._sleep on this GPU, measured once


def sleep_cycles_per_ms(torch):
    """How many cycles torch.cuda._sleep spins per millisecond (0 where it is unavailable)."""
    global _SLEEP_CYCLES_PER_MS
    if _SLEEP_CYCLES_PER_MS is None:
        _SLEEP_CYCLES_PER_MS = 0
        sleep = getattr(torch.cuda, "_sleep", None)
        if sleep is not None:
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            sleep(100000)
            a.record()
            sleep(2000000)
            b.record()
            b.synchronize()
            ms = a.elapsed_time(b)
            _SLEEP_CYCLES_PER_MS = 2000000 / ms if ms > 0 else 0
    return _SLEEP_CYCLES_PER_MS


def time_fn(torch, fn, opts):
    """Median milliseconds of fn() on the GPU by CUDA events, the L2 flushed before each rep
    (untimed): warm-up by time, then reps until the relative standard error is under
    target_rse, or max_ms, or max_reps.

    The time is the GPU's, as kevo's worker measures its kernels: before each rep the GPU is
    kept busy (torch.cuda._sleep) for longer than Python takes to issue fn(), so the start
    event fires when fn's first kernel can start rather than when Python begins issuing it.
    Without that, a small op's time is mostly host overhead (torch.compile's guards, eager's
    dispatch) and a kernel would look faster than it is. That host time is reported apart,
    as host_ms (median wall time of issuing one call)."""
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    l2 = getattr(props, "L2_cache_size", 64 << 20) or (64 << 20)
    flush = torch.empty(max(2 * l2, 64 << 20) // 4, dtype=torch.int32, device="cuda")
    warm_ms, max_ms = opts.get("warmup_ms", 25), opts.get("max_ms", 1500)
    min_reps, max_reps = opts.get("min_reps", 10), opts.get("max_reps", 2000)
    target = opts.get("target_rse", 0.01)
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    t0 = time.time()
    issue = []  # host seconds to issue one call
    while len(issue) < 3 or (time.time() - t0) * 1e3 < warm_ms:
        t = time.perf_counter()
        fn()
        issue.append(time.perf_counter() - t)
        torch.cuda.synchronize()
    host_ms = sorted(issue[1:])[(len(issue) - 1) // 2] * 1e3
    # hide twice the slowest recent issue, plus 50 us, behind a GPU-side wait (at most 50 ms)
    hide_ms = min(50.0, 2e3 * max(issue[-5:]) + 0.05)
    cycles = int(hide_ms * sleep_cycles_per_ms(torch))
    times = []
    t0 = time.time()
    while True:
        flush.fill_(len(times))
        if cycles:
            torch.cuda._sleep(cycles)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
        n = len(times)
        if n >= max_reps or (time.time() - t0) * 1e3 > max_ms:
            break
        if n >= min_reps:
            mean = sum(times) / n
            sd = math.sqrt(sum((x - mean) ** 2 for x in times) / (n - 1))
            if mean > 0 and sd / math.sqrt(n) / mean < target:
                break
    s = sorted(times)
    n = len(s)
    mean = sum(s) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in s) / (n - 1)) if n > 1 else 0
    return {"median_ms": s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2]),
            "min_ms": s[0], "reps": n, "rse": sd / math.sqrt(n) / mean if mean > 0 else 1.0,
            "host_ms": round(host_ms, 4), "hidden": bool(cycles)}


def with_tensors(torch, prob, header, blobs, ipc, fn):
    """fn(inputs) with the request's tensors loaded (weights into the model); tensors the
    worker shared are unmapped afterwards, whatever happens."""
    mapped = []
    try:
        inputs, weights = tensors_from(torch, prob, header, blobs, ipc, mapped)
        prob.load_weights(weights)
        return fn(inputs)
    finally:
        if mapped:
            torch.cuda.synchronize()
            for p in mapped:
                ipc.close(p)
            torch.cuda.empty_cache()  # the worker allocates the next trial's sets


def reference(torch, prob, header, inputs, ipc):
    """The outputs on these inputs: as blobs, or kept here on the device (header["keep"]: the
    key) with their IPC handles and a digest."""
    outs = prob.forward(tensors=inputs)
    if prob.device.type == "cuda":
        torch.cuda.synchronize()
    res = {"ok": True, "outputs": [{"dtype": DTYPES.get(o.dtype), "shape": list(o.shape)}
                                   for o in outs]}
    if header.get("keep") is None:
        return res, [to_bytes(torch, o) for o in outs]
    if ipc is None:
        raise IpcError("E_IPC: keeping outputs on the device needs CUDA IPC")
    res["ipc"] = ipc.keep(str(header["keep"]), outs)
    res["digest"] = device_digest(torch, outs)
    return res, []


COMPILED = {}  # the model under torch.compile, made once per bridge


def baseline(torch, prob, header, inputs, ipc):
    """Eager and torch.compile timed on these inputs (docs/kbench.md)."""
    if prob.device.type != "cuda":
        raise ValueError("timing needs a GPU and torch sees none")
    opts = header.get("bench", {})
    res = {"ok": True, "torch": torch.__version__}
    res["eager"] = time_fn(torch, lambda: prob.forward(tensors=inputs), opts)
    if header.get("compile", True):
        try:
            if "model" not in COMPILED:
                COMPILED["model"] = torch.compile(prob.model)
            compiled = COMPILED["model"]
            t0 = time.time()
            prob.forward(compiled, inputs)
            torch.cuda.synchronize()
            res["compile_s"] = round(time.time() - t0, 3)
            res["compiled"] = time_fn(torch, lambda: prob.forward(compiled, inputs), opts)
        except Exception as e:
            res["compile_error"] = "%s: %s" % (type(e).__name__, str(e)[:500])
    return res, []


def serve(path):
    torch = setup_torch()
    prob = Problem(torch, path)
    prob.forget_inputs()
    release(torch)
    stdin = sys.stdin.buffer
    ipc, ipc_error = None, None  # CudaIpc, made on the first request that shares tensors
    while True:
        header, blobs = read_frame(stdin)
        if header is None:
            return 0
        rid = header.get("id")
        op = header.get("op")
        try:
            if op == "bye":
                write_frame({"id": rid, "ok": True})
                return 0
            if op == "hello":
                write_frame({"id": rid, "ok": True, "torch": torch.__version__,
                             "device": str(prob.device),
                             "inputs": [n for _, n, _ in prob.tensor_inputs()],
                             "weights": [n for n, _, _ in prob.weights]})
            elif op in ("reference", "baseline"):
                if header.get("ipc") is not None and ipc is None:
                    if ipc_error is None:
                        try:
                            ipc = CudaIpc(torch)
                        except IpcError as e:
                            ipc_error = e
                    if ipc is None:
                        raise ipc_error
                run = reference if op == "reference" else baseline
                res, data = with_tensors(torch, prob, header, blobs, ipc,
                                         lambda inputs: run(torch, prob, header, inputs, ipc))
                res["id"] = rid
                write_frame(res, data)
            else:
                write_frame({"id": rid, "ok": False, "error": "E_PARSE: unknown op %r" % op})
        except (ProblemError, ValueError, RuntimeError) as e:
            write_frame({"id": rid, "ok": False, "error": "E_TORCH: %s: %s"
                         % (type(e).__name__, str(e)[:1500])})


def main(argv):
    global PROTO_OUT
    PROTO_OUT = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # print() in the problem lands on stderr
    sys.stdout = sys.stderr
    if len(argv) != 3 or argv[1] not in ("describe", "serve"):
        print("usage: kb_bridge.py describe|serve PROBLEM.py", file=sys.stderr)
        return 2
    try:
        import torch  # noqa: F401
    except ImportError as e:
        print("E_UNSUPPORTED: python %s has no torch (%s)" % (sys.executable, e), file=sys.stderr)
        return 3
    try:
        if argv[1] == "describe":
            d = describe(argv[2])
            PROTO_OUT.write(json.dumps(d, indent=1).encode() + b"\n")
            PROTO_OUT.flush()
            return 0
        return serve(argv[2])
    except ProblemError as e:
        print("E_PROBLEM: %s" % e, file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
