-- Balance alerts: one mail each time a user's credits cross below a threshold.
create table billing_alerts (
  id                 uuid primary key,
  user_id            text not null references accounts(id),
  threshold_nano     bigint not null check (threshold_nano > 0),
  email              text not null check (email <> ''),
  -- true while credits >= threshold: the next drop below it mails (and clears it in the same transaction)
  armed              boolean not null,
  created_at         timestamptz not null default now(),
  last_triggered_at  timestamptz
);
create index billing_alerts_user_created on billing_alerts (user_id, created_at desc, id desc);

-- Mails to send, written in the transaction that decides to send them, so an SMTP outage loses nothing.
create table mail_outbox (
  id               uuid primary key,
  user_id          text not null references accounts(id),
  alert_id         uuid references billing_alerts(id) on delete set null,  -- a deleted alert's queued mail still goes
  recipient        text not null,
  subject          text not null,
  body             text not null,
  created_at       timestamptz not null default now(),
  attempts         integer not null default 0,                              -- delivery attempts started
  next_attempt_at  timestamptz not null default now(),
  sent_at          timestamptz,
  last_error       text
);
create index mail_outbox_due on mail_outbox (next_attempt_at) where sent_at is null;
