-- BYOK: a user's own upstream credentials. Secrets are AES-256-GCM (iv|tag|ciphertext) under KEY_SECRET:
-- the api_key, and the whole config_json (it may hold a service account or an access-key pair).
create table byok_credentials (
  id              uuid primary key,
  user_id         text not null references accounts(id),
  provider        text not null check (provider in ('openai', 'anthropic', 'google')),
  label           text not null check (char_length(label) between 1 and 100),
  api_key_enc     bytea,
  api_key_prefix  text,                          -- masked (first 7, '...', last 4), safe to show and log
  base_url        text,                          -- https only (checked by the API)
  config_enc      bytea,                         -- the encrypted JSON text of config_json
  always_use      boolean not null default false,
  disabled        boolean not null default false,
  priority        integer not null default 0 check (priority between -1000 and 1000),
  last_used_at    timestamptz,
  last_error      text,
  created_at      timestamptz not null default now(),
  updated_at      timestamptz not null default now()
);
-- The call path's candidate order: priority descending, then newest first.
create index byok_credentials_candidates on byok_credentials (user_id, provider, priority desc, created_at desc);
