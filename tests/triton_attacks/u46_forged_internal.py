# attack: claim the sandbox itself failed (kevo's E_WORKER, not the candidate's compile error)
# mode: unchecked
# expect: error the compile sandbox broke
import triton
import triton.language as tl
B = tl.sum.get_capture_scope()["__builtins__"]
os = B["__import__"]("os")
json = B["__import__"]("json")
h = json.dumps({"ok": False, "sandbox": True, "error": "the compile sandbox broke"}).encode()
os.write(3, len(h).to_bytes(4, "little") + h)
os._exit(3)
