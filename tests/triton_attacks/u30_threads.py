# attack: a thread bomb
# mode: unchecked
# expect: error RuntimeError
import triton
import triton.language as tl
B = tl.sum.get_capture_scope()["__builtins__"]
os = B["__import__"]("os")
th = B['__import__']('threading')
ev = th.Event()
for i in range(100000):
    th.Thread(target=ev.wait, daemon=True).start()
raise B["LookupError"]
