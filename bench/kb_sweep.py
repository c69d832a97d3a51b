"""The whole public KernelBench through kevo in minutes: every problem goes through
`kevo import` and the evaluation of a stub kernel (the contract's signature and launch block,
a body that writes nothing: verdict `unwritten` is a judged evaluation), many at once on every
GPU, one row a problem appended to a TSV as soon as it is known (a sweep cut short still
leaves its rows). docs/kbench.md has the table this made.

  python3 bench/kb_sweep.py [--kevo KEVO] [--kb-dir DIR] [--out DIR] [--gpus 0,1]
                            [--slots N] [--budget S] [--import-timeout S] [--eval-timeout S]
                            [--loopback P,...] [all | level1/19_ReLU.py ...]
  python3 bench/kb_sweep.py --table OUT/kb_sweep.tsv [--kb-dir DIR]    the docs table

What makes it fast (bench/kernelbench.sh takes 4-5 s a problem, most of it python and torch
starting): one zygote python (bench/kb_zygote.py) imports torch once and forks the bridge of
every `kevo import` and `kevo eval` (KEVO_PYTHON is its stand-in); problems run several at
once per GPU, packed by an estimate of the GPU memory each phase needs (from its footprint on
torch's meta device: no GPU, no data; kept in bench/kb_estimates.json for a file of the same
sha256), the largest first. Each phase (the import, the stub's evaluation, kevo run for a
--loopback problem) holds its reservation only while it runs; the largest request leads, a
started problem's next phase or a new one. A problem that fails beside others for lack of memory runs
again alone on a GPU. Each import and each evaluation has a time limit (a row `timeout`, and
the sweep goes on); no problem starts after --budget seconds, and the summary says how many
never started.

Rows (TSV, OUT/kb_sweep.tsv): problem gpu import_s peak_gib footprint_gib est_gib eval_s
outcome detail t0 t1 forward_gib waits_s eval_ms; outcome is one of judged (the stub's verdict
in detail), refused (the import's reason), import_failed, eval_failed, timeout. OUT/kb_gpumem.tsv
samples each second the GPU memory in use, the CPUs busy, the memory reserved and the phases in
flight.
"""
import argparse
import hashlib
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(HERE)
JUDGED = {"ok", "wrong", "unwritten", "nondeterministic", "input_modified"}
GIB = float(1 << 30)

STUB_HEAD = "// stub: the contract's signature, a body that writes nothing\n"
# the headers a signature's types need (each costs NVRTC about 0.1 s: included only then)
STUB_INCLUDES = (("__half", "cuda_fp16.h"), ("__nv_bfloat16", "cuda_bf16.h"),
                 ("__nv_fp8", "cuda_fp8.h"))


def stub_source(readme):
    """The stub kernel for an imported problem: its README's launch block and signature."""
    text = open(readme).read().splitlines()
    sig = next(ln.strip() for ln in text if ln.strip().startswith('extern "C" __global__'))
    i = next(k for k, ln in enumerate(text) if ln.strip().startswith("/* kevo:launch"))
    j = next(k for k in range(i, len(text)) if text[k].strip() == "*/")
    block = "\n".join(ln[2:] if ln.startswith("  ") else ln for ln in text[i:j + 1])
    head = STUB_HEAD + "".join("#include <%s>\n" % h for t, h in STUB_INCLUDES if t in sig)
    return head + block + "\n" + sig + " {}\n"


# ---- kevo run with a loopback LLM (--loopback): a canned, correct reply per problem ---------

# Elementwise KernelBench problems (one f32 input, one output of its shape): what a model
# would write for each, as the C expression of the input element v (torch's definitions).
ELEMENTWISE = {
    "19_ReLU": "v > 0.0f ? v : 0.0f",
    "20_LeakyReLU": "v > 0.0f ? v : 0.01f * v",
    "21_Sigmoid": "1.0f / (1.0f + expf(-v))",
    "22_Tanh": "tanhf(v)",
    "25_Swish": "v / (1.0f + expf(-v))",
    "26_GELU_": "0.5f * v * (1.0f + erff(v * 0.70710678118654752f))",
    "27_SELU_": "1.0507009873554805f * (v > 0.0f ? v : 1.6732632423543772f * expm1f(v))",
    "28_HardSigmoid": "fminf(fmaxf(v + 3.0f, 0.0f), 6.0f) / 6.0f",
    "29_Softplus": "v > 20.0f ? v : log1pf(expf(v))",
    "30_Softsign": "v / (1.0f + fabsf(v))",
    "31_ELU": "v > 0.0f ? v : expm1f(v)",
    "32_HardTanh": "fminf(fmaxf(v, -1.0f), 1.0f)",
    "88_MinGPTNewGelu":
        "0.5f * v * (1.0f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v)))",
}


# Matrix products (f32 inputs A and B, one output, one thread an output element as the
# contract's launch block gives): what is transposed, and the mask on the result. "diag" is
# diag(A) @ B, an elementwise product. Kernels accumulate in double: a sequential f32 sum over
# K = 8192 could drift past a tolerance set from cuBLAS's own error.
MATMUL = {
    "1_Square_matrix_multiplication_": "", "2_Standard_matrix_multiplication_": "",
    "3_Batched_matrix_multiplication": "", "6_Matmul_with_large_K_dimension_": "",
    "7_Matmul_with_small_K_dimension_": "", "9_Tall_skinny_matrix_multiplication_": "",
    "10_3D_tensor_matrix_multiplication": "", "11_4D_tensor_matrix_multiplication": "",
    "12_Matmul_with_diagonal_matrices_": "diag", "13_Matmul_for_symmetric_matrices": "",
    "14_Matmul_for_upper_triangular_matrices": "triu",
    "15_Matmul_for_lower_triangular_matrices": "tril", "16_Matmul_with_transposed_A": "tA",
    "17_Matmul_with_transposed_B": "tB", "18_Matmul_with_transposed_both": "tA tB",
}


