"""The worker's profile op on kernels whose bottleneck is known (tests/gpu/profile_kernels).

usage: profile_worker.py KEVO CUBIN OUTDIR [--standby]
Sends one batch (the reference copy and the six known kernels), then a single plan and a batch
of eight copies (for the time per candidate), then a request with no ncu (must say why); with
--standby, also the single plan and the eight again to one worker with a standby (ncu started
ahead: the profile_standby op, docs/profile.md "Cost"), timing the requests only. Writes
each reply to OUTDIR/profile_*.json (the batch's CSV too: ncu's own output, the recorded metric
set tests/fixtures/ncu/ holds) and prints the times. Exit 1 when a reply is not as it must be.
"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from worker_client import Worker, plan  # noqa: E402

N = 1 << 26          # floats in x and y (256 MiB each)
SMALL = 1 << 20      # threads of the slow kernels


def B(name):  # a buffer argument, as the plan format has it
    return {"buf": name}


def plans_known():
    n4 = N // 4
    return [
        ("reference", "reference", plan(1, "copy_vec4", [n4 // 256], [256],
                                        [B("x"), B("y"), {"i64": n4}])),
        ("copy", "candidate", plan(0, "copy_vec4", [n4 // 256], [256],
                                   [B("x"), B("y"), {"i64": n4}])),
        ("bank", "candidate", plan(0, "bank_conflicts", [SMALL // 256], [256],
                                   [B("x"), B("y"), {"i64": SMALL}])),
        ("registers", "candidate", plan(0, "register_heavy", [4 * SMALL // 256], [256],
                                        [B("x"), B("y"), {"i64": 4 * SMALL}])),
        ("uncoalesced", "candidate", plan(0, "uncoalesced", [N // 32 // 256], [256],
                                          [B("x"), B("y"), {"i64": N}])),
        ("tensor", "candidate", plan(0, "tensor_mma", [132 * 8], [128],
                                     [B("h"), B("y"), {"i32": 4096}])),
        ("fma", "candidate", plan(0, "fma_chains", [SMALL // 256], [256],
                                  [B("x"), B("y"), {"i64": SMALL}, {"i32": 2048}])),
    ]


def request(plans):
    return {"op": "profile",
            "modules": [{"blob": 0, "role": "candidate"}, {"blob": 1, "role": "reference"}],
            "tensors": [{"name": "x", "dtype": "f32", "role": "input",
                         "init": {"kind": "normal", "a": 0, "b": 1}},
                        {"name": "h", "dtype": "f16", "role": "input",
                         "init": {"kind": "uniform", "a": -1, "b": 1}},
                        {"name": "y", "dtype": "f32", "role": "output"}],
            "shapes": [{"label": "N=%d" % N, "params": {"N": N},
                        "numel": {"x": N, "h": 512, "y": N}}],
            "profile": {"deadline_ms": 60000,
                        "plans": [{"label": lab, "role": role, "plan": p}
                                  for lab, role, p in plans]}}


def main():
    kevo, cubin_path, out = sys.argv[1], sys.argv[2], sys.argv[3]
    cubin = open(cubin_path, "rb").read()
    bad = 0

    def run(name, plans, env_extra=None):
        env = dict(os.environ)
        env.update(env_extra or {})
        w = Worker(kevo, env=env)
        t0 = time.time()
        r = w.call(request(plans), [cubin, cubin], timeout=120)
        wall = time.time() - t0
        w.close()
        if "csv" in r:
            with open(os.path.join(out, "profile_%s.csv" % name), "w") as f:
                f.write(r.pop("csv"))
        with open(os.path.join(out, "profile_%s.json" % name), "w") as f:
            json.dump(r, f, indent=1)
        print("%-10s %d plans: ok=%s %.2f s wall (worker says %s ms) %s" % (
            name, len(plans), r.get("ok"), wall, r.get("ms"), r.get("error", "")))
        if r.get("detail"):  # what ncu and the replay child said last
            print("  | " + r["detail"].replace("\n", "\n  | "))
        return r, wall

    known = plans_known()
    r, _ = run("batch", known, {"KEVO_PROFILE_KEEP_CSV": "1"})
    if r.get("reason") in ("unsupported", "permission"):
        print("SKIPPED: ncu cannot read the counters here: %s" % r.get("error"), file=sys.stderr)
        return 77
    if not r.get("ok"):
        bad += 1
    else:
        for p in r["plans"]:
            ks = p.get("kernels") or []
            m = ks[0]["metrics"] if ks else {}
            print("  %-12s %s %d metrics %s" % (p["label"], ks[0]["name"] if ks else "-", len(m),
                                              p.get("error", "")))
            if not ks or len(m) < 20:
                bad += 1
    r1, t1 = run("single", known[1:2])
    r8, t8 = run("eight", [("copy%d" % i, "candidate", known[1][2]) for i in range(8)])
    if r1.get("ok") and r8.get("ok"):
        print("time per candidate: %.2f s alone, %.3f s each in a batch of 8, %.3f s marginal"
              % (t1, t8 / 8, (t8 - t1) / 7))
    if "--standby" in sys.argv[4:]:
        w = Worker(kevo)
        w.call({"op": "profile_standby"}, [], timeout=20)
        times = []
        for name, plans in (("standby_single", known[1:2]), ("standby_eight", [
                ("copy%d" % i, "candidate", known[1][2]) for i in range(8)]),
                ("standby_single2", known[1:2])):
            time.sleep(4.5)  # the standby starts: ncu, the child's CUDA set-up
            t0 = time.time()
            r = w.call(request(plans), [cubin, cubin], timeout=120)
            times.append(time.time() - t0)
            print("%-16s %d plans: ok=%s %.2f s wall (worker says %s ms) %s" % (
                name, len(plans), r.get("ok"), times[-1], r.get("ms"), r.get("error", "")))
            if not r.get("ok"):
                bad += 1
        w.close()
        print("with a standby: %.2f s alone (%.2f s again), %.3f s each in a batch of 8"
              % (times[0], times[2], times[1] / 8))
    rn, _ = run("no_ncu", known[1:2], {"KEVO_NCU": "/nonexistent/ncu"})
    if rn.get("ok") or rn.get("reason") != "no_tool":
        print("no ncu: expected reason no_tool, got %r" % rn)
        bad += 1
    print("FAILED: %d" % bad if bad else "profile_worker: all good")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
