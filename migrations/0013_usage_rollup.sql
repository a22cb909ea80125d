-- GET /api/v1/usage reads a rollup kept as calls settle, never a scan of the request log: one row per
-- user, UTC hour, model and key, incremented in the same transaction as the ledger rows it counts
-- (src/store/usage-records.ts, src/store/tasks.ts) and only for the rows that transaction inserted,
-- so a replayed event counts once. A call counts in the hour it ended (its usage transaction's
-- created_at). No key (a charge whose event could not be read) is the nil uuid: a primary key
-- cannot hold a null. Kept USAGE_ROLLUP_RETENTION_MONTHS (default 13) by the hourly retention pass.
create table usage_rollup (
  user_id            text not null,
  bucket             timestamptz not null,           -- the first instant of the UTC hour
  model              text not null,
  api_key_id         uuid not null,
  requests           bigint not null default 0,      -- request-log rows (a charge with no readable event adds none)
  errors             bigint not null default 0,      -- of which status >= 400
  prompt_tokens      bigint not null default 0,
  completion_tokens  bigint not null default 0,
  cached_tokens      bigint not null default 0,
  reasoning_tokens   bigint not null default 0,
  cost_nano          bigint not null default 0,      -- the usage transactions' amounts, positive
  primary key (user_id, bucket, model, api_key_id)
);
-- The retention pass deletes by bucket across users.
create index usage_rollup_bucket on usage_rollup using brin (bucket);

-- A call served with the caller's own upstream credential (BYOK): counted, never charged.
alter table request_logs add column byok boolean not null default false;

-- GET /api/v1/requests: one user's rows newest first, a page after a (created_at, id) cursor.
create index request_logs_user_created on request_logs (user_id, created_at desc, id desc);
