--[[ settle.lua: charge the actual cost of a call, release the rest of its reservation, and append
  the ledger event, atomically. Settling a reservation twice changes nothing the second time.

  KEYS[1]  balance of the user         (hash: credits, held, deposits)
  KEYS[2]  open reservations           (hash: reservation id -> nano-USD)
  KEYS[3]  reservation deadlines       (zset)
  KEYS[4]  ledger stream of the user   (stream, drained into Postgres)
  ARGV[1]  reservation id
  ARGV[2]  actual cost, nano-USD (integer); capped at the reservation
  ARGV[3]  ledger event (JSON, opaque here)

  Returns {code, charged}:
    {0, charged nano-USD}   settled
    {1, 0}                  no such open reservation (already settled or released)
]]
local rcall = redis.call
local balanceKey, reservationsKey, deadlinesKey, ledgerKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local reservationId = ARGV[1]

local reserved = rcall('HGET', reservationsKey, reservationId)
if not reserved then return {1, 0} end
local charge = tonumber(ARGV[2])
if charge > tonumber(reserved) then charge = tonumber(reserved) end
if charge < 0 then charge = 0 end

if tonumber(reserved) > 0 then rcall('HINCRBY', balanceKey, 'held', '-' .. reserved) end
if charge > 0 then rcall('HINCRBY', balanceKey, 'credits', string.format('-%d', charge)) end
rcall('HDEL', reservationsKey, reservationId)
rcall('ZREM', deadlinesKey, reservationId)
rcall('XADD', ledgerKey, '*', 'r', reservationId, 'c', string.format('%d', charge), 'e', ARGV[3])
return {0, charge}
