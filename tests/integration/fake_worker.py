#!/usr/bin/env python3
"""A stand-in evaluator worker for tests without a GPU. It speaks the real frame protocol
(runtime/proto.h: u32 LE header length, JSON header, announced blobs) and misbehaves on
purpose, as chosen by argv:

  fake_worker.py MODE [STATE_FILE]
    ok       hello with a fake device; evaluate checks the request's shape and answers ok
             (or, in ok mode, by the candidate's kernel name: one containing "wrong" gets a
             wrong verdict with a worst element, "slow" a 2x slower time)
    nogpu    hello says E_NOGPU
    hang     evaluate never replies
    die      evaluate writes half a reply, then exits 3
    garbage  evaluate answers with bytes that are no frame
    crash    evaluate answers verdict crash, then exits
  MODE-once STATE: misbehaves only while STATE does not exist (and creates it), then acts as
  ok: for testing that the next worker works.

KEVO_FAKE_CC=8,0 makes the device another architecture (cc [8, 0]).

profile: with $KEVO_FAKE_PROFILE (a worker's recorded profile reply, tests/fixtures/ncu/), each
plan asked for gets the recorded plan that launched a kernel of the same name (the reference the
recorded "reference"; with $KEVO_FAKE_PROFILE_AS=LABEL every candidate gets plan LABEL); without it, ok=false and reason no_tool, as a host without ncu says.

hello's device also reports which environment variables the worker can see ("env"), so tests
can check the driver scrubbed it. Every request is logged (op, id, pid, CUDA_VISIBLE_DEVICES)
to $KEVO_FAKE_LOG if set.

Many GPUs (kevo run --gpus): the `devices` op lists $KEVO_FAKE_GPUS fake GPUs (default 2);
hello's device is named after CUDA_VISIBLE_DEVICES ("Fake GPU", or the name
$KEVO_FAKE_GPU_NAMES gives that GPU: "1=Other GPU,3=Other GPU"), with a pci_bus naming it;
$KEVO_FAKE_EVAL_S makes every evaluate take that long (concurrency tests).
"""
import json
import os
import struct
import sys
import time


def read_exact(f, n):
    data = b""
    while len(data) < n:
        chunk = f.read(n - len(data))
        if not chunk:
            sys.exit(0)  # the driver went away
        data += chunk
    return data


def read_frame(f):
    (n,) = struct.unpack("<I", read_exact(f, 4))
    header = json.loads(read_exact(f, n))
    blobs = [read_exact(f, int(size)) for size in header.get("blobs", [])]
    return header, blobs


def write_frame(f, header, blobs=()):
    header = dict(header)
    header["blobs"] = [len(b) for b in blobs]
    text = json.dumps(header).encode()
    f.write(struct.pack("<I", len(text)) + text + b"".join(blobs))
    f.flush()


def check_request(req, blobs):
    """Returns a message if the evaluate request breaks the documented contract, else None."""
    mods = req.get("modules")
    if not isinstance(mods, list) or len(mods) != len(blobs) or not mods:
        return "modules must name the blobs"
    roles = sorted(m.get("role") for m in mods)
    if roles != ["candidate", "reference"]:
        return "modules need one candidate and one reference, got %r" % roles
    names = {t["name"] for t in req.get("tensors", [])}
    if not names:
        return "no tensors"
    shapes = req.get("shapes") or []
    if not shapes:
        return "no shapes"
    for s in shapes:
        for key in ("label", "params", "numel", "candidate", "reference"):
            if key not in s:
                return "shape lacks %s" % key
        if set(s["numel"]) != names:
            return "numel must cover every tensor"
        for who in ("candidate", "reference"):
            for k in s[who]["kernels"]:
                if not 0 <= k["module"] < len(mods):
                    return "a plan's module index is out of range"
    v = req.get("verify", {})
    if v.get("trials", 0) < 5 or "tolerance" not in v:
        return "verify needs trials >= 5 and tolerances"
    if "seed" in v:  # kevo draws a secret seed per evaluation unless told one (kevo eval --seed)
        return "verify.seed was sent: the worker must draw it"
    if "enabled" not in req.get("bench", {}):
        return "bench needs enabled"
    return None


