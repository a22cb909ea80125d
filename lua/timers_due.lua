--[[ timers_due.lua: move a task shard's due timers into its stream, atomically (a timer is moved once).

  KEYS[1]  the shard's timers  (zset: '<kind>:<task id>:<user id>' -> due ms)
  KEYS[2]  the shard's stream  (messages: k kind, t task id, u user id)
  ARGV[1]  most timers to move in one call

  Returns {moved, ms until the next timer is due or -1 when none is left}.
]]
local rcall = redis.call
local timersKey, streamKey = KEYS[1], KEYS[2]
local t = rcall('TIME')
local nowMs = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local due = rcall('ZRANGEBYSCORE', timersKey, '-inf', nowMs, 'LIMIT', 0, tonumber(ARGV[1]))
for _, member in ipairs(due) do
  local first = string.find(member, ':', 1, true)
  local second = string.find(member, ':', first + 1, true)
  rcall('XADD', streamKey, '*', 'k', string.sub(member, 1, first - 1), 't', string.sub(member, first + 1, second - 1), 'u', string.sub(member, second + 1))
end
if #due > 0 then rcall('ZREM', timersKey, unpack(due)) end
local nextDue = rcall('ZRANGE', timersKey, 0, 0, 'WITHSCORES')
if nextDue[2] then return {#due, math.max(0, tonumber(nextDue[2]) - nowMs)} end
return {#due, -1}
