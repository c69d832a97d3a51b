"""The whole public KernelBench through kevo in minutes: every problem goes through
`kevo import` and the evaluation of a stub kernel (the contract's signature and launch block,
a body that writes nothing: verdict `unwritten` is a judged evaluation), many at once on every
GPU, one row a problem appended to a TSV as soon as it is known (a sweep cut short still
leaves its rows). docs/kbench.md has the table this made.

  python3 bench/kb_sweep.py [--kevo KEVO] [--kb-dir DIR] [--out DIR] [--gpus 0,1]
                            [--slots N] [--budget S] [--import-timeout S] [--eval-timeout S]
                            [all | level1/19_ReLU.py ...]

What makes it fast (bench/kernelbench.sh takes 4-5 s a problem, most of it python and torch
starting): one zygote python (bench/kb_zygote.py) imports torch once and forks the bridge of
every `kevo import` and `kevo eval` (KEVO_PYTHON is its stand-in); problems run several at
once per GPU, packed by an estimate of the GPU memory each needs (its footprint on torch's
meta device: no GPU, no data), the largest first; a problem that fails beside others for
lack of memory runs again alone on a GPU. Each import and each evaluation has
a time limit (a row `timeout`, and the sweep goes on); no problem starts after --budget
seconds.

Rows (TSV, OUT/kb_sweep.tsv): problem gpu import_s peak_gib footprint_gib est_gib eval_s
outcome detail; outcome is one of judged (the stub's verdict in detail), refused (the import's
reason), import_failed, eval_failed, timeout, not_run.
"""
import argparse
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

STUB_HEAD = ("// stub: the contract's signature, a body that writes nothing\n"
             "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n#include <cuda_fp8.h>\n")


def stub_source(readme):
    """The stub kernel for an imported problem: its README's launch block and signature."""
    text = open(readme).read().splitlines()
    sig = next(ln.strip() for ln in text if ln.strip().startswith('extern "C" __global__'))
    i = next(k for k, ln in enumerate(text) if ln.strip().startswith("/* kevo:launch"))
    j = next(k for k in range(i, len(text)) if text[k].strip() == "*/")
    block = "\n".join(ln[2:] if ln.startswith("  ") else ln for ln in text[i:j + 1])
    return STUB_HEAD + block + "\n" + sig + " {}\n"


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


def llm_reply(name, readme):
    """A model-style reply (prose, one fenced block with the kernel and its launch block) for
    an elementwise problem, in the contract its import wrote; None for other problems."""
    expr = ELEMENTWISE.get(name)
    if expr is None:
        return None
    text = open(readme).read()
    sig = next(ln.strip() for ln in text.splitlines()
               if ln.strip().startswith('extern "C" __global__'))
    params = re.search(r"\((.*)\)", sig).group(1).split(",")
    ptrs = [q.split("*")[-1].replace("__restrict__", "").strip() for q in params if "*" in q]
    sizes = [q.split()[-1] for q in params if "*" not in q and q.strip().startswith("int ")]
    out_line = re.search(r"^Outputs:\n\s*(\S+)\s+f32\s+\[([^\]]*)\]", text, re.M)
    if len(ptrs) != 2 or out_line is None:
        return None
    dims = [d.strip() for d in out_line.group(2).split(",")]
    n = " * ".join("(long long)(%s)" % d for d in dims)
    m = re.search(r"/\* kevo:launch.*?\*/", text, re.S)
    launch = "\n".join(ln[2:] if ln.startswith("  ") else ln for ln in m.group(0).splitlines())
    unused = "".join("  (void)%s;\n" % z for z in sizes if z not in dims)
    return ("Elementwise and memory bound: a grid-stride loop over the flattened tensor with "
            "64-bit indices (the tensor has more than 2^31 elements at this size).\n\n"
            "```cuda\n%s {\n%s  long long n = %s;\n"
            "  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;\n"
            "       i += (long long)gridDim.x * blockDim.x) {\n"
            "    float v = %s[i];\n    %s[i] = %s;\n  }\n}\n%s\n```\n"
            % (sig, unused, n, ptrs[0], ptrs[1], expr, launch))


# ---- the estimate: each problem built on torch's meta device -------------------------------

