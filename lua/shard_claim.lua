--[[ shard_claim.lua: take a free task shard, or renew the lease on one already held.
  A lease names its owner and a fencing token. Tokens only grow, even across a Redis data loss:
  a new one is above both the last one and the server's clock in microseconds, so the task rows a
  previous owner wrote (which carry its token) never outrank the new owner's writes.

  KEYS[1]  the shard's lease        (string: '<owner>|<token>', expiring)
  KEYS[2]  the shard's last token   (string)
  ARGV[1]  owner (process id; never contains '|')
  ARGV[2]  lease life, ms

  Returns the token (a new one when the shard was free, the held one when renewed), or 0 when another
  owner holds the shard.
]]
local rcall = redis.call
local leaseKey, fenceKey = KEYS[1], KEYS[2]
local owner, lifeMs = ARGV[1], tonumber(ARGV[2])
local current = rcall('GET', leaseKey)
if current then
  local sep = string.find(current, '|', 1, true)
  if string.sub(current, 1, sep - 1) ~= owner then return 0 end
  rcall('PEXPIRE', leaseKey, lifeMs)
  return tonumber(string.sub(current, sep + 1))
end
local t = rcall('TIME')
local token = math.max(tonumber(rcall('GET', fenceKey) or '0') + 1, tonumber(t[1]) * 1000000 + tonumber(t[2]))
rcall('SET', fenceKey, string.format('%d', token))
rcall('SET', leaseKey, owner .. '|' .. string.format('%d', token), 'PX', lifeMs)
return token
