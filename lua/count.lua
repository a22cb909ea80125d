--[[ count.lua: count one request of a key in one of its request windows without admitting anything.
  Two uses:
  - a request already refused before admission (a malformed body, an unknown model): ARGV[5] is -1,
    and it takes its slot whatever the window holds, so refusals cannot be sent without limit;
  - a request admission never sees (a management call, a task read or cancel): ARGV[5] is the
    window's limit, and it is counted only while the window holds fewer; otherwise nothing is counted
    and the caller refuses it (429) before doing its work.
  The member is weighted 1 and leaves the window as admit.lua's members do (a checked count drops the
  members whose window has passed, and their weights, as admit.lua does; an unchecked one leaves that
  to the next check).

  KEYS[1]  the window: the key's default window (admit.lua's) or its read window (zset: member -> ms)
  KEYS[2]  the window's weights         (hash: member -> weight, when above 1; '#' -> sum of all weights)
  KEYS[3]  per-minute window of the key (zset), touched only when ARGV[4] is 1
  KEYS[4]  per-minute window weights    (hash)
  ARGV[1]  member id (unique per request)
  ARGV[2]  window length, ms
  ARGV[3]  longest life of a lease, ms (the windows' keys live for a window plus this, as admit.lua sets)
  ARGV[4]  1 when the key has a rate_limit_rpm (the per-minute window counts it too), else 0
  ARGV[5]  requests the window allows, or -1 to count without checking

  Returns {1} counted, or {0, retry-after ms} when the window is full (nothing counted).
]]
local rcall = redis.call
local t = rcall('TIME')
local nowMs = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local windowMs = tonumber(ARGV[2])
local lifeMs = tonumber(ARGV[3])
local limit = tonumber(ARGV[5])

if limit >= 0 then
  -- The weight in the window after dropping the members whose window has passed (as admit.lua's usedIn).
  local used = tonumber(rcall('HGET', KEYS[2], '#') or '0')
  local expired = rcall('ZRANGEBYSCORE', KEYS[1], '-inf', nowMs - windowMs)
  if #expired > 0 then
    for i = 1, #expired, 1000 do
      local chunk = {unpack(expired, i, math.min(i + 999, #expired))}
      local weights = rcall('HMGET', KEYS[2], unpack(chunk))
      for j = 1, #chunk do used = used - tonumber(weights[j] or '1') end
      rcall('HDEL', KEYS[2], unpack(chunk))
    end
    rcall('ZREMRANGEBYSCORE', KEYS[1], '-inf', nowMs - windowMs)
    if used < 0 then used = 0 end
    rcall('HSET', KEYS[2], '#', used)
  end
  if used >= limit then
    -- When enough of the oldest weight has left the window for one more request (as admit.lua's retryIn).
    local excess = used - limit + 1
    local members = rcall('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')
    local retryMs = windowMs
    for i = 1, #members, 2 do
      excess = excess - tonumber(rcall('HGET', KEYS[2], members[i]) or '1')
      if excess <= 0 then
        retryMs = tonumber(members[i + 1]) + windowMs - nowMs
        break
      end
    end
    if retryMs < 1 then retryMs = 1 end
    return {0, retryMs}
  end
end

-- A resent command (same member) counts once.
local function one(zsetKey, weightsOf, lengthMs)
  if rcall('ZADD', zsetKey, nowMs, ARGV[1]) == 1 then rcall('HINCRBY', weightsOf, '#', 1) end
  rcall('PEXPIRE', zsetKey, lengthMs + lifeMs)
  rcall('PEXPIRE', weightsOf, lengthMs + lifeMs)
end
one(KEYS[1], KEYS[2], windowMs)
if ARGV[4] == '1' then one(KEYS[3], KEYS[4], 60000) end
return {1}