def estimate_one(job):
    """{"problem", "ins", "outs"} in bytes (outs None when the forward fails on meta) of
    job = (problem, path)."""
    import importlib.util
    import torch
    problem, path = job
    res = {"problem": problem, "ins": None, "outs": None}
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
        with torch.no_grad():
            out = model(*args)
        outs = out if isinstance(out, (tuple, list)) else (out,)
        res["outs"] = sum(o.numel() * o.element_size() for o in outs
                          if isinstance(o, torch.Tensor))
    except Exception as e:  # noqa: BLE001: anything a problem throws means "no estimate"
        res["error"] = "%s: %s" % (type(e).__name__, str(e).splitlines()[0][:200] if str(e) else "")
    return res


class Estimates:
    """Estimates made in forked CPU processes (torch imported once), while the sweep runs:
    `get(problem)` is its estimate (None: none could be made), `ready(problem)` whether it is
    known yet; after limit_s every problem left is ready without one. (Made before the sweep
    began, they took 26 s of a round's GPU time on a 16-CPU host.)"""

    def __init__(self, kb_dir, problems, limit_s):
        self.got, self.done, self.lock = {}, False, threading.Lock()
        self.kb_dir = kb_dir
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


def reservation(est, capacity, bench=False):
    """GPU bytes a problem may take at its peak (import or evaluation), from its estimate;
    24 GiB when there is none (one that runs out of memory beside others runs again alone).
    Calibrated on the H200 (nvidia-smi each second, ReLU at 6 + 6 GiB): the import took
    38 GiB (torch's own peak 21.6 GiB, its cache and contexts the rest), the stub's
    evaluation 53 GiB (the worker's three sets of every tensor to verify, docs/worker.md,
    and the bridge's outputs), kevo run with timing 87 GiB (five sets, eager's and
    torch.compile's outputs)."""
    if not est or est.get("ins") is None:
        return min(capacity, 24 * GIB)
    ins = est["ins"]
    outs = est["outs"] if est.get("outs") is not None else ins
    fp = ins + outs
    imp = max(3 * fp, fp + 4 * GIB) + 2 * GIB
    ev = (5 * fp + 4 * outs if bench else 3.2 * fp + 2 * outs) + 4 * GIB
    return min(capacity, max(imp, ev))


# ---- the sweep -----------------------------------------------------------------------------

