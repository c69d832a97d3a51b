"""`kevo worker` speaks its protocol where there is no GPU: hello says E_NOGPU (or describes
the device where one exists), evaluate says no_gpu, unknown ops are errors, bye exits 0, and
nothing but frames ever reaches stdout."""
import os
import sys

sys.path.insert(0, os.path.join(os.environ["KEVO_SRC"], "tests", "gpu"))
from worker_client import Worker  # noqa: E402

kevo = os.environ["KEVO"]
fails = 0


def check(cond, what):
    global fails
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        fails += 1


w = Worker(kevo)
hello = w.call({"op": "hello"})
if hello.get("ok"):
    d = hello["device"]
    check(d["sms"] > 0 and d["copy_gbps"] > 0 and len(d["cc"]) == 2, "hello describes the GPU")
else:
    check(hello.get("error", "").startswith("E_NOGPU: "), "hello says E_NOGPU: " + str(hello))
    check("libcuda" in hello["error"] or "device" in hello["error"], "and says why")
    ev = w.call({"op": "evaluate", "modules": [], "tensors": [], "shapes": []},
                blobs=[b"\x00" * 16])
    check(ev.get("verdict") == "no_gpu" and ev.get("ok") is False, "evaluate says no_gpu")
    check(ev.get("message", "").startswith("E_NOGPU"), "with an E_NOGPU message")
bad = w.call({"op": "frobnicate"})
check(bad.get("ok") is False and bad["error"].startswith("E_PARSE"), "an unknown op is E_PARSE")
noop = w.call({"id": "x"})
check(noop.get("ok") is False and noop.get("id") == "x", "a request without op keeps its id")
bye = w.call({"op": "bye"})
check(bye.get("ok") is True, "bye answers ok")
check(w.wait() == 0, "and the worker exits 0")
rest = w.proc.stdout.read()
check(rest == b"", "nothing but frames on stdout")

# a garbage frame is a usage error, not a hang or a crash
w = Worker(kevo)
w.proc.stdin.write(b"\xff\xff\xff\x7f garbage")
w.proc.stdin.close()
check(w.wait() == 2, "a malformed frame makes the worker exit 2")

# closing stdin ends the worker cleanly
w = Worker(kevo)
w.proc.stdin.close()
check(w.wait() == 0, "EOF on stdin ends the worker with 0")
sys.exit(1 if fails else 0)