def reply_ok(req, blobs):
    problem = check_request(req, blobs)
    if problem:
        return {"ok": False, "verdict": "error", "stage": "verify", "message": "fake worker: " + problem}
    shapes = req["shapes"]
    cand = shapes[0]["candidate"]["kernels"][0]["name"]
    res = {"ok": True, "verdict": "ok", "stage": "done", "message": "fake: looks right",
           "verify": {"trials": req["verify"]["trials"], "shapes": len(shapes), "mismatches": 0,
                      "flags": {}}}
    if "wrong" in cand:
        res.update(ok=False, verdict="wrong", stage="verify", message="output y differs")
        res["verify"].update(mismatches=17, worst={
            "shape": [s for s in shapes if not s.get("held_out")][-1]["label"], "tensor": "y", "index": [3, 1000], "flat": 4099 * 3 + 1000,
            "expected": 0.25, "actual": 0.0, "abs_err": 0.25, "rel_err": 1.0})
        return res
    bench = req["bench"]
    if bench.get("enabled"):
        ms = 0.2 if "slow" in cand else 0.1
        cost = req.get("cost", {})
        gbps = cost.get("bytes", 0) / (ms * 1e-3) / 1e9
        res["bench"] = {"median_ms": ms, "min_ms": ms * 0.98, "p10_ms": ms * 0.99, "p90_ms": ms * 1.02,
                        "rse": 0.004, "reps": 500, "ref_median_ms": 0.1, "speedup": 0.1 / ms,
                        "sm_clock_mhz": 1980, "temp_c": 41, "bytes": cost.get("bytes", 0),
                        "flops": cost.get("flops", 0), "gbps": gbps, "tflops": 0.0,
                        "roofline_pct": 100.0 * gbps / 4280.0, "floor_ms": ms / 3}
    else:
        res["stage"] = "verify"
    return res


