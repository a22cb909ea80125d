--[[ count.lua: count one request of a key in its request windows without admitting anything: a
  request refused before admission (a malformed body, an unknown model) takes its slot as any other,
  so refusals cannot be sent without limit. The member is weighted 1 and leaves the window as
  admit.lua's members do (admit.lua drops it and its weight once its window has passed).

  KEYS[1]  rate window of the key      (zset, see admit.lua)
  KEYS[2]  rate window weights         (hash; '#' -> sum of all weights)
  KEYS[3]  per-minute window of the key (zset)
  KEYS[4]  per-minute window weights   (hash)
  ARGV[1]  member id (unique per request)
  ARGV[2]  window length, ms
  ARGV[3]  longest life of a lease, ms (the windows' keys live for a window plus this, as admit.lua sets)
  ARGV[4]  1 when the key has a rate_limit_rpm (the per-minute window counts it too), else 0

  Returns {1}.
]]
local rcall = redis.call
local t = rcall('TIME')
local nowMs = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lifeMs = tonumber(ARGV[3])
-- A resent command (same member) counts once.
local function one(zsetKey, weightsOf, lengthMs)
  if rcall('ZADD', zsetKey, nowMs, ARGV[1]) == 1 then rcall('HINCRBY', weightsOf, '#', 1) end
  rcall('PEXPIRE', zsetKey, lengthMs + lifeMs)
  rcall('PEXPIRE', weightsOf, lengthMs + lifeMs)
end
one(KEYS[1], KEYS[2], tonumber(ARGV[2]))
if ARGV[4] == '1' then one(KEYS[3], KEYS[4], 60000) end
return {1}
