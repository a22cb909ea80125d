--[[ hydrate.lua: load a user's balance from Postgres figures, only if Redis has none.

  KEYS[1]  balance of the user (hash: credits, held, deposits, epoch)
  ARGV[1]  credits, nano-USD (sum of the user's transactions)
  ARGV[2]  deposits, nano-USD (sum of the user's positive transactions)

  The epoch (the load's time, microseconds) tells settle.lua that leases opened before it were lost
  with Redis's data.

  Returns 1 when loaded, 0 when a balance was already there.
]]
local rcall = redis.call
local balanceKey = KEYS[1]
if rcall('EXISTS', balanceKey) == 1 then return 0 end
local t = rcall('TIME')
rcall('HSET', balanceKey, 'credits', ARGV[1], 'held', 0, 'deposits', ARGV[2], 'epoch', t[1] .. string.format('%06d', tonumber(t[2])))
return 1