class Sweep:
    def __init__(self, a, problems, ests):
        self.a = a
        self.lock = threading.Condition()
        self.pending = list(problems)
        self.ests = ests
        self.backfill = {g: 0 for g in a.gpus}  # bytes of the problems started beside a head
        self.free = {g: a.capacity for g in a.gpus}
        self.busy = {g: 0 for g in a.gpus}
        self.procs = set()
        self.stopping = False
        self.start = time.time()
        self.tsv = open(os.path.join(a.out, "kb_sweep.tsv"), "a")
        self.rows = []
        self.alone = set()  # problems to run again alone on a GPU (an OOM beside others)

    def row(self, r):
        cols = ["problem", "gpu", "import_s", "peak_gib", "footprint_gib", "est_gib", "eval_s",
                "outcome", "detail", "t0", "t1", "forward_gib"]
        r.setdefault("t1", "%.1f" % (time.time() - self.start))
        line = "\t".join(str(r.get(c, "-")).replace("\t", " ").replace("\n", " ") for c in cols)
        with self.lock:
            self.rows.append(r)
            self.tsv.write(line + "\n")
            self.tsv.flush()
            os.fsync(self.tsv.fileno())
        print("[%5.0fs] %s" % (time.time() - self.start, line.replace("\t", " | ")), flush=True)

    def need(self, p):
        return self.a.capacity if p in self.alone else \
            reservation(self.ests.get(p), self.a.capacity, p in self.a.loopback)

    def take(self, gpu):
        """The next problem for gpu, (problem, bytes, backfill); (None, 0, False) when done.
        The head (the largest problem whose estimate is known) when it fits; else the largest
        that fits beside it in what the head leaves (the capacity less the head's need less
        what other such problems hold): when the running ones end, the head fits at once, and
        the GPU never idles behind it."""
        with self.lock:
            while True:
                if self.stopping or not self.pending:
                    return None, 0, False
                if time.time() - self.start > self.a.budget:
                    return None, 0, False
                if self.busy[gpu] < self.a.slots:
                    ready = sorted((p for p in self.pending if self.ests.ready(p)),
                                   key=self.need, reverse=True)
                    pick, fill = None, False
                    if ready and self.need(ready[0]) <= self.free[gpu]:
                        pick = ready[0]
                    elif ready:
                        room = min(self.free[gpu], self.a.capacity - self.need(ready[0]) -
                                   self.backfill[gpu])
                        pick = next((p for p in ready[1:] if self.need(p) <= room), None)
                        fill = True
                    if pick is not None:
                        self.pending.remove(pick)
                        need = self.need(pick)
                        self.free[gpu] -= need
                        self.busy[gpu] += 1
                        if fill:
                            self.backfill[gpu] += need
                        return pick, need, fill
                self.lock.wait(0.2)

    def done(self, gpu, need, fill):
        with self.lock:
            self.free[gpu] += need
            self.busy[gpu] -= 1
            if fill:
                self.backfill[gpu] -= need
            self.lock.notify_all()

    def run(self, argv, env, limit, log):
        """(exit code or None on timeout, seconds) of argv, its output in log."""
        t0 = time.time()
        with open(log, "wb") as f:
            p = subprocess.Popen(argv, env=env, stdout=f, stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL, start_new_session=True)
            with self.lock:
                self.procs.add(p)
            try:
                rc = p.wait(timeout=max(1, limit))
            except subprocess.TimeoutExpired:
                rc = None
                self.kill(p)
            finally:
                with self.lock:
                    self.procs.discard(p)
        return rc, time.time() - t0

    @staticmethod
    def kill(p):
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        p.wait()

    def one(self, gpu, prob, need):
        a = self.a
        name = os.path.basename(prob)[:-3]
        level = os.path.dirname(prob) or "."
        rdir = os.path.join(a.work, level)
        os.makedirs(rdir, exist_ok=True)
        base = os.path.join(rdir, name)
        env = dict(os.environ, CUDA_VISIBLE_DEVICES=str(gpu), KEVO_PYTHON=a.python_standin)
        est = self.ests.get(prob) or {}
        r = {"problem": prob, "gpu": gpu, "est_gib": "%.3g" % (need / GIB),
             "t0": "%.1f" % (time.time() - self.start)}
        if est.get("ins") is not None and est.get("outs") is not None:
            r["est_gib"] += " (fp %.3g)" % ((est["ins"] + est["outs"]) / GIB)
        rc, secs = self.run([a.kevo, "import", os.path.join(a.kb_dir, prob), "--out", rdir,
                             "--force"], env, a.import_timeout, base + ".import.txt")
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
        rc, secs = self.run([a.kevo, "eval", base + ".yaml", base + ".stub.cu", "--json",
                             "--no-bench"], env, a.eval_timeout, base + ".eval.txt")
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
        if prob in a.loopback:
            self.loopback(prob, name, rdir, base, env)
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
                                 base + ".run"], env, a.run_timeout, base + ".run.txt")
        finally:
            srv.kill()
            srv.wait()
        out = open(base + ".run.txt", errors="replace").read().splitlines()
        keep = [ln.strip() for ln in out if re.search(r"vs PyTorch|best|verified|ms", ln)]
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
            try:
                r = self.one(gpu, prob, need)
            except Exception as e:  # noqa: BLE001: a row, whatever went wrong
                r = {"problem": prob, "gpu": gpu, "outcome": "eval_failed",
                     "detail": "sweep error %s: %s" % (type(e).__name__, e)}
            if self.stopping and r["outcome"] != "judged":
                r.update(outcome="timeout", detail="cut by the end of the sweep")
            # a failure beside other problems may be theirs (the GPU's memory was shared):
            # once more, alone on a GPU, when there is time
            # (only a failure that names memory: a retry drains the GPU)
            again = r["outcome"] in ("import_failed", "eval_failed", "refused") and \
                "memory" in r.get("detail", "").lower()
            with self.lock:
                if again and prob not in self.alone and need < self.a.capacity and \
                        not self.stopping:
                    self.alone.add(prob)
                    self.pending.insert(0, prob)
                    r = None
            if r is not None:
                self.row(r)
            self.done(gpu, need, fill)

    def sample_memory(self):
        """Every GPU's memory in use, each second, to OUT/kb_gpumem.tsv (t, gpu, MiB): what
        the reservations were against (their rows carry t0 and t1)."""
        with open(os.path.join(self.a.out, "kb_gpumem.tsv"), "a") as f:
            while not self.stopping:
                try:
                    out = subprocess.run(["nvidia-smi", "--query-gpu=index,memory.used",
                                          "--format=csv,noheader,nounits"], capture_output=True,
                                         text=True, timeout=10).stdout
                except (OSError, subprocess.SubprocessError):
                    return
                t = time.time() - self.start
                for ln in out.strip().splitlines():
                    f.write("%.1f\t%s\n" % (t, ln.replace(",", "\t").replace(" ", "")))
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
    lines.append("  %-13s %d" % ("not_run", n - len(seen)))
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
        if fp >= 0.5 and peak > 2 * fp:
            over.append("%s %.3g / %.3g GiB (its forward adds %s)" % (
                r["problem"], peak, fp, r.get("forward_gib", "?")))
    lines.append("  import peak over 2x the footprint (footprints of 0.5 GiB or more): %d%s" % (
        len(over), (": " + "; ".join(over)) if over else ""))
    for r in by.get("refused", []) + by.get("timeout", []) + by.get("import_failed", []) + \
            by.get("eval_failed", []):
        lines.append("  %s %s: %s" % (r["outcome"], r["problem"], r.get("detail", "")[:300]))
    text = "\n".join(lines) + "\n"
    print(text, flush=True)
    with open(os.path.join(out, "kb_summary.txt"), "w") as f:
        f.write(text)


