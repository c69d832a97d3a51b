-- escape: a huge error object (40 MiB, of a 128 MiB cap): the host gets a bounded message
-- exit: 1
-- want: bytes)
return {name = "e28", run = function(ctx)
  error(string.rep("E", 40 << 20))
end}
