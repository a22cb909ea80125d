--[[ settle.lua: apply a batch of settled calls to their lease, atomically: charge each call's
  actual cost, release what the lease no longer needs, add the key's spend and tokens, and append
  each call's ledger event. With ARGV[4] = 1 it closes the lease: the rest of its credit is released
  and its unused slots leave the key's rate windows.

  Batches of one lease are numbered from 1 and sent in order, one at a time; a batch whose number
  is not above the last applied one is a resend (a reconnect replays commands) and changes nothing.
  A lease that is no longer open was closed (so this is a resend: nothing to do), released at its
  deadline by the janitor (expire.lua marks it), or lost with Redis's data (the balance was rebuilt
  since: its epoch differs from the lease's). In the last two cases the calls are still charged,
  because they were served and their cost is owed, and the mark keeps the lease's last batch so a
  resend charges nothing twice.

  A call's tokens are added to the key's buckets in the same step as its worst case leaves the
  lease's token reservation, so the budgets never see a call neither reserved nor used.

  Lease slack (see admit.lua): a lease granted slack reports with each batch the unused credit it
  holds after it (ARGV[8]), which becomes its entry in KEYS[13] and its share of the balance's
  `slack`; a retired lease (ARGV[9] = 1) or a closed one leaves KEYS[13]. When the last lease with
  slack leaves it while a recall runs (KEYS[14]), `d<user id>` is published on ARGV[10].

  A charge without the reservation of a lease the janitor released is added to the balance's
  `outside` field (nano-USD), which `gateway ledger check` reports: with calls in flight refreshing
  their lease's deadline, it means the lease's thread stalled for longer than the reservation TTL.
  Batches of a lease of an earlier balance epoch (Redis lost its data; the journal brings them back)
  are recovered charges, marked `r<lease id>` in KEYS[8], and are not counted there.

  KEYS[1]  balance of the user         (hash: credits, held, deposits, epoch, outside)
  KEYS[2]  open reservations           (hash: reservation or lease id -> nano-USD still held)
  KEYS[3]  reservation deadlines       (zset)
  KEYS[4]  ledger stream of the user   (stream, drained into Postgres)
  KEYS[5]  rate window of the key      (zset)
  KEYS[6]  rate window weights         (hash)
  KEYS[7]  last batch applied, per open lease (hash: lease id -> batch number)
  KEYS[8]  leases settled without their reservation (hash: lease id -> last batch applied, r<lease id> -> 1 for a lease of an earlier epoch; expires a day after its last write)
  KEYS[9]  per-minute window of the key (zset)
  KEYS[10] per-minute window weights   (hash)
  KEYS[11] spend of the key            (hash: period, spent, held; see admit.lua)
  KEYS[12] token buckets of the key    (hash: m<minute> and q<quarter hour> -> tokens; h and l<lease id> -> tokens reserved, see admit.lua)
  KEYS[13] leases holding slack        (hash: lease id -> unused credit at its last report)
  KEYS[14] recall flag of the user     (string, expiring; see admit.lua)
  ARGV[1]  lease id
  ARGV[2]  batch number (integer, from 1)
  ARGV[3]  reservation time-to-live, ms (a lease that stays open gets a new deadline)
  ARGV[4]  1 to close the lease, 0 to keep it open
  ARGV[5]  slots the lease did not use (returned to both windows when closing)
  ARGV[6]  credit to release now without closing, nano-USD (integer)
  ARGV[7]  the balance epoch admit.lua returned when it opened the lease
  ARGV[8]  unused credit the lease holds after this batch, nano-USD (integer; -1 when not known: a replay)
  ARGV[9]  1 when the lease admits no more calls (retired: its unused credit is released by now)
  ARGV[10] pub/sub channel of recalls
  ARGV[11] the user's id
  ARGV[12] tokens the lease no longer reserves after this batch: the worst cases of its settled calls
           and, once retired, what it reserved for calls it will not admit (integer; closing releases all)
  ARGV[13..] quadruples: call id, cost nano-USD (integer; capped at what the lease holds), tokens used, ledger event (JSON, opaque here)

  Returns {code, charged}:
    {0, nano-USD charged by this batch}
    {1, 0}   the lease was closed before: nothing done
    {2, 0}   a resent batch: nothing done
    {3, 0}   the balance is not loaded (the caller hydrates it from Postgres and sends the batch again)
    {4, nano-USD charged}   charged without the lease's reservation (released at its deadline, or lost with Redis's data)
]]
local rcall = redis.call
local balanceKey, reservationsKey, deadlinesKey, ledgerKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local rateKey, weightsKey, batchesKey, outsideKey = KEYS[5], KEYS[6], KEYS[7], KEYS[8]
local minuteKey, minuteWeightsKey, spendKey, tokensKey = KEYS[9], KEYS[10], KEYS[11], KEYS[12]
local slackKey, recallKey = KEYS[13], KEYS[14]
local leaseId = ARGV[1]
local batch = tonumber(ARGV[2])
local ttlMs = tonumber(ARGV[3])
local closing = ARGV[4] == '1'
local unusedSlots = tonumber(ARGV[5])
local release = tonumber(ARGV[6])
local leaseEpoch = ARGV[7]
local reportedSlack = tonumber(ARGV[8])
local retired = ARGV[9] == '1'
local DAY_MS = 86400000

