"""GPU test of KernelBench problems (tests/gpu/test_kbench.sh): kevo import with real torch,
then the external-reference path end to end: the worker draws a trial's inputs (`inputs`), the
PyTorch bridge (python/kb_bridge.py serve) computes the reference outputs for exactly those,
the worker caches them (`put_reference`) and judges hand-written CUDA kernels against them
(`evaluate` with reference {"external": key}); then the bridge times eager and torch.compile.

usage: kbench_test.py KEVO SRC CUBIN_DIR [OUT_DIR]   (OUT_DIR: descriptions are saved there)
"""
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

KEVO, SRC, CUBINS = sys.argv[1], sys.argv[2], sys.argv[3]
OUTDIR = sys.argv[4] if len(sys.argv) > 4 else None
PROBLEMS = os.path.join(SRC, "tests", "kbench")
BRIDGE = os.path.join(SRC, "python", "kb_bridge.py")
failures = []
table = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)
    return cond


class Peer:
    """Frames over a child's stdin/stdout: the worker and the bridge speak the same protocol."""

    def __init__(self, argv):
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.next_id = 1

    def _read(self, n):
        out = b""
        while len(out) < n:
            chunk = self.p.stdout.read(n - len(out))
            if not chunk:
                raise RuntimeError("peer closed its stdout (exit %s)" % self.p.poll())
            out += chunk
        return out

    def call(self, header, blobs=()):
        header = dict(header, id=self.next_id, blobs=[len(b) for b in blobs])
        self.next_id += 1
        text = json.dumps(header).encode()
        self.p.stdin.write(struct.pack("<I", len(text)) + text + b"".join(blobs))
        self.p.stdin.flush()
        (n,) = struct.unpack("<I", self._read(4))
        reply = json.loads(self._read(n))
        rblobs = [self._read(s) for s in reply.get("blobs", [])]
        if reply.get("id") != header["id"]:
            raise RuntimeError("reply id %r for %r" % (reply.get("id"), header["id"]))
        return reply, rblobs

    def close(self):
        """Says bye and returns the exit status (None: it had to be killed after 30 s)."""
        try:
            self.call({"op": "bye"})
            self.p.stdin.close()
        except Exception:
            pass
        try:
            return self.p.wait(30)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
            return None


def parse_init(spec):
    m = re.match(r"^(normal|uniform|randint)(?:\(\s*([^,]+)\s*,\s*([^)]+)\))?$", spec)
    if not m:
        raise ValueError("init %r" % spec)
    d = {"kind": m.group(1)}
    if m.group(2):
        d["a"], d["b"] = float(m.group(2)), float(m.group(3))
    return d


