-- A key's spend in its credit period is the sum of its usage transactions since the period began.
create index transactions_key_created on transactions (api_key_id, created_at) where api_key_id is not null;
