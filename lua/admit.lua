--[[ admit.lua: open an admission lease for one or more inference calls of one key, atomically.
  A lease is a reservation of credit plus a number of request slots in the key's rate window. The
  call that asks for it is admitted from it at once; an HTTP thread admits the key's next calls
  from the rest locally until it runs out, then settles it (settle.lua). The rest is granted only
  when it is small next to what is left (1/8 of the spare credit and of the spare slots), so
  leases cannot starve the other threads and processes; a lease of one slot and exactly the
  call's cost is plain per-call admission.

  Rate window: a sliding log of weighted members. A member is a lease; its weight (the slots it
  holds, 1 when absent from the weights hash) counts until its score + window. A lease of more
  than one slot is scored at now + its longest life, so slots it hands out later still count for
  a whole window after their use (the window never lets more through than its limit).

  KEYS[1]  rate window of the key      (zset: lease id -> ms its slots count from)
  KEYS[2]  rate window weights         (hash: lease id -> slots, only when more than 1; '#' -> sum of all weights)
  KEYS[3]  per-minute window of the key, for its rate_limit_rpm (zset, as KEYS[1])
  KEYS[4]  per-minute window weights   (hash, as KEYS[2])
  KEYS[5]  balance of the user         (hash: credits, held, deposits; nano-USD)
  KEYS[6]  open reservations           (hash: reservation or lease id -> nano-USD still held)
  KEYS[7]  reservation deadlines       (zset: reservation or lease id -> expiry ms)
  ARGV[1]  lease id
  ARGV[2]  cost of the asking call, nano-USD (integer): the least credit the lease must hold
  ARGV[3]  credit wanted, nano-USD (integer, >= ARGV[2])
  ARGV[4]  slots wanted (integer, >= 1)
  ARGV[5]  requests allowed per window
  ARGV[6]  window length, ms
  ARGV[7]  reservation time-to-live, ms
  ARGV[8]  longest life of a lease of more than one slot, ms
  ARGV[9]  the key's requests per minute (rate_limit_rpm), -1 for none

  Returns {code, ...}:
    {0, credit granted, slots granted, available after, slots left in the window, ms until the oldest leaves it}
                                            admitted (a lease id already open answers its own grant again)
    {1, retry-after ms, 1 when the per-minute limit is the one exceeded}   rate limited
    {2, available}                          insufficient credits
    {3, 0}                                  balance not loaded (the caller hydrates it from Postgres and retries)
]]
local rcall = redis.call
local rateKey, weightsKey, minuteKey, minuteWeightsKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local balanceKey, reservationsKey, deadlinesKey = KEYS[5], KEYS[6], KEYS[7]
local leaseId = ARGV[1]
local callCost = tonumber(ARGV[2])
local wantCredit = tonumber(ARGV[3])
local wantSlots = tonumber(ARGV[4])
local limit = tonumber(ARGV[5])
local windowMs = tonumber(ARGV[6])
local ttlMs = tonumber(ARGV[7])
local leaseLifeMs = tonumber(ARGV[8])
local rpm = tonumber(ARGV[9])
local hasRpm = rpm >= 0
local MINUTE_MS = 60000

local function availableNow()
  local balance = rcall('HMGET', balanceKey, 'credits', 'held')
  return tonumber(balance[1] or '0') - tonumber(balance[2] or '0')
end

-- A command resent after a reconnect must not open the lease twice.
local open = rcall('HGET', reservationsKey, leaseId)
if open then
  local slots = tonumber(rcall('HGET', weightsKey, leaseId) or '1')
  return {0, tonumber(open), slots, availableNow(), 0, windowMs}
end

local t = rcall('TIME')
local nowMs = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

-- The weight in a window after dropping the members whose window has passed (and their weights from the sum).
local function usedIn(zsetKey, weightsOf, lengthMs)
  local used = tonumber(rcall('HGET', weightsOf, '#') or '0')
  local expired = rcall('ZRANGEBYSCORE', zsetKey, '-inf', nowMs - lengthMs)
  if #expired > 0 then
    for i = 1, #expired, 1000 do
      local chunk = {unpack(expired, i, math.min(i + 999, #expired))}
      local weights = rcall('HMGET', weightsOf, unpack(chunk))
      for j = 1, #chunk do used = used - tonumber(weights[j] or '1') end
      rcall('HDEL', weightsOf, unpack(chunk))
    end
    rcall('ZREMRANGEBYSCORE', zsetKey, '-inf', nowMs - lengthMs)
    if used < 0 then used = 0 end
    rcall('HSET', weightsOf, '#', used)
  end
  return used
end

-- When enough of the oldest weight has left the window for one more request.
local function retryIn(zsetKey, weightsOf, used, max, lengthMs)
  local excess = used - max + 1
  local members = rcall('ZRANGE', zsetKey, 0, -1, 'WITHSCORES')
  local retryMs = lengthMs
  for i = 1, #members, 2 do
    excess = excess - tonumber(rcall('HGET', weightsOf, members[i]) or '1')
    if excess <= 0 then
      retryMs = tonumber(members[i + 1]) + lengthMs - nowMs
      break
    end
  end
  if retryMs < 1 then retryMs = 1 end
  return retryMs
end

local used = usedIn(rateKey, weightsKey, windowMs)
local usedMinute = 0
if hasRpm then usedMinute = usedIn(minuteKey, minuteWeightsKey, MINUTE_MS) end
if used >= limit then return {1, retryIn(rateKey, weightsKey, used, limit, windowMs), 0} end
if hasRpm and usedMinute >= rpm then return {1, retryIn(minuteKey, minuteWeightsKey, usedMinute, rpm, MINUTE_MS), 1} end

local balance = rcall('HMGET', balanceKey, 'credits', 'held')
if not balance[1] then return {3, 0} end
local available = tonumber(balance[1]) - tonumber(balance[2] or '0')
if callCost > available then return {2, available} end

local credit = callCost + math.max(0, math.min(wantCredit - callCost, math.floor((available - callCost) / 8)))
local spareSlots = math.floor((limit - used - 1) / 8)
if hasRpm then spareSlots = math.min(spareSlots, math.floor((rpm - usedMinute - 1) / 8)) end
local slots = 1 + math.max(0, math.min(wantSlots - 1, spareSlots))
-- Extra slots without the credit for another call (or the reverse) would be held for nothing.
if slots == 1 or credit < 2 * callCost then
  slots = 1
  credit = callCost
end

local score = nowMs
if slots > 1 then score = nowMs + leaseLifeMs end
local function record(zsetKey, weightsOf, lengthMs)
  if slots > 1 then rcall('HSET', weightsOf, leaseId, slots) end
  rcall('ZADD', zsetKey, score, leaseId)
  rcall('HINCRBY', weightsOf, '#', slots)
  rcall('PEXPIRE', zsetKey, lengthMs + leaseLifeMs)
  rcall('PEXPIRE', weightsOf, lengthMs + leaseLifeMs)
end
record(rateKey, weightsKey, windowMs)
if hasRpm then record(minuteKey, minuteWeightsKey, MINUTE_MS) end
rcall('HINCRBY', balanceKey, 'held', string.format('%d', credit))
rcall('HSET', reservationsKey, leaseId, string.format('%d', credit))
rcall('ZADD', deadlinesKey, nowMs + ttlMs, leaseId)
local oldest = rcall('ZRANGE', rateKey, 0, 0, 'WITHSCORES')
return {0, credit, slots, available - credit, limit - used - slots, tonumber(oldest[2]) + windowMs - nowMs}
