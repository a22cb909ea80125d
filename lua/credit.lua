--[[ credit.lua: bring a deposit (top-up, coupon) committed in Postgres into the Redis balance.
  Takes the user's deposit TOTAL after the deposit, not the amount, so a replay or two deposits
  arriving out of order never credit twice: only the part above what was seen is added.

  KEYS[1]  balance of the user (hash: credits, held, deposits)
  ARGV[1]  the user's total deposits in Postgres, nano-USD, read after the deposit committed

  Returns {code, credits}:
    {0, credits after}   applied (or already included)
    {1, 0}               balance not loaded (the caller hydrates from Postgres, which includes it)
]]
local rcall = redis.call
local balanceKey = KEYS[1]
local total = tonumber(ARGV[1])
local seen = rcall('HGET', balanceKey, 'deposits')
if not seen then return {1, 0} end
local delta = total - tonumber(seen)
if delta > 0 then
  rcall('HINCRBY', balanceKey, 'credits', string.format('%d', delta))
  rcall('HSET', balanceKey, 'deposits', ARGV[1])
end
return {0, tonumber(rcall('HGET', balanceKey, 'credits'))}
