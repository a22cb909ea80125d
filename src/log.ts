/** Structured logs: one JSON object per line on stdout. */
type Level = 'debug' | 'info' | 'warn' | 'error';
const ORDER: Record<Level, number> = { debug: 10, info: 20, warn: 30, error: 40 };
let threshold = ORDER.info;
let base: Record<string, unknown> = {};
/** The active trace's ids for a line (src/tracing: set only while tracing is on). */
let contextFields: (() => Record<string, string> | undefined) | undefined;

export function setLogContext(fields: (() => Record<string, string> | undefined) | undefined): void {
  contextFields = fields;
}

export function configureLog(level: Level, fields: Record<string, unknown> = {}): void {
  threshold = ORDER[level];
  base = fields;
}

function write(level: Level, msg: string, fields?: Record<string, unknown>): void {
  if (ORDER[level] < threshold) return;
  const line: Record<string, unknown> = { time: new Date().toISOString(), level, msg, ...base, ...contextFields?.(), ...fields };
  const error = fields?.error;
  if (error instanceof Error) line.error = { name: error.name, message: error.message, stack: error.stack };
  process.stdout.write(`${JSON.stringify(line)}\n`);
}

export const log = {
  debug: (msg: string, fields?: Record<string, unknown>) => write('debug', msg, fields),
  info: (msg: string, fields?: Record<string, unknown>) => write('info', msg, fields),
  warn: (msg: string, fields?: Record<string, unknown>) => write('warn', msg, fields),
  error: (msg: string, fields?: Record<string, unknown>) => write('error', msg, fields),
};
