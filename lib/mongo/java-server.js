'use strict'

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
 * @param {number} [options.startTimeoutMs=60000]
 * @param {string} [options.dbPath] directory of the on-disk data (created); none: memory
 * @param {string[]} [options.jvmArgs]
 * @param {NodeJS.ProcessEnv} [options.env=process.env]
 * @returns {Promise<import('./child-server').EmbeddedServer>} kind 'java'
 */
async function startJavaServer (options = {}) {
  const { host = '127.0.0.1', port = 0, logger = createNoopLogger(), unref = false, startTimeoutMs = 60000, jvmArgs = DEFAULT_JVM_ARGS, env = process.env, dbPath } = options
  validatePort(port)
  const { jar } = await ensureJavaServerBuilt({ logger, env })
  const java = requireExecutable('java', env)
  const storage = dbPath ? ['--db-file', path.join(ensureDir(dbPath), DB_FILE)] : []
  const args = [...jvmArgs, '-jar', jar, '--host', host, '--port', String(port), ...storage, '--watch-stdin']
  logger.debug({ java, args }, 'starting Java MongoDB-compatible server')
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

module.exports = { startJavaServer, validatePort, DEFAULT_JVM_ARGS, DB_FILE }
