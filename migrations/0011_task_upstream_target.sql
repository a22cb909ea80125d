-- The routing target (its name in the routing file, or the vendor's name for its one
-- `<VENDOR>_API_KEY` target) whose credential and base URL had a task accepted: its polls, cancel and
-- result download go to that same target (a vendor task belongs to the account that created it).
-- Null: not accepted yet, or accepted before targets were recorded (then the vendor's own target).
alter table tasks add column upstream_target text;
