"""The PyTorch bridge's import-time statistics without torch (CI has none): python/kb_bridge.py's
output_stats, output_sample, moved, degenerate and judge_bytes run on a small stand-in for the
few tensor operations they use (flat lists of floats). What they report is what
lua/kevo/kbench.lua's rules read (tests/lua/test_kbench_rules.lua checks the rules):

- a loss (one value) that moves between draws: moved is the difference, others 0;
- a ReLU that is zero at all but a few elements (level2/9): at_min counts the zeros and others
  the fewest elements off that bound in any draw;
- a constant output and outputs that ignore the inputs: refused with the reason;
- outputs over the sample size: moved on an even stride;
- judge_bytes: the GPU memory judging takes (level1/38_L1Norm_: 88 GiB)."""
import math
import os
import sys

SRC = os.environ.get("KEVO_SRC") or os.path.join(os.path.dirname(__file__), "..", "..")
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(SRC, "python"))
import kb_bridge as kb  # noqa: E402


class DType:
    def __init__(self, floating):
        self.is_floating_point = floating


F32, BOOL = DType(True), DType(False)


class T:
    """A flat tensor of Python numbers: the operations the bridge's statistics use."""

    def __init__(self, v, dtype=F32):
        self.v, self.dtype = list(v), dtype

    def detach(self):
        return self

    def reshape(self, *_):
        return self

    flatten = clone = double = cpu = reshape

    def to(self, *_):
        return self

    @property
    def shape(self):
        return (len(self.v),)

    def mean(self):
        return T([sum(self.v) / len(self.v)])

    def std(self):
        m = sum(self.v) / len(self.v)
        return T([math.sqrt(sum((a - m) ** 2 for a in self.v) / (len(self.v) - 1))])

    def numel(self):
        return len(self.v)

    def __getitem__(self, k):
        if isinstance(k, T):  # a boolean mask
            return T([a for a, m in zip(self.v, k.v) if m], self.dtype)
        if isinstance(k, slice):
            return T(self.v[k], self.dtype)
        return T([self.v[k]], self.dtype)

    def _zip(self, o, f, dtype):
        ov = o.v if isinstance(o, T) else [o] * len(self.v)
        if len(ov) == 1 and len(self.v) != 1:
            ov = ov * len(self.v)
        return T([f(a, b) for a, b in zip(self.v, ov)], dtype)

    def __eq__(self, o):
        return self._zip(o, lambda a, b: a == b, BOOL)

    def __ne__(self, o):
        return self._zip(o, lambda a, b: a != b, BOOL)

    def __sub__(self, o):
        return self._zip(o, lambda a, b: a - b, F32)

    def __add__(self, o):
        return self._zip(o, lambda a, b: a + b, F32)

    __radd__ = __add__

    def __truediv__(self, o):
        return self._zip(o, lambda a, b: a / b, F32)

    def __and__(self, o):
        return self._zip(o, lambda a, b: a and b, BOOL)

    def abs(self):
        return T([abs(a) for a in self.v], self.dtype)

    def min(self):
        return T([min(self.v)])

    def max(self):
        return T([max(self.v)])

    def sum(self):
        return T([sum(self.v)])

    def any(self):
        return T([any(self.v)], BOOL)

    def all(self):
        return T([all(self.v)], BOOL)

    def __float__(self):
        return float(self.v[0])

    def __int__(self):
        return int(self.v[0])

    def __bool__(self):
        return bool(self.v[0])

    __hash__ = None


class FakeTorch:
    class cuda:
        @staticmethod
        def is_available():
            return False

    class no_grad:
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    @staticmethod
    def isfinite(t):
        return T([math.isfinite(a) for a in t.v], BOOL)


torch = FakeTorch()
fails = 0


def check(cond, what):
    global fails
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        fails += 1


# ---- output_stats ----
st = kb.output_stats(torch, T([0, 0, 0, 2.5, 0, float("nan"), 1.0]))
check(st == {"min": 0, "max": 2.5, "absmax": 2.5, "numel": 7, "at_min": 4, "at_max": 1},
      "output_stats: range of the finite values, elements at either bound: %s" % st)
check(kb.output_stats(torch, T([float("nan")])) is None, "output_stats: no finite value, None")

# ---- output_sample and moved ----
old = kb.SAMPLE
kb.SAMPLE = 4
a, step = kb.output_sample(T(range(10)))
check(step == 3 and a.v == [0, 3, 6, 9], "output_sample: an even stride over a large output")
b = T([x + (5 if x == 6 else 0) + (100 if x == 7 else 0) for x in range(10)])
check(kb.moved(torch, [(a, step)], [b]) == [5.0],
      "moved: the largest difference on the sampled elements (an unsampled one is not seen)")