def contract(readme):
    """(signature, pointer names, int size names, {tensor: [dims]}, launch block) of an
    imported problem's README."""
    text = open(readme).read()
    sig = next(ln.strip() for ln in text.splitlines()
               if ln.strip().startswith('extern "C" __global__'))
    params = re.search(r"\((.*)\)", sig).group(1).split(",")
    ptrs = [q.split("*")[-1].replace("__restrict__", "").strip() for q in params if "*" in q]
    sizes = [q.split()[-1] for q in params if "*" not in q and q.strip().startswith("int ")]
    dims = {m.group(1): [d.strip() for d in m.group(2).split(",") if d.strip()]
            for m in re.finditer(r"^  (\S+)\s+\S+\s+\[([^\]]*)\]", text, re.M)}
    m = re.search(r"/\* kevo:launch.*?\*/", text, re.S)
    launch = "\n".join(ln[2:] if ln.startswith("  ") else ln for ln in m.group(0).splitlines())
    return sig, ptrs, sizes, dims, launch


def llm_reply(name, readme):
    """A model-style reply (prose, one fenced block with the kernel and its launch block) for
    an elementwise problem or a matrix product, in the contract its import wrote; None for
    other problems."""
    if name in MATMUL:
        return matmul_reply(MATMUL[name], readme)
    expr = ELEMENTWISE.get(name)
    if expr is None:
        return None
    sig, ptrs, sizes, tdims, launch = contract(readme)
    if len(ptrs) != 2 or ptrs[1] not in tdims:
        return None
    dims = tdims[ptrs[1]]
    n = " * ".join("(long long)(%s)" % d for d in dims) or "1"
    unused = "".join("  (void)%s;\n" % z for z in sizes if z not in dims)
    return ("Elementwise and memory bound: a grid-stride loop over the flattened tensor with "
            "64-bit indices (the tensor has more than 2^31 elements at this size).\n\n"
            "```cuda\n%s {\n%s  long long n = %s;\n"
            "  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;\n"
            "       i += (long long)gridDim.x * blockDim.x) {\n"
            "    float v = %s[i];\n    %s[i] = %s;\n  }\n}\n%s\n```\n"
            % (sig, unused, n, ptrs[0], ptrs[1], expr, launch))


def matmul_reply(kind, readme):
    """The reply for a matrix product (MATMUL): one thread an output element, its column
    fastest (B and the output read and written coalesced), the sum in double. Locals end in
    "_": sizes may be named m, n, k."""
    sig, ptrs, sizes, tdims, launch = contract(readme)
    if len(ptrs) != 3 or any(p not in tdims for p in ptrs):
        return None
    a, b, c = ptrs
    da, db, dc = tdims[a], tdims[b], tdims[c]

    def prod(ds):
        return " * ".join("(long long)(%s)" % d for d in ds) or "1"
    body = ["  long long i_ = (long long)blockIdx.x * blockDim.x + threadIdx.x;",
            "  if (i_ >= %s) return;" % prod(dc)]
    if kind == "diag":  # out[r][j] = A[r] * B[r][j]
        body.append("  %s[i_] = %s[i_ / (long long)(%s)] * %s[i_];" % (c, a, db[-1], b))
        why = "diag(A) @ B is a row scaling: one thread an element, no matrix product needed."
    else:
        ta, tb = "tA" in kind, "tB" in kind
        batched = len(da) == 3 and len(db) == 3
        k = da[-2] if ta else da[-1]
        n = db[-2] if tb else db[-1]
        m = "(long long)(%s)" % da[-1] if ta else prod(da[1:-1] if batched else da[:-1])
        body += ["  long long c_ = i_ %% (long long)(%s), r_ = i_ / (long long)(%s);" % (n, n)]
        if batched:
            body += ["  long long b_ = r_ / (%s);" % m, "  r_ = r_ %% (%s);" % m,
                     "  const float *a_ = %s + b_ * %s, *bm_ = %s + b_ * %s;"
                     % (a, prod(da[1:]), b, prod(db[1:]))]
        else:
            body += ["  const float *a_ = %s, *bm_ = %s;" % (a, b)]
        ia = "k_ * (%s) + r_" % m if ta else "r_ * (long long)(%s) + k_" % k
        ib = "c_ * (long long)(%s) + k_" % k if tb else "k_ * (long long)(%s) + c_" % n
        body += ["  double acc_ = 0.0;",
                 "  for (long long k_ = 0; k_ < (long long)(%s); k_++)" % k,
                 "    acc_ += (double)a_[%s] * (double)bm_[%s];" % (ia, ib)]
        if kind == "triu":
            body.append("  if (c_ < r_) acc_ = 0.0;")
        if kind == "tril":
            body.append("  if (c_ > r_) acc_ = 0.0;")
        body.append("  %s[i_] = (float)acc_;" % c)
        why = ("A first, plain version of this matrix product: one thread an output element "
               "(its column fastest, so B and the output are read and written coalesced), the "
               "sum over k in double so that rounding cannot drift past the tolerance.")
    used = " ".join(body)
    unused = ["  (void)%s;" % z for z in sizes if not re.search(r"\b%s\b" % re.escape(z), used)]
    return "%s\n\n```cuda\n%s {\n%s\n}\n%s\n```\n" % (why, sig, "\n".join(unused + body),
                                                       launch)


# ---- the estimate: each problem built on torch's meta device -------------------------------

def file_sha(path):
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return None


