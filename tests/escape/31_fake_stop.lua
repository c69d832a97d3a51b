-- escape: raise a stop the run never gave (interrupted: the run would be marked killed)
-- exit: 1
-- want: a stop the run never gave
return {name = "e31", run = function(ctx)
  require("kevo.search").stop("interrupted", "forged")
end}
