--[[ expire.lua: release a lease whose deadline has passed (its gateway died or lost touch), atomically.
  Its credit goes back to the user's available and to the key's credit limit, its tokens to the key's budgets; it is marked with
  its last applied batch, so calls its owner settles late are still charged once (settle.lua) and
  a resent batch is not.

  KEYS[1]  balance of the user         (hash: credits, held, ...)
  KEYS[2]  open reservations           (hash: lease id -> nano-USD still held)
  KEYS[3]  reservation deadlines       (zset: lease id -> expiry ms)
  KEYS[4]  last batch applied, per open lease (hash)
  KEYS[5]  leases settled without their reservation (hash: lease id -> last batch applied)
  KEYS[6]  spend of the lease's key    (hash: period, spent, held)
  KEYS[7]  leases holding slack        (hash: lease id -> unused credit; its entry leaves, and the balance's `slack` with it)
  KEYS[8]  token buckets of the lease's key (hash; the lease's reserved tokens, l<lease id>, leave `h`)
  ARGV[1]  lease id

  Returns {released nano-USD} as {1, amount}, or {0, 0} when the lease is not past its deadline
  (settled or extended since the caller looked) or not open.
]]
local rcall = redis.call
local balanceKey, reservationsKey, deadlinesKey, batchesKey, outsideKey, spendKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local slackKey, tokensKey = KEYS[7], KEYS[8]
local leaseId = ARGV[1]

local deadline = rcall('ZSCORE', deadlinesKey, leaseId)
if not deadline then return {0, 0} end
local t = rcall('TIME')
if tonumber(deadline) > tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) then return {0, 0} end
rcall('ZREM', deadlinesKey, leaseId)
local held = tonumber(rcall('HGET', reservationsKey, leaseId) or '0')
rcall('HDEL', reservationsKey, leaseId)
local slack = tonumber(rcall('HGET', slackKey, leaseId) or '0')
if slack > 0 then rcall('HINCRBY', balanceKey, 'slack', string.format('-%d', slack)) end
rcall('HDEL', slackKey, leaseId)
if held > 0 then
  rcall('HINCRBY', balanceKey, 'held', string.format('-%d', held))
  if rcall('EXISTS', spendKey) == 1 then rcall('HINCRBY', spendKey, 'held', string.format('-%d', held)) end
end
local reservedTokens = tonumber(rcall('HGET', tokensKey, 'l' .. leaseId) or '0')
if reservedTokens > 0 then
  rcall('HDEL', tokensKey, 'l' .. leaseId)
  rcall('HINCRBY', tokensKey, 'h', -reservedTokens)
end
rcall('HSET', outsideKey, leaseId, rcall('HGET', batchesKey, leaseId) or '0')
rcall('PEXPIRE', outsideKey, 86400000)
rcall('HDEL', batchesKey, leaseId)
return {1, held}
