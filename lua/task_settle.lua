--[[ task_settle.lua: end a task's hold, once: charge what the task cost and release the rest.
  Postgres is written first (the task row turned success or failed, and on success its usage
  transaction): this brings Redis in line. A hold that is not here was settled before, or was never
  rebuilt because Postgres already had the task ended when the balance was loaded (hydrate.lua
  rebuilds only pending tasks' holds): either way its effect is already in `credits`, so nothing is done.

  KEYS[1]  balance of the user         (hash: credits, held, ...)
  KEYS[2]  open reservations           (hash: reservation, lease or task hold id -> nano-USD held)
  KEYS[3]  reservation deadlines       (zset: a hold not yet pinned by its task still has one)
  KEYS[4]  spend of the task's key     (hash: period, spent, held)
  ARGV[1]  hold id ('<key id>:task-<task id>')
  ARGV[2]  charge, nano-USD (integer; 0 for a failed task; capped at the hold)

  Returns {code, charged}: {0, nano-USD charged} applied; {1, 0} no such hold: nothing done.
]]
local rcall = redis.call
local balanceKey, reservationsKey, deadlinesKey, spendKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local holdId = ARGV[1]
local held = tonumber(rcall('HGET', reservationsKey, holdId) or '-1')
if held < 0 then return {1, 0} end
local charge = math.min(math.max(0, tonumber(ARGV[2])), held)
rcall('HDEL', reservationsKey, holdId)
rcall('ZREM', deadlinesKey, holdId)
if held > 0 then rcall('HINCRBY', balanceKey, 'held', string.format('-%d', held)) end
if charge > 0 then rcall('HINCRBY', balanceKey, 'credits', string.format('-%d', charge)) end
if rcall('EXISTS', spendKey) == 1 then
  if charge > 0 then rcall('HINCRBY', spendKey, 'spent', string.format('%d', charge)) end
  if held > 0 then rcall('HINCRBY', spendKey, 'held', string.format('-%d', held)) end
end
return {0, charge}
