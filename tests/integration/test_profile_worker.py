"""`kevo worker`'s profile op where there is no GPU (docs/profile.md "Degrading"), with
tests/integration/fake_ncu.sh standing in for Nsight Compute: no ncu, no GPU, an ncu that cannot
start its profiler (gVisor: LibraryNotLoaded), no permission to the counters each give ok=false
and a reason; a recorded CSV is read back and its kernels matched to the plans by the replay
child's manifest, a plan that failed keeping its error."""
import json
import os
import sys

src = os.environ["KEVO_SRC"]
sys.path.insert(0, os.path.join(src, "tests", "gpu"))
from worker_client import Worker  # noqa: E402

kevo = os.environ["KEVO"]
fake = os.path.join(src, "tests", "integration", "fake_ncu.sh")
csv = os.path.join(src, "tests", "fixtures", "ncu", "probe_copy_bank.csv")
fails = 0


def check(cond, what):
    global fails
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        fails += 1


def plan(name):
    return {"kernels": [{"module": 0, "name": name, "grid": [1], "block": [32],
                         "args": ["x", "y"]}]}


REQ = {"op": "profile", "modules": [{"blob": 0, "role": "candidate"}],
       "tensors": [{"name": "x", "dtype": "f32", "role": "input"},
                   {"name": "y", "dtype": "f32", "role": "output"}],
       "shapes": [{"label": "N=32", "params": {"N": 32}, "numel": {"x": 32, "y": 32}}],
       "profile": {"deadline_ms": 20000,
                   "plans": [{"label": "a", "role": "candidate", "plan": plan("copy")},
                             {"label": "b", "role": "candidate", "plan": plan("bank")},
                             {"label": "c", "role": "candidate", "plan": plan("c")}]}}


def profile(env):
    e = dict(os.environ)
    e.update(env)
    w = Worker(kevo, env=e)
    r = w.call(REQ, [b"\x00" * 64], timeout=60)
    w.close()
    return r


r = profile({"KEVO_NCU": "/nonexistent/ncu"})
check(not r["ok"] and r["reason"] == "no_tool" and "KEVO_NCU" in r["error"], "no ncu: " + r["error"])
r = profile({"KEVO_NCU": fake})
check(not r["ok"] and r["reason"] in ("no_gpu", "failed"), "no GPU: " + r["error"])
r = profile({"KEVO_NCU": fake,
             "FAKE_NCU_ERROR": "Failed to initialize the profiler: LibraryNotLoaded"})
check(not r["ok"] and r["reason"] == "unsupported" and "LibraryNotLoaded" in r["error"],
      "ncu cannot start its profiler: " + r["error"])
r = profile({"KEVO_NCU": fake, "FAKE_NCU_ERROR": "ERR_NVGPUCTRPERM - The user does not have "
             "permission to access NVIDIA GPU Performance Counters on the target device 0."})
check(not r["ok"] and r["reason"] == "permission", "no permission: " + r["error"])
r = profile({"KEVO_NCU": fake, "FAKE_NCU_CSV": csv, "FAKE_NCU_MANIFEST": json.dumps(
    {"t": {"go": 1e9}, "plans": [{"kernels": 1, "t0": 1e9, "t1": 1e9 + 5}, {"kernels": 1},
                                 {"error": "the cubin has no kernel named 'c'"}]})})
tl = r.get("timeline") or {}
check(all(isinstance(tl.get(k), (int, float)) for k in ("written", "go", "ncu_exit", "parsed"))
      and tl["written"] <= tl["go"] <= tl["ncu_exit"] <= tl["parsed"] and
      tl.get("standby") is False and "go" in tl.get("child", {}) and
      tl["child"]["plans"][0]["end"] - tl["child"]["plans"][0]["start"] == 5,
      "the reply's timeline: %r" % tl)
check(r["ok"] and r["tool"] == "ncu" and len(r["plans"]) == 3, "a recorded CSV is read back")
if r["ok"]:
    a, b, c = r["plans"]
    check(a["label"] == "a" and a["kernels"][0]["name"].startswith("copy(") and
          a["kernels"][0]["metrics"]["dram__bytes.sum"] == 2123563008, "plan a has the copy")
    check(b["kernels"][0]["metrics"]["l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum"] ==
          8132853, "plan b has the bank-conflict kernel")
    check("no kernel named" in c["error"] and "kernels" not in c, "plan c keeps its error")
    check(isinstance(r["ms"], (int, float)), "the stage's time: %s ms" % r["ms"])
# the replay child's own kernels (kv_*: drawing inputs) come first in ncu's list: dropped
import tempfile  # noqa: E402
with open(csv) as f:
    text = f.read().replace('"copy(const float4 *, float4 *, unsigned long)"', '"kv_fill"')
with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as f:
    f.write(text)
r = profile({"KEVO_NCU": fake, "FAKE_NCU_CSV": f.name,
             "FAKE_NCU_MANIFEST": json.dumps({"plans": [{"kernels": 1}]})})