def estimate_one(job):
    """{"problem", "ins", "outs"} in bytes (outs None when the forward fails on meta) of
    job = (problem, path)."""
    import importlib.util
    import torch
    problem, path = job
    res = {"problem": problem, "ins": None, "outs": None, "sha256": file_sha(path)}
    try:
        spec = importlib.util.spec_from_file_location("kb_est", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        with torch.device("meta"):
            torch.manual_seed(0)
            model = mod.Model(*list(mod.get_init_inputs()))
            args = list(mod.get_inputs())
        ts = [a for a in args if isinstance(a, torch.Tensor)]
        ws = list(model.parameters()) + list(model.buffers())
        res["ins"] = sum(t.numel() * t.element_size() for t in ts + ws)
        res["weights"] = sum(t.numel() * t.element_size() for t in ws)
        res["tensors"] = len(ts) + len(ws)
        with torch.no_grad():
            out = model(*args)
        outs = out if isinstance(out, (tuple, list)) else (out,)
        res["outs"] = sum(o.numel() * o.element_size() for o in outs
                          if isinstance(o, torch.Tensor))
        res["tensors"] += sum(isinstance(o, torch.Tensor) for o in outs)
    except Exception as e:  # noqa: BLE001: anything a problem throws means "no estimate"
        res["error"] = "%s: %s" % (type(e).__name__, str(e).splitlines()[0][:200] if str(e) else "")
    return res


class Estimates:
    """Estimates made in forked CPU processes (torch imported once), while the sweep runs:
    `get(problem)` is its estimate (None: none could be made), `ready(problem)` whether it is
    known yet; after limit_s every problem left is ready without one. (Made before the sweep
    began, they took 26 s of a round's GPU time on a 16-CPU host.)"""

    def __init__(self, kb_dir, problems, limit_s, known=None):
        self.got, self.done, self.lock = {}, False, threading.Lock()
        self.kb_dir = kb_dir
        todo = []
        for p, path in problems:  # a known estimate holds while the file is the same
            k = (known or {}).get(p) or {}
            if k.get("sha256") and k.get("sha256") == file_sha(path):
                self.got[p] = k
            else:
                todo.append((p, path))
        problems = todo
        if not problems:
            self.done = True
            return
        try:
            import torch  # noqa: F401
            import multiprocessing
        except ImportError:
            self.done = True
            return
        self.mp = multiprocessing
        self.pool = multiprocessing.get_context("fork").Pool(
            max(1, min(8, (os.cpu_count() or 2) // 2)))
        self.it = self.pool.imap_unordered(estimate_one, problems)
        self.deadline = time.time() + limit_s
        self.n = len(problems)
        threading.Thread(target=self.collect, daemon=True).start()

    def collect(self):
        try:
            while len(self.got) < self.n:
                left = self.deadline - time.time()
                if left <= 0:
                    break
                try:
                    r = self.it.next(timeout=left)
                except self.mp.TimeoutError:
                    break
                with self.lock:
                    self.got[r["problem"]] = r
        finally:
            self.done = True
            self.pool.terminate()

    def ready(self, p):
        return self.done or p in self.got

    def get(self, p):
        with self.lock:
            return self.got.get(p)


def reservation(est, capacity, phase="import"):
    """GPU bytes a problem may take at its peak in a phase ("import", "eval": the stub's
    evaluation, "run": kevo run with timing), from its estimate; 24 GiB when there is none
    (one that runs out of memory beside others runs again alone).

    Measured, when an earlier sweep measured the problem (est["measured"]: its processes' GPU
    memory each second, kb_procmem.tsv, and what its import printed: torch's peak, what the
    forward adds): the sampled peak + 10% + 1 GiB, but at least torch's peak + 2 GiB for the
    import and the bridge's judge_bytes + 2 GiB for the evaluation (one sample a second can
    miss a short peak: these floors do not). Round A of 2026-12-01 on the H200: the formulas
    below reserved twice what the processes used (268 s of the whole GPU's memory against
    142 s).

    Else from the footprint on torch's meta device, calibrated on the H200 (nvidia-smi each
    second, ReLU at 6 + 6 GiB): the import 3x the footprint + 2 GiB (38 GiB: torch's own
    peak 21.6 GiB, its cache and contexts the rest), the stub's evaluation what the bridge's
    judge_bytes counts (three sets of every tensor in the worker, each rounded up to 2 MiB,
    five trials' outputs and the weights in the bridge) + 2 GiB, kevo run with timing 5x the
    footprint + 4x the outputs + 4 GiB (87 GiB: five sets, eager's and torch.compile's
    outputs)."""
    if not est or (est.get("ins") is None and not (est.get("measured") or {}).get(phase)):
        return int(min(capacity, 24 * GIB))
    ins = est.get("ins") or 0
    outs = est["outs"] if est.get("outs") is not None else ins
    fp = ins + outs
    m = est.get("measured") or {}
    # the bridge's judge_bytes: evaluating (three sets of every tensor in the worker, each
    # rounded up to 2 MiB, five trials' outputs and the weights in the bridge) or supplying a
    # trial's reference (one set of inputs, four trials' outputs, the weights, the forward's
    # own peak above its inputs as the import measured it)
    weights = est.get("weights", 0)
    judge = max(3 * (fp + est.get("tensors", 0) * (2 << 20)) + 5 * outs + weights,
                ins + 4 * outs + weights + max((m.get("forward_extra") or 0) * GIB, 2 * outs))
    if phase == "import":
        need = max(3 * fp, fp + 4 * GIB) + 2 * GIB
    elif phase == "run":
        need = 5 * fp + 4 * outs + 4 * GIB
    else:
        need = max(3.2 * fp + 2 * outs + 4 * GIB, judge + 2 * GIB)
    if m.get(phase):
        seen = 1.1 * m[phase] * GIB + GIB
        if phase == "import":
            need = max(seen, (m.get("torch_import") or 0) * GIB + 2 * GIB)
        elif phase == "eval":
            need = max(seen, judge + 2 * GIB)
        else:  # kevo run: 11 runs measured, at most 4% over the formula
            need = max(seen, need)
    return int(min(capacity, need))


def learn(out, dest):
    """Writes dest: the estimates of the sweep in out (kb_estimates.json) with what it
    measured of each problem (kb_procmem.tsv: its processes' peak GPU GiB in each phase;
    kb_sweep.tsv: the import's own torch peak), for the next sweep's reservations."""
    ests = json.load(open(os.path.join(out, "kb_estimates.json")))
    peak = {}
    for line in open(os.path.join(out, "kb_procmem.tsv")):
        c = line.rstrip("\n").split("\t")
        if len(c) == 4 and c[2].rstrip("?") in ("import", "eval", "run"):
            k = (c[1], c[2].rstrip("?"))
            peak[k] = max(peak.get(k, 0.0), int(c[3]) / 1024.0)
    torch_peak, forward = {}, {}
    for line in open(os.path.join(out, "kb_sweep.tsv")):
        c = line.rstrip("\n").split("\t")
        try:
            torch_peak[c[0]] = float(c[3])
            forward[c[0]] = float(c[11])
        except (IndexError, ValueError):
            pass
    n = 0
    for p, e in ests.items():
        if not e:
            continue
        m = {ph: round(peak[(p, ph)], 2) for ph in ("import", "eval", "run") if (p, ph) in peak}
        if p in torch_peak:
            m["torch_import"] = torch_peak[p]
        if p in forward:
            m["forward_extra"] = forward[p]
        if m:
            e["measured"] = m
            n += 1
    with open(dest, "w") as f:
        json.dump(ests, f, indent=0, sort_keys=True)
        f.write("\n")
    print("kb_sweep: %d estimates, %d with measurements, written to %s" % (len(ests), n, dest))


# ---- the sweep -----------------------------------------------------------------------------

class Sweep:
    """Problems run in phases (import, the stub's evaluation, kevo run for --loopback ones),
    each holding its own reservation of its GPU's memory only while it runs: a problem's
    evaluation may overlap another's import. The largest request is the head (a started
    problem's next phase waiting for memory, or a new problem while a lane is free); at most
    a.slots phases run at once per GPU, and a.lanes problems may be started."""

    def __init__(self, a, problems, ests):
        self.a = a
        self.lock = threading.Condition()
        self.pending = list(problems)
        self.ests = ests
        self.backfill = {g: 0 for g in a.gpus}  # bytes granted beside a head that did not fit
        self.free = {g: a.capacity for g in a.gpus}
        self.waits = []  # started problems' next phases waiting for memory: [need, gpu, id]
        self.busy = {g: 0 for g in a.gpus}  # problems started and not ended (<= a.lanes)
        self.running = {g: 0 for g in a.gpus}  # phases holding a reservation (<= a.slots)
        self.procs = set()
        self.stopping = False
        self.start = time.time()
        self.tsv = open(os.path.join(a.out, "kb_sweep.tsv"), "a")
        self.rows = []
        self.started = set()
        self.alone = set()  # problems to run again alone on a GPU (an OOM beside others)
        self.inflight = {}  # problem -> its phase, for the samples
        self.needs = {}  # (problem, phase) -> its reservation
        self.group_of = {}  # process group (a kevo command's pid) -> its problem

    def row(self, r):
        cols = ["problem", "gpu", "import_s", "peak_gib", "footprint_gib", "est_gib", "eval_s",
                "outcome", "detail", "t0", "t1", "forward_gib", "waits_s", "eval_ms"]
        r.setdefault("t1", "%.1f" % (time.time() - self.start))
        line = "\t".join(str(r.get(c, "-")).replace("\t", " ").replace("\n", " ") for c in cols)
        with self.lock:
            self.rows.append(r)
            self.tsv.write(line + "\n")
            self.tsv.flush()
            os.fsync(self.tsv.fileno())
        print("[%5.0fs] %s" % (time.time() - self.start, line.replace("\t", " | ")), flush=True)

    def need(self, p, phase="import"):
        if p in self.alone:
            return self.a.capacity
        k = (p, phase)
        if k not in self.needs:  # kept once the estimate is known
            got = reservation(self.ests.get(p), self.a.capacity, phase)
            if not self.ests.ready(p):
                return got
            self.needs[k] = got
        return self.needs[k]

    def _head(self, gpu, ready):
        """The largest request on gpu: a started problem's next phase waiting for memory, or
        the largest new problem ready to start while a lane is free (a wait wins a tie):
        (need, id or problem) or None. Largest first, whichever it is: a large problem kept
        waiting behind smaller phases would end the sweep alone."""
        head = None
        for w in self.waits:
            if w[1] == gpu and (head is None or w[0] > head[0]):
                head = (w[0], w[2])
        if ready and self.busy[gpu] < self.a.lanes:
            need = self.need(ready[0])
            if head is None or need > head[0]:
                head = (need, ready[0])
        return head

    def _grant(self, gpu, need, is_head):
        """Whether need may be granted now: the head when it fits; another request only in
        what the head leaves (the capacity less the head's need less what other such grants
        hold), so that the head fits as soon as the running ones end. Returns (ok, backfill)."""
        if self.running[gpu] >= self.a.slots:
            return False, False
        if is_head:
            return need <= self.free[gpu], False
        head = self._head(gpu, self._ready())
        room = min(self.free[gpu], self.a.capacity - (head[0] if head else 0) -
                   self.backfill[gpu])
        return need <= room, True

    def size(self, p):
        """The order new problems start in: the largest reservation of any of their phases
        (a 12 GiB ReLU imports in 24 GiB but is judged in 68: it must not be left for last)."""
        phases = ("import", "eval", "run") if p in self.a.loopback else ("import", "eval")
        return max(self.need(p, ph) for ph in phases)

    def _ready(self):
        return sorted((p for p in self.pending if self.ests.ready(p)), key=self.size,
                      reverse=True)

    def _hold(self, gpu, need, fill):
        self.running[gpu] += 1
        self.free[gpu] -= need
        if fill:
            self.backfill[gpu] += need

    def take(self, gpu):
        """The next new problem for gpu, with its import's reservation: (problem, need, fill);
        (None, 0, False) when there is none to start (all started, the budget spent, a stop)."""
        with self.lock:
            while True:
                if self.stopping or not self.pending or \
                        time.time() - self.start > self.a.budget:
                    return None, 0, False
                ready = self._ready()
                head = self._head(gpu, ready)
                for p in ready:
                    need = self.need(p)
                    ok, fill = self._grant(gpu, need, head is not None and head[1] == p)
                    if ok:
                        self.pending.remove(p)
                        self.started.add(p)
                        self.busy[gpu] += 1
                        self._hold(gpu, need, fill)
                        self.inflight[p] = "import"
                        return p, need, fill
                self.lock.wait(0.2)

    def acquire(self, gpu, prob, phase):
        """Blocks until prob's next phase may hold its reservation on gpu: (need, fill), or
        None when the sweep is stopping."""
        need = self.need(prob, phase)
        w = [need, gpu, object()]
        with self.lock:
            self.waits.append(w)
            self.inflight[prob] = phase + "?"
            try:
                while not self.stopping:
                    head = self._head(gpu, self._ready())
                    ok, fill = self._grant(gpu, need, head[1] is w[2])
                    if ok:
                        self._hold(gpu, need, fill)
                        self.inflight[prob] = phase
                        return need, fill
                    self.lock.wait(0.2)
                return None
            finally:
                self.waits.remove(w)
                self.lock.notify_all()

    def ended(self, gpu):
        """A problem take() gave is done with (its lane is free)."""
        with self.lock:
            self.busy[gpu] -= 1
            self.lock.notify_all()

    def release(self, gpu, prob, need, fill):
        with self.lock:
            self.running[gpu] -= 1
            self.free[gpu] += need
            if fill:
                self.backfill[gpu] -= need
            self.inflight.pop(prob, None)
            self.lock.notify_all()

    def run(self, argv, env, limit, log, prob=None):
        """(exit code or None on timeout, seconds) of argv, its output in log."""
        t0 = time.time()
        with open(log, "wb") as f:
            p = subprocess.Popen(argv, env=env, stdout=f, stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL, start_new_session=True)
            with self.lock:
                self.procs.add(p)
                self.group_of[p.pid] = prob
            try:
                rc = p.wait(timeout=max(1, limit))
            except subprocess.TimeoutExpired:
                rc = None
                self.kill(p)
            finally:
                with self.lock:
                    self.procs.discard(p)
                    self.group_of.pop(p.pid, None)
        return rc, time.time() - t0

    @staticmethod
    def kill(p):
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        p.wait()

    def phase(self, gpu, prob, held, phase, r):
        """Gives back what held holds, then waits for phase's reservation (the wait adds to
        r's waits_s). False when the sweep is stopping."""
        if held:
            self.release(gpu, prob, *held)
            held.clear()
        t = time.time()
        got = self.acquire(gpu, prob, phase)
        r["waits_s"] = "%.1f" % (float(r.get("waits_s", 0)) + time.time() - t)
        if got is None:
            return False
        held.extend(got)
        return True

    def one(self, gpu, prob, held):
        """prob's row: its import (held holds the import's reservation), the stub's evaluation,
        and kevo run for a --loopback problem, each phase with its own reservation."""
        a = self.a
        need = held[0]
        name = os.path.basename(prob)[:-3]
        level = os.path.dirname(prob) or "."
        rdir = os.path.join(a.work, level)
        os.makedirs(rdir, exist_ok=True)
        base = os.path.join(rdir, name)
        env = dict(os.environ, CUDA_VISIBLE_DEVICES=str(gpu), KEVO_PYTHON=a.python_standin)
        if a.worker_timing:  # each worker says how its start went
            env.update(KEVO_WORKER_TIMING="1")
        est = self.ests.get(prob) or {}
        r = {"problem": prob, "gpu": gpu, "est_gib": "%.3g" % (need / GIB),
             "t0": "%.1f" % (time.time() - self.start)}
        if est.get("ins") is not None and est.get("outs") is not None:
            r["est_gib"] += " (fp %.3g)" % ((est["ins"] + est["outs"]) / GIB)
        rc, secs = self.run([a.kevo, "import", os.path.join(a.kb_dir, prob), "--out", rdir,
                             "--force"], env, a.import_timeout, base + ".import.txt", prob)
        r["import_s"] = "%.1f" % secs
        text = open(base + ".import.txt", errors="replace").read()
        m = re.search(r"import peak GPU memory (\S+) GiB for a problem of (\S+) GiB", text)
        if m:
            r["peak_gib"], r["footprint_gib"] = m.group(1), m.group(2)
        m = re.search(r"its f32 forward adds (\S+) GiB", text)
        if m:
            r["forward_gib"] = m.group(1)
        last = [ln for ln in text.splitlines() if ln.strip()]
        if rc is None:
            r.update(outcome="timeout", detail="import past %d s" % a.import_timeout)
            return r
        if rc != 0:
            why = last[-1] if last else "(no output)"
            r.update(outcome="refused" if rc == 2 else "import_failed",
                     detail="exit %d: %s" % (rc, why[:400]))
            return r
        tol = [ln for ln in text.splitlines() if "tolerance" in ln.lower()]
        try:
            open(base + ".stub.cu", "w").write(stub_source(os.path.join(rdir, name, "README.md")))
        except (OSError, StopIteration) as e:
            r.update(outcome="eval_failed", detail="no contract in the README: %s" % e)
            return r
        if not self.phase(gpu, prob, held, "eval", r):
            r.update(outcome="timeout", detail="cut by the end of the sweep before its evaluation")
            return r
        rc, secs = self.run([a.kevo, "eval", base + ".yaml", base + ".stub.cu", "--json",
                             "--no-bench"], env, a.eval_timeout, base + ".eval.txt", prob)
        r["eval_s"] = "%.1f" % secs
        if rc is None:
            r.update(outcome="timeout", detail="evaluation past %d s" % a.eval_timeout)
            return r
        out = open(base + ".eval.txt", errors="replace").read()
        res = None
        i = out.find("{")
        while i >= 0 and res is None:
            try:
                res = json.JSONDecoder().raw_decode(out[i:])[0]
            except ValueError:
                i = out.find("\n{", i + 1)
                i = i + 1 if i >= 0 else -1
        if not isinstance(res, dict) or "verdict" not in res:
            lines = [ln for ln in out.splitlines() if ln.strip()]
            r.update(outcome="eval_failed", detail="exit %s: %s" % (rc, (lines[-1] if lines
                                                                          else "")[:400]))
            return r
        v = res.get("verdict")
        msg = str(res.get("message", ""))[:300]
        via = (res.get("bench") or {}).get("tensors_via")
        detail = "%s: %s" % (v, msg) + ("; tensors via %s" % via if via else "")
        if tol:
            detail += "; " + tol[0][:200]
        r.update(outcome="judged" if v in JUDGED else "eval_failed", detail=detail)
        r["eval_ms"] = "c%s/v%s" % (round((res.get("compile") or {}).get("ms") or 0),
                                    round((res.get("verify") or {}).get("ms") or 0))
        if prob in a.loopback:
            if self.phase(gpu, prob, held, "run", r):
                self.loopback(prob, name, rdir, base, env)
            else:
                self.loop_row(prob, "-", "-", "cut by the end of the sweep")
        return r

    def loopback(self, prob, name, rdir, base, env):
        """`kevo run` on the imported recipe with a loopback LLM server answering with a
        correct kernel: a row in kb_loopback.tsv (problem, seconds, exit, the result)."""
        a = self.a
        reply = llm_reply(name, os.path.join(rdir, name, "README.md"))
        if reply is None:
            return self.loop_row(prob, "-", "-", "no canned reply for this problem")
        open(base + ".reply.md", "w").write(reply)
        srv = subprocess.Popen([sys.executable, os.path.join(SRC, "tests/integration/"
                                                            "canned_llm_server.py"),
                                base + ".reply.md", base + ".llm.jsonl"],
                               stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
        try:
            line = srv.stdout.readline()
            if not line.startswith("PORT "):
                return self.loop_row(prob, "-", "-", "the loopback server did not start")
            env = dict(env, KEVO_LLM_BASE_URL="http://127.0.0.1:%s/v1" % line.split()[1],
                       KEVO_LLM_KEY_ENV="KEVO_TEST_NO_SUCH_KEY", KEVO_DB=base + ".db",
                       TORCHINDUCTOR_COMPILE_THREADS="1")
            for k in ("KEVO_LLM", "KEVO_EVALUATOR"):
                env.pop(k, None)
            rc, secs = self.run([a.kevo, "run", base + ".yaml", "--llm", "openai:canned",
                                 "--max-evals", "1", "--strategy", "greedy", "--out",
                                 base + ".run"], env, a.run_timeout, base + ".run.txt", prob)
        finally:
            srv.kill()
            srv.wait()
        out = open(base + ".run.txt", errors="replace").read().splitlines()
        keep = [ln.strip() for ln in out
                if re.search(r"vs PyTorch|^best:|verified|^stopped", ln.strip())]
        what = " / ".join(keep[-3:]) if keep else (out[-1] if out else "(no output)")
        return self.loop_row(prob, "%.1f" % secs, "timeout" if rc is None else rc, what[:400])

    def loop_row(self, prob, secs, rc, what):
        line = "%s\t%s\t%s\t%s" % (prob, secs, rc, what.replace("\t", " "))
        with self.lock:
            with open(os.path.join(self.a.out, "kb_loopback.tsv"), "a") as f:
                f.write(line + "\n")
        print("[%5.0fs] loopback %s" % (time.time() - self.start, line.replace("\t", " | ")),
              flush=True)

    def lane(self, gpu):
        while True:
            prob, need, fill = self.take(gpu)
            if prob is None:
                return
            held = [need, fill]
            try:
                r = self.one(gpu, prob, held)
            except Exception as e:  # noqa: BLE001: a row, whatever went wrong
                r = {"problem": prob, "gpu": gpu, "outcome": "eval_failed",
                     "detail": "sweep error %s: %s" % (type(e).__name__, e)}
            finally:
                if held:
                    self.release(gpu, prob, *held)
                self.ended(gpu)
            if self.stopping and r["outcome"] != "judged":
                r.update(outcome="timeout", detail="cut by the end of the sweep")
            # a failure beside other problems may be theirs (the GPU's memory was shared):
            # once more, alone on a GPU, when there is time
            # (only a failure for lack of memory: a retry drains the GPU; a refusal that
            # names the problem's own footprint is not one)
            again = r["outcome"] in ("import_failed", "eval_failed", "refused") and \
                "out of memory" in r.get("detail", "").lower()
            with self.lock:
                if again and prob not in self.alone and need < self.a.capacity and \
                        not self.stopping:
                    self.alone.add(prob)
                    self.pending.insert(0, prob)
                    r = None
            if r is not None:
                self.row(r)

    def sample_memory(self):
        """Each second, to OUT/kb_gpumem.tsv: t, GPU, its memory in use (MiB), the machine's
        CPUs busy (%), the bytes reserved on that GPU (GiB) and the problems in flight by
        phase ("eval?": waiting for its memory): what the reservations were against (rows
        carry t0 and t1), and whether the CPUs or the memory bound the sweep."""
        def cpu():
            try:
                with open("/proc/stat") as f:
                    v = [int(x) for x in f.readline().split()[1:]]
                return sum(v), v[3] + (v[4] if len(v) > 4 else 0)
            except (OSError, ValueError):
                return 0, 0
        last = cpu()
        with open(os.path.join(self.a.out, "kb_gpumem.tsv"), "a") as f:
            while not self.stopping:
                try:
                    out = subprocess.run(["nvidia-smi", "--query-gpu=index,memory.used",
                                          "--format=csv,noheader,nounits"], capture_output=True,
                                         text=True, timeout=10).stdout
                except (OSError, subprocess.SubprocessError):
                    out = ""
                now = cpu()
                busy = 100.0 * (1 - (now[1] - last[1]) / max(1, now[0] - last[0]))
                last = now
                t = time.time() - self.start
                with self.lock:
                    phases = {}
                    for ph in self.inflight.values():
                        phases[ph] = phases.get(ph, 0) + 1
                    held = {g: (self.a.capacity - self.free[g]) / GIB for g in self.a.gpus}
                what = " ".join("%s:%d" % kv for kv in sorted(phases.items()))
                rows = [ln.replace(" ", "").split(",") for ln in out.strip().splitlines()] or \
                    [[str(g), "-"] for g in self.a.gpus]
                for g, mib in rows:
                    f.write("%.1f\t%s\t%s\t%.0f\t%.1f\t%s\n" % (
                        t, g, mib, busy, held.get(int(g), 0) if g.isdigit() else 0, what))
                f.flush()
                time.sleep(1)

    def sample_processes(self):
        """Each second, to OUT/kb_procmem.tsv: t, problem, its phase, GPU MiB of its processes
        (nvidia-smi's compute apps: the worker and kevo's own, by process group; the bridges,
        forked by the zygote, by the zygote's log): what each phase really takes, against its
        reservation."""
        zlog = os.path.join(self.a.out, "zygote.log")
        bridge_of, seen = {}, 0
        prob_re = re.compile(r"(level\d)/([^/\s]+?)(?:/problem)?\.py")
        with open(os.path.join(self.a.out, "kb_procmem.tsv"), "a") as f:
            while not self.stopping:
                try:
                    out = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory",
                                          "--format=csv,noheader,nounits"], capture_output=True,
                                         text=True, timeout=10).stdout
                except (OSError, subprocess.SubprocessError):
                    return
                try:
                    with open(zlog, errors="replace") as z:
                        z.seek(seen)
                        text = z.read()
                        seen += len(text.encode())
                    for m in re.finditer(r"kb_zygote: child (\d+): (.*)", text):
                        pm = prob_re.search(m.group(2))
                        if pm:
                            bridge_of[int(m.group(1))] = "%s/%s.py" % pm.groups()
                except OSError:
                    pass
                t = time.time() - self.start
                mem = {}
                for ln in out.strip().splitlines():
                    try:
                        pid, mib = [int(x) for x in ln.replace(" ", "").split(",")]
                        with open("/proc/%d/stat" % pid) as st:
                            pgrp = int(st.read().rsplit(")", 1)[1].split()[2])
                    except (OSError, ValueError, IndexError):
                        continue
                    with self.lock:
                        prob = self.group_of.get(pgrp) or bridge_of.get(pid)
                    if prob:
                        mem[prob] = mem.get(prob, 0) + mib
                with self.lock:
                    phases = dict(self.inflight)
                for prob, mib in sorted(mem.items()):
                    f.write("%.1f\t%s\t%s\t%d\n" % (t, prob, phases.get(prob, "-"), mib))
                f.flush()
                time.sleep(1)

    def stop(self):
        with self.lock:
            self.stopping = True
            procs = list(self.procs)
            self.lock.notify_all()
        for p in procs:
            self.kill(p)


def summary(rows, problems, started, out):
    by = {}
    for r in rows:
        by.setdefault(r["outcome"], []).append(r)
    seen = {r["problem"] for r in rows}
    n = len(problems)
    imps = [float(r["import_s"]) for r in rows if r.get("import_s") not in (None, "-")]
    lines = ["", "KernelBench sweep: %d problems, %.0f s" % (n, time.time() - started)]
    for k in ("judged", "refused", "timeout", "import_failed", "eval_failed"):
        lines.append("  %-13s %d" % (k, len(by.get(k, []))))
    lines.append("  %-13s %d (no problem starts after --budget)" % ("not started",
                                                                     n - len(seen)))
    if n:
        lines.append("  judged share  %.1f%% of all; judged or refused %.1f%%" % (
            100.0 * len(by.get("judged", [])) / n,
            100.0 * (len(by.get("judged", [])) + len(by.get("refused", []))) / n))
    if imps:
        lines.append("  import s      median %.1f, max %.1f (%d imports)" % (
            statistics.median(imps), max(imps), len(imps)))
    over = []
    for r in rows:
        try:
            peak, fp = float(r["peak_gib"]), float(r["footprint_gib"])
        except (KeyError, ValueError):
            continue
        if peak > max(2 * fp, 4.0):
            over.append("%s %.3g / %.3g GiB (its forward adds %s)" % (
                r["problem"], peak, fp, r.get("forward_gib", "?")))
    lines.append("  import peak over max(2x the footprint, 4 GiB) (kevo import's bound): %d%s" % (
        len(over), (": " + "; ".join(over)) if over else ""))
    for r in by.get("refused", []) + by.get("timeout", []) + by.get("import_failed", []) + \
            by.get("eval_failed", []):
        lines.append("  %s %s: %s" % (r["outcome"], r["problem"], r.get("detail", "")[:300]))
    text = "\n".join(lines) + "\n"
    print(text, flush=True)
    with open(os.path.join(out, "kb_summary.txt"), "w") as f:
        f.write(text)


def problem_order(p):
    m = re.match(r"\d+", os.path.basename(p))
    return (p.split("/")[0], int(m.group()) if m else 0, p)


def all_problems(kb_dir):
    return sorted((os.path.join(lv, f) for lv in ("level1", "level2", "level3")
                   if os.path.isdir(os.path.join(kb_dir, lv))
                   for f in os.listdir(os.path.join(kb_dir, lv)) if f.endswith(".py")),
                  key=problem_order)


def table(tsv, kb_dir):
    """The markdown table of a sweep's TSV (docs/kbench.md), in problem order, the last row of
    a problem kept; with kb_dir's problems, the ones the sweep never started too."""
    rows = {}
    for line in open(tsv):
        c = line.rstrip("\n").split("\t")
        if len(c) >= 9:
            rows[c[0]] = c
    every = set(rows) | set(all_problems(kb_dir))
    counts = {}
    for p in every:
        k = rows[p][7] if p in rows else "not started"
        counts[k] = counts.get(k, 0) + 1
    print("%d problems: %s." % (len(every), ", ".join(
        "%s %d" % (k, counts[k]) for k in ("judged", "refused", "timeout", "import_failed",
                                          "eval_failed", "not started") if k in counts)))
    print("")
    print("| problem | import s | import peak GiB | footprint GiB | eval s | outcome | reason |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for p in sorted(every, key=problem_order):
        if p not in rows:
            print("| %s | - | - | - | - | not started | the sweep's time ran out |" % p[:-3])
            continue
        c = rows[p]
        detail = c[8].replace("|", "/")
        if c[7] == "judged":  # the verdict; the message says the same of every stub
            detail = "`%s`" % detail.split(":")[0]
        else:
            detail = re.sub(r"^exit \d+: (kevo import: )?(\S+\.py: )?(E_\w+: )?", "",
                            detail)[:200]
        print("| %s | %s | %s | %s | %s | %s | %s |" % (p[:-3], c[2], c[3], c[4], c[6], c[7],
                                                      detail))


def loopback_table(tsv):
    """The markdown table of a sweep's kb_loopback.tsv (footprints from the kb_sweep.tsv beside
    it): problem, footprint, kevo run's seconds and exit, the verified kernel's time and
    eager's and torch.compile's, as kevo run's summary printed them."""
    fp = {}
    try:
        for line in open(os.path.join(os.path.dirname(tsv), "kb_sweep.tsv")):
            c = line.rstrip("\n").split("\t")
            if len(c) >= 5:
                fp[c[0]] = c[4]
    except OSError:
        pass
    print("| problem | footprint GiB | kevo run s | exit | kernel ms | eager ms | "
          "torch.compile ms |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for line in open(tsv):
        c = line.rstrip("\n").split("\t")
        if len(c) < 4:
            continue
        best = re.search(r"best: candidate \d+, [\d.]+x the reference \(([\d.e+-]+) ms", c[3])
        eager = re.search(r"([\d.]+)x eager \(([\d.e+-]+) ms\)", c[3])
        comp = re.search(r"([\d.]+)x torch.compile \(([\d.e+-]+) ms\)", c[3])
        print("| %s | %s | %s | %s | %s | %s | %s |" % (
            c[0][:-3], fp.get(c[0], "-"), c[1], c[2], best.group(1) if best else "-",
            "%s (%sx)" % (eager.group(2), eager.group(1)) if eager else "-",
            "%s (%sx)" % (comp.group(2), comp.group(1)) if comp else "-"))


def gpu_list():
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=index,memory.total",
                              "--format=csv,noheader,nounits"], capture_output=True, text=True,
                             timeout=30).stdout
        rows = [ln.split(",") for ln in out.strip().splitlines() if ln.strip()]
        return [int(r[0]) for r in rows], min(float(r[1]) for r in rows) * (1 << 20)
    except (OSError, ValueError, subprocess.SubprocessError):
        return [0], 80 * GIB


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("problems", nargs="*")
    ap.add_argument("--kevo", default=os.environ.get("KEVO", os.path.join(SRC, "build/kevo")))
    ap.add_argument("--kb-dir", default=os.path.join(SRC, ".kernelbench"))
    ap.add_argument("--out", default="kb-sweep")
    ap.add_argument("--work", default=None, help="recipes and logs (default OUT/work)")
    ap.add_argument("--gpus", default=None)
    ap.add_argument("--slots", type=int, default=0, help="problems at once per GPU")
    ap.add_argument("--budget", type=float, default=3600, help="no problem starts after this")
    ap.add_argument("--capacity-share", type=float, default=0.95,
                    help="share of each GPU's memory the reservations may fill")
    ap.add_argument("--import-timeout", type=int, default=120)
    ap.add_argument("--eval-timeout", type=int, default=120)
    ap.add_argument("--run-timeout", type=int, default=240)
    ap.add_argument("--loopback", default="",
                    help="comma-separated problems also taken through kevo run with a "
                    "loopback LLM (elementwise ones: see ELEMENTWISE)")
    ap.add_argument("--estimate-s", type=float, default=20)
    ap.add_argument("--estimates", default=os.path.join(HERE, "kb_estimates.json"),
                    help="estimates of an earlier sweep (OUT/kb_estimates.json): a problem "
                    "whose file has the same sha256 is not estimated again")
    ap.add_argument("--no-zygote", action="store_true", help="a fresh python per bridge")
    ap.add_argument("--worker-timing", action="store_true",
                    help="workers print how their start went (KEVO_WORKER_TIMING)")
    ap.add_argument("--table", metavar="TSV", help="print a sweep's TSV as markdown, and stop")
    ap.add_argument("--learn", metavar="OUT",
                    help="write --estimates from a sweep's OUT (its estimates, and what it "
                    "measured of each problem's memory), and stop")
    ap.add_argument("--loopback-table", metavar="TSV",
                    help="print a sweep's kb_loopback.tsv as markdown, and stop")
    a = ap.parse_args()
    if a.table:
        table(a.table, a.kb_dir)
        return 0
    if a.loopback_table:
        loopback_table(a.loopback_table)
        return 0
    if a.learn:
        learn(a.learn, a.estimates)
        return 0
    started = time.time()
    gpus, total = gpu_list()
    if a.gpus:
        gpus = [int(g) for g in a.gpus.split(",")]
    a.gpus = gpus
    a.loopback = set(p for p in a.loopback.split(",") if p)
    a.capacity = int(a.capacity_share * total)
    if a.slots <= 0:
        a.slots = max(1, min(16, (os.cpu_count() or 2) // len(gpus)))
    a.lanes = 2 * a.slots  # a problem waiting for memory between phases holds a lane only
    os.makedirs(a.out, exist_ok=True)
    a.out = os.path.abspath(a.out)
    a.work = os.path.abspath(a.work or os.path.join(a.out, "work"))
    os.makedirs(a.work, exist_ok=True)
    a.kevo = os.path.abspath(a.kevo) if os.sep in a.kevo else a.kevo
    if not a.problems or a.problems == ["all"]:
        problems = all_problems(a.kb_dir)
    else:
        problems = a.problems
    if not problems:
        print("kb_sweep: no problems under %s" % a.kb_dir, file=sys.stderr)
        return 2
    zygote = None
    py = os.environ.get("KEVO_PYTHON", "python3")
    a.python_standin = py
    if not a.no_zygote:
        sock = os.path.join("/tmp", "kb-zygote-%d.sock" % os.getpid())
        a.python_standin = os.path.join(a.out, "python-standin")
        subprocess.run([py, os.path.join(HERE, "kb_zygote.py"), "client", sock,
                        a.python_standin], check=True)
        zlog = open(os.path.join(a.out, "zygote.log"), "wb")
        # CPU threads per bridge: the CPUs shared among the problems running at once (torch
        # reads this when the zygote imports it)
        threads = max(1, (os.cpu_count() or 2) // (a.slots * len(gpus)))
        zygote = subprocess.Popen([py, os.path.join(HERE, "kb_zygote.py"), "serve", sock],
                                  stdout=zlog, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL,
                                  env=dict(os.environ, OMP_NUM_THREADS=str(threads)))
    known = {}
    try:
        with open(a.estimates) as f:
            known = json.load(f)
    except (OSError, ValueError):
        pass
    ests = Estimates(a.kb_dir, [(p, os.path.join(a.kb_dir, p)) for p in problems],
                     a.estimate_s, known)
    if zygote is not None:
        for _ in range(300):
            if os.path.exists(sock) or zygote.poll() is not None:
                break
            time.sleep(0.1)
        if zygote.poll() is not None:
            print("kb_sweep: the zygote did not start (zygote.log); going on without it",
                  file=sys.stderr)
            a.python_standin = py
    print("kb_sweep: %d problems, GPUs %s, %d at once per GPU, %.0f GiB each (%.0f s)"
          % (len(problems), gpus, a.slots, a.capacity / GIB, time.time() - started), flush=True)
    sw = Sweep(a, problems, ests)
    sw.start = started

    def on_signal(*_):
        sw.stop()
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    lanes = [threading.Thread(target=sw.lane, args=(g,), daemon=True)
             for g in gpus for _ in range(a.lanes)]
    threading.Thread(target=sw.sample_memory, daemon=True).start()
    threading.Thread(target=sw.sample_processes, daemon=True).start()
    for t in lanes:
        t.start()
    for t in lanes:
        while t.is_alive():
            t.join(0.5)
    sw.stopping = True
    with open(os.path.join(a.out, "kb_estimates.json"), "w") as f:
        json.dump({p: ests.get(p) for p in problems}, f, indent=0)
    if zygote is not None:
        zygote.terminate()
        try:
            zygote.wait(10)
        except subprocess.TimeoutExpired:
            zygote.kill()
    summary(sw.rows, problems, started, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