def reply_profile(req):
    path = os.environ.get("KEVO_FAKE_PROFILE")
    if not path:
        return {"ok": False, "reason": "no_tool", "error": "E_UNSUPPORTED: no Nsight Compute (fake)"}
    rec = json.load(open(path))
    by_kernel = {}  # ncu names a kernel "name" or, with its parameters, "name(...)"
    for p in rec.get("plans", []):
        for k in p.get("kernels") or []:
            by_kernel.setdefault(k["name"].split("(")[0], p)
    plans = []
    for p in req["profile"]["plans"]:
        name = p["plan"]["kernels"][0]["name"]
        hit = next((r for r in rec["plans"] if r["label"] == "reference"), None) \
            if p["role"] == "reference" else by_kernel.get(name)
        as_label = os.environ.get("KEVO_FAKE_PROFILE_AS")  # every candidate profiled as that one
        if as_label and p["role"] != "reference":
            hit = next((r for r in rec["plans"] if r["label"] == as_label), None)
        out = {"label": p["label"], "role": p["role"]}
        if hit and hit.get("kernels"):
            out["kernels"] = hit["kernels"]
        else:
            out["error"] = "fake: no recorded profile of kernel %s" % name
        plans.append(out)
    return {"ok": True, "tool": "ncu", "ms": rec.get("ms", 3000), "plans": plans}


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "ok"
    if mode.endswith("-once"):
        state = sys.argv[2]
        mode = mode[:-5]
        if os.path.exists(state):
            mode = "ok"
        elif mode != "nogpu":
            open(state, "w").close()
    log = os.environ.get("KEVO_FAKE_LOG")
    cc = [int(x) for x in os.environ.get("KEVO_FAKE_CC", "9,0").split(",")]
    inp, out = sys.stdin.buffer, sys.stdout.buffer
    while True:
        req, blobs = read_frame(inp)
        op, rid = req.get("op"), req.get("id")
        if log:
            with open(log, "a") as f:
                f.write("%s %s %d %s\n" % (op, rid, os.getpid(),
                                            os.environ.get("CUDA_VISIBLE_DEVICES", "-")))
        if op == "bye":
            return 0
        if op == "hello":
            if mode == "nogpu":
                write_frame(out, {"id": rid, "ok": False, "error": "E_NOGPU: no CUDA driver (fake)"})
                continue
            gpu = os.environ.get("CUDA_VISIBLE_DEVICES", "0")
            names = dict(kv.split("=", 1) for kv in
                         os.environ.get("KEVO_FAKE_GPU_NAMES", "").split(",") if "=" in kv)
            write_frame(out, {"id": rid, "ok": True, "device": {
                "name": names.get(gpu, "Fake GPU"), "cc": cc, "sms": 132,
                "mem_bytes": 150 << 30, "l2_bytes": 60 << 20, "driver": 13000,
                "copy_gbps": 4280.0, "pci_bus": "00000000:%02X:00.0" % (0x10 + int(gpu or 0)),
                "env": sorted(os.environ)}})
            continue
        if op == "devices":
            if mode == "nogpu":
                write_frame(out, {"id": rid, "ok": False, "error": "E_NOGPU: no CUDA driver (fake)"})
                continue
            n = int(os.environ.get("KEVO_FAKE_GPUS", "2"))
            write_frame(out, {"id": rid, "ok": True, "devices": [
                {"index": i, "name": "Fake GPU", "cc": [9, 0], "pci_bus": "00000000:%02X:00.0" %
                 (0x10 + i), "mem_bytes": 150 << 30} for i in range(n)]})
            continue
        if op == "profile":
            # KEVO_FAKE_PROFILE_S: ncu takes that long, killed at the request's deadline_ms
            # (as the real worker kills it)
            slow = float(os.environ.get("KEVO_FAKE_PROFILE_S", "0"))
            dl = float(req.get("profile", {}).get("deadline_ms") or 0) / 1000
            if slow > 0:
                time.sleep(min(slow, dl) if dl > 0 else slow)
            if slow > 0 and 0 < dl < slow:
                write_frame(out, {"id": rid, "ok": False, "reason": "timeout",
                                  "error": "E_TIMEOUT: ncu took longer than %g s (fake)" % dl})
                continue
            res = reply_profile(req)
            res["id"] = rid
            write_frame(out, res)
            continue
        if op != "evaluate":
            write_frame(out, {"id": rid, "ok": False, "verdict": "error", "message": "unknown op"})
            continue
        if mode == "hang":
            while True:
                time.sleep(3600)
        if mode == "die":
            text = json.dumps({"id": rid, "ok": True, "verdict": "ok"}).encode()
            out.write(struct.pack("<I", len(text)) + text[: len(text) // 2])
            out.flush()
            os._exit(3)
        if mode == "garbage":
            out.write(b"\xff\xff\xff\x7fnot a frame")
            out.flush()
            time.sleep(3600)
        if mode == "crash":
            write_frame(out, {"id": rid, "ok": False, "verdict": "crash", "stage": "verify",
                              "message": "an illegal memory access was encountered"})
            return 0
        t0 = time.monotonic()
        if os.environ.get("KEVO_FAKE_EVAL_S"):
            time.sleep(float(os.environ["KEVO_FAKE_EVAL_S"]))
        res = reply_ok(req, blobs)
        # as the real worker's: its own device object, which replaces the driver's, and its own
        # time for the evaluation (ms)
        res["device"] = {"name": "Fake GPU", "cc": [9, 0], "copy_gbps": 4280.0}
        res["ms"] = round((time.monotonic() - t0) * 1000, 1)
        res["id"] = rid
        write_frame(out, res)


if __name__ == "__main__":
    sys.exit(main())
