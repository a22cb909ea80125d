-- Asynchronous generation tasks (video now, audio on the same table) and the users' webhook secrets.
-- A pending task's reservation (hold_nano) is part of the user's `held`: Redis holds it under the
-- reservation id '<api key id>:task-<task id>' and rebuilds it from here after a Redis data loss.
create table tasks (
  id                   uuid primary key,            -- also the id of its usage transaction
  user_id              text not null references accounts(id),
  api_key_id           uuid not null,
  kind                 text not null check (kind in ('video.generation', 'audio.speech', 'audio.generation')),
  model                text not null,
  status               text not null default 'pending' check (status in ('pending', 'success', 'failed')),
  shard                integer not null check (shard >= 0),
  job                  jsonb not null,              -- the validated, normalised request
  hold_nano            bigint not null check (hold_nano >= 0),
  charged_nano         bigint check (charged_nano >= 0),
  upstream_vendor      text not null,
  upstream_id          text,                        -- the vendor's task id once submitted
  upstream_status      text,                        -- the vendor's last status, as it spelled it
  poll_count           integer not null default 0,
  fence                bigint not null default 0,   -- highest shard-lease fencing token that wrote the row
  result               jsonb,                       -- [{url, ...}] on success
  error_code           text,
  error_message        text,
  callback_url         text,
  callback_status      text check (callback_status in ('pending', 'delivered', 'failed')),
  callback_attempts    integer not null default 0,
  callback_last_error  text,
  created_at           timestamptz not null default now(),
  started_at           timestamptz,                 -- accepted by the vendor
  ended_at             timestamptz,
  updated_at           timestamptz not null default now()
);
create index tasks_user_kind_created on tasks (user_id, kind, created_at desc, id desc);
-- What a shard's owner still has to do: pending tasks and undelivered callbacks.
create index tasks_open on tasks (shard, created_at) where status = 'pending' or callback_status = 'pending';
-- Pending holds of a user, rebuilt into Redis with the balance.
create index tasks_pending_user on tasks (user_id) where status = 'pending';

-- Per-user secret signing task callbacks (Standard Webhooks): AES-256-GCM under KEY_SECRET, as BYOK keys.
-- The previous secret still signs for a day after a rotation, so receivers can switch over.
create table webhook_secrets (
  user_id       text primary key references accounts(id),
  secret_enc    bytea not null,
  previous_enc  bytea,
  rotated_at    timestamptz,
  created_at    timestamptz not null default now()
);
