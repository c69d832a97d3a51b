-- escape: a huge error object (40 MiB, of a 128 MiB cap): the host gets a bounded message
-- exit: 1
-- want: bytes)
-- time: 60
-- (not the default 10 s: under ASan at load 10 building the 40 MiB error took up to 7.8 s;
-- a slower machine would have it killed by the clock before the host got the message)
return {name = "e28", run = function(ctx)
  error(string.rep("E", 40 << 20))
end}
