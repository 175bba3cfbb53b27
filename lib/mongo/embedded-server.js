'use strict'

const os = require('node:os')
const path = require('node:path')
const { createNoopLogger } = require('../shared/logger')
const { isLoopback } = require('../shared/loopback')
const { findExecutable } = require('./find-executable')
const { startMongod } = require('./mongod-server')
const { startJavaServer, validatePort } = require('./java-server')
const { recordServer } = require('./started-servers')

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
 * Starts a local MongoDB-compatible server: a `mongod` found on PATH, else
 * mongo-java-server (see java/); on disk in `dbPath`, else in memory. Logs
 * which one and where its data lives at info. It is recorded as ours
 * (./started-servers.js) while it runs, so that a collector finding it on
 * its port uses it where it would refuse another program's server.
 *
 * @param {object} [options]
 * @param {string} [options.host='127.0.0.1']
 * @param {number} [options.port=0] 0 picks a free port
 * @param {object} [options.logger] pino-like; default no-op
 * @param {boolean} [options.unref=false] once ready, do not keep the event loop alive
 * @param {NodeJS.ProcessEnv} [options.env=process.env] PATH is searched for mongod, java, mvn
 * @param {string} [options.dbPath] directory of its data (kept across restarts); none: memory (mongod: a temporary directory)
 * @returns {Promise<import('./child-server').EmbeddedServer>} `{ uri, host, port, pid, kind, exited, stop(), pause(), resume() }`
 */
async function startEmbeddedServer ({ host = '127.0.0.1', port = 0, logger = createNoopLogger(), unref = false, env = process.env, dbPath } = {}) {
  validatePort(port)
  const mongod = findExecutable('mongod', env)
  const server = mongod
    ? await startMongod({ mongod, host, port, logger, unref, env, dbPath })
    : await startJavaServer({ host, port, logger, unref, env, dbPath })
  remember(server, logger)
  const storage = server.dbPath ? `data in ${server.dbPath}` : 'in memory: its data is gone when it stops'
  logger.info({ kind: server.kind, uri: server.uri, serverPid: server.pid, dbPath: server.dbPath }, `started embedded MongoDB-compatible server (${server.kind}) at ${server.uri}, ${storage}`)
  if (!isLoopback(host)) logger.warn({ host, port: server.port }, `the embedded database listens on ${host}, without authentication or TLS: anyone who reaches port ${server.port} can read and change the collected data (use 127.0.0.1, or your own MongoDB with authentication in MONGODB_URI)`)
  return server
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

module.exports = { startEmbeddedServer, defaultDbPath }
