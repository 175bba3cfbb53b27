'use strict'

const { createNoopLogger } = require('../shared/logger')
const { findExecutable } = require('./find-executable')
const { startMongod } = require('./mongod-server')
const { startJavaServer, validatePort } = require('./java-server')

/**
 * Starts a local MongoDB-compatible server: a `mongod` found on PATH, else
 * mongo-java-server (memory backend; see java/). Logs which one at info.
 *
 * @param {object} [options]
 * @param {string} [options.host='127.0.0.1']
 * @param {number} [options.port=0] 0 picks a free port
 * @param {object} [options.logger] pino-like; default no-op
 * @param {boolean} [options.unref=false] once ready, do not keep the event loop alive
 * @param {NodeJS.ProcessEnv} [options.env=process.env] PATH is searched for mongod, java, mvn
 * @returns {Promise<import('./child-server').EmbeddedServer>} `{ uri, host, port, pid, kind, exited, stop(), pause(), resume() }`
 */
async function startEmbeddedServer ({ host = '127.0.0.1', port = 0, logger = createNoopLogger(), unref = false, env = process.env } = {}) {
  validatePort(port)
  const mongod = findExecutable('mongod', env)
  const server = mongod
    ? await startMongod({ mongod, host, port, logger, unref, env })
    : await startJavaServer({ host, port, logger, unref, env })
  logger.info({ kind: server.kind, uri: server.uri, pid: server.pid }, `started embedded MongoDB-compatible server (${server.kind}) at ${server.uri}`)
  return server
}

module.exports = { startEmbeddedServer }
