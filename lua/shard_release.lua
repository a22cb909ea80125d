--[[ shard_release.lua: give a task shard up, only if this owner still holds it under this token.

  KEYS[1]  the shard's lease (string: '<owner>|<token>')
  ARGV[1]  '<owner>|<token>' as claimed

  Returns 1 when released, 0 when the lease was no longer this owner's.
]]
local rcall = redis.call
if rcall('GET', KEYS[1]) ~= ARGV[1] then return 0 end
rcall('DEL', KEYS[1])
return 1
