-- The four-modality catalog: upstream lifecycle, provenance, full-text search; price rows that carry
-- a list price beside the charged one and the confidence of the figure.

-- to_tsvector with an explicit configuration is immutable, array_to_string is not (it is stable), so
-- the generated column goes through this wrapper; tags are plain text, which makes it safe.
create function catalog_search_vector(id text, name text, description text, tags text[]) returns tsvector
language sql immutable parallel safe as $$
  select setweight(to_tsvector('english', name), 'A')
      || setweight(to_tsvector('simple', translate(id, '/._-', '    ')), 'A')
      || setweight(to_tsvector('english', description), 'B')
      || setweight(to_tsvector('english', array_to_string(tags, ' ')), 'C')
$$;

alter table models
  add column status text not null default 'active' check (status in ('active', 'preview', 'legacy', 'deprecated', 'retired')),
  add column source text not null default '',
  add column search tsvector generated always as (catalog_search_vector(id, name, description, tags)) stored;

create index models_search_idx on models using gin (search);
create index models_listing_idx on models (modality, provider) where is_active;
create index models_alias_of_idx on models (alias_of) where alias_of is not null;

-- nano_usd_per_million stays what the gateway charges; list_nano_usd_per_million is the vendor's list
-- price when it differs (a flat-price profile sold below list), null otherwise.
alter table model_prices
  add column list_nano_usd_per_million bigint check (list_nano_usd_per_million >= 0),
  add column confidence text not null default 'A' check (confidence in ('A', 'B', 'C', 'unverified'));
