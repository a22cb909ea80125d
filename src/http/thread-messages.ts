import type { MetricObjectWithValues, MetricValue } from 'prom-client';

export type MetricsJson = MetricObjectWithValues<MetricValue<string>>[];

/** Messages between the main thread and the HTTP threads. */
export type ThreadToMain =
  | { type: 'listening' }
  | { type: 'listen-failed'; message: string }
  | { type: 'collect-metrics'; id: number }
  | { type: 'metrics-json'; id: number; data: MetricsJson }
  | { type: 'drained'; unfinished: number }
  /** This thread's settlements added ledger events after a quiet spell (the writer may be idling). */
  | { type: 'ledger-appended' };

export type MainToThread =
  | { type: 'metrics-json'; id: number }
  | { type: 'metrics-text'; id: number; text: string }
  | { type: 'drain'; deadlineMs: number };
