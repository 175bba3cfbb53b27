'use strict'

const fs = require('fs')
const { DatabaseError } = require('../../exceptions')

const STOP_GRACE_MS = 5000
const TAIL_BYTES = 4096

/**
 * Keeps the last few KB a child wrote to a stream, for error messages.
 * @param {import('stream').Readable} stream
 * @returns {{ text: () => string }}
 */
function tailOf (stream) {
  let tail = ''
  stream.setEncoding('utf8')
  stream.on('data', (chunk) => {
    tail = (tail + chunk).slice(-TAIL_BYTES)
  })
  return { text: () => tail.trim() }
}

/**
 * Resolves with the first stdout line matching `pattern`. Rejects if the
 * child fails to spawn, exits, or stays silent for `timeoutMs`.
 * @param {import('child_process').ChildProcess} child
 * @param {{ pattern: RegExp, timeoutMs: number, what: string, output: { text: () => string } }} options
 * @returns {Promise<RegExpMatchArray>}
 */
function waitForReadyLine (child, { pattern, timeoutMs, what, output }) {
  return new Promise((resolve, reject) => {
    let pending = ''
    const finish = (err, match) => {
      clearTimeout(timer)
      child.stdout.removeListener('data', onData)
      child.removeListener('exit', onExit)
      child.removeListener('error', onError)
      if (err) reject(err)
      else resolve(match)
    }
    const onData = (chunk) => {
      pending += chunk
      const lines = pending.split('\n')
      pending = lines.pop()
      for (const line of lines) {
        const match = line.match(pattern)
        if (match) return finish(null, match)
      }
    }
    const onExit = (code, signal) => {
      finish(new DatabaseError(`${what} exited before it was ready (${signal || `exit code ${code}`})${detail(output)}`))
    }
    const onError = (err) => finish(new DatabaseError(`${what} could not be started: ${err.message}`, { cause: err }))
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      finish(new DatabaseError(`${what} was not ready after ${timeoutMs} ms${detail(output)}`))
    }, timeoutMs)
    child.stdout.setEncoding('utf8')
    child.stdout.on('data', onData)
    child.once('exit', onExit)
    child.once('error', onError)
  })
}

function detail (output) {
  const text = output.text()
  return text ? `: ${text}` : ''
}

/**
 * Sends SIGTERM (and SIGCONT, in case the child is paused), escalating to
 * SIGKILL after `graceMs`. Resolves once the child has exited.
 * @param {import('child_process').ChildProcess} child
 * @param {number} [graceMs]
 * @returns {Promise<void>}
 */
function terminate (child, graceMs = STOP_GRACE_MS) {
  if (hasExited(child)) return Promise.resolve()
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs)
    child.once('exit', () => {
      clearTimeout(timer)
      resolve()
    })
    child.kill('SIGTERM')
    child.kill('SIGCONT')
  })
}

function hasExited (child) {
  return child.exitCode !== null || child.signalCode !== null
}

/**
 * Lets the parent exit while the child still runs; the parent's 'exit'
 * hook (and, for the Java server, its stdin watchdog) then ends the child.
 * @param {import('child_process').ChildProcess} child
 */
function unrefChild (child) {
  child.unref()
  for (const stream of [child.stdin, child.stdout, child.stderr]) {
    if (stream && typeof stream.unref === 'function') stream.unref()
  }
}

/**
 * Wraps a running child in the handle every embedded server returns.
 * @param {import('child_process').ChildProcess} child
 * @param {object} options
 * @param {'java'|'mongod'} options.kind
 * @param {string} options.host
 * @param {number} options.port
 * @param {object} options.logger
 * @param {() => void} [options.cleanup] synchronous; runs once after the child is gone
 * @returns {EmbeddedServer}
 */
function createServerHandle (child, { kind, host, port, logger, cleanup, dbPath = null }) {
  let stopping = null
  cleanup = once(cleanup || (() => {}))
  // A server with data on disk is asked to stop (it commits first); one in
  // memory has nothing to keep.
  const killOnExit = () => {
    child.kill(dbPath ? 'SIGTERM' : 'SIGKILL')
    cleanup()
  }
  process.once('exit', killOnExit)
  const exited = new Promise((resolve) => {
    child.once('exit', (code, signal) => {
      process.removeListener('exit', killOnExit)
      if (!stopping) logger.warn({ kind, port, code, signal }, 'embedded MongoDB-compatible server exited unexpectedly')
      resolve({ code, signal })
    })
  })
  return {
    uri: `mongodb://${formatHost(host)}:${port}`,
    host,
    port,
    pid: child.pid,
    kind,
    dbPath,
    exited,
    stop () {
      if (!stopping) stopping = terminate(child).then(cleanup)
      return stopping
    },
    pause: () => {
      if (signalChild(child, 'SIGSTOP')) waitAllThreadsStopped(child.pid)
    },
    resume: () => signalChild(child, 'SIGCONT')
  }
}

function once (fn) {
  let done = false
  return () => {
    if (done) return
    done = true
    fn()
  }
}

/**
 * @param {import('child_process').ChildProcess} child
 * @param {string} name
 * @returns {boolean} whether the signal was sent (false: the child is gone)
 */
function signalChild (child, name) {
  if (hasExited(child)) return false
  try {
    process.kill(child.pid, name)
    return true
  } catch (err) {
    if (err.code !== 'ESRCH') throw err
    return false
  }
}

/**
 * kill(SIGSTOP) returns before every thread of the target has stopped (seen
 * in CI: a request sent right after it was still answered), so a failure
 * test that pauses the server waits here, up to 2 s, until /proc shows each
 * thread stopped. Where /proc is absent it returns at once.
 * @param {number} pid
 */
function waitAllThreadsStopped (pid) {
  const pause = new Int32Array(new SharedArrayBuffer(4))
  const deadline = Date.now() + 2000
  while (Date.now() < deadline) {
    let tids
    try {
      tids = fs.readdirSync(`/proc/${pid}/task`)
    } catch {
      return // no /proc, or the process is gone
    }
    if (tids.every((tid) => threadStopped(`/proc/${pid}/task/${tid}/stat`))) return
    Atomics.wait(pause, 0, 0, 1)
  }
}

// A thread's state letter in its stat file (after the parenthesised name):
// stopped, traced, or gone (a thread that exited meanwhile counts as stopped).
function threadStopped (statFile) {
  let stat
  try {
    stat = fs.readFileSync(statFile, 'latin1')
  } catch {
    return true
  }
  const state = stat.charAt(stat.lastIndexOf(')') + 2)
  return state === 'T' || state === 't' || state === 'Z' || state === 'X'
}

function formatHost (host) {
  return host.includes(':') ? `[${host}]` : host
}

/**
 * @typedef {object} EmbeddedServer
 * @property {string} uri mongodb://host:port (no credentials)
 * @property {string} host
 * @property {number} port
 * @property {number} pid
 * @property {'java'|'mongod'} kind
 * @property {string|null} dbPath where its data lives; null: in memory (a mongod's throw-away dbpath)
 * @property {string|null} [version] a mongod's version, as `--version` says it (set by startEmbeddedServer)
 * @property {Promise<{ code: number|null, signal: string|null }>} exited
 * @property {() => Promise<void>} stop idempotent; SIGTERM, then SIGKILL after 5 s
 * @property {() => void} pause SIGSTOP (for failure tests); returns once every thread has stopped
 * @property {() => void} resume SIGCONT
 */

module.exports = { tailOf, waitForReadyLine, terminate, unrefChild, createServerHandle, formatHost }
