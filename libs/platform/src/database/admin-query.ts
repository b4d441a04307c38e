import { Client } from 'pg';

/**
 * One statement on a server as its admin, on a connection of its own (CREATE and DROP DATABASE,
 * which no transaction may hold), and its rows.
 */
export async function adminQuery(serverUrl: string, sql: string): Promise<Array<Record<string, unknown>>> {
  const client = new Client({ connectionString: serverUrl });
  await client.connect();
  try {
    return (await client.query(sql)).rows as Array<Record<string, unknown>>;
  } finally {
    await client.end();
  }
}
