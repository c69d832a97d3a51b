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
c = assert(extract.candidates("```lua\nreturn {kernels = {}}\n```\n```cuda\n__global__ void z() {}\n```\n"))
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
print("extract ok")
