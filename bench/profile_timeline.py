"""Where one profile's time goes (docs/profile.md "Cost"): run by bench/profile_cost.sh.

usage: profile_timeline.py KEVO CUBIN CAPDIR OUTDIR METRICS PIPES
KEVO_NCU must be the bench's wrapper, which keeps a timestamped copy of ncu's log per ncu run in
CAPDIR/N/ (stamped: "CLOCK_MONOTONIC-ms repr(bytes)" per chunk read; ended: ncu has exited).
METRICS: the worker's own metric set; PIPES: the pipe metrics to add to it.

1. the known kernels (tests/gpu/profile_kernels) in one batch (the pipe metrics added where the
   set lacks them), no standby: the reply (OUTDIR/known_h200.json, the CI fixture);
2. variants, each a fresh worker with a standby (the profile_standby op), one copy kernel alone
   (and a batch of eight), with the cuts on (the defaults) or off (KEVO_PROFILE_WARMUP,
   KEVO_PROFILE_FAST_EXIT, KEVO_PROFILE_EARLY_READ set to 0), or another metric set: the wall
   time, and the timeline of each request, ms since the worker got it: the worker's steps, the
   replay child's (the reply's "timeline"), and each chunk of ncu's log as it was written.
"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "gpu"))
from worker_client import Worker  # noqa: E402
import profile_worker as pw  # noqa: E402

T_START = time.monotonic()


def cap_runs(capdir):
    return sorted(int(d) for d in os.listdir(capdir) if d.isdigit())


def last_ended(capdir, after):
    """The latest ncu run that has ended among those started after index `after`."""
    best = None
    for n in cap_runs(capdir):
        e = os.path.join(capdir, str(n), "ended")
        if n > after and os.path.exists(e):
            if best is None or os.path.getmtime(e) >= os.path.getmtime(
                    os.path.join(capdir, str(best), "ended")):
                best = n
    return best


def log_events(capdir, n):
    """[(monotonic ms, text)] of ncu run n's log chunks."""
    out = []
    try:
        with open(os.path.join(capdir, str(n), "stamped")) as f:
            for line in f:
                t, _, rest = line.partition(" ")
                out.append((float(t), eval(rest).decode("utf-8", "replace")))  # noqa: S307
    except OSError:
        pass
    return out


def show(name, r, wall, capdir, n):
    tl = r.get("timeline") or {}
    print("%-22s ok=%s wall %.3f s, worker %s ms, standby=%s %s" % (
        name, r.get("ok"), wall, r.get("ms"), tl.get("standby"), r.get("error", "")))
    if r.get("detail"):
        print("  | " + r["detail"].replace("\n", "\n  | ")[:1500])
    ev = []
    for k in ("written", "go", "ncu_exit", "parsed"):
        if k in tl:
            ev.append((tl[k], "worker: " + k))
    child = tl.get("child") or {}
    for k, v in child.items():
        if isinstance(v, (int, float)):
            ev.append((v, "child: " + k))
    for i, p in enumerate(child.get("plans") or []):
        for k in ("start", "end"):
            if k in p:
                ev.append((p[k], "child: plan %d %s" % (i, k)))
    at = tl.get("at")
    text = ""
    if n is not None and at is not None:
        for t, chunk in log_events(capdir, n):
            text += chunk
            c = chunk.strip().replace("\n", " | ")
            ev.append((round(t - at, 1), "ncu log: " + (c[:110] + "..." if len(c) > 110 else c)))
    ev.sort(key=lambda x: x[0])
    prev = None
    for t, what in ev:
        if t < -5000:
            continue
        d = "" if prev is None else "(+%.1f)" % (t - prev)
        print("   %9.1f ms %-9s %s" % (t, d, what))
        prev = t
    return text