kb.SAMPLE = old
check(kb.moved(torch, [(T([1.0, float("inf")]), 1)], [T([1.5, 7.0])]) == [0.5],
      "moved: elements finite in both draws only")
check(kb.moved(torch, [(T([1]), 1)], [T([2], BOOL)]) == [None], "moved: None for a bool output")


# ---- degenerate: draws of a problem stood in for by a function of a seed ----
class Prob:
    """Outputs f(seed of the inputs, seed of the weights); Problem(torch, path, seed=1) makes
    the one with new weights."""

    def __init__(self, f, seed=0):
        self.f, self.in_seed, self.w_seed = f, seed, seed
        self.args, self.model, self.weights = [("tensor", "x", None)], "model", []

    def tensor_inputs(self):
        return [a for a in self.args if a[0] == "tensor"]

    def draw_inputs(self, seed):
        self.in_seed = seed
        self.args = [("tensor", "x", None)]

    def forward(self):
        return tuple(self.f(self.in_seed, self.w_seed))


kb.device_digest = lambda torch, outs: repr([o.v for o in outs])
kb.release = lambda torch: None


def run(f):
    prob = Prob(f)
    kb.Problem = lambda torch, path, seed=0: Prob(f, seed)
    outs = list(prob.forward())
    stats = [kb.output_stats(torch, o) for o in outs]
    return kb.degenerate(torch, prob, "p.py", kb.first_draw(torch, outs), stats), stats


# a loss: one value that moves with the inputs and the weights
why, stats = run(lambda i, w: [T([8.36 + 0.003 * i - 0.001 * w])])
check(why is None and abs(stats[0]["moved"] - 0.003) < 1e-12 and stats[0]["others"] == 0,
      "a scalar loss: judged, moved %.3g (the largest of two draws), others 0" % stats[0]["moved"])
# level2/9: zero but for a few elements, none in the draw with new weights
relu = {0: [0.0] * 97 + [0.2, 0.0, 0.1], 1: [0.0] * 99 + [0.3]}
why, stats = run(lambda i, w: [T(relu[w] if i == w else relu[0][:-1] + [0.05])])
check(why is None and stats[0]["at_min"] == 98 and stats[0]["others"] == 1,
      "a ReLU zero at all but a few: at_min %d, others %d (fewest in any draw)"
      % (stats[0]["at_min"], stats[0]["others"]))
why, _ = run(lambda i, w: [T([2.5] * 8)])
check(why is not None and why.startswith("output 0 is constant (every element is 2.5")
      and "one value everywhere" in why, "constant output refused: %s" % why)
why, _ = run(lambda i, w: [T([w + 0.5, w - 1.0])])
check(why is not None and "do not depend on the inputs" in why and "ignores them" in why,
      "outputs that ignore the inputs refused: %s" % why)
why, _ = run(lambda i, w: [T([1.0, 2.0])] if i == w else [T([1.0, 3.0])])
check(why is not None and "do not depend on the seed" in why, "outputs that ignore the seed: %s"
      % why)

# ---- randomness: the second run compared with the first draw's digest and sample ----
class Model:  # what randomness() reads for the causes it names: "dropout(" in its source
    def forward(self, x):
        return dropout(x)  # noqa: F821


class Rerun(Prob):
    def __init__(self, runs):
        Prob.__init__(self, None)
        self.runs, self.model = iter(runs), type("M", (), {"named_modules": lambda s: []})()
        self.mod = type("Mod", (), {"Model": Model})

    def forward(self):
        return (T(next(self.runs)),)


for runs, want in (([[1.0, 2.0], [1.0, 2.0]], None), ([[1.0, 2.0], [1.0, 2.0 + 1e-7]], None),
                   ([[1.0, 2.0], [0.0, 4.0]], "dropout in Model")):
    r = Rerun(runs)
    why, worst = kb.randomness(torch, r, kb.first_draw(torch, list(r.forward())))
    check((why is None) if want is None else (want in why and "random" in why),
          "randomness: %s -> %s (worst %.3g)" % (runs[1], why and why[:70], worst))

# ---- parse_init and the draws like kevo's trials ----
check(kb.parse_init("uniform(-0.011, 0.011)", "f32") == ("uniform", -0.011, 0.011)
      and kb.parse_init("normal", "f32") == ("normal", 0.0, 1.0)
      and kb.parse_init("normal(0.5, 2)", "f16") == ("normal", 0.5, 2.0)
      and kb.parse_init("normal", "bool") == ("randint", 0.0, 2.0)
      and kb.parse_init("uniform(0, 1)", "i64") == ("randint", 0.0, 100.0)
      and kb.parse_init("randint(0, 4096)", "i64") == ("randint", 0.0, 4096.0),
      "parse_init: the inits the recipe states, ints and bool as kevo.kbench writes them")


