-- Core schema. Money is integer nano-USD (1e-9 USD) in bigint columns everywhere.

create table accounts (
  id          text primary key,              -- the JWT `sub`
  created_at  timestamptz not null default now()
);

create table api_keys (
  id                     uuid primary key,
  user_id                text not null references accounts(id),
  public_id              text not null unique,  -- the 12-character segment, safe to log
  secret_hash            bytea not null,        -- HMAC-SHA256(KEY_SECRET, secret)
  full_key_enc           bytea,                 -- AES-256-GCM(iv|tag|ciphertext) of the whole key
  name                   text not null check (name <> ''),
  is_provisioning        boolean not null default false,
  disabled               boolean not null default false,
  ip_whitelist           text[] not null default '{}',
  rate_limit_rpm         integer check (rate_limit_rpm >= 0),
  rate_limit_tph         bigint check (rate_limit_tph >= 0),
  rate_limit_tpd         bigint check (rate_limit_tpd >= 0),
  credit_limit_nano      bigint check (credit_limit_nano >= 0),
  credit_reset_interval  text not null default 'none' check (credit_reset_interval in ('none', 'daily', 'weekly', 'monthly')),
  credit_period_start    timestamptz,
  expires_at             timestamptz,
  created_by             text,
  created_at             timestamptz not null default now(),
  revoked_at             timestamptz
);
create index api_keys_user_created on api_keys (user_id, created_at desc) where revoked_at is null;

-- The ledger: the sum of a user's rows is their `credits`.
create table transactions (
  id              uuid primary key,             -- for usage: the reservation id, so a replay inserts nothing
  user_id         text not null references accounts(id),
  credits_nano    bigint not null,              -- negative for usage, positive for top-ups and coupons
  payment_method  text not null,                -- 'usage', 'coupon', or a payment processor name
  status          text not null default 'completed',
  api_key_id      uuid,
  model           text,
  reference       text,                         -- coupon code or processor reference
  created_at      timestamptz not null default now()
);
create index transactions_user_created on transactions (user_id, created_at desc, id desc);

-- Reservations made by admission. Open ones are rebuilt into Redis after a Redis loss.
create table reservations (
  id            uuid primary key,
  user_id       text not null references accounts(id),
  api_key_id    uuid,
  amount_nano   bigint not null check (amount_nano >= 0),
  status        text not null default 'open' check (status in ('open', 'charged', 'released')),
  model         text,
  created_at    timestamptz not null default now(),
  expires_at    timestamptz not null,
  settled_at    timestamptz
);
create index reservations_open on reservations (user_id) where status = 'open';

create table coupons (
  code          text primary key,
  credits_nano  bigint not null check (credits_nano > 0),
  active        boolean not null default true,
  created_at    timestamptz not null default now(),
  redeemed_by   text references accounts(id),
  redeemed_at   timestamptz
);

-- One row per inference call; monthly partitions so the 2-month retention is a partition drop.
create table request_logs (
  id                 uuid not null,
  created_at         timestamptz not null,
  user_id            text not null,
  api_key_id         uuid,
  model              text not null,
  endpoint           text not null,
  stream             boolean not null,
  status             integer not null,
  error_code         text,
  prompt_tokens      integer not null default 0,
  completion_tokens  integer not null default 0,
  cached_tokens      integer not null default 0,
  reasoning_tokens   integer not null default 0,
  cost_nano          bigint not null default 0,
  reserved_nano      bigint not null default 0,
  duration_ms        integer,
  ttfb_ms            integer,
  client_aborted     boolean not null default false,
  primary key (id, created_at)
) partition by range (created_at);
create table request_logs_default partition of request_logs default;

create table models (
  id               text primary key,            -- '<vendor>/<model>' or a deprecated '<task>_generate.<name>'
  name             text not null,
  provider         text not null,               -- vendor display name
  modality         text not null check (modality in ('chat', 'image', 'video', 'audio')),
  description      text not null default '',
  tags             text[] not null default '{}',
  family           text not null,               -- upstream wire family: 'openai', 'anthropic', 'gemini', ...
  upstream_vendor  text not null,               -- whose credentials and base URL serve it
  upstream_model   text not null,               -- the vendor's own model name
  capabilities     jsonb not null default '{}',
  alias_of         text references models(id),
  is_popular       boolean not null default false,
  is_active        boolean not null default true,
  retired_at       date,
  created_at       timestamptz not null default now(),
  updated_at       timestamptz not null default now()
);

-- Prices as integer nano-USD per one million units (exact for any list price with up to 9 decimals).
create table model_prices (
  model_id                text not null references models(id) on delete cascade,
  component               text not null,        -- 'input_token', 'cached_input_token', 'cache_write_token', 'output_token', ...
  tier                    text not null default '',
  nano_usd_per_million    bigint not null check (nano_usd_per_million >= 0),
  primary key (model_id, component, tier)
);
