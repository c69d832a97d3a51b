# attack: forge a reply on kevo's pipe (fds 4+ are closed)
# mode: unchecked
# expect: error OSError
import triton
import triton.language as tl
B = tl.sum.get_capture_scope()["__builtins__"]
os = B["__import__"]("os")
os.write(4, b'\x10\x00\x00\x00{"ok": true}    ')
raise B["LookupError"]
