-- Traces (docs/operations.md "Traces"). The trace a call belongs to, when the gateway that served it
-- traced (OTEL_EXPORTER_OTLP_ENDPOINT set): logs, traces and the request log meet on this id. Null for
-- calls served with tracing off and for rows written before this.
alter table request_logs add column trace_id text;
-- A task's own trace, as the W3C traceparent of the span its later steps are children of (submit,
-- polls, rehost, callback), so whichever gateway runs a step continues the same trace. Null when the
-- task was submitted with tracing off.
alter table tasks add column trace_parent text;