def variant(name, kevo, cubin, capdir, env_extra, seq, settle=3.0):
    env = dict(os.environ)
    env.update(env_extra)
    w = Worker(kevo, env=env)
    w.call({"op": "profile_standby"}, [], timeout=20)
    walls = []
    for label, plans in seq:
        time.sleep(settle)  # the standby starts: ncu, the child's CUDA set-up (its timeline)
        t0 = time.monotonic()
        r = w.call(pw.request(plans), [cubin, cubin], timeout=60)
        wall = time.monotonic() - t0
        time.sleep(0.05)
        n = last_ended(capdir, 0)  # the standby's ncu that served it (the next has not ended)
        show("%s: %s" % (name, label), r, wall, capdir, n)
        walls.append(wall)
    w.close()
    return walls


def main():
    kevo, cubin_path, capdir, out, metrics, pipes = sys.argv[1:7]
    cubin = open(cubin_path, "rb").read()
    known = pw.plans_known()
    full = ",".join(dict.fromkeys(metrics.split(",") + pipes.split(",")))  # no name twice
    budget = float(os.environ.get("BUDGET_S", "80"))

    print("== 1. the known kernels, one batch, no standby")
    env = dict(os.environ, KEVO_NCU_METRICS=full, KEVO_PROFILE_KEEP_CSV="1")
    w = Worker(kevo, env=env)
    t0 = time.monotonic()
    r = w.call(pw.request(known), [cubin, cubin], timeout=60)
    wall = time.monotonic() - t0
    w.close()
    time.sleep(0.05)
    csv = r.pop("csv", "")
    with open(os.path.join(out, "known_h200.json"), "w") as f:
        json.dump(r, f, indent=1)
    with open(os.path.join(out, "known_h200.csv"), "w") as f:
        f.write(csv)
    text = show("known batch", r, wall, capdir, last_ended(capdir, 0))
    for p in r.get("plans") or []:
        ks = p.get("kernels") or [{}]
        m = ks[0].get("metrics", {})
        print("  %-12s %-16s %d metrics; pipes: %s %s" % (
            p["label"], ks[0].get("name", "-")[:16], len(m),
            " ".join("%s=%.0f" % (k.split("__")[1].split(".")[0], v)
                     for k, v in m.items() if k.startswith("sm__") and "pipe_" in k and
                     "tensor" not in k or
                     k.startswith("sm__issue")),
            p.get("error", "")))
    missing = [x for x in pipes.split(",") if csv and x not in csv]
    print("pipe metrics not in the CSV: %s" % (missing or "none"))
    del text

    one = known[1:2]
    eight = [("copy%d" % i, "candidate", known[1][2]) for i in range(8)]
    off = {"KEVO_PROFILE_WARMUP": "0", "KEVO_PROFILE_FAST_EXIT": "0",
           "KEVO_PROFILE_EARLY_READ": "0"}
    no_thr = ",".join(m for m in full.split(",") if "throughput" not in m)
    variants = [  # the defaults: every cut on, the pipe metrics in the set
        ("defaults", {}, [("alone", one), ("alone again", one), ("eight", eight)]),
        ("cuts off", off, [("alone", one), ("alone again", one)]),
        ("no warm-up", {"KEVO_PROFILE_WARMUP": "0"}, [("alone", one)]),
        ("no throughput metrics", {"KEVO_NCU_METRICS": no_thr}, [("alone", one)]),
        ("1metric", {"KEVO_NCU_METRICS": "gpu__time_duration.sum"}, [("alone", one)]),
    ]
    summary = []
    for name, extra, seq in variants:
        if time.monotonic() - T_START > budget - 4 - 4.5 * len(seq):
            print("%s: skipped (budget)" % name)
            continue
        print("== 2. %s %s" % (name, " ".join("%s=%s" % kv for kv in extra.items()
                                              if kv[0] != "KEVO_NCU_METRICS")))
        walls = variant(name, kevo, cubin, capdir, extra, seq)
        summary.append((name, walls))
    print("== summary: wall of each request (s)")
    for name, walls in summary:
        print("  %-20s %s" % (name, "  ".join("%.3f" % x for x in walls)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
