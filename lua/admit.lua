--[[ admit.lua: open an admission lease for one or more inference calls of one key, atomically.
  A lease is a reservation of credit plus a number of request slots in the key's rate window. The
  call that asks for it is admitted from it at once; an HTTP thread admits the key's next calls
  from the rest locally until it runs out, then settles it (settle.lua). The rest is granted only
  when it is small next to what is left (1/8 of the spare credit, of the key's spare credit limit
  and of the spare slots), so leases cannot starve the other threads and processes; a lease of one
  slot and exactly the call's cost is plain per-call admission.

  Rate window: a sliding log of weighted members. A member is a lease; its weight (the slots it
  holds, 1 when absent from the weights hash) counts until its score + window. A lease of more
  than one slot is scored at now + its longest life, so slots it hands out later still count for
  a whole window after their use (the window never lets more through than its limit).

  Refusals count too: a request refused for its tokens (code 7), its credit (code 2) or the key's credit
  limit (code 4) takes one slot in the request windows, as an admitted one does, so that refused
  requests cannot be sent without limit (a rate-limit refusal, code 1, takes none: the window is full;
  codes 3, 5 and 6 are retried by the caller, whose final answer counts once).

  Token budgets (rate_limit_tph, rate_limit_tpd): settle.lua adds each call's tokens to minute and
  quarter-hour buckets; the last 60 minute buckets are the hour, the last 96 quarter buckets the day.
  A lease reserves its calls' worst-case tokens (ARGV[14] per slot) as it reserves credit: field
  `h` of KEYS[9] holds what open leases reserve, field `l<lease id>` each lease's share, and a call
  is admitted only while used + reserved + its own worst case fits every budget, so calls in flight
  can never take a window past it. settle.lua moves a settled call from reserved to used (at its
  actual count); expire.lua drops a dead lease's share. A lease's extra slots fit in 1/8 of what
  is left. A call with no tokens (ARGV[14] = 0: images, tasks) neither checks nor reserves them.

  Credit limit: the key's spend hash holds its spend in the current period and the credit its open
  leases hold; spent + held never exceeds the cap. A new period (ARGV[11] differs from the stored
  one) starts the spend at 0.

  Lease slack: the credit a lease holds beyond its asking call is recorded per lease in KEYS[10] and
  summed in the balance's `slack` field (part of `held`; settle.lua keeps both up to date from the
  lease's reports). When the balance (or the key's credit limit) does not cover the call but the
  whole reservations of the leases holding slack would (ARGV[16] > 0), the call is not refused yet:
  the recall flag (KEYS[11]) is set for ARGV[16] ms, during which no lease of the user gets slack,
  `r<user id>` is published on ARGV[17] so that every HTTP thread gives its leases' unused credit
  back at once, and code 6 tells the caller to retry shortly (settle.lua publishes `d<user id>` when
  the last lease with slack is drained).

  KEYS[1]  rate window of the key      (zset: lease id -> ms its slots count from)
  KEYS[2]  rate window weights         (hash: lease id -> slots, only when more than 1; '#' -> sum of all weights)
  KEYS[3]  per-minute window of the key, for its rate_limit_rpm (zset, as KEYS[1])
  KEYS[4]  per-minute window weights   (hash, as KEYS[2])
  KEYS[5]  balance of the user         (hash: credits, held, deposits, epoch; nano-USD)
  KEYS[6]  open reservations           (hash: reservation or lease id -> nano-USD still held)
  KEYS[7]  reservation deadlines       (zset: reservation or lease id -> expiry ms)
  KEYS[8]  spend of the key            (hash: period -> period start ms, spent, held; nano-USD)
  KEYS[9]  token buckets of the key    (hash: m<minute> and q<quarter hour> -> tokens used; h -> tokens
                                        reserved by open leases, l<lease id> -> the lease's share)
  KEYS[10] leases holding slack        (hash: lease id -> unused credit at its last report, nano-USD)
  KEYS[11] recall flag of the user     (string, expiring)
  ARGV[1]  lease id
  ARGV[2]  cost of the asking call, nano-USD (integer): the least credit the lease must hold
  ARGV[3]  credit wanted, nano-USD (integer, >= ARGV[2])
  ARGV[4]  slots wanted (integer, >= 1; 0 reserves credit and tokens for one call, neither checking
           nor counting the request windows: the call's request was counted by an earlier admission)
  ARGV[5]  requests allowed per window
  ARGV[6]  window length, ms
  ARGV[7]  reservation time-to-live, ms
  ARGV[8]  longest life of a lease of more than one slot, ms
  ARGV[9]  the key's requests per minute (rate_limit_rpm), -1 for none
  ARGV[10] the key's credit limit, nano-USD (integer), -1 for none
  ARGV[11] start of the key's current credit period, ms (used only with a credit limit)
  ARGV[12] the key's tokens per hour (rate_limit_tph), -1 for none
  ARGV[13] the key's tokens per day (rate_limit_tpd), -1 for none
  ARGV[14] worst-case tokens of one call (integer, >= 0)
  ARGV[15] the key's id (lease ids of the key begin with it and ':')
  ARGV[16] recall wait, ms: above 0, a refusal that recalling the leases' slack may avert answers
           code 6 (and recalls); 0 refuses at once
  ARGV[17] pub/sub channel of recalls
  ARGV[18] the user's id (the recall message)

  Returns {code, ...}:
    {0, credit granted, slots granted, available after, slots left in the window, ms until the oldest leaves it, balance epoch}
                                            admitted (a lease id already open answers its own grant again)
    {1, retry-after ms, which}              rate limited; which: 0 the default window, 1 rate_limit_rpm,
                                            2 rate_limit_tph, 3 rate_limit_tpd
    {2, available}                          insufficient credits
    {3, 0}                                  balance not loaded (the caller hydrates it from Postgres and retries)
    {4, credit limit left}                  the key's credit limit for the period is used up
    {5, 0}                                  the key's spend is not loaded (the caller loads it from Postgres, loadspend.lua, and retries)
    {6, available or credit limit left, which}  not covered now, but leases hold slack that may cover it: recalled,
                                            retry; which: 0 the balance (else code 2), 1 the credit limit (else code 4)
    {7, budget, which}                      the call's worst-case tokens exceed a whole token budget (which: 2 tph,
                                            3 tpd): it can never be admitted under it
]]
local rcall = redis.call
local rateKey, weightsKey, minuteKey, minuteWeightsKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local balanceKey, reservationsKey, deadlinesKey = KEYS[5], KEYS[6], KEYS[7]
local spendKey, tokensKey = KEYS[8], KEYS[9]
local slackKey, recallKey = KEYS[10], KEYS[11]
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
local cap = tonumber(ARGV[10])
local periodStart = ARGV[11]
local tph = tonumber(ARGV[12])
local tpd = tonumber(ARGV[13])
local callTokens = math.max(0, tonumber(ARGV[14]))
local keyId = ARGV[15]
local recallMs = tonumber(ARGV[16])
local MINUTE_MS, QUARTER_MS = 60000, 900000
local HOUR_BUCKETS, DAY_BUCKETS = 60, 96

