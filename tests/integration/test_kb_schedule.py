"""bench/kb_sweep.py's scheduler without kevo, torch or a GPU: problems of mixed sizes go
through their phases (import, evaluation, kevo run for --loopback ones) on lanes that sleep
instead of working, and the GPU's memory is never reserved past its capacity, every problem
ends, the largest starts first, and the largest request leads (a phase waiting for memory, or
a new problem while a lane is free), the others filling in what it leaves."""
import os
import random
import sys
import tempfile
import threading
import time
import types

sys.path.insert(0, os.path.join(os.environ["KEVO_SRC"], "bench"))
import kb_sweep  # noqa: E402

GIB = kb_sweep.GIB


class Estimates:
    def __init__(self, sizes):
        self.sizes = sizes

    def ready(self, p):
        return True

    def get(self, p):
        return {"ins": self.sizes[p] / 2 * GIB, "outs": self.sizes[p] / 2 * GIB, "tensors": 2}


def main():
    fails = []
    rnd = random.Random(7)
    sizes = {"p%02d" % i: rnd.choice([0.05, 0.2, 1, 4, 12, 16]) for i in range(48)}
    with tempfile.TemporaryDirectory() as out:
        a = types.SimpleNamespace(gpus=[0], capacity=int(127 * GIB), slots=8, lanes=16, budget=1e9,
                                  out=out, loopback={"p03", "p07"})
        sw = kb_sweep.Sweep(a, sorted(sizes), Estimates(sizes))
        low, order, lock = [a.capacity], [], threading.Lock()

        most = [0]

        def watch(label):
            with lock:
                low[0] = min(low[0], sw.free[0])
                most[0] = max(most[0], sw.running[0])
                order.append(label)

        def lane():
            while True:
                p, need, fill = sw.take(0)
                if p is None:
                    return
                held = [need, fill]
                watch(("import", p))
                time.sleep(0.002 * (1 + sizes[p]))
                if not sw.phase(0, p, held, "eval", {}):
                    fails.append("%s: no evaluation" % p)
                watch(("eval", p))
                time.sleep(0.002 * (1 + sizes[p]))
                if p in a.loopback:
                    sw.phase(0, p, held, "run", {})
                    watch(("run", p))
                    time.sleep(0.004)
                sw.release(0, p, *held)
                sw.ended(0)
                watch(("done", p))

        threads = [threading.Thread(target=lane) for _ in range(a.lanes)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        done = [p for k, p in order if k == "done"]
        checks = [
            (low[0] >= 0, "memory reserved past the capacity (%.1f GiB free at worst)" %
             (low[0] / GIB)),
            (most[0] <= a.slots, "%d phases ran at once, over --slots %d" % (most[0], a.slots)),
            (sorted(done) == sorted(sizes), "%d of %d problems ended" % (len(done), len(sizes))),
            (sw.free[0] == a.capacity and sw.backfill[0] == 0 and not sw.waits,
             "reservations left: free %s, backfill %s, waits %s" % (
                 sw.free[0], sw.backfill[0], sw.waits)),
            (sizes[order[0][1]] == max(sizes.values()), "the first to start is not a largest"),
            (sum(k == "run" for k, _ in order) == 2, "loopback runs: %d" % sum(
                k == "run" for k, _ in order)),
        ]
        fails += [why for ok, why in checks if not ok]
    # with no lane free a started problem's next phase waiting for memory is the head: a new
    # import gets only what the head leaves
    with tempfile.TemporaryDirectory() as out:
        a = types.SimpleNamespace(gpus=[0], capacity=int(100 * GIB), slots=8, lanes=16, budget=1e9,
                                  out=out, loopback=set())
        sw = kb_sweep.Sweep(a, ["small", "big"], Estimates({"small": 0.1, "big": 14}))
        sw.busy[0] = a.lanes  # no lane free: a new problem cannot be the head
        tok = object()
        sw.free[0] = int(40 * GIB)
        sw.waits.append([int(50 * GIB), 0, tok])
        head = sw._head(0, sw._ready())
        if head != (int(50 * GIB), tok):
            fails.append("the waiting evaluation is not the head: %s" % (head,))
        if sw._grant(0, int(45 * GIB), False)[0]:
            fails.append("a 45 GiB import passed a waiting 50 GiB evaluation with 40 GiB free")
        if sw._grant(0, int(10 * GIB), False) != (True, True):
            fails.append("a 10 GiB import may not fill in beside the head")
        sw.free[0] = int(50 * GIB)
        if sw._grant(0, int(50 * GIB), True) != (True, False):
            fails.append("the head does not start when it fits")
        # with a lane free, a new problem larger than every waiting phase is the head
        sw.busy[0] = a.lanes - 1
        sw.waits[0][0] = int(20 * GIB)
        head = sw._head(0, sw._ready())
        if head is None or head[1] != "big":
            fails.append("a large new problem does not lead smaller waiting phases: %s" % (head,))
        if sw.busy[0] != a.lanes - 1 or sw.free[0] != int(50 * GIB):
            fails.append("_head changed the state")
    for f in fails:
        print("FAIL " + f)
    print("ok   scheduler: %d problems, %d failure(s)" % (len(sizes), len(fails)))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
