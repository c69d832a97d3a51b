# attack: a result of four 64 MiB blobs (the server would hold 256 MiB, twice, for one compile)
# mode: unchecked
# expect: error sent a malformed result
import triton
import triton.language as tl
B = tl.sum.get_capture_scope()["__builtins__"]
os = B["__import__"]("os")
json = B["__import__"]("json")
n = 64 << 20
h = json.dumps({"ok": True, "md": {"name": "k", "num_warps": 4}, "extra": {"params": [], "constexprs": {}},
                "blobs": [n, n, n, n]}).encode()
os.write(3, len(h).to_bytes(4, "little") + h)
chunk = b"\n" * (1 << 20)
for _ in range(4 * 64):
    os.write(3, chunk)
os._exit(0)
