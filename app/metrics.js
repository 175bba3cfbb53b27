'use strict'

/**
 * Reports a collector's counters to PM2 through @pm2/io, so `pm2 monit`
 * and `pm2 show` display them, and registers the `restart-workers` action
 * (`pm2 trigger <name> restart-workers`) that runs a rolling restart.
 *
 * Outside PM2 it does nothing (and does not load @pm2/io).
 *
 * @param {object} options
 * @param {() => Promise<void>} options.restartWorkers the rolling restart
 * @param {object} [options.io] an @pm2/io instance (default: loaded when under PM2)
 * @param {object} [options.env]
 * @returns {{ update(snapshot: object): void, enabled: boolean }}
 */
function createMetrics ({ restartWorkers, io, env = process.env } = {}) {
  if (!io && !underPm2(env)) return { enabled: false, update () {} }
  io = io || loadIo()
  const gauges = {}
  for (const [key, name, unit] of GAUGES) gauges[key] = io.metric({ name, unit })
  io.action('restart-workers', (reply) => {
    restartWorkers().then(() => reply({ success: true }), (err) => reply({ success: false, error: err.message }))
  })
  return { enabled: true, update: (snapshot) => update(gauges, snapshot) }
}

const GAUGES = [
  ['received', 'received/s', 'msg/s'],
  ['processed', 'processed/s', 'msg/s'],
  ['dropped', 'dropped', 'msg'],
  ['lost', 'lost', 'msg'],
  ['failed', 'failed', 'msg'],
  ['inFlight', 'inFlight', 'msg'],
  ['oldestUnacked', 'oldest unacked', 'ms'],
  ['workers', 'workers', ''],
  ['writes', 'db writes/s', 'op/s']
]

function underPm2 (env) {
  return env.pm_id !== undefined && typeof process.send === 'function'
}

// @pm2/io would otherwise install its own uncaughtException handler (which
// prints a raw stack and exits); the collector entry handles errors itself.
// Under PM2 7 `require('@pm2/io')` gives the agent PM2 already put in the
// process (its pm2-io-bpm, registered on a global symbol), whose init()
// takes a missing `tracing` as "enabled" and then prints "[PM2][ERROR]
// OpenTelemetry packages not installed" into the app's log; only an object
// with `enabled: false` turns it off (`false` is read as enabled too).
function loadIo () {
  const io = require('@pm2/io')
  io.init({ catchExceptions: false, profiling: false, tracing: { enabled: false }, metrics: { v8: false, http: false, runtime: false, eventLoop: true, network: false } })
  return io
}

function update (gauges, snapshot) {
  const { stats, rates } = snapshot
  const values = {
    received: rates.received || 0,
    processed: rates.processed || 0,
    dropped: stats.dropped.total,
    lost: stats.lost,
    failed: stats.failed,
    inFlight: stats.inFlight,
    oldestUnacked: stats.oldestUnackedMs || 0,
    workers: stats.workers.filter((w) => w.state === 'ready').length,
    writes: rates.workers.reduce((sum, w) => sum + (w.writes || 0), 0)
  }
  for (const [key, value] of Object.entries(values)) gauges[key].set(value)
}

module.exports = { createMetrics }
