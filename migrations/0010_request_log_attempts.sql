-- The upstream attempts each call took (docs/routing.md): the caller's own credentials (BYOK) first,
-- then the platform targets. Rows written before this, and task rows, count one. A constant default
-- adds the column without rewriting the partitions.
alter table request_logs add column attempts smallint not null default 1;
