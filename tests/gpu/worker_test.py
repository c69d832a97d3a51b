"""GPU tests of `kevo worker`: each kernel in tests/gpu/kernels gets the verdict it deserves.

usage: worker_test.py KEVO CUBIN_DIR   (run by test_worker.sh after it builds the cubins)
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from worker_client import Worker, WorkerError, plan  # noqa: E402

KEVO, CUBINS = sys.argv[1], sys.argv[2]
VADD = open(os.path.join(CUBINS, "vector_add.cubin"), "rb").read()
SOFTMAX = open(os.path.join(CUBINS, "softmax.cubin"), "rb").read()
BENCH = {"enabled": True, "warmup_ms": 25, "max_ms": 1500, "min_reps": 20, "max_reps": 2000,
         "target_rse": 0.01, "l2_flush": True}
results = []
fails = 0


def cdiv(a, b):
    return (a + b - 1) // b


def vadd_request(name, sizes, dtype="f32", block=256, vec=1, shared=0, bench=None, cost_scale=1,
                 init=None, ref_name="add_ref"):
    """Candidate `name` from vector_add.cubin against add_ref (or ref_name) on every size."""
    esz = {"f32": 4, "bf16": 2, "i32": 4}[dtype]
    init = init or {"kind": "normal", "a": 0, "b": 1}
    shapes = []
    for n in sizes:
        args = [{"buf": "a"}, {"buf": "b"}, {"buf": "c"}, {"i32": n}]
        shapes.append({
            "label": "N=%d" % n, "params": {"N": n},
            "numel": {"a": n, "b": n, "c": n}, "dims": {"a": [n], "b": [n], "c": [n]},
            "candidate": plan(0, name, [max(1, cdiv(cdiv(n, vec), block))], [block], args,
                              shared=shared),
            "reference": plan(1, ref_name, [cdiv(n, 256)], [256], args)})
    req = {"op": "evaluate",
           "modules": [{"blob": 0, "role": "candidate"}, {"blob": 1, "role": "reference"}],
           "tensors": [{"name": "a", "dtype": dtype, "role": "input", "init": init},
                       {"name": "b", "dtype": dtype, "role": "input", "init": init},
                       {"name": "c", "dtype": dtype, "role": "output"}],
           "shapes": shapes,
           "verify": {"trials": 5, "seed": 7, "tolerance": {"f32": {"atol": 1e-6, "rtol": 1e-6}}},
           "bench": bench or {"enabled": False},
           "cost": {"bytes": 3 * sizes[0] * esz * cost_scale, "flops": sizes[0]}}
    return req, [VADD, VADD]


def softmax_request(name, shapes_mn, block=256):
    shapes = []
    for m, n in shapes_mn:
        args = [{"buf": "x"}, {"buf": "y"}, {"i32": m}, {"i32": n}]
        shapes.append({
            "label": "M=%d,N=%d" % (m, n), "params": {"M": m, "N": n},
            "numel": {"x": m * n, "y": m * n}, "dims": {"x": [m, n], "y": [m, n]},
            "candidate": plan(0, name, [m], [block], args, shared=block * 4),
            "reference": plan(1, "softmax_ref", [cdiv(m, 128)], [128], args)})
    req = {"op": "evaluate",
           "modules": [{"blob": 0, "role": "candidate"}, {"blob": 1, "role": "reference"}],
           "tensors": [{"name": "x", "dtype": "f32", "role": "input",
                        "init": {"kind": "normal", "a": 0, "b": 3}},
                       {"name": "y", "dtype": "f32", "role": "output"}],
           "shapes": shapes,
           "verify": {"trials": 5, "seed": 11, "tolerance": {"f32": {"atol": 1e-6, "rtol": 1e-4}}},
           "bench": {"enabled": False}, "cost": {"bytes": 8 * shapes_mn[0][0] * shapes_mn[0][1]}}
    return req, [SOFTMAX, SOFTMAX]


def check(label, cond, detail=""):
    global fails
    print(("ok   " if cond else "FAIL ") + label + ((" -- " + detail) if detail else ""),
          flush=True)
    if not cond:
        fails += 1


class Pool:
    """One live worker; a fresh one after a crash, as the driver does."""

    def __init__(self):
        self.w = None
        self.started = 0

    def get(self):
        if self.w is None:
            self.w = Worker(KEVO)
            self.started += 1
        return self.w

    def evaluate(self, req, blobs, timeout=300):
        w = self.get()
        t = time.time()
        res = w.call(req, blobs, timeout=timeout)
        res["_wall"] = time.time() - t
        if res.get("verdict") == "crash":
            res["_exit"] = w.wait(30)
            self.w = None
        return res


pool = Pool()
hello = pool.get().call({"op": "hello"}, timeout=120)
check("hello", hello.get("ok") is True, str(hello))
if not hello.get("ok"):
    sys.exit(1)
dev = hello["device"]
print("device: %s cc %s, %d SMs, %.1f GiB, L2 %.0f MiB, driver %d, copy %.0f GB/s, "
      "peak %.0f TFLOP/s (stated), clock %d MHz" % (
          dev["name"], dev["cc"], dev["sms"], dev["mem_bytes"] / 2**30, dev["l2_bytes"] / 2**20,
          dev["driver"], dev["copy_gbps"], dev["peak_tflops"], dev["clock_mhz"]), flush=True)

SMALL = [1000003, 1, 4097]  # the benchmark shape first, then sizes no tile divides
BIG = 1 << 25


def case(label, req_blobs, want, stage=None, extra=None):
    req, blobs = req_blobs
    try:
        res = pool.evaluate(req, blobs)
    except WorkerError as e:
        check(label, False, "worker error: %s" % e)
        pool.w = None
        return None
    ok = res.get("verdict") in (want if isinstance(want, tuple) else (want,))
    if ok and stage:
        ok = res.get("stage") == stage
    if ok and extra:
        ok = extra(res)
    check(label, ok, "%s/%s: %s (%.2fs)" % (res.get("verdict"), res.get("stage"),
                                              res.get("message"), res["_wall"]))
    results.append((label, res))
    return res


case("correct add", vadd_request("add", SMALL), "ok", "done",
     lambda r: r["verify"]["trials"] == 15 and r["verify"]["shapes"] == 3)
secret, secret_blobs = vadd_request("add", SMALL)
del secret["verify"]["seed"]
for sh in secret["shapes"]:  # one stress trial per shape: values near f32's limit
    sh["stress"] = [{"a": {"kind": "uniform", "a": -1e38, "b": 1e38},
                     "b": {"kind": "uniform", "a": -1e38, "b": 1e38}}]
case("secret seed and a stress trial", (secret, secret_blobs), "ok", "done",
     lambda r: r["verify"]["seed"] == "secret" and r["verify"]["stress_trials"] == 3)
case("add with device printf", vadd_request("add_printf", SMALL), "ok")
case("does nothing", vadd_request("add_nothing", SMALL), "unwritten", "verify",
     lambda r: r["verify"]["worst"]["flat"] == 0)
case("writes half", vadd_request("add_half", SMALL), "unwritten", "verify",
     lambda r: r["verify"]["worst"]["index"][0] >= 0)
case("modifies an input", vadd_request("add_modify_input", SMALL), "input_modified", "verify",
     lambda r: "input a" in r["message"])
case("wrong at one element", vadd_request("add_wrong_one", SMALL), "wrong", "verify",
     lambda r: r["verify"]["mismatches"] == 1 and r["verify"]["worst"]["tensor"] == "c"
     and r["verify"]["worst"]["index"] == [r["verify"]["worst"]["flat"]]
     and abs(r["verify"]["worst"]["abs_err"] - 0.5) < 1e-3)
case("writes one element past the end", vadd_request("add_past_end", SMALL), "wrong", "verify",
     lambda r: "past the end of output c" in r["message"])
case("time-dependent", vadd_request("add_nondet", [SMALL[0]]), "nondeterministic", "verify")
case("2048 threads per block", vadd_request("add", SMALL, block=2048), "launch_error", "verify",
     lambda r: "CUDA_ERROR_INVALID_VALUE" in r["message"])
case("same worker, next good kernel", vadd_request("add", SMALL), "ok",
     extra=lambda r: pool.started == 1)
case("300 KiB dynamic shared memory", vadd_request("add", SMALL, shared=300 * 1024),
     "launch_error", "verify")
case("missing kernel name", vadd_request("add_missing", SMALL), "launch_error", "verify",
     lambda r: "add_missing" in r["message"])
case("bf16 add", vadd_request("add_bf16", SMALL, dtype="bf16", ref_name="add_bf16"), "ok")
randint = {"kind": "randint", "a": -1000, "b": 1000}
case("i32 add", vadd_request("add_i32", SMALL, dtype="i32", init=randint, ref_name="add_i32"),
     "ok")
case("i32 off by one at the end", vadd_request("add_i32_off", SMALL, dtype="i32", init=randint,
                                               ref_name="add_i32"), "wrong", "verify",
     lambda r: r["verify"]["worst"]["flat"] == int(r["verify"]["worst"]["shape"][2:]) - 1
     and r["verify"]["worst"]["abs_err"] == 1)
case("softmax, block per row", softmax_request("softmax_block", [(4096, 1000), (1, 8193), (127, 1)]),
     "ok")
case("softmax without barriers", softmax_request("softmax_racy", [(4096, 1000), (1, 8193)]),
     ("wrong", "nondeterministic"), "verify")
case("skips work after 40 calls", vadd_request("add_skip_after", [BIG], bench=BENCH), "wrong",
     "bench", lambda r: "repetition" in r["message"])
good = case("bench: plain add vs reference", vadd_request("add", [BIG, 4097], bench=BENCH), "ok",
            "done", lambda r: r["bench"]["input_sets"] == 3 and r["bench"]["ref_alone_ms"] > 0)
vec = case("bench: float4 add vs reference",
           vadd_request("add_vec4", [BIG, 4097, 5, 1], bench=BENCH, vec=4), "ok", "done")
case("cost claims 100x the bytes", vadd_request("add", [BIG], bench=BENCH, cost_scale=100),
     "implausible", "bench")
crashes_before = pool.started
case("null pointer write", vadd_request("add_null", SMALL), "crash", "verify",
     lambda r: "ILLEGAL_ADDRESS" in r["message"] and r["_exit"] != 0)
case("fresh worker after the crash judges a good kernel", vadd_request("add", SMALL), "ok",
     extra=lambda r: pool.started == crashes_before + 1)
case("trap", vadd_request("add_trap", SMALL), "crash", "verify",
     lambda r: r["_exit"] != 0)
case("and again a fresh worker", vadd_request("add_vec4", SMALL, vec=4), "ok")
if pool.w:
    check("bye", pool.w.close() == 0)

print("\n%-44s %-16s %-7s %9s %9s %8s %7s %7s %6s %5s" % (
    "case", "verdict", "stage", "med ms", "ref ms", "speedup", "GB/s", "%roof", "MHz", "degC"))
for label, r in results:
    b = r.get("bench") or {}
    print("%-44s %-16s %-7s %9s %9s %8s %7s %7s %6s %5s" % (
        label[:44], r.get("verdict"), r.get("stage"), b.get("median_ms", ""),
        b.get("ref_median_ms", ""), b.get("speedup", ""), b.get("gbps", ""),
        b.get("roofline_pct", ""), b.get("sm_clock_mhz", ""), b.get("temp_c", "")))
for label, r in ((l, r) for l, r in results if r.get("bench")):
    b = r["bench"]
    print("%s: reps %d rse %.4f ref_rse %.4f p10 %.4f p90 %.4f floor %.4f ms, verify %.0f ms, "
          "total %.0f ms" % (label, b["reps"], b["rse"], b["ref_rse"], b["p10_ms"], b["p90_ms"],
                             b["floor_ms"], r["verify"]["ms"], r["ms"]))
print("\n%d failed" % fails)
sys.exit(1 if fails else 0)
