import type { Config } from './config.js';
import { connect, ensureDatabase, type Sql } from './store/db.js';
import { migrate } from './store/migrate.js';
import { syncCatalog } from './store/catalog.js';
import { catalogRows } from './catalog/seed/index.js';
import { ensureRequestLogPartitions } from './store/request-logs.js';

/**
 * Database ready for use: created if missing, migrated, catalog synced (models of vendors this
 * configuration cannot reach listed inactive), log partitions in place.
 */
export async function prepareDatabase(config: Config): Promise<{ sql: Sql; applied: string[] }> {
  await ensureDatabase(config.databaseUrl);
  const sql = connect(config.databaseUrl, config.databasePools.main, 'gateway-main');
  const applied = await migrate(sql);
  await syncCatalog(sql, catalogRows(unservedVendors(config)));
  await ensureRequestLogPartitions(sql);
  return { sql, applied };
}

/** Vendors with no key, base URL or mock in this configuration. */
export function unservedVendors(config: Config): Set<string> {
  return new Set(Object.values(config.vendors).filter((vendor) => !vendor.served).map((vendor) => vendor.name));
}
