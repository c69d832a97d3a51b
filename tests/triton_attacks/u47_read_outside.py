# attack: read a world-readable file outside what a compile may read (the canary; /home, /etc alike)
# mode: unchecked
# expect: error PermissionError
import triton
import triton.language as tl
B = tl.sum.get_capture_scope()["__builtins__"]
B["open"]("@CANARY@/file", "rb").read()
raise B["LookupError"]