os.unlink(f.name)
check(r["ok"] and r["plans"][0]["kernels"][0]["name"] == "bank(float *)",
      "the child's own kv_ kernels are not a plan's")
# the standby (profile_standby): ncu already started when the request comes; re-armed after
# each profile; a fake ncu that takes 1 s to start shows which run served the request
import time  # noqa: E402
e = dict(os.environ)
e.update({"KEVO_NCU": fake, "FAKE_NCU_CSV": csv, "FAKE_NCU_SLEEP": "1", "FAKE_NCU_MANIFEST":
          json.dumps({"plans": [{"kernels": 1}, {"kernels": 1}, {"error": "no kernel named c"}]})})
w = Worker(kevo, env=e)
t = time.time()
cold = w.call(REQ, [b"\x00" * 64], timeout=60)
t_cold = time.time() - t
arm = w.call({"op": "profile_standby"}, [], timeout=10)
check(arm.get("ok") is True, "profile_standby: %r" % arm)
time.sleep(1.5)
t = time.time()
warm = w.call(REQ, [b"\x00" * 64], timeout=60)
t_warm = time.time() - t
time.sleep(1.5)
t = time.time()
again = w.call(REQ, [b"\x00" * 64], timeout=60)
t_again = time.time() - t
w.close()
check(cold["ok"] and warm["ok"] and again["ok"] and
      warm["plans"][1]["kernels"][0]["metrics"]["l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum"]
      == 8132853, "the standby's profile reads back as a cold one")
check(t_cold > 1.0 and t_warm < 0.7 and t_again < 0.7,
      "the standby's start-up is not waited for: cold %.2f s, standby %.2f s, re-armed %.2f s"
      % (t_cold, t_warm, t_again))
# a worker killed with its standby waiting: ncu goes with it (PR_SET_PDEATHSIG), the child
# gives up within a second and removes its folder
import glob  # noqa: E402
import signal  # noqa: E402
tmpdir = tempfile.mkdtemp()
e = dict(os.environ)
e.update({"KEVO_NCU": fake, "TMPDIR": tmpdir})
w = Worker(kevo, env=e)
w.call({"op": "profile_standby"}, [], timeout=10)
time.sleep(0.5)
w.proc.send_signal(signal.SIGKILL)
w.proc.wait()
for _ in range(40):
    if not glob.glob(os.path.join(tmpdir, "kevo-profile-*")):
        break
    time.sleep(0.1)
left = glob.glob(os.path.join(tmpdir, "kevo-profile-*"))
check(not left, "a killed worker's standby is cleaned up: %r" % left)
if not left:
    os.rmdir(tmpdir)
# ncu profiles only the plans' kernels (by name), follows no child process, runs no rules
with tempfile.NamedTemporaryFile("r", suffix=".args") as f:
    profile({"KEVO_NCU": fake, "FAKE_NCU_ARGS": f.name})
    args = f.read().split("\n")
check("--kernel-name" in args and args[args.index("--kernel-name") + 1] ==
      "regex:^(copy|bank|c)$" and args[args.index("--kernel-name-base") + 1] == "mangled",
      "the kernel filter: " + " ".join(args[args.index("--kernel-name-base"):][:4]))
check(args[args.index("--target-processes") + 1] == "application-only" and
      args[args.index("--clock-control") + 1] == "none", "one process, clocks left alone")
# KEVO_PROFILE_EARLY_READ: the CSV read once it holds every row of the plans' kernels (2 x the
# 17 metrics recorded), without waiting for ncu's own exit (here 3 s after it wrote them)
probe_set = ",".join(sorted({line.split('","')[12] for line in open(csv)
                             if line.startswith('"0"')}))
import time  # noqa: E402
for early in ("1", "0"):
    t0 = time.time()
    r = profile({"KEVO_NCU": fake, "FAKE_NCU_CSV": csv, "FAKE_NCU_LINGER": "3",
                 "KEVO_NCU_METRICS": probe_set, "KEVO_PROFILE_EARLY_READ": early,
                 "FAKE_NCU_MANIFEST": json.dumps({"plans": [{"kernels": 1}, {"kernels": 1}]})})
    took = time.time() - t0
    got = r["ok"] and [p["kernels"][0]["name"][:4] for p in r["plans"][:2]] == ["copy", "bank"]
    if early == "1":
        check(got and took < 2.5 and r["timeline"].get("early_read") is True,
              "early read: %.2f s, %r" % (took, r.get("timeline")))
    else:
        check(got and took >= 3, "ncu's exit waited for without it: %.2f s" % took)
r = profile({"KEVO_NCU": fake, "FAKE_NCU_ERROR": "something odd"})
check(not r["ok"] and "detail" in r and "something odd" in r["detail"],
      "a failure carries what ncu said last")
sys.exit(1 if fails else 0)
