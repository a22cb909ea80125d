-- Accounts carry an e-mail address: from a dashboard JWT's `email` claim, or `gateway account set-email`.
alter table accounts add column email text check (email is null or char_length(email) between 3 and 254);

-- An alert without its own address mails the account's address when it fires (null = follow the account).
alter table billing_alerts alter column email drop not null;
-- Alerts created without an email used to copy the account id; they now follow the account (whose
-- address is still its id while it has no other).
update billing_alerts set email = null where email = user_id;

-- Retention to the day: the janitor deletes rows older than two months from the oldest kept monthly
-- partition and from the default partition; rows arrive in time order, so a BRIN index finds them.
create index request_logs_created_brin on request_logs using brin (created_at);

-- Sent mails are deleted after their retention; unsent ones are kept until sent.
create index mail_outbox_sent on mail_outbox (sent_at) where sent_at is not null;