local function availableNow()
  local balance = rcall('HMGET', balanceKey, 'credits', 'held')
  return tonumber(balance[1] or '0') - tonumber(balance[2] or '0')
end

-- A command resent after a reconnect must not open the lease twice.
local open = rcall('HGET', reservationsKey, leaseId)
local function epoch()
  return tonumber(rcall('HGET', balanceKey, 'epoch') or '0')
end
if open then
  local slots = tonumber(rcall('HGET', weightsKey, leaseId) or '1')
  return {0, tonumber(open), slots, availableNow(), 0, windowMs, epoch()}
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

-- No slots wanted: credit only, for a call whose request the windows already counted.
local windowed = wantSlots > 0
local used, usedMinute = 0, 0
if windowed then
  used = usedIn(rateKey, weightsKey, windowMs)
  if hasRpm then usedMinute = usedIn(minuteKey, minuteWeightsKey, MINUTE_MS) end
  if used >= limit then return {1, retryIn(rateKey, weightsKey, used, limit, windowMs), 0} end
  if hasRpm and usedMinute >= rpm then return {1, retryIn(minuteKey, minuteWeightsKey, usedMinute, rpm, MINUTE_MS), 1} end
end

-- A refused request's one slot in the windows (see the header); its member is the asking lease id.
local function refused(reply)
  if windowed then
    -- A resent command (same lease id) counts once.
    local function one(zsetKey, weightsOf, lengthMs)
      if rcall('ZADD', zsetKey, nowMs, leaseId) == 1 then rcall('HINCRBY', weightsOf, '#', 1) end
      rcall('PEXPIRE', zsetKey, lengthMs + leaseLifeMs)
      rcall('PEXPIRE', weightsOf, lengthMs + leaseLifeMs)
    end
    one(rateKey, weightsKey, windowMs)
    if hasRpm then one(minuteKey, minuteWeightsKey, MINUTE_MS) end
  end
  return reply
