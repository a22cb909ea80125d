--[[ hydrate.lua: load a user's balance from Postgres figures, only if Redis has none.

  KEYS[1]  balance of the user (hash: credits, held, deposits, epoch)
  KEYS[2]  open reservations  (hash: reservation, lease or task hold id -> nano-USD held)
  ARGV[1]  credits, nano-USD (sum of the user's transactions)
  ARGV[2]  deposits, nano-USD (sum of the user's positive transactions)
  ARGV[3..] pairs: hold id, nano-USD of each pending task (from the same Postgres snapshot as ARGV[1]);
           they are `held` again, without a deadline, as their tasks placed them

  The epoch (the load's time, microseconds) tells settle.lua that leases opened before it were lost
  with Redis's data.

  Returns 1 when loaded, 0 when a balance was already there.
]]
local rcall = redis.call
local balanceKey, reservationsKey = KEYS[1], KEYS[2]
if rcall('EXISTS', balanceKey) == 1 then return 0 end
local held = 0
for i = 3, #ARGV, 2 do
  rcall('HSET', reservationsKey, ARGV[i], ARGV[i + 1])
  held = held + tonumber(ARGV[i + 1])
end
local t = rcall('TIME')
rcall('HSET', balanceKey, 'credits', ARGV[1], 'held', string.format('%d', held), 'deposits', ARGV[2], 'epoch', t[1] .. string.format('%06d', tonumber(t[2])))
return 1
