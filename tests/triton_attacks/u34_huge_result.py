# attack: announce a result larger than the cap
# mode: unchecked
# expect: error sent a malformed result
import triton
import triton.language as tl
B = tl.sum.get_capture_scope()["__builtins__"]
os = B["__import__"]("os")
json = B['__import__']('json')
h = json.dumps({'ok': True, 'blobs': [1 << 40]}).encode()
os.write(3, len(h).to_bytes(4, 'little') + h)
os._exit(0)