def table(tsv, kb_dir):
    """The markdown table of a sweep's TSV (docs/kbench.md), in problem order, the last row of
    a problem kept."""
    rows = {}
    for line in open(tsv):
        c = line.rstrip("\n").split("\t")
        if len(c) >= 9:
            rows[c[0]] = c

    def order(p):
        m = re.match(r"\d+", os.path.basename(p))
        return (p.split("/")[0], int(m.group()) if m else 0)
    print("| problem | import s | import peak GPU GiB / footprint GiB | eval s | outcome |")
    print("| --- | --- | --- | --- | --- |")
    for p in sorted(rows, key=order):
        c = rows[p]
        mem = "%s / %s" % (c[3], c[4]) if c[3] != "-" else "-"
        detail = c[8].replace("|", "/")
        if c[7] == "judged":  # the verdict; the message says the same of every stub
            detail = "`%s`" % detail.split(":")[0]
        else:
            detail = re.sub(r"^exit \d+: (kevo import: )?(\S+\.py: )?", "", detail)[:220]
        print("| %s | %s | %s | %s | %s: %s |" % (p[:-3], c[2], mem, c[6], c[7], detail))


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
    ap.add_argument("--import-timeout", type=int, default=120)
    ap.add_argument("--eval-timeout", type=int, default=120)
    ap.add_argument("--run-timeout", type=int, default=240)
    ap.add_argument("--loopback", default="",
                    help="comma-separated problems also taken through kevo run with a "
                    "loopback LLM (elementwise ones: see ELEMENTWISE)")
    ap.add_argument("--estimate-s", type=float, default=20)
    ap.add_argument("--no-zygote", action="store_true", help="a fresh python per bridge")
    ap.add_argument("--table", metavar="TSV", help="print a sweep's TSV as markdown, and stop")
    a = ap.parse_args()
    if a.table:
        table(a.table, a.kb_dir)
        return 0
    started = time.time()
    gpus, total = gpu_list()
    if a.gpus:
        gpus = [int(g) for g in a.gpus.split(",")]
    a.gpus = gpus
    a.loopback = set(p for p in a.loopback.split(",") if p)
    a.capacity = 0.9 * total
    if a.slots <= 0:
        a.slots = max(1, min(10, (os.cpu_count() or 2) * 2 // 3 // len(gpus)))
    os.makedirs(a.out, exist_ok=True)
    a.out = os.path.abspath(a.out)
    a.work = os.path.abspath(a.work or os.path.join(a.out, "work"))
    os.makedirs(a.work, exist_ok=True)
    a.kevo = os.path.abspath(a.kevo) if os.sep in a.kevo else a.kevo
    if not a.problems or a.problems == ["all"]:
        def order(p):
            m = re.match(r"\d+", os.path.basename(p))
            return (p.split("/")[0], int(m.group()) if m else 0)
        problems = sorted((os.path.join(lv, f) for lv in ("level1", "level2", "level3")
                           if os.path.isdir(os.path.join(a.kb_dir, lv))
                           for f in os.listdir(os.path.join(a.kb_dir, lv)) if f.endswith(".py")),
                          key=order)
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
    ests = Estimates(a.kb_dir, [(p, os.path.join(a.kb_dir, p)) for p in problems],
                     a.estimate_s)
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
             for g in gpus for _ in range(a.slots)]
    threading.Thread(target=sw.sample_memory, daemon=True).start()
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
