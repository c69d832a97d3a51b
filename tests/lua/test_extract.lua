-- kevo.extract: fenced blocks, launch chunks, candidates, truncated replies.
local extract = require "kevo.extract"

local reply = [[
Some prose first.

```cuda
extern "C" __global__ void a(float *x) { x[0] = 1; }
/* kevo:launch
return {kernels = {{name = "a", grid = {1}, block = {1}, args = {"x"}}}}
*/
```

Then a C++ one with its launch in a separate block:

```c++
extern "C" __global__ void b(float *x) {}
```
```lua
return {kernels = {{name = "b", grid = {N}, block = {32}, args = {"x"}}}}
```

~~~python
import triton
@triton.jit
def k(x): pass
# kevo:launch
# return {kernels = {{name = "k", grid = {1}, block = {128}, args = {"x"}}}}
~~~

```
extern "C" __global__ void untagged(int n) {}
```

````cuda
nested ``` fence inside
````
]]

local blocks = extract.blocks(reply)
assert(#blocks == 6, #blocks)
assert(blocks[1].lang == "cuda" and blocks[1].closed and blocks[1].line == 3)
assert(blocks[2].lang == "cpp" and blocks[2].tag == "c++")
assert(blocks[3].lang == "lua")
assert(blocks[4].lang == "python")
assert(blocks[5].lang == "cuda" and blocks[5].tag == nil, "untagged block guessed as cuda")
assert(blocks[6].code == "nested ``` fence inside", blocks[6].code)

local c = assert(extract.candidates(reply))
assert(#c == 5, #c)
assert(c[1].lang == "cuda" and c[1].launch_from == "inline" and c[1].launch:find('name = "a"'))
assert(c[2].launch_from == "block" and c[2].launch:find('name = "b"'))
assert(c[3].lang == "triton" and c[3].launch:find('name = "k"') and c[3].launch_from == "inline")
assert(c[4].source:find("untagged") and c[4].launch == nil)
assert(#c.skipped == 0)

-- the launch block may come before its kernel
c = assert(
  extract.candidates("```lua\nreturn {kernels = {}}\n```\n```cuda\n__global__ void z() {}\n```\n"))
assert(#c == 1 and c[1].launch_from == "block")

-- unterminated fences are marked and skipped unless asked for
local cut = "Here:\n```cuda\n__global__ void k() {\n  int i ="
blocks = extract.blocks(cut)
assert(#blocks == 1 and blocks[1].closed == false)
local none, msg, code = extract.candidates(cut)
assert(none == nil and code == "E_PARSE" and msg:find("unterminated"), msg)
c = assert(extract.candidates(cut, {unterminated = true}))
assert(#c == 1 and c[1].closed == false)

-- a reply cut by the token limit is never compiled, even with complete blocks in it
none, msg, code = extract.candidates({text = reply, truncated = true, finish = "length"})
assert(none == nil and code == "E_PARSE" and msg:find("token limit"), msg)

-- no code at all
none, msg, code = extract.candidates("I cannot help with that.")
assert(none == nil and code == "E_PARSE" and msg:find("no code block"))

-- launch forms
assert(extract.launch("/* kevo:launch\nreturn 1\n*/") == "return 1\n")
assert(extract.launch("'''kevo:launch\nreturn 2\n'''") == "return 2\n")
assert(extract.launch('x = """kevo:launch\nreturn 3\n"""') == "return 3\n")
assert(extract.launch("int x;") == nil)
assert(not pcall(extract.candidates, reply, {bogus = true}))

-- `// kevo:launch` comment lines in CUDA
assert(extract.launch("// kevo:launch\n// return 4\nint x;") == "return 4\n")

-- a reply without a fence: the code between its prose
c = assert(
  extract.candidates("Sure:\n\nextern \"C\" __global__ void k(float* y) {\n  y[0] = 1;\n}\n" ..
  "/* kevo:launch\nreturn {}\n*/\n\nThat is all.\n"))
assert(#c == 1 and c[1].lang == "cuda" and c[1].launch == "return {}\n", c[1].source)
assert(not c[1].source:find("Sure") and not c[1].source:find("That is all"), c[1].source)

-- Python that is not Triton: load_inline's CUDA string is the candidate, a usage example none
c = assert(
  extract.candidates("```python\nimport torch\nsrc = '\'\'\n#include <torch/extension.h>\n" ..
  "__global__ void k(float* y) { y[0] = 1; }\ntorch::Tensor f(torch::Tensor x) {\n" ..
  "  k<<<1, 1>>>(x.data_ptr<float>());\n  return x;\n}\n'\'\'\nmod = load_inline(name='k', "
    .. "cuda_sources=src)\n```\n" ..
  "```python\nimport torch\nprint(torch.ones(3))\n```\n"))
assert(#c == 1 and c[1].lang == "cuda", #c)
assert(c[1].source:find('extern "C" __global__ void k', 1, true), c[1].source)
assert(not c[1].source:find("<<<", 1, true) and
  not c[1].source:find("#include <torch/extension.h>\n", 1, true))
assert(c[1].source:find("dropped host function f", 1, true), c[1].source)
assert(#c.skipped == 1 and c.skipped[1].reason:find("without a kernel"))

-- host code in a CUDA block is dropped; a template or overloaded kernel keeps its C++ name
local cu = require "kevo.extract.cuda"
local s, notes = cu.device_only("#include <vector>\n#include <cfloat>\n" ..
  "template <int B> __global__ void t(float* y) {}\n" ..
  "__global__ void o(float* y) {}\n__global__ void o(double* y) {}\n" ..
  "__device__ int helper(int a) { return a; }\nint cdiv(int a, int b) { return (a + b - 1) / b; "
    .. "}\n" ..
  "int main() { float* p; cudaMalloc(&p, 4); o<<<1, 1>>>(p); return 0; }\n")
assert(s:find("dropped #include <vector>", 1, true) and s:find("#include <cfloat>", 1, true), s)
assert(s:find("template <int B> __global__ void t", 1, true) and not s:find('extern "C"', 1, true),
  s)
assert(s:find("int cdiv(int a, int b)", 1, true) and s:find("dropped host function main", 1, true),
  s)
assert(#notes == 1 and notes[1]:find("main"), notes[1])
assert(select(2, cu.device_only("__global__ void k() {}\n")) [1]:find('extern "C"'))
local same = 'extern "C" __global__ void k() {}\n'
assert(cu.device_only(same) == same)

-- Triton: the launcher, torch and autotune go; a constexpr gets the launcher's value
local tr = require "kevo.extract.triton"
s, notes = tr.kernel_only("import torch\nimport triton\nimport triton.language as tl\n\n" ..
  "@triton.autotune(\n    configs=[triton.Config({'B': 256}, num_warps=4)],\n    key=['n'],\n)\n" ..
  "@triton.jit\ndef k(x, n, B: tl.constexpr):\n    pass\n\n" ..
  "def run(x):\n    k[(1,)](x, x.numel(), B=512)\n\nclass ModelNew:\n    pass\n")
assert(not s:find("import torch\n", 1, true) and s:find("import triton\n", 1, true), s)
assert(s:find("@triton.jit\ndef k(x, n, B: tl.constexpr = 256):", 1, true), s)
assert(not s:find("autotune", 1, true) and s:find("dropped def run", 1, true) and
       s:find("dropped class ModelNew", 1, true), s)
assert(#notes == 3, #notes)
s = tr.kernel_only("import triton\n@triton.jit\ndef k(x, B: tl.constexpr):\n    pass\n" ..
  "def go(x):\n    k[(1,)](x, B=128)\n")
assert(s:find("B: tl.constexpr = 128", 1, true), s)

-- best: the language asked for, with a launch, defining a kernel; the last among equals
local two = "```cuda\nextern \"C\" __global__ void v1() {}\n/* kevo:launch\nreturn 1\n*/\n```\n" ..
  "```cuda\nextern \"C\" __global__ void v2() {}\n/* kevo:launch\nreturn 2\n*/\n```\n" ..
  "```cuda\nint main() { return 0; }\n```\n"
assert(extract.best(two, "cuda").source:find("v2"))
assert(extract.best(two, "triton").source:find("v2"))
none, msg, code = extract.best("no code here", "cuda")
assert(none == nil and code == "E_PARSE" and msg:find("```cuda block", 1, true), msg)
none, msg = extract.best({text = two, truncated = true}, "triton")
assert(msg:find("token limit") and msg:find("```python block", 1, true), msg)
assert(not pcall(extract.best, two, "c"))
-- a diff: applied to the block before it; alone, or when it does not apply, the model is told
local base = "```cuda\nextern \"C\" __global__ void k(float* y) {\n  y[0] = 1;\n}\n```\n"
local good = "```diff\n@@ -1,3 +1,3 @@\n extern \"C\" __global__ void k(float* y) {\n" ..
  "-  y[0] = 1;\n+  y[0] = 2;\n }\n```\n"
local pick = assert(extract.best(base .. good, "cuda"))
assert(pick.source:find("y[0] = 2", 1, true) and pick.notes[1]:find("applied the diff"),
  pick.source)
none, msg = extract.best(good, "cuda")
assert(none == nil and msg:find("only a diff"), msg)
none, msg = extract.best(base .. good:gsub("y%[0%] = 1", "y[1] = 7"), "cuda")
assert(none == nil and msg:find("does not apply") and msg:find("whole changed source"), msg)

-- code in a JSON string (a ```json block); HTML-escaped code
pick = assert(extract.best("```json\n{\"code\": \"extern \\\"C\\\" __global__ void j(int n) " ..
  "{ if (n &lt; 0) return; }\", \"launch\": \"return {kernels = {}}\"}\n```\n", "cuda"))
assert(pick.source:find('void j(int n) { if (n < 0)', 1, true) and
  pick.launch == "return {kernels = {}}", pick.source)

-- CUDA in Python strings that are not triple-quoted: joined by +, escapes decoded, f-strings
local py = "```python\nB = 128\nsrc = ('__global__ void p(float* y) {\\n' +\n" ..
  "       f'  y[0] = {B}; y[1] = {{1}}[0] + {other};\\n}}\\n')\n```\n"
pick = assert(extract.best(py, "cuda"))
assert(pick.source:find("y[0] = 128; y[1] = {1}[0] + {other};\n}", 1, true), pick.source)
local joined = table.concat(pick.notes, "\n")
assert(joined:find("{other}", 1, true), joined)

-- #include "name" of another block of the reply: inlined
pick = assert(extract.best("```cuda\n// util.cuh\n#pragma once\n" ..
  "__device__ int two() { return 2; }\n```\n```cuda\n#include \"util.cuh\"\n" ..
  "extern \"C\" __global__ void u(int* y) { y[0] = two(); }\n" ..
  "/* kevo:launch\nreturn 1\n*/\n```\n", "cuda"))
assert(pick.source:find("__device__ int two", 1, true) and not pick.source:find("pragma once"),
  pick.source)

-- a reasoning section's drafts are not the answer, even with a fence left open in them
pick = assert(extract.best("<think>\n```cuda\n__global__ void draft(\n</think>\n" ..
  "```cuda\nextern \"C\" __global__ void final(int* y) {}\n```\n", "cuda"))
assert(pick.source:find("final") and pick.notes[1]:find("reasoning"), pick.source)

-- a fence indented in a list item; a block tagged text that is a launch; a kernel's prototype
local listed = "1. Kernel:\n\n    ```cuda\n    __global__ void q(float* y);\n" ..
  "    __global__ void q(float* y) { y[0] = 1; }\n    ```\n\n    ```text\n" ..
  "    return {kernels = {}}\n    ```\n"
pick = assert(extract.best(listed, "cuda"))
assert(pick.source == 'extern "C" __global__ void q(float* y);\n' ..
  'extern "C" __global__ void q(float* y) { y[0] = 1; }', pick.source)
assert(pick.launch == "return {kernels = {}}", tostring(pick.launch))

-- @triton.jit(...) becomes a bare @triton.jit; an annotated constant is kept
s, notes = tr.kernel_only("import triton\nimport triton.language as tl\n" ..
  "B: tl.constexpr = tl.constexpr(64)\n@triton.jit(\n    do_not_specialize=['n'],\n)\n" ..
  "def k(x, n):\n    pass\n")
assert(s:find("B: tl.constexpr = tl.constexpr(64)\n@triton.jit\ndef k(x, n):", 1, true), s)
assert(table.concat(notes, "\n"):find("arguments"), table.concat(notes, "\n"))

-- a template kernel only the dropped host code instantiates: an extern "C" kernel calls it
s = cu.device_only("template <typename T>\n__global__ void t(const T* x, T* y, int n) " ..
  "{ y[0] = x[0]; }\nvoid go(float* x, float* y) { t<float><<<1, 1>>>(x, y, 1); }\n")
assert(s:find("__device__ __forceinline__ void t_kevo_impl(const T* x", 1, true) and
  s:find('extern "C" __global__ void t(const float* x, float* y, int n) {\n' ..
         '  t_kevo_impl<float>(x, y, n);\n}', 1, true), s)
-- launched with two different arguments, or instantiated in the source: left as written
s = cu.device_only("template <int B>\n__global__ void t(float* y) {}\n" ..
  "void go(float* y) { t<1><<<1, 1>>>(y); t<2><<<1, 1>>>(y); }\n")
assert(not s:find("kevo_impl", 1, true), s)

-- HTML <pre><code>; typographic quotes and spaces; a launch in a block of its own
pick = assert(extract.best("<p>Here:</p>\n<pre><code class=\"language-cuda\">" ..
  "extern &quot;C&quot; " ..
  "__global__ void h(int* y) { if (y[0] &lt; 1) y[0] = 1; }\n</code></pre>\n", "cuda"))
assert(pick.source:find('extern "C" __global__ void h(int* y) { if (y[0] < 1)', 1, true),
  pick.source)
pick = assert(extract.best("```cuda\nextern \u{201C}C\u{201D} __global__ void g(int* y) {\n" ..
  "\u{00A0}\u{00A0}y[0] = 1; // it\u{2019}s\n}\n```\n", "cuda"))
assert(pick.source == 'extern "C" __global__ void g(int* y) {\n  y[0] = 1; // it\'s\n}',
  pick.source)
pick = assert(extract.best("```cuda\nextern \"C\" __global__ void w(int* y) {}\n```\n" ..
  "```cpp\nvoid host(int* y) { w<<<1, 1>>>(y); }\n```\n```lua\nreturn {kernels = {}}\n```\n",
  "cuda"))
assert(pick.source:find("void w") and pick.launch == "return {kernels = {}}", pick.source)

-- str.format on the name a source is bound to
pick = assert(extract.best("```python\nsrc = '''__global__ void f(float* y) " ..
  "{{ y[{i}] = {0}; }}'''\nsrc2 = src.format(7, i=3)\n```\n", "cuda"))
assert(pick.source:find("void f(float* y) { y[3] = 7; }", 1, true), pick.source)

-- a constexpr from the launcher's positional argument, a module constant, a comprehension
s = tr.kernel_only("import triton\nimport triton.language as tl\nB = 64\n" ..
  "@triton.autotune(configs=[triton.Config({'R': r}) for r in [2, 4]], key=['n'])\n" ..
  "@triton.jit\ndef k(x, n, C: tl.constexpr, D: tl.constexpr, R: tl.constexpr):\n    pass\n" ..
  "def go(x):\n    k[(1,)](x, f(x, 1), 128, D=B)\n")
assert(s:find("def k(x, n, C: tl.constexpr = 128, D: tl.constexpr = 64, R: tl.constexpr = 2)",
  1, true), s)

-- an answer wrapped in a ```markdown block; a revision that keeps the launch before it
pick = assert(extract.best("````markdown\n# Answer\n```cuda\n" ..
  "extern \"C\" __global__ void m() {}\n```\n````\n", "cuda"))
assert(pick.source == 'extern "C" __global__ void m() {}', pick.source)
pick = assert(extract.best("```cuda\nextern \"C\" __global__ void r(int* y) { y[0] = 1; }\n" ..
  "/* kevo:launch\nreturn {kernels = {{name = \"r\"}}}\n*/\n```\n```cuda\n" ..
  "extern \"C\" __global__ void r(int* y) { y[0] = 2; }\n```\n", "cuda"))
assert(pick.source:find("y[0] = 2", 1, true) and pick.launch_from == "earlier", pick.source)

-- a fence whose tag is not what it holds
pick = assert(extract.best("```python\nextern \"C\" __global__ void p(int* y) {}\n```\n", "cuda"))
assert(pick.lang == "cuda" and pick.notes[1]:find("as cuda"), pick.lang)
pick = assert(extract.best("```cuda\nimport triton\n@triton.jit\ndef t(x):\n    pass\n```\n",
  "triton"))
assert(pick.lang == "triton", pick.lang)

-- __device__ helpers in an earlier block are put before the kernel that calls them
pick = assert(extract.best("```cuda\n__device__ int two() { return 2; }\n```\n```cuda\n" ..
  "extern \"C\" __global__ void u(int* y) { y[0] = two(); }\n```\n", "cuda"))
assert(pick.source:find("__device__ int two", 1, true) and
  pick.source:find("__device__ int two", 1, true) < pick.source:find("void u", 1, true),
  pick.source)

print("extract ok")
