-- kevo.export.readme: README.md of an export directory: what each file is and how to use it.
local M = {}

local function md(s) return (tostring(s or "?"):gsub("[%c`]", " ")) end

function M.render(o)
  local r, b = o.run, o.best
  local out = {}
  local function add(s) out[#out + 1] = s end
  add(("# Kernel exported by kevo: run %d, candidate %d"):format(r.id, b.candidate))
  add("")
  if o.synthetic then
    add((
      "**SYNTHETIC.** Recipe `%s`, strategy `%s`. This run's verdicts and times were computed by "
      .. "the "
         .. "model evaluator `%s` (KEVO_EVALUATOR), not measured on a GPU: the kernel was neither "
           .. "verified "
         .. "nor timed (the model said %s over the reference). Compiled for `%s`.")
        :format(md(r.recipe), md(r.strategy), md(o.synthetic),
                b.speedup and ("%.2fx"):format(b.speedup) or "?", md(o.arch)))
  else
    add(("Recipe `%s`, strategy `%s`. Verified against the recipe's reference on the GPU named in "
         .. "provenance.json, then timed: %s over the reference, median %s ms. Compiled for `%s`.")
        :format(md(r.recipe), md(r.strategy), b.speedup and ("%.2fx"):format(b.speedup) or "?",
                b.median_ms and ("%.4f"):format(b.median_ms) or "?", md(o.arch)))
  end
  add("")
  add("## Files")
  add("")
  for _, f in ipairs(o.files) do add(("- `%s`: %s"):format(f.file, f.what)) end
  add("- `README.md`: this file")
  add("")
  add("## Using them")
  add("")
  add("**C / C++ (CUDA driver API).** `kernel_launch.h` embeds the cubin. With a current context:")
  add("")
  add("```c")
  add('#include "kernel_launch.h"')
  add("kevo_kernel k;")
  add("CUresult rc = kevo_kernel_load(&k, NULL);         /* NULL: the embedded cubin */")
  add("rc = kevo_kernel_launch(&k, stream, /* device pointers, then the shape's params */ ...);")
  add("kevo_kernel_unload(&k);")
  add("```")
  add("")
  add("Build with `-I$CUDA_HOME/include -lcuda`. The launch geometry was resolved for the recipe's "
      .. "benchmark shape; `kevo_kernel_launch` refuses other params (`CUDA_ERROR_INVALID_VALUE`). "
      .. "For other shapes use the per-shape plans in `launch.json`, or resolve `launch_chunk` "
        .. "again.")
  add("")
  add("**PyTorch.** `torch_ext.py` loads `kernel.cubin` with ctypes (no compiler, no build step) "
    .. "and "
      .. "launches it on torch's current stream with a plan from `launch.json`:")
  add("")
  add("```python")
  add("import torch_ext")
  add("k = torch_ext.Kernel()")
  add("shape = k.shapes[0]                 # the benchmark shape; see launch.json for the others")
  add("outs = k(shape, **k.make_inputs(shape))")
  add("```")
  add("")
  add("**Test vectors.** kevo keeps no tensors in its archive, so none are shipped here. On a GPU, "
      .. "`python3 make_test_vectors.py` draws inputs as the recipe says, computes the expected "
      .. "outputs with the recipe's reference kernel (`reference.cubin`), checks the exported "
      .. "kernel against them with the recipe's tolerance, and writes `test_vectors.pt`.")
  add("")
  add("**Provenance.** `provenance.json` names the recipe (path and sha256), the run, this "
    .. "candidate "
      .. "and its parent chain, the GPU, driver, clocks and temperature of the measurement, the "
      .. "timings and the verdict, and the kevo that exported it.")
  if #o.notes > 0 then
    add("")
    add("## Notes")
    add("")
    for _, n in ipairs(o.notes) do add("- " .. md(n)) end
  end
  return table.concat(out, "\n") .. "\n"
end

return M