end

-- Token budgets: sum the buckets still in their window (dropping the rest) and what open leases
-- reserve; when the call's worst case does not fit, retry once enough has left the window.
local spareTokens = nil
local budgeted = callTokens > 0 and (tph >= 0 or tpd >= 0)
if budgeted then
  if tph >= 0 and callTokens > tph then return refused({7, tph, 2}) end
  if tpd >= 0 and callTokens > tpd then return refused({7, tpd, 3}) end
  local fields = rcall('HGETALL', tokensKey)
  local minute, quarter = math.floor(nowMs / MINUTE_MS), math.floor(nowMs / QUARTER_MS)
  local hourly, daily, stale = {}, {}, {}
  local usedHour, usedDay, reserved = 0, 0, 0
  for i = 1, #fields, 2 do
    local kind = string.sub(fields[i], 1, 1)
    if kind == 'h' then
      reserved = math.max(0, tonumber(fields[i + 1]))
    elseif kind == 'm' or kind == 'q' then
      local index, tokens = tonumber(string.sub(fields[i], 2)), tonumber(fields[i + 1])
      if kind == 'm' and index > minute - HOUR_BUCKETS then
        usedHour = usedHour + tokens
        hourly[#hourly + 1] = {index, tokens}
      elseif kind == 'q' and index > quarter - DAY_BUCKETS then
        usedDay = usedDay + tokens
        daily[#daily + 1] = {index, tokens}
      else
        stale[#stale + 1] = fields[i]
      end
    end
  end
  if #stale > 0 then rcall('HDEL', tokensKey, unpack(stale)) end
  -- Calls in flight free their reservation within seconds; tokens used leave with their bucket.
  local function retryAfter(buckets, used, budget, bucketMs, count)
    if used + callTokens <= budget then return 1000 end
    table.sort(buckets, function(a, b) return a[1] < b[1] end)
    local excess = used + reserved + callTokens - budget
    for _, bucket in ipairs(buckets) do
      excess = excess - bucket[2]
      if excess <= 0 then return math.max(1, (bucket[1] + count) * bucketMs - nowMs) end
    end
    return bucketMs * count
  end
  if tph >= 0 and usedHour + reserved + callTokens > tph then return {1, retryAfter(hourly, usedHour, tph, MINUTE_MS, HOUR_BUCKETS), 2} end
  if tpd >= 0 and usedDay + reserved + callTokens > tpd then return {1, retryAfter(daily, usedDay, tpd, QUARTER_MS, DAY_BUCKETS), 3} end
  if tph >= 0 then spareTokens = tph - usedHour - reserved - callTokens end
  if tpd >= 0 and (not spareTokens or tpd - usedDay - reserved - callTokens < spareTokens) then spareTokens = tpd - usedDay - reserved - callTokens end
end

-- The most a recall could free: the whole reservation of each lease with slack (of the key, for its
-- credit limit); part of it may be calls in flight, which stay held.
local function recallable(ofKey)
  local ids = rcall('HKEYS', slackKey)
  local total = 0
  local prefix = keyId .. ':'
  for i = 1, #ids, 1000 do
    local chunk = {unpack(ids, i, math.min(i + 999, #ids))}
    local held = rcall('HMGET', reservationsKey, unpack(chunk))
    for j = 1, #chunk do
      if not ofKey or string.sub(chunk[j], 1, #prefix) == prefix then total = total + tonumber(held[j] or '0') end
    end
  end
  return total
end
local function recall(value, which)
  rcall('SET', recallKey, '1', 'PX', recallMs)
  rcall('PUBLISH', ARGV[17], 'r' .. ARGV[18])
  return {6, value, which}
end

local balance = rcall('HMGET', balanceKey, 'credits', 'held')
if not balance[1] then return {3, 0} end
local available = tonumber(balance[1]) - tonumber(balance[2] or '0')
if callCost > available then
  if recallMs > 0 and available + recallable(false) >= callCost then return recall(available, 0) end
  return refused({2, available})
end

local spare = available - callCost
if cap >= 0 then
  local spend = rcall('HMGET', spendKey, 'period', 'spent', 'held')
  if not spend[1] and not spend[2] and not spend[3] then return {5, 0} end
  local spent = tonumber(spend[2] or '0')
  if spend[1] ~= periodStart then
    spent = 0
    rcall('HSET', spendKey, 'period', periodStart, 'spent', 0)
  end
  local capLeft = cap - spent - tonumber(spend[3] or '0')
  if callCost > capLeft then
    if recallMs > 0 and capLeft + recallable(true) >= callCost then return recall(capLeft, 1) end
    return refused({4, capLeft})
  end
  spare = math.min(spare, capLeft - callCost)
end

-- While a recall runs, leases get no slack: the recalled credit goes to the calls waiting for it.
if rcall('EXISTS', recallKey) == 1 then spare = 0 end
local credit = callCost + math.max(0, math.min(wantCredit - callCost, math.floor(spare / 8)))
local spareSlots = math.floor((limit - used - 1) / 8)
if hasRpm then spareSlots = math.min(spareSlots, math.floor((rpm - usedMinute - 1) / 8)) end
if spareTokens then spareSlots = math.min(spareSlots, math.floor(spareTokens / 8 / callTokens)) end
local slots = 1 + math.max(0, math.min(wantSlots - 1, spareSlots))
-- Extra slots without the credit for another call (or the reverse) would be held for nothing.
if slots == 1 or credit < 2 * callCost then
  slots = 1
  credit = callCost
end
if not windowed then
  slots = 0
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
if windowed then
  record(rateKey, weightsKey, windowMs)
  if hasRpm then record(minuteKey, minuteWeightsKey, MINUTE_MS) end
end
rcall('HINCRBY', balanceKey, 'held', string.format('%d', credit))
rcall('HSET', reservationsKey, leaseId, string.format('%d', credit))
rcall('ZADD', deadlinesKey, nowMs + ttlMs, leaseId)
rcall('HINCRBY', spendKey, 'held', string.format('%d', credit))
if budgeted then
  local tokens = callTokens * math.max(1, slots)
  rcall('HINCRBY', tokensKey, 'h', tokens)
  rcall('HSET', tokensKey, 'l' .. leaseId, tokens)
  rcall('PEXPIRE', tokensKey, 86400000 + QUARTER_MS)
end
if credit > callCost then
  rcall('HSET', slackKey, leaseId, string.format('%d', credit - callCost))
  rcall('HINCRBY', balanceKey, 'slack', string.format('%d', credit - callCost))
end
local oldest = rcall('ZRANGE', rateKey, 0, 0, 'WITHSCORES')
local resetMs = oldest[2] and (tonumber(oldest[2]) + windowMs - nowMs) or 0
return {0, credit, slots, available - credit, limit - used - slots, resetMs, epoch()}