class Scaled(Prob):
    """level1/98's shape: get_inputs() scales by a random factor (the draws' own seeds give
    0.05 and 0.07); draws from the stated inits put 0.002 + 1e-6 * seed in the input."""

    def __init__(self, seed=0):
        Prob.__init__(self, None, seed)
        self.x = T([0.0])
        self.args = [("tensor", "x", self.x)]
        self.drawn = False

    def draw_inputs(self, seed):
        self.in_seed = seed

    def forward(self):
        if self.drawn:
            return (T(list(self.x.v)),)
        return (T([0.05 + 0.02 * self.in_seed + 0.001 * self.w_seed]),)


def fake_draw(torch, t, init):
    t.v = [0.002 + 1e-6 * (FakeTorch.seed - kb.TRIAL_SEED)]
    scaled.drawn = True


FakeTorch.manual_seed = staticmethod(lambda s: setattr(FakeTorch, "seed", s))
kb.draw_like_kevo = fake_draw
scaled = Scaled()
kb.Problem = lambda torch, path, seed=0: scaled.__class__.__init__(scaled, seed) or scaled
outs = list(scaled.forward())
stats = [kb.output_stats(torch, o) for o in outs]
why = kb.degenerate(torch, Scaled(), "p.py", kb.first_draw(torch, outs), stats,
                    [("uniform", 0.0, 1.0)])
tr = stats[0].get("trials") or {}
check(why is None and abs(stats[0]["moved"] - 0.021) < 1e-12 and abs(tr.get("moved", 1) - 1e-6)
      < 1e-12 and tr.get("others") == 0 and abs(tr.get("absmax", 0) - 0.002) < 1e-12,
      "trials: the draws like kevo's trials move 1e-6 where get_inputs()'s move 0.021: %s" % tr)
kb.draw_like_kevo = lambda torch, t, init: 1 / 0
stats = [kb.output_stats(torch, o) for o in Scaled().forward()]
kb.degenerate(torch, Scaled(), "p.py", kb.first_draw(torch, list(Scaled().forward())), stats,
              [("normal", 0.0, 1.0)])
check("trials" not in stats[0] and stats[0].get("trials_error", "").startswith("ZeroDivision"),
      "trials: a draw that fails leaves them out and says why")

# the draws like kevo's trials refuse what they cannot judge on
for fill, want in ((lambda seed: [float("nan")], "output 0 is NaN or Inf everywhere"),
                   (lambda seed: [3.0, 3.0], "output 0 is constant (every element is 3)"),
                   (lambda seed: [1.0, 2.0], "two draws give identical outputs")):
    def fake_fill(torch, t, init, fill=fill):
        t.v = fill(FakeTorch.seed)
        scaled.drawn = True
    kb.draw_like_kevo = fake_fill
    scaled = Scaled()
    why = kb.degenerate(torch, Scaled(), "p.py", kb.first_draw(torch, list(Scaled().forward())),
                        [kb.output_stats(torch, o) for o in Scaled().forward()],
                        [("uniform", 0.0, 1.0)])
    check(why is not None and why.startswith("in draws like kevo's trials") and want in why,
          "trials refused: %s" % why)

# ---- guess_init: what the recipe states for an input like this sample ----
import random  # noqa: E402
rnd = random.Random(14)
probs = T([0.5 + rnd.gauss(0, 0.5) / 3.5 for _ in range(4096)])
probs.v = [max(1e-3, a) for a in probs.v]
g = kb.guess_init(torch, probs)
check(g.startswith("uniform("), "guess_init: values of one sign that a normal would take past "
      "zero are drawn in their range: %s" % g)
g = kb.guess_init(torch, T([rnd.gauss(3, 1) for _ in range(4096)]))
check(g.startswith("normal(3") or g.startswith("normal(2.9"), "guess_init: a normal: %s" % g)
g = kb.guess_init(torch, T([10 + rnd.gauss(0, 0.5) for _ in range(4096)]))
check(g.startswith("normal(10") or g.startswith("normal(9.9"),
      "guess_init: positive values far from zero stay a normal: %s" % g)

# ---- judge_bytes ----
G = 1 << 30
j = kb.judge_bytes(8 * G, 0, 8 * G, 16 * G, 2)
check(abs(j / G - 88.01) < 0.01, "judge_bytes: level1/38_L1Norm_ takes %.4g GiB" % (j / G))
j = kb.judge_bytes(1 * G, 0, 1 * G, 30 * G, 2)
check(abs(j / G - 35) < 0.01, "judge_bytes: a forward's own peak counts while a trial's reference "
      "is made (%.4g GiB)" % (j / G))

print("%d failure(s)" % fails)
sys.exit(1 if fails else 0)
