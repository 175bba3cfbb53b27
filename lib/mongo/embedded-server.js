'use strict'

const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { createNoopLogger } = require('../shared/logger')
const { isLoopback } = require('../shared/loopback')
const { chooseEmbeddedServer } = require('./choose-server')
const { startMongod } = require('./mongod-server')
const { startJavaServer, validatePort, DB_FILE } = require('./java-server')
const { recordServer } = require('./started-servers')

/** The folder a mongod keeps its files in, inside the data directory. */
const MONGOD_DIR = 'mongod'

/**
 * Where the collectors' embedded database keeps its data unless told
 * otherwise: $COLLECTOR_DB_PATH, else ~/.collector-cluster/db.
 * @param {NodeJS.ProcessEnv} [env]
 * @returns {string}
 */
function defaultDbPath (env = process.env) {
  return path.resolve(env.COLLECTOR_DB_PATH || path.join(os.homedir(), '.collector-cluster', 'db'))
}

/**
 * Where a server of `kind` keeps its data in the data directory `dbPath`:
 * the Java server its one file (collector.mv.db) in `dbPath` itself, a
 * mongod its own files in `dbPath/mongod`, so that the two never mix.
 * @param {'mongod'|'java'} kind
 * @param {string} [dbPath]
 * @returns {string|undefined} undefined for a server in memory
 */
function serverDataPath (kind, dbPath) {
  if (!dbPath) return undefined
  return kind === 'mongod' ? path.join(path.resolve(dbPath), MONGOD_DIR) : path.resolve(dbPath)
}

/**
 * What runs, for people: "mongod 8.2.6", "the Java server (mongo-java-server)".
 * @param {{ kind: string, version?: string|null }} server a ServerChoice or a started server
 * @returns {string}
 */
function serverName ({ kind, version }) {
  if (kind === 'java') return 'the Java server (mongo-java-server)'
  return version ? `${kind} ${version}` : kind
}

/**
 * Starts a local MongoDB server: the one `choice` names, else the first
 * that works of a real mongod (on PATH, in mongodb-memory-server's cache,
 * or fetched once) and the Java server (see ./choose-server.js); on disk
 * under `dbPath` (serverDataPath), else in memory. Says in one line, at
 * info, which server started, where its data lives and why each earlier
 * option was passed over (the caller's `skipped` first; at warn with
 * `warn`). It is recorded as ours (./started-servers.js) while it runs,
 * so that a collector finding it on its port uses it where it would
 * refuse another program's server.
 *
 * @param {object} [options]
 * @param {string} [options.host='127.0.0.1']
 * @param {number} [options.port=0] 0 picks a free port
 * @param {object} [options.logger] pino-like; default no-op
 * @param {boolean} [options.unref=false] once ready, do not keep the event loop alive
 * @param {NodeJS.ProcessEnv} [options.env=process.env] PATH, COLLECTOR_DB_SERVER, MONGOMS_*
 * @param {string} [options.dbPath] the data directory (kept across restarts); none: memory (mongod: a temporary directory)
 * @param {import('./choose-server').ServerChoice} [options.choice] the server, chosen already
 * @param {string[]} [options.skipped] the caller's options passed over, each "what (why)"
 * @param {boolean} [options.warn=false] say the line at warn: something skipped deserves it
 * @param {{ timeoutMs?: number, stallMs?: number }} [options.fetch] the bounds of a mongod fetch
 * @returns {Promise<import('./child-server').EmbeddedServer>} `{ uri, host, port, pid, kind, version, dbPath, exited, stop(), pause(), resume() }`
 */
async function startEmbeddedServer ({ host = '127.0.0.1', port = 0, logger = createNoopLogger(), unref = false, env = process.env, dbPath, choice, skipped = [], warn = false, fetch } = {}) {
  validatePort(port)
  const chosen = choice || await chooseEmbeddedServer({ env, logger, fetch })
  const data = serverDataPath(chosen.kind, dbPath)
  const server = chosen.kind === 'mongod'
    ? await startMongod({ mongod: chosen.binary, host, port, logger, unref, env, dbPath: data })
    : await startJavaServer({ host, port, logger, unref, env, dbPath: data })
  server.version = chosen.version || null
  remember(server, logger)
  const storage = server.dbPath ? `data in ${server.dbPath}` : 'in memory: its data is gone when it stops'
  const passed = [...skipped, ...chosen.skipped]
  const line = `started the embedded database: ${serverName(chosen)} at ${server.uri}, ${storage}${chosen.source ? ` (${chosen.source})` : ''}${passed.length ? `; skipped: ${passed.join(', ')}` : ''}`
  logger[warn ? 'warn' : 'info']({ kind: server.kind, uri: server.uri, serverPid: server.pid, dbPath: server.dbPath, binary: chosen.binary }, line)
  if (dbPath) warnOtherServersData(chosen.kind, dbPath, logger)
  if (!isLoopback(host)) logger.warn({ host, port: server.port }, `the embedded database listens on ${host}, without authentication or TLS: anyone who reaches port ${server.port} can read and change the collected data (use 127.0.0.1, or your own MongoDB with authentication in MONGODB_URI)`)
  return server
}

// Data the other kind of server left in the data directory is not read by
// this one: said, so that it does not look lost.
function warnOtherServersData (kind, dbPath, logger) {
  const javaFile = path.join(path.resolve(dbPath), DB_FILE)
  const mongodDir = serverDataPath('mongod', dbPath)
  if (kind === 'mongod' && fs.existsSync(javaFile)) {
    logger.warn({ file: javaFile }, `the Java server's data in ${javaFile} stays there, unread by mongod (whose data is in ${mongodDir}); COLLECTOR_DB_SERVER=java keeps to the Java server`)
  } else if (kind === 'java' && hasEntries(mongodDir)) {
    logger.warn({ dir: mongodDir }, `mongod's data in ${mongodDir} stays there, unread by the Java server; a mongod on PATH (or COLLECTOR_DB_SERVER=mongod) uses it`)
  }
}

function hasEntries (dir) {
  try {
    return fs.readdirSync(dir).length > 0
  } catch {
    return false
  }
}

// Recorded until it exits, or until this process does (it takes the server
// with it). Without a record it still runs: collectors only refuse to share it.
function remember (server, logger) {
  let forget
  try {
    forget = recordServer(server)
  } catch (err) {
    logger.warn({ err: err.message }, `could not record the embedded server as collector-cluster's (${err.message}): collectors that find it on port ${server.port} will not use it`)
    return
  }
  process.once('exit', forget)
  server.exited.then(() => {
    process.removeListener('exit', forget)
    forget()
  })
}

module.exports = { startEmbeddedServer, defaultDbPath, serverDataPath, serverName }
