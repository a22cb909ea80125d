-- Balance alerts mail only a verified address: one a dashboard JWT marked `email_verified: true`, or
-- one an operator set with `gateway account set-email`. Addresses stored before this are unverified
-- until one of those sets them again.
alter table accounts add column email_verified boolean not null default false;
