'use strict'

const fs = require('node:fs')
const net = require('node:net')
const os = require('node:os')
const path = require('node:path')
const { spawn } = require('node:child_process')
const { makeDir, PRIVATE_DIR } = require('../shared/make-dir')
const { createNoopLogger } = require('../shared/logger')
const { findExecutable } = require('./find-executable')
const { tailOf, waitForReadyLine, createServerHandle, unrefChild } = require('./child-server')

// mongod ≥ 4.4 logs JSON ({"msg":"Waiting for connections"}), older ones text
const READY_LINE = /waiting for connections/i

/**
 * Starts a real `mongod` on `dbPath`, or on a throw-away dbpath (removed on stop).
 * mongod cannot listen on port 0, so a free port is picked first.
 * Where util-linux `setpriv` exists the child gets a parent-death signal,
 * so it cannot outlive its parent; otherwise only the parent's 'exit' hook
 * ends it.
 *
 * @param {object} options
 * @param {string} options.mongod absolute path of the mongod binary
 * @param {string} [options.host='127.0.0.1']
 * @param {number} [options.port=0]
 * @param {object} [options.logger]
 * @param {boolean} [options.unref=false]
 * @param {number} [options.startTimeoutMs=60000]
 * @param {NodeJS.ProcessEnv} [options.env=process.env]
 * @param {string} [options.dbPath] where the data lives (kept); default a temporary directory
 * @returns {Promise<import('./child-server').EmbeddedServer>} kind 'mongod'
 */
async function startMongod ({ mongod, host = '127.0.0.1', port = 0, logger = createNoopLogger(), unref = false, startTimeoutMs = 60000, env = process.env, dbPath }) {
  const listenPort = port || await findFreePort(host)
  if (dbPath) makeDir(dbPath, PRIVATE_DIR)
  const dbpath = dbPath || fs.mkdtempSync(path.join(os.tmpdir(), 'collector-mongod-'))
  // A throw-away dbpath goes with the server; the user's stays.
  const cleanup = dbPath ? () => {} : () => fs.rmSync(dbpath, { recursive: true, force: true })
  const [command, args] = withParentDeathSignal(mongod, ['--dbpath', dbpath, '--bind_ip', host, '--port', String(listenPort)], env)
  logger.debug({ command, args }, 'starting mongod')
  // detached: a terminal's Ctrl-C reaches only the parent, which stops the child in order
  const child = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'], detached: true })
  const output = tailOf(child.stderr)
  try {
    await waitForReadyLine(child, { pattern: READY_LINE, timeoutMs: startTimeoutMs, what: `mongod on ${host}:${listenPort}`, output })
  } catch (err) {
    cleanup()
    throw err
  }
  child.stdout.resume()
  if (unref) unrefChild(child)
  return createServerHandle(child, { kind: 'mongod', host, port: listenPort, logger, cleanup, dbPath: dbPath ? path.resolve(dbPath) : null })
}

// setpriv execs mongod in place, so the child's pid stays mongod's own.
function withParentDeathSignal (command, args, env) {
  const setpriv = process.platform === 'linux' ? findExecutable('setpriv', env) : null
  if (!setpriv) return [command, args]
  return [setpriv, ['--pdeathsig', 'SIGTERM', command, ...args]]
}

/**
 * An ephemeral port free on `host` right now (another process may still
 * take it before it is used).
 * @param {string} host
 * @returns {Promise<number>}
 */
function findFreePort (host) {
  return new Promise((resolve, reject) => {
    const server = net.createServer()
    server.once('error', reject)
    server.listen(0, host, () => {
      const { port } = server.address()
      server.close(() => resolve(port))
    })
  })
}

module.exports = { startMongod, findFreePort }
