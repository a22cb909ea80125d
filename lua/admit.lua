--[[ admit.lua: the whole admission decision of one inference call, atomically.
  Per-key sliding-window rate limit, then the user's balance reservation.

  KEYS[1]  rate window of the key      (zset: member = reservation id, score = ms)
  KEYS[2]  balance of the user         (hash: credits, held, deposits; nano-USD)
  KEYS[3]  open reservations           (hash: reservation id -> nano-USD)
  KEYS[4]  reservation deadlines       (zset: reservation id -> expiry ms)
  ARGV[1]  reservation id
  ARGV[2]  amount to reserve, nano-USD (integer)
  ARGV[3]  requests allowed per window
  ARGV[4]  window length, ms
  ARGV[5]  reservation time-to-live, ms

  Returns {code, value, ...}:
    {0, available after the reservation, requests left in the window, ms until the oldest leaves it}
                                            admitted ({0, available} alone when this reservation id is already open)
    {1, retry-after ms}                     rate limited
    {2, available}                          insufficient credits
    {3, 0}                                  balance not loaded (the caller hydrates it from Postgres and retries)
]]
local rcall = redis.call
local rateKey, balanceKey, reservationsKey, deadlinesKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local reservationId = ARGV[1]
local amount = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
local windowMs = tonumber(ARGV[4])
local ttlMs = tonumber(ARGV[5])

-- A command resent after a reconnect must not reserve twice.
if rcall('HEXISTS', reservationsKey, reservationId) == 1 then
  local again = rcall('HMGET', balanceKey, 'credits', 'held')
  return {0, tonumber(again[1] or '0') - tonumber(again[2] or '0')}
end

local t = rcall('TIME')
local nowMs = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

rcall('ZREMRANGEBYSCORE', rateKey, '-inf', nowMs - windowMs)
local used = rcall('ZCARD', rateKey)
if used >= limit then
  local oldest = rcall('ZRANGE', rateKey, 0, 0, 'WITHSCORES')
  local retryMs = windowMs
  if oldest[2] then retryMs = tonumber(oldest[2]) + windowMs - nowMs end
  if retryMs < 1 then retryMs = 1 end
  return {1, retryMs}
end

local balance = rcall('HMGET', balanceKey, 'credits', 'held')
if not balance[1] then return {3, 0} end
local available = tonumber(balance[1]) - tonumber(balance[2] or '0')
if amount > available then return {2, available} end

rcall('ZADD', rateKey, nowMs, reservationId)
rcall('PEXPIRE', rateKey, windowMs)
rcall('HINCRBY', balanceKey, 'held', ARGV[2])
rcall('HSET', reservationsKey, reservationId, ARGV[2])
rcall('ZADD', deadlinesKey, nowMs + ttlMs, reservationId)
local oldest = rcall('ZRANGE', rateKey, 0, 0, 'WITHSCORES')
return {0, available - amount, limit - used - 1, tonumber(oldest[2]) + windowMs - nowMs}
