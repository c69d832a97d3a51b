-- uct: tree search over candidate lineage, choosing where to expand by UCT
--
-- Options (kevo run --set KEY=VALUE):
--   iterations    expansions (default 24)
--   n             children per expansion (default 2)
--   max_children  a node with this many children is fully expanded: selection goes below it
--                 (default 4)
--   c             exploration constant (default 1.4)
--
-- The tree is the lineage of candidates: the roots are the seeds (default knobs), a node's
-- children are its LLM rewrites (knob mutations without an LLM). Each iteration walks down from
-- the top, picking the child with the highest mean reward + c * sqrt(ln N(parent) / N(child))
-- until it reaches a node that is not fully expanded, expands it, and backs the children's
-- rewards up the lineage. A reward is a verified child's speed-up relative to the best so far
-- (0 for a failure), so it stays in [0, 1].

local search = require "kevo.search"

local function new_node(entry, parent)
  return {entry = entry, parent = parent, kids = {}, n = 0, w = 0, done = false}
end

local function uct_pick(node, c)
  local best, best_v
  for _, k in ipairs(node.kids) do
    if not k.done then
      local v
      if k.n == 0 then
        v = math.huge
      else
        v = k.w / k.n + c * math.sqrt(math.log(math.max(node.n, 1)) / k.n)
      end
      if not best_v or v > best_v then best, best_v = k, v end
    end
  end
  return best
end

local function backprop(node, r)
  while node do
    node.n = node.n + 1
    node.w = node.w + r
    node = node.parent
  end
end

local function run(ctx, opts)
  opts = opts or {}
  local iterations, n = opts.iterations or 24, opts.n or 2
  local max_children, c = opts.max_children or 4, opts.c or 1.4
  local rng = ctx.rng:fork("uct")
  local root = new_node(nil, nil)
  local in_tree = {}
  local function reward(e)
    if not e.ok or not ctx.best then return 0 end
    return math.min(1, e.score / ctx.best.score)
  end
  local starts = ctx:top(max_children)
  if #starts == 0 then starts = ctx:evaluate(ctx:seed_candidates()) end
  for _, e in ipairs(starts) do
    if not in_tree[e.id] then
      in_tree[e.id] = true
      local k = new_node(e, root)
      root.kids[#root.kids + 1] = k
      backprop(k, reward(e))
    end
  end
  for _ = 1, iterations do
    local node = root
    while node == root or (#node.kids >= max_children) do
      local k = uct_pick(node, c)
      if not k then break end
      node = k
    end
    if node == root then return end -- every node is exhausted
    local kids = ctx:children(node.entry, n, node.feedback, rng)
    local added = 0
    if #kids > 0 then
      for _, e in ipairs(ctx:evaluate(kids)) do
        if not in_tree[e.id] then
          in_tree[e.id] = true
          added = added + 1
          local k = new_node(e, node)
          node.kids[#node.kids + 1] = k
          if not e.ok then node.feedback = search.feedback_text(e) end
          backprop(k, reward(e))
        end
      end
    end
    if added == 0 then
      node.done = true -- nothing new below it: stop choosing it
      backprop(node, 0)
    end
    -- a node whose children are all exhausted is exhausted too
    local p = node
    while p and p ~= root do
      local open = not p.done and (#p.kids < max_children)
      for _, k in ipairs(p.kids) do if not k.done then open = true end end
      if open then break end
      p.done = true
      p = p.parent
    end
  end
end

return {name = "uct",
  describe = "tree search over candidate lineage, choosing where to expand by UCT",
        options = {"iterations", "n", "max_children", "c"},
        option_values =
          {iterations = "count", n = "count", max_children = "count", c = "nonnegative"},
        run = run}
