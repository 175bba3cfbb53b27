'use strict'

// One run of the collector under verification, as an operator runs it:
// `collector run <collector>` in a child process (its own process group,
// so verify can take it down whole), the disk buffer on, its counters read
// from the stats file it publishes every second (app/stats-file.js).

const fs = require('node:fs')
const path = require('node:path')
const { spawn } = require('node:child_process')
const { readStats } = require('../stats-file')

const CLI = path.join(__dirname, '..', '..', 'bin', 'collector.js')
// The process groups of the runs still up: taken down if verify exits first
// (an error, a signal: the command exits on SIGINT/SIGTERM), since a group
// of its own is out of reach of the terminal's Ctrl-C.
const live = new Set()
process.on('exit', () => { for (const pid of live) killGroupOf(pid) })
const START_TIMEOUT_MS = 60000
const POLL_MS = 100

/**
 * Starts `collector run <target>` and resolves once its stats file says it
 * runs (this process's snapshot, not a previous run's of the same name).
 * @param {{ target: string, name: string, port: number, instances: number, flags: string[], env: object, dir: string, run: number }} options
 *   dir: verify's work directory (stats, disk buffer, logs); run: this run's number
 */
async function startCollector ({ target, name, port, instances, flags, env, dir, run }) {
  const log = path.join(dir, `collector-${run}.log`)
  const out = fs.openSync(log, 'a')
  const args = [CLI, 'run', target, '--name', name, '--host', '127.0.0.1', '--port', String(port), '-i', String(instances),
    '--buffer', '--buffer-dir', path.join(dir, 'buffer'), '--flush-interval', '200ms', '--log-format', 'json', ...flags]
  const child = spawn(process.execPath, args, { env: { ...process.env, ...env, COLLECTOR_STATS_DIR: dir }, stdio: ['ignore', out, out], detached: true })
  fs.closeSync(out)
  live.add(child.pid)
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })))
  const collector = {
    pid: child.pid,
    log,
    exited,
    snapshot: () => readStats(name, dir).then((snap) => snap && snap.pid === child.pid ? snap : null),
    finalStats: async () => { const snap = await readStats(name, dir); return snap && snap.stats },
    kill: (signal) => { try { process.kill(child.pid, signal) } catch {} },
    killGroup: () => {
      killGroupOf(child.pid)
      live.delete(child.pid)
    }
  }
  let done = null
  exited.then((how) => { done = how })
  const ready = await waitUntil(async () => {
    if (done) throw new Error(`the collector exited (${done.code ?? done.signal}) before it ran: ${tail(log)}`)
    const snap = await collector.snapshot()
    return snap && snap.state === 'running' ? snap : null
  }, START_TIMEOUT_MS, 'the collector to start')
  collector.port = ready.stats.address.port
  return collector
}

function killGroupOf (pid) {
  try { process.kill(-pid, 'SIGKILL') } catch {}
}

/** Polls `check` until it gives a value (or throws), at most `timeoutMs`. */
async function waitUntil (check, timeoutMs, what) {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await check()
    if (value) return value
    if (Date.now() > deadline) throw new Error(`timed out after ${Math.round(timeoutMs / 1000)} s waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, POLL_MS))
  }
}

/** The last lines of a log file, for an error message. */
function tail (file, bytes = 1500) {
  try {
    const text = fs.readFileSync(file, 'utf8')
    return text.slice(-bytes).trim()
  } catch {
    return ''
  }
}

module.exports = { startCollector, waitUntil, tail }
