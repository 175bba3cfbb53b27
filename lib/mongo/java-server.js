'use strict'

const fs = require('node:fs')
const path = require('node:path')
const { spawn } = require('node:child_process')
const { InvalidOptionError, DatabaseError } = require('../../exceptions')
const { createNoopLogger } = require('../shared/logger')
const { makeDir, PRIVATE_DIR } = require('../shared/make-dir')
const { ensureJavaServerBuilt, requireExecutable } = require('./java-build')
const { tailOf, waitForReadyLine, createServerHandle, unrefChild } = require('./child-server')

// Two cores shared with everything else: the serial collector keeps the
// JVM to one GC thread.
const DEFAULT_JVM_ARGS = Object.freeze(['-XX:+UseSerialGC', '-Xss512k'])
const READY_LINE = /^listening (\S+):(\d+)\s*$/

/** The file the on-disk backend keeps its data in, inside `dbPath`. */
const DB_FILE = 'collector.mv.db'

// The wait for the server to listen: a minute, and 4 minutes per GB of an
// on-disk file it opens first (an H2 MVStore file of 0.93 GB took 113 s on
// a 2-core machine; with a fixed minute such a database never started: each
// try was killed while it opened the file, and PM2 tried again for good).
const START_MS = 60000
const START_MS_PER_GB = 240000

/** How long a start of the server may take with its data in `dbPath` (none: in memory). */
function startTimeoutFor (dbPath) {
  return START_MS + Math.ceil(dataFileBytes(dbPath) / 1e9 * START_MS_PER_GB)
}

function dataFileBytes (dbPath) {
  try { return dbPath ? fs.statSync(path.join(dbPath, DB_FILE)).size : 0 } catch { return 0 }
}

/**
 * Starts mongo-java-server (reporting wire version 17), building it with
 * Maven first if java/target has no current jar. With `dbPath` its data
 * lives on disk (an H2 MVStore file, `dbPath/collector.mv.db`, committed
 * about every second and on stop); without, in memory.
 *
 * The child dies with its parent: it exits when its stdin pipe closes,
 * which the OS does however the parent ends.
 *
 * @param {object} [options]
 * @param {string} [options.host='127.0.0.1']
 * @param {number} [options.port=0] 0 picks a free port
 * @param {object} [options.logger] pino-like; default no-op
 * @param {boolean} [options.unref=false] once ready, do not keep the parent's event loop alive
 * @param {number} [options.startTimeoutMs] default startTimeoutFor(dbPath): a minute, more for a large data file
 * @param {string} [options.dbPath] directory of the on-disk data (created); none: memory
 * @param {string[]} [options.jvmArgs]
 * @param {NodeJS.ProcessEnv} [options.env=process.env]
 * @returns {Promise<import('./child-server').EmbeddedServer>} kind 'java'
 */
async function startJavaServer (options = {}) {
  const { host = '127.0.0.1', port = 0, logger = createNoopLogger(), unref = false, startTimeoutMs = startTimeoutFor(options.dbPath), jvmArgs = DEFAULT_JVM_ARGS, env = process.env, dbPath } = options
  validatePort(port)
  const { jar } = await ensureJavaServerBuilt({ logger, env })
  const java = requireExecutable('java', env)
  const storage = dbPath ? ['--db-file', path.join(ensureDir(dbPath), DB_FILE)] : []
  const args = [...jvmArgs, '-jar', jar, '--host', host, '--port', String(port), ...storage, '--watch-stdin']
  logger.debug({ java, args }, 'starting Java MongoDB-compatible server')
  const bytes = dataFileBytes(dbPath)
  if (bytes > 1e8) logger.info({ dbPath, bytes }, `opening ${Math.round(bytes / 1e6)} MB of data in ${dbPath}: the server may take up to ${Math.round(startTimeoutMs / 1000)} s to listen`)
  // detached: a terminal's Ctrl-C reaches only the parent, which stops the child in order
  const child = spawn(java, args, { env, stdio: ['pipe', 'pipe', 'pipe'], detached: true })
  const output = tailOf(child.stderr)
  const match = await waitForReadyLine(child, { pattern: READY_LINE, timeoutMs: startTimeoutMs, what: `Java MongoDB server on ${host}:${port}`, output })
  child.stdout.resume()
  if (unref) unrefChild(child)
  return createServerHandle(child, { kind: 'java', host, port: Number(match[2]), logger, dbPath: dbPath ? path.resolve(dbPath) : null })
}

function ensureDir (dir) {
  try {
    makeDir(dir, PRIVATE_DIR)
  } catch (err) {
    throw new DatabaseError(`cannot create the database directory ${dir}: ${err.message}`)
  }
  return dir
}

function validatePort (port) {
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new InvalidOptionError('port', port, 'must be an integer from 0 to 65535')
  }
}

module.exports = { startJavaServer, startTimeoutFor, validatePort, DEFAULT_JVM_ARGS, DB_FILE }