def plan_of(desc_path):
    out = subprocess.run([KEVO, "script", os.path.join(SRC, "tests", "gpu", "kbench_plan.lua"),
                          desc_path], capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(out.stderr)
    return json.loads(out.stdout)


def request(plan, cubin_kernel, bench):
    tensors, numel, dims = [], {}, {}
    for t in plan["tensors"]:
        tj = {"name": t["name"], "dtype": t["dtype"], "role": t["role"]}
        if t["role"] == "input":
            tj["init"] = parse_init(t["init"])
        tensors.append(tj)
        n = 1
        for v in t["shape"]:
            n *= v
        numel[t["name"]] = n
        dims[t["name"]] = t["shape"]
    params = {p["name"]: p["value"] for p in plan["params"]}
    out0 = [t for t in plan["tensors"] if t["role"] == "output"][0]
    args = [{"buf": t["name"]} for t in plan["tensors"]] + [{"i32": p["value"]} for p in plan["params"]]
    cand = {"kernels": [{"module": 0, "name": cubin_kernel, "grid": [-(-numel[out0["name"]] // 256)],
                         "block": [256], "args": args}]}
    shape = {"label": ",".join("%s=%d" % kv for kv in params.items()) or "bench", "params": params,
             "numel": numel, "dims": dims, "candidate": cand,
             "reference": {"external": "kb:" + plan["name"]}}
    tol = plan.get("tolerance") or 1e-5
    return {"op": "evaluate", "modules": [{"blob": 0, "role": "candidate"}], "tensors": tensors,
            "shapes": [shape],
            "verify": {"trials": 5, "seed": 7, "tolerance": {"f32": {"atol": tol, "rtol": tol}}},
            "bench": {"enabled": bench, "warmup_ms": 25, "max_ms": 1000},
            "cost": {"bytes": sum(numel[t["name"]] * 4 for t in plan["tensors"])}}


def supply(worker, bridge, req, missing):
    """What torchref_supply does in the driver: inputs -> bridge reference -> put_reference."""
    for m in missing:
        base = {k: req[k] for k in ("tensors", "shapes", "verify")}
        r, ins = worker.call(dict(base, op="inputs", shape=m["shape"], trial=m["trial"]))
        if not r.get("ok"):
            raise RuntimeError("inputs: %s" % r)
        specs = [{"name": t["name"], "dtype": t["dtype"],
                  "shape": req["shapes"][m["shape"]]["dims"][t["name"]]}
                 for t in req["tensors"] if t["role"] == "input"]
        r, outs = bridge.call({"op": "reference", "tensors": specs}, ins)
        if not r.get("ok"):
            raise RuntimeError("bridge: %s" % r)
        r, _ = worker.call(dict(base, op="put_reference", shape=m["shape"], trial=m["trial"]), outs)
        if not r.get("ok"):
            raise RuntimeError("put_reference: %s" % r)
    return len(missing)


def evaluate(worker, bridge, req, cubin):
    blob = open(cubin, "rb").read()
    r, _ = worker.call(req, [blob])
    if r.get("missing"):
        n = supply(worker, bridge, req, r["missing"])
        r2, _ = worker.call(req, [blob])
        return r2, n
    return r, 0


def main():
    tmp = tempfile.mkdtemp()
    env = dict(os.environ, KEVO_PYTHON=sys.executable)
    # 1. import with real torch
    for name in ("relu", "sum_dim", "matmul", "conv2d", "linear_relu"):
        src = os.path.join(PROBLEMS, name + ".py")
        p = subprocess.run([KEVO, "import", src, "--out", tmp, "--force"], env=env,
                           capture_output=True, text=True)
        check(p.returncode == 0, "kevo import %s (exit %d) %s" % (name, p.returncode, p.stderr[-400:]))
        c = subprocess.run([KEVO, "check", os.path.join(tmp, name + ".yaml")], capture_output=True,
                           text=True)
        check(c.returncode == 0, "kevo check %s: %s" % (name, (c.stdout + c.stderr)[-300:]))
        if OUTDIR and p.returncode == 0:
            shutil.copy(os.path.join(tmp, name, "description.json"),
                        os.path.join(OUTDIR, name + ".json"))
    # the float64 tolerance pass on what a converted copy of the model missed: tensors forward
    # makes, plain tensor attributes, a module a lambda holds; and a shared dimension 0 that is
    # no batch (two square matrices). Each is measured against float64, on the whole input.
    for name in ("f64_square_matmul", "f64_forward_makes", "f64_plain_attrs"):
        d = subprocess.run([sys.executable, BRIDGE, "describe", os.path.join(PROBLEMS, name + ".py")],
                           capture_output=True, text=True)
        try:
            tol = json.loads(d.stdout)["tolerance"]
        except (ValueError, KeyError):
            tol = {"why": "no description: " + d.stderr.strip()[-300:]}
        check(tol.get("f32") is not None and "subsample" not in tol,
              "%s: the tolerance is measured against float64 on every row: %s" % (name, tol))
    for name in ("degenerate_zero", "degenerate_weights"):
        p = subprocess.run([KEVO, "import", os.path.join(PROBLEMS, name + ".py"), "--out", tmp],
                           env=env, capture_output=True, text=True)
        check(p.returncode == 2 and "degenerate" in p.stderr,
              "%s refused (exit %d): %s" % (name, p.returncode, p.stderr.strip()[-300:]))
        if OUTDIR:  # the description, for the CI test of the refusal
            d = subprocess.run([sys.executable, BRIDGE, "describe", os.path.join(PROBLEMS, name + ".py")],
                               capture_output=True)
            open(os.path.join(OUTDIR, name + ".json"), "wb").write(d.stdout)

    # 2. kevo eval on the imported recipes, every kernel of tests/gpu/kbench_kernels (P_ok.cu
    # must be judged ok, P_wrong.cu wrong): the C driver supplies the references through the
    # bridge. Only relu_ok is timed (eager and torch.compile beside the kernel): the other
    # problems' baselines are measured by test_kbench_run.sh, and each costs a torch.compile.
    kdir = os.path.join(SRC, "tests", "gpu", "kbench_kernels")
    for f in sorted(os.listdir(kdir)):
        if not f.endswith(".cu"):
            continue
        kern = f[:-3]
        prob, want = kern.rsplit("_", 1)
        timed = kern == "relu_ok"
        p = subprocess.run([KEVO, "eval", os.path.join(tmp, prob + ".yaml"), os.path.join(kdir, f),
                            "--json"] + ([] if timed else ["--no-bench"]),
                           env=env, capture_output=True, text=True)
        try:
            res = json.loads(p.stdout)
        except ValueError:
            res = {"verdict": "unparsed", "message": (p.stdout + p.stderr)[-400:]}
        b = res.get("bench", {})
        check(res.get("verdict") == want, "kevo eval %s %s: %s %s" % (prob, kern, res.get("verdict"),
                                                                     res.get("message", "")[:200]))
        if timed:
            check(b.get("eager_ms", 0) > 0 and b.get("speedup", 0) > 0 and "compiled_ms" in b,
                  "kevo eval %s: %.4f ms, eager %s ms (%.2fx), torch.compile %s ms (%sx) %s" % (
                      prob, b.get("median_ms", 0), b.get("eager_ms"), b.get("speedup", 0),
                      b.get("compiled_ms"), b.get("speedup_compiled"), b.get("compile_error", "")))
            # the baselines are GPU time, Python's issue overhead hidden: torch.compile's ReLU is
            # one elementwise kernel like eager's, so its time is near eager's, not 3-6x it
            comp, eag = b.get("compiled_ms") or 0, b.get("eager_ms") or 0
            check(0 < comp < 1.5 * eag, "relu: torch.compile %.4g ms within 1.5x of eager %.4g ms "
                  "(Python's issue time, hidden: eager %s ms, torch.compile %s ms)"
                  % (comp, eag, b.get("eager_host_ms"), b.get("compiled_host_ms")))
            table.append((prob, kern + " (eval)", b.get("median_ms"), b.get("eager_ms"),
                          b.get("compiled_ms"), b.get("compile_s")))

    # 3. the protocol step by step, against the PyTorch reference
    worker = Peer([KEVO, "worker"])
    hello, _ = worker.call({"op": "hello"})
    check(hello.get("ok"), "worker hello: %s" % hello.get("device", hello).get("name", hello))
    cases = [("relu", "relu_ok", "relu_kernel", "ok"), ("relu", "relu_wrong", "relu_kernel", "wrong"),
             ("sum_dim", "sum_dim_ok", "sum_dim_kernel", "ok"),
             ("linear_relu", "linear_relu_ok", "linear_relu_kernel", "ok")]
    bridges = {}
    for prob, cubin, kernel, want in cases:
        desc = os.path.join(tmp, prob, "description.json")
        plan = plan_of(desc)
        if prob not in bridges:
            bridges[prob] = Peer([sys.executable, BRIDGE, "serve", os.path.join(PROBLEMS, prob + ".py")])
        req = request(plan, kernel, bench=(want == "ok" and prob == "relu"))
        r, supplied = evaluate(worker, bridges[prob], req, os.path.join(CUBINS, cubin + ".cubin"))
        check(r.get("verdict") == want,
              "%s on %s: %s (%d references supplied) %s" % (cubin, prob, r.get("verdict"), supplied,
                                                           r.get("message", "")[:300]))
        if want == "ok" and prob == "relu":  # the bridge's baseline op, once
            b = r.get("bench", {})
            br, _ = bridges[prob].call({"op": "baseline", "tensors": [
                {"name": t["name"], "dtype": t["dtype"], "shape": req["shapes"][0]["dims"][t["name"]]}
                for t in req["tensors"] if t["role"] == "input"], "bench": req["bench"]},
                worker.call(dict({k: req[k] for k in ("tensors", "shapes", "verify")}, op="inputs",
                                 shape=0, trial=4))[1])
            eager = br.get("eager", {}).get("median_ms")
            comp = br.get("compiled", {}).get("median_ms")
            check(br.get("ok") and eager, "baseline %s: eager %s ms, compiled %s ms %s" %
                  (prob, eager, comp, br.get("compile_error", "")))
            med = b.get("median_ms")
            table.append((prob, cubin, med, eager, comp, br.get("compile_s")))
        if want == "ok":
            # a second evaluation finds every reference cached: nothing supplied
            r2, again = evaluate(worker, bridges[prob], dict(req, bench={"enabled": False}),
                                 os.path.join(CUBINS, cubin + ".cubin"))
            check(r2.get("verdict") == "ok" and again == 0,
                  "%s again: %s, %d supplied (all cached)" % (cubin, r2.get("verdict"), again))
    # a reference for another seed is missing until supplied
    plan = plan_of(os.path.join(tmp, "relu", "description.json"))
    req = request(plan, "relu_kernel", bench=False)
    req["verify"]["seed"] = 8
    r, _ = worker.call(req, [open(os.path.join(CUBINS, "relu_ok.cubin"), "rb").read()])
    check(r.get("verdict") == "error" and len(r.get("missing", [])) == 5,
          "new seed: %s, %d missing: %s" % (r.get("verdict"), len(r.get("missing", [])),
                                            r.get("message", "")[:120]))
    for name, b in bridges.items():
        rc = b.close()
        check(rc == 0, "the %s bridge exits 0 after bye (%s)" % (name, rc))
    # the worker frees every cached reference (put_reference's too) on the way out
    rc = worker.close()
    check(rc == 0, "the worker exits 0 after bye (%s)" % rc)
    shutil.rmtree(tmp)
    print("\n%-12s %-16s %12s %12s %12s %10s" % ("problem", "kernel", "kevo ms", "eager ms",
                                                  "compiled ms", "compile s"))
    for row in table:
        print("%-12s %-16s %12s %12s %12s %10s" % row)
    print("\n%d failure(s)" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
