"""kevo:launch
return {
  kernels = {
    {name = "vector_add", grid = {cdiv(N, BLOCK)}, block = {32 * num_warps},
     args = {"a", "b", "c", i32(N)}},
  },
}
"""
# Triton seed for vector_add: c = a + b, BLOCK elements per program.
# Knobs: BLOCK (a power of two), num_warps.
import triton
import triton.language as tl


@triton.jit
def vector_add(a_ptr, b_ptr, c_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask)
    b = tl.load(b_ptr + offs, mask=mask)
    tl.store(c_ptr + offs, a + b, mask=mask)
