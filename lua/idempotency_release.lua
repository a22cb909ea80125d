--[[ idempotency_release.lua: give up a running request's claim on its Idempotency-Key (its answer is
  not kept), so that a repeat runs again; only the claim's owner releases it, and never a kept answer.

  KEYS[1]  the key's record (hash; see idempotency_claim.lua)
  ARGV[1]  owner of the claim

  Returns 1 when released, 0 when the claim was not this owner's (lapsed, or taken by another).
]]
local rcall = redis.call
local record = KEYS[1]
local kept = rcall('HMGET', record, 'state', 'owner')
if kept[1] ~= 'run' or kept[2] ~= ARGV[1] then return 0 end
rcall('DEL', record)
return 1
