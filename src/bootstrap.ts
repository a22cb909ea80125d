import type { Config } from './config.js';
import { connect, ensureDatabase, type Sql } from './store/db.js';
import { migrate } from './store/migrate.js';
import { syncChatCatalog } from './store/catalog.js';
import { CHAT_MODELS } from './catalog/seed/chat.js';
import { ensureRequestLogPartitions } from './store/request-logs.js';

/** Database ready for use: created if missing, migrated, catalog synced, log partitions in place. */
export async function prepareDatabase(config: Config): Promise<{ sql: Sql; applied: string[] }> {
  await ensureDatabase(config.databaseUrl);
  const sql = connect(config.databaseUrl, 4);
  const applied = await migrate(sql);
  await syncChatCatalog(sql, CHAT_MODELS);
  await ensureRequestLogPartitions(sql);
  return { sql, applied };
}
