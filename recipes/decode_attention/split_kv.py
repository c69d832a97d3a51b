"""kevo:launch
local HQ = HK * G
local splits = max(1, min(cdiv(S, 64), TARGET // (B * HK))) -- at most TARGET blocks: no spare wave
local chunk = cdiv(S, splits)
splits = cdiv(S, chunk)
return {
  scratch = {part_o = {bytes = B * HQ * splits * 128 * 4}, part_ml = {bytes = B * HQ * splits * 8}},
  kernels = {
    {name = "decode_attn_partial", grid = {splits, B * HK}, block = {32 * num_warps},
     args = {"q", "k", "v", "part_o", "part_ml", i32(HK), i32(G), i32(S), i32(splits),
             i32(chunk)}},
    {name = "decode_attn_combine", grid = {B * HQ}, block = {32 * num_warps},
     args = {"part_o", "part_ml", "o", i32(splits)}},
  },
}
"""
# Triton seed for decode_attention: split-KV ("flash decoding"). decode_attn_partial: a program
# per (chunk of the cache, batch, kv head) takes the G query heads of that kv head as the rows of
# one tile (padded to 16 for tl.dot), streams K and V in BLOCK_N-token tiles (each read once for
# the whole group), scores and P @ V on the tensor cores (P as a bf16 pair, hi + lo), an online
# softmax in the exp2 domain, and writes the chunk's unnormalised output and (max, sum) to
# scratch; decode_attn_combine merges the chunks of each query head. TARGET (blocks to aim the
# split count at: TARGET / (B * HK)) is read by the launch chunk only. Knobs: BLOCK_N, num_warps,
# num_stages, TARGET.
import triton
import triton.language as tl

D = tl.constexpr(128)
QSCALE = tl.constexpr(0.12751743074420124)  # log2(e) / sqrt(128)


@triton.jit
def decode_attn_partial(q_ptr, k_ptr, v_ptr, po_ptr, pml_ptr, HK, G, S, splits, chunk,
                        BLOCK_N: tl.constexpr, TARGET: tl.constexpr):
    po_ptr = po_ptr.to(tl.pointer_type(tl.float32))  # scratch buffers come as bytes
    pml_ptr = pml_ptr.to(tl.pointer_type(tl.float32))
    split = tl.program_id(0)
    bh = tl.program_id(1).to(tl.int64)
    c0 = split * chunk
    c1 = tl.minimum(S, c0 + chunk)
    gs = tl.arange(0, 16)
    ds = tl.arange(0, D)
    heads = bh * G + gs
    q = tl.load(q_ptr + heads[:, None] * D + ds[None, :], mask=(gs < G)[:, None], other=0.0)
    kb = k_ptr + bh * S * D
    vb = v_ptr + bh * S * D
    m = tl.full([16], float("-inf"), tl.float32)
    l = tl.zeros([16], tl.float32)
    acc = tl.zeros([16, D], tl.float32)
    for start in range(c0, c1, BLOCK_N):
        ns = start + tl.arange(0, BLOCK_N)
        nm = ns < c1
        kt = tl.load(kb + ns[:, None] * D + ds[None, :], mask=nm[:, None], other=0.0)
        s = tl.dot(q, tl.trans(kt)) * QSCALE
        s = tl.where(nm[None, :], s, float("-inf"))
        mn = tl.maximum(m, tl.max(s, axis=1))
        alpha = tl.exp2(m - mn)
        p = tl.exp2(s - mn[:, None])
        l = l * alpha + tl.sum(p, axis=1)
        vt = tl.load(vb + ns[:, None] * D + ds[None, :], mask=nm[:, None], other=0.0)
        # P @ V with p as a bf16 pair (hi + lo, 16 significant bits): p rounded to one bf16 is
        # off by up to 2^-9 of itself, and with large V (the stress trial's normal(0, 100)) on a
        # cache of a few hundred tokens that error does not average out under the tolerance
        p_hi = p.to(tl.bfloat16)
        p_lo = (p - p_hi.to(tl.float32)).to(tl.bfloat16)
        acc = tl.dot(p_lo, vt, tl.dot(p_hi, vt, acc * alpha[:, None]))
        m = mn
    rows = heads * splits + split
    tl.store(po_ptr + rows[:, None] * D + ds[None, :], acc, mask=(gs < G)[:, None])
    tl.store(pml_ptr + rows * 2, m, mask=gs < G)
    tl.store(pml_ptr + rows * 2 + 1, l, mask=gs < G)


@triton.jit
def decode_attn_combine(po_ptr, pml_ptr, o_ptr, splits):
    po_ptr = po_ptr.to(tl.pointer_type(tl.float32))  # scratch buffers come as bytes
    pml_ptr = pml_ptr.to(tl.pointer_type(tl.float32))
    head = tl.program_id(0).to(tl.int64)
    ds = tl.arange(0, D)
    M = float("-inf")
    for s in range(0, splits):
        M = tl.maximum(M, tl.load(pml_ptr + (head * splits + s) * 2))
    L = 0.0
    acc = tl.zeros([D], tl.float32)
    for s in range(0, splits):
        w = tl.exp2(tl.load(pml_ptr + (head * splits + s) * 2) - M)
        L += tl.load(pml_ptr + (head * splits + s) * 2 + 1) * w
        acc += tl.load(po_ptr + (head * splits + s) * D + ds) * w
    tl.store(o_ptr + head * D + ds, (acc / L).to(tl.bfloat16))
