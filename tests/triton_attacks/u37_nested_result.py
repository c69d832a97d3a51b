# attack: a result frame whose JSON nests deeper than the server's parser goes (RecursionError, not ValueError, would kill the server)
# mode: unchecked
# expect: error sent a malformed result
import triton
import triton.language as tl
B = tl.sum.get_capture_scope()["__builtins__"]
os = B["__import__"]("os")
h = b"[" * 300000
os.write(3, len(h).to_bytes(4, "little") + h)
os._exit(0)
