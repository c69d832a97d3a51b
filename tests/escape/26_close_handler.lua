-- escape: a __close handler that never returns
-- exit: 1
-- want: killed
-- time: 3
return {name = "e26", run = function(ctx)
  do
    local x <close> = setmetatable({}, {__close = function() while true do end end})
    error("closing")
  end
end}
