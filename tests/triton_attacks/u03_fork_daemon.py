# attack: a daemon that outlives the compile
# mode: unchecked
# expect: error PermissionError
import triton
import triton.language as tl
B = tl.sum.get_capture_scope()["__builtins__"]
os = B["__import__"]("os")
if os.fork() == 0:
    os.setsid()
    B['__import__']('time').sleep(3600)
raise B["LookupError"]
