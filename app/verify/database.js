'use strict'

// The database `collector verify` writes to and reads back: a private
// embedded server in memory (lib/mongo/embedded-server.js: a mongod on PATH,
// else mongo-java-server's memory backend), gone when verify ends; or, with
// MONGODB_URI set, a database of its own there, named for the run and
// dropped afterwards.

const { MongoClient } = require('mongodb')
const { startEmbeddedServer } = require('../../lib/mongo/embedded-server')
const { redactUri } = require('../../lib/mongo/redact-uri')

/**
 * @param {{ name: string, env?: object, logger?: object, keep?: boolean }} options name: the collector's, in the database's name; keep: not dropped
 * @returns {Promise<{ uri: string, database: string, db: object, where: string, close(): Promise<void> }>}
 */
async function privateDatabase ({ name, env = process.env, logger, keep = false }) {
  const database = `verify_${name.replace(/[^A-Za-z0-9_]/g, '_').slice(0, 24)}_${process.pid}_${Date.now().toString(36)}`
  const server = env.MONGODB_URI ? null : await startEmbeddedServer({ port: 0, env, logger })
  const uri = server ? server.uri : env.MONGODB_URI
  let client
  try {
    client = await new MongoClient(uri, { serverSelectionTimeoutMS: 15000 }).connect()
  } catch (err) {
    if (server) await server.stop()
    throw new Error(`cannot reach the database at ${redactUri(uri)}: ${err.message}`)
  }
  const db = client.db(database)
  return {
    uri,
    database,
    db,
    where: server ? `a private ${server.kind} server in memory` : `database ${database} at MONGODB_URI ${redactUri(uri)}, ${keep ? 'kept (--keep)' : 'dropped afterwards'}`,
    /** Drops the database (unless `keep`) and stops the private server. */
    async close (keep = false) {
      if (!server && !keep) await db.dropDatabase().catch(() => {})
      await client.close().catch(() => {})
      if (server) await server.stop()
    }
  }
}

module.exports = { privateDatabase }
