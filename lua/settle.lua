--[[ settle.lua: apply a batch of settled calls to their lease, atomically: charge each call's
  actual cost, release what the lease no longer needs, and append each call's ledger event. With
  ARGV[4] = 1 it closes the lease: the rest of its credit is released and its unused slots leave
  the key's rate window.

  Batches of one lease are numbered from 1 and sent in order, one at a time; a batch whose number
  is not above the last applied one is a resend (a reconnect replays commands) and changes nothing.
  A lease that is no longer open was either closed (so this is a resend: nothing to do) or released
  at its deadline by a janitor, which leaves a mark in KEYS[8]: then the calls are still charged,
  because they were served and their cost is owed. Nothing is kept per call or per closed lease.

  KEYS[1]  balance of the user         (hash: credits, held, deposits)
  KEYS[2]  open reservations           (hash: reservation or lease id -> nano-USD still held)
  KEYS[3]  reservation deadlines       (zset)
  KEYS[4]  ledger stream of the user   (stream, drained into Postgres)
  KEYS[5]  rate window of the key      (zset)
  KEYS[6]  rate window weights         (hash)
  KEYS[7]  last batch applied, per open lease (hash: lease id -> batch number)
  KEYS[8]  leases released at their deadline (hash: lease id -> 1; the janitor's mark)
  KEYS[9]  per-minute window of the key (zset)
  KEYS[10] per-minute window weights   (hash)
  ARGV[1]  lease id
  ARGV[2]  batch number (integer, from 1)
  ARGV[3]  reservation time-to-live, ms (a lease that stays open gets a new deadline)
  ARGV[4]  1 to close the lease, 0 to keep it open
  ARGV[5]  slots the lease did not use (returned to both windows when closing)
  ARGV[6]  credit to release now without closing, nano-USD (integer)
  ARGV[7..] triples: call id, cost nano-USD (integer; capped at what the lease holds), ledger event (JSON, opaque here)

  Returns {code, charged}:
    {0, nano-USD charged by this batch}
    {1, 0}   the lease is not open (closed, so this is a resend, or lost with Redis's data): nothing done
    {2, 0}   a resent batch of an open lease: nothing done
]]
local rcall = redis.call
local balanceKey, reservationsKey, deadlinesKey, ledgerKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local rateKey, weightsKey, batchesKey, expiredKey = KEYS[5], KEYS[6], KEYS[7], KEYS[8]
local minuteKey, minuteWeightsKey = KEYS[9], KEYS[10]
local leaseId = ARGV[1]
local batch = tonumber(ARGV[2])
local ttlMs = tonumber(ARGV[3])
local closing = ARGV[4] == '1'
local unusedSlots = tonumber(ARGV[5])
local release = tonumber(ARGV[6])

local heldRaw = rcall('HGET', reservationsKey, leaseId)
local held = heldRaw and tonumber(heldRaw)
local expired = not held and rcall('HEXISTS', expiredKey, leaseId) == 1
if not held and not expired then return {1, 0} end
if batch <= tonumber(rcall('HGET', batchesKey, leaseId) or '0') then return {2, 0} end
if closing then
  rcall('HDEL', batchesKey, leaseId)
  if expired then rcall('HDEL', expiredKey, leaseId) end
else
  rcall('HSET', batchesKey, leaseId, batch)
end

local charged, fromHeld = 0, 0
for i = 7, #ARGV, 3 do
  local charge = math.max(0, tonumber(ARGV[i + 1]))
  if held then
    if charge > held - fromHeld then charge = held - fromHeld end
    fromHeld = fromHeld + charge
  end
  charged = charged + charge
  rcall('XADD', ledgerKey, '*', 'r', ARGV[i], 'c', string.format('%d', charge), 'e', ARGV[i + 2])
end
if charged > 0 then rcall('HINCRBY', balanceKey, 'credits', string.format('-%d', charged)) end

if held then
  local freed = fromHeld
  if closing then
    freed = held
    rcall('HDEL', reservationsKey, leaseId)
    rcall('ZREM', deadlinesKey, leaseId)
  else
    freed = freed + math.max(0, math.min(release, held - fromHeld))
    rcall('HSET', reservationsKey, leaseId, string.format('%d', held - freed))
    local t = rcall('TIME')
    rcall('ZADD', deadlinesKey, tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + ttlMs, leaseId)
  end
  if freed > 0 then rcall('HINCRBY', balanceKey, 'held', string.format('-%d', freed)) end
end

-- A window the lease is not in (expired, or no per-minute limit) is left alone.
local function giveBack(zsetKey, weightsOf)
  if not rcall('ZSCORE', zsetKey, leaseId) then return end
  local weight = tonumber(rcall('HGET', weightsOf, leaseId) or '1')
  local returned = math.min(unusedSlots, weight)
  rcall('HINCRBY', weightsOf, '#', -returned)
  if returned == weight then
    rcall('ZREM', zsetKey, leaseId)
    rcall('HDEL', weightsOf, leaseId)
  else
    rcall('HSET', weightsOf, leaseId, weight - returned)
  end
end
if closing and unusedSlots > 0 then
  giveBack(rateKey, weightsKey)
  giveBack(minuteKey, minuteWeightsKey)
end
return {0, charged}
