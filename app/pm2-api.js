'use strict'

// The PM2 API as the launcher and the database app use it: one connection
// per call, PM2's callbacks as promises, the settings every app of ours has.

const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const CollectorError = require('../exceptions/collector-error')
const { isAlive } = require('../lib/shared/is-alive')
const EXIT = require('./exit-codes')

/*
 * PM2 app settings. kill_timeout: the entry drains its workers on SIGINT,
 * for up to the collector's drainTimeout, so PM2 must wait longer than that
 * before SIGKILL: each app sets its own (a collector's is its drainTimeout
 * + KILL_MARGIN_MS, killTimeout; a fixed 35 s let PM2 kill a collector
 * started with --drain-timeout 60s mid-drain). treekill stays on: PM2 signals the whole tree, the workers
 * ignore SIGINT/SIGTERM on purpose (the master drains them), PM2 waits for
 * every pid of the tree to leave, and its SIGKILL after kill_timeout takes
 * the workers too, so no worker is orphaned. A config error, and a failed
 * first start that the launcher waits to report (app/exit-codes.js), are
 * not restarted: restarting fixes neither.
 */
const APP_DEFAULTS = Object.freeze({
  exec_mode: 'fork',
  instances: 1,
  wait_ready: true,
  listen_timeout: 30000,
  treekill: true,
  autorestart: true,
  max_restarts: 15,
  min_uptime: 5000,
  exp_backoff_restart_delay: 200,
  stop_exit_codes: [EXIT.BAD_USAGE, EXIT.START_FAILED],
  merge_logs: true
})

// How long killDaemon waits for the daemon's process to be gone after PM2
// answered (it answers before it exits).
const DAEMON_EXIT_MS = 10000

/**
 * Stops the PM2 daemon of `pm2Home` and every app it runs (tests, cleanup);
 * resolves once the daemon's process has exited, so that its home can be
 * removed after.
 * @param {{ pm2Home?: string }} [options]
 * @returns {Promise<void>}
 */
async function killDaemon (options = {}) {
  const home = path.resolve(options.pm2Home || process.env.PM2_HOME || path.join(os.homedir(), '.pm2'))
  const pidFile = path.join(home, 'pm2.pid')
  if (!fs.existsSync(pidFile)) return // no daemon: do not spawn one to kill it
  const pid = Number(fs.readFileSync(pidFile, 'utf8'))
  await withPm2({ pm2Home: home }, (api) => call(api, 'killDaemon'))
  for (const until = Date.now() + DAEMON_EXIT_MS; pid > 0 && isAlive(pid) && Date.now() < until;) {
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

/** The app PM2 runs under `name` (PM2's own description), or null. */
async function findApp (api, name) {
  return (await call(api, 'list')).find((p) => p.name === name) || null
}

// Deletes an app, again while PM2 still lists it (a delete that lands while
// PM2 is relaunching it can be lost), for up to 5 s.
async function removeApp (api, name) {
  for (let tries = 0; tries < 50 && await findApp(api, name); tries++) {
    await call(api, 'delete', name).catch(() => {})
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

// One PM2 connection per call, always closed, so the caller's process can exit.
async function withPm2 (options, fn) {
  const home = options.pm2Home || process.env.PM2_HOME
  const pm2 = loadPm2(path.resolve(home || path.join(os.homedir(), '.pm2')))
  const api = new pm2.custom(home ? { pm2_home: path.resolve(home) } : {})
  await call(api, 'connect')
  try {
    return await fn(api)
  } finally {
    await new Promise((resolve) => api.disconnect(() => resolve()))
    markClosed(api)
  }
}

// PM2 writes its socket, pid and log files in its home, from the moment it
// is loaded (its default instance): in a home it cannot write it printed a
// stack trace per file and threw later. Checked first, then loaded.
function loadPm2 (home) {
  let at = home // or where it would be created: a missing home's nearest directory
  while (!fs.existsSync(at) && path.dirname(at) !== at) at = path.dirname(at)
  try {
    fs.accessSync(at, fs.constants.W_OK)
    fs.mkdirSync(home, { recursive: true })
  } catch (err) {
    throw new CollectorError(`PM2 home ${home} is not writable (${err.code || err.message}): set PM2_HOME to a directory this user can write, or make that one writable`, 'ERR_PM2_HOME', { home })
  }
  return require('pm2')
}

// When the daemon goes away first (killDaemon), PM2's disconnect gives up
// on a socket that is no longer connected without marking it closing, and
// axon then retries the connection forever, keeping this process alive.
function markClosed (api) {
  const client = api.Client || {}
  for (const sock of [client.client_sock, client.sub_sock]) {
    if (sock && typeof sock.close === 'function') sock.close()
  }
}

function call (api, method, ...args) {
  return new Promise((resolve, reject) => {
    api[method](...args, (err, result) => (err ? reject(pm2Error(err, method)) : resolve(result)))
  })
}

function pm2Error (err, method) {
  if (err instanceof Error) return err
  const message = (err && (err.message || err.msg)) || JSON.stringify(err)
  return new CollectorError(`pm2 ${method} failed: ${message}`, 'ERR_PM2', { cause: err })
}

// What the entry does after its workers drained or were killed at
// drainTimeout: stop the metrics server and an embedded database, write its
// last stats and exit.
const KILL_MARGIN_MS = 5000

/** PM2's kill_timeout for a collector that drains for up to `drainTimeout` ms. */
function killTimeout (drainTimeout) {
  return drainTimeout + KILL_MARGIN_MS
}

/**
 * The line that says why an app's process failed, from the end of its PM2
 * error log (what was written past byte `from`): the last that is not PM2's own, a stack frame, a caret under
 * code, or Node's version banner (an uncaught error's `Error: …`); undefined
 * without one.
 */
function lastErrorLine (file, from = 0) {
  let text
  try {
    const fd = fs.openSync(file, 'r')
    try {
      const size = fs.fstatSync(fd).size
      const tail = Buffer.alloc(Math.max(0, Math.min(size - from, 65536)))
      fs.readSync(fd, tail, 0, tail.length, size - tail.length)
      text = tail.toString('utf8')
    } finally {
      fs.closeSync(fd)
    }
  } catch {
    return undefined
  }
  return text.split('\n').map((line) => line.trimEnd()).filter((line) => line && !/^(\s|\[PM2\]|Node\.js v|\^|\(Use `node --trace-)/.test(line)).pop()
}

/**
 * Where the error log PM2 gives app `name` by default ends now: a start
 * that fails reads only what it wrote there (startFailure), not an earlier
 * run's reason (PM2 appends to the log of a name).
 */
function errorLogMark (options, name) {
  const { stateHome } = require('../lib/shared/state-dir')
  const file = path.join(stateHome({ pm2Home: options.pm2Home }), 'logs', `${name}-error.log`)
  try {
    return { file, size: fs.statSync(file).size }
  } catch {
    return { file, size: 0 }
  }
}

/** The reason a start that failed wrote to `log` since `mark` (errorLogMark; all of it for another file). */
function startFailure (log, mark) {
  return log ? lastErrorLine(log, mark && mark.file === log ? mark.size : 0) : undefined
}

module.exports = { APP_DEFAULTS, killTimeout, withPm2, call, findApp, removeApp, killDaemon, errorLogMark, startFailure }
