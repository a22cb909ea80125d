--[[ idempotency_claim.lua: claim an Idempotency-Key for a running request, or read what its first
  request left there. The claim expires unless its owner renews it (by calling this again), so a
  gateway that died mid-request does not hold the key for ever.

  KEYS[1]  the key's record (hash, expiring): `fp` fingerprint, `state` ('run', 'done' or 'big'),
           `owner`; once kept also `status`, `head` (JSON headers) and `body`
  ARGV[1]  the request's fingerprint (method, path and the body's SHA-256)
  ARGV[2]  owner: a random id of the request asking
  ARGV[3]  life of a claim, ms

  Returns {0} claimed (a new claim, or this owner's own claim renewed); {1} the key was used with
  another fingerprint; {2, ms} another request holds the claim for at most ms more; {3, status, head,
  body} the kept answer; {4, status} an answer was made but is too large to keep.
]]
local rcall = redis.call
local record = KEYS[1]
local fingerprint, owner, lifeMs = ARGV[1], ARGV[2], tonumber(ARGV[3])
local kept = rcall('HMGET', record, 'fp', 'state', 'owner')
local keptFingerprint, state, keptOwner = kept[1], kept[2], kept[3]
if not keptFingerprint then
  rcall('HSET', record, 'fp', fingerprint, 'state', 'run', 'owner', owner)
  rcall('PEXPIRE', record, lifeMs)
  return {0}
end
if keptFingerprint ~= fingerprint then return {1} end
if state == 'run' then
  if keptOwner == owner then
    rcall('PEXPIRE', record, lifeMs)
    return {0}
  end
  return {2, rcall('PTTL', record)}
end
local answer = rcall('HMGET', record, 'status', 'head', 'body')
if state == 'big' then return {4, tonumber(answer[1])} end
return {3, tonumber(answer[1]), answer[2], answer[3]}