local recovered = false
local heldRaw = rcall('HGET', reservationsKey, leaseId)
local held = heldRaw and tonumber(heldRaw)
if held then
  if batch <= tonumber(rcall('HGET', batchesKey, leaseId) or '0') then return {2, 0} end
  if closing then rcall('HDEL', batchesKey, leaseId) else rcall('HSET', batchesKey, leaseId, batch) end
else
  local balance = rcall('HMGET', balanceKey, 'credits', 'epoch')
  if not balance[1] then return {3, 0} end
  local mark = rcall('HGET', outsideKey, leaseId)
  if not mark then
    if (balance[2] or '0') == leaseEpoch then return {1, 0} end
    -- A lease of an earlier epoch: Redis lost its data, and this batch is recovered, not an overdraft.
    mark = '0'
    recovered = true
    rcall('HSET', outsideKey, 'r' .. leaseId, 1)
  elseif rcall('HEXISTS', outsideKey, 'r' .. leaseId) == 1 then
    recovered = true
  end
  if batch <= tonumber(mark) then return {2, 0} end
  rcall('HSET', outsideKey, leaseId, batch)
  rcall('PEXPIRE', outsideKey, DAY_MS)
end

local charged, fromHeld, tokens = 0, 0, 0
for i = 13, #ARGV, 4 do
  local charge = math.max(0, tonumber(ARGV[i + 1]))
  if held then
    if charge > held - fromHeld then charge = held - fromHeld end
    fromHeld = fromHeld + charge
  end
  charged = charged + charge
  tokens = tokens + tonumber(ARGV[i + 2])
  rcall('XADD', ledgerKey, '*', 'r', ARGV[i], 'c', string.format('%d', charge), 'e', ARGV[i + 3])
end
if charged > 0 then
  rcall('HINCRBY', balanceKey, 'credits', string.format('-%d', charged))
  if not held and not recovered then rcall('HINCRBY', balanceKey, 'outside', string.format('%d', charged)) end
end

local freed = 0
if held then
  freed = fromHeld
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
  -- The lease's slack: what it reported (never above what it still holds), or none once it admits no more.
  local oldSlack = rcall('HGET', slackKey, leaseId)
  if oldSlack then
    oldSlack = tonumber(oldSlack)
    local left = held - freed
    local newSlack = -1
    if not (closing or retired) then
      newSlack = reportedSlack
      if newSlack < 0 then newSlack = oldSlack end
      if newSlack > left then newSlack = left end
    end
    if newSlack >= 0 then
      rcall('HSET', slackKey, leaseId, string.format('%d', newSlack))
    else
      newSlack = 0
      rcall('HDEL', slackKey, leaseId)
      if rcall('EXISTS', recallKey) == 1 and rcall('HLEN', slackKey) == 0 then rcall('PUBLISH', ARGV[10], 'd' .. ARGV[11]) end
    end
    if newSlack ~= oldSlack then rcall('HINCRBY', balanceKey, 'slack', string.format('%d', newSlack - oldSlack)) end
  end
else
  -- Charged without the reservation: it holds nothing, slack included (the balance's sum was rebuilt or released with it).
  rcall('HDEL', slackKey, leaseId)
end

-- A spend hash lost with Redis's data is rebuilt from Postgres by admit (code 5); one recreated
-- here would hold only this batch and hide the rest of the period.
if rcall('EXISTS', spendKey) == 1 then
  if charged > 0 then rcall('HINCRBY', spendKey, 'spent', string.format('%d', charged)) end
  if freed > 0 then rcall('HINCRBY', spendKey, 'held', string.format('-%d', freed)) end
end

local reservedField = 'l' .. leaseId
local reservedTokens = tonumber(rcall('HGET', tokensKey, reservedField) or '0')
if reservedTokens > 0 then
  local freedTokens = reservedTokens
  if not closing then freedTokens = math.max(0, math.min(reservedTokens, tonumber(ARGV[12]))) end
  if freedTokens == reservedTokens then rcall('HDEL', tokensKey, reservedField) else rcall('HSET', tokensKey, reservedField, reservedTokens - freedTokens) end
  if freedTokens > 0 then rcall('HINCRBY', tokensKey, 'h', -freedTokens) end
end

if tokens > 0 then
  local t = rcall('TIME')
  local nowMs = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local minuteField = 'm' .. math.floor(nowMs / 60000)
  rcall('HINCRBY', tokensKey, minuteField, tokens)
  rcall('HINCRBY', tokensKey, 'q' .. math.floor(nowMs / 900000), tokens)
  rcall('PEXPIRE', tokensKey, DAY_MS + 900000)
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
if held then return {0, charged} end
return {4, charged}
