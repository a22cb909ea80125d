--[[ loadspend.lua: load a key's spend in its credit period from Postgres figures, only if Redis has none.

  KEYS[1]  spend of the key (hash: period, spent, held)
  ARGV[1]  start of the key's current credit period, ms
  ARGV[2]  spent since then, nano-USD (its usage transactions in Postgres)
  ARGV[3]  held by the key's pending tasks, nano-USD (their holds, rebuilt by hydrate.lua)

  Returns 1 when loaded, 0 when the key's spend was already there.
]]
local rcall = redis.call
if rcall('EXISTS', KEYS[1]) == 1 then return 0 end
rcall('HSET', KEYS[1], 'period', ARGV[1], 'spent', ARGV[2], 'held', ARGV[3])
return 1
