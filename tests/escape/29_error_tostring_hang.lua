-- escape: an error object whose __tostring never returns
-- exit: 1
-- want: killed
-- time: 3
return {name = "e29", run = function(ctx)
  error(setmetatable({}, {__tostring = function() while true do end end}))
end}
