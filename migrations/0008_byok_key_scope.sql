-- A BYOK row made with a regular API key serves only that key's calls (and only that key, a dashboard
-- session or a management key may change it); a row made with a JWT or a management key serves the
-- whole account (api_key_id null). A key is revoked by marking it, so the reference stays valid.
alter table byok_credentials add column api_key_id uuid references api_keys(id);
