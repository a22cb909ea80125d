--[[ idempotency_complete.lua: keep a first request's answer under its Idempotency-Key, if the key's
  claim is still this request's (or lapsed with nobody else claiming since: the answer is kept then too).

  KEYS[1]  the key's record (hash; see idempotency_claim.lua)
  ARGV[1]  owner of the claim
  ARGV[2]  the request's fingerprint
  ARGV[3]  how long the answer is kept, ms
  ARGV[4]  'done' (replayable) or 'big' (made, but too large to keep: only its status is kept)
  ARGV[5]  HTTP status
  ARGV[6]  headers (JSON object)
  ARGV[7]  body ('' for 'big')

  Returns 1 when kept, 0 when another request holds the key now.
]]
local rcall = redis.call
local record = KEYS[1]
local owner, fingerprint, keepMs, state, status, head, body = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4], ARGV[5], ARGV[6], ARGV[7]
local kept = rcall('HMGET', record, 'fp', 'owner')
if kept[1] and (kept[1] ~= fingerprint or kept[2] ~= owner) then return 0 end
rcall('HSET', record, 'fp', fingerprint, 'state', state, 'owner', owner, 'status', status, 'head', head, 'body', body)
rcall('PEXPIRE', record, keepMs)
return 1
