'use strict'

const { workerStats } = require('../lib/shared/worker-stats')
const fs = require('node:fs')
const path = require('node:path')
const { makeDir, PRIVATE_DIR, PRIVATE_FILE } = require('../lib/shared/make-dir')
const { stateHome } = require('../lib/shared/state-dir')
const { takeClaim, releaseClaim } = require('../lib/shared/pid-claim')
const CollectorError = require('../exceptions/collector-error')

/** Version of the stats-file layout; bumped on incompatible changes. */
const FORMAT = 1

/**
 * The directory stats files live in: $COLLECTOR_STATS_DIR, else
 * <PM2 home>/collector-stats (pm2Home, then $PM2_HOME, then ~/.pm2).
 * @param {{ env?: object, pm2Home?: string }} [options]
 * @returns {string}
 */
function statsDir ({ env = process.env, pm2Home } = {}) {
  if (env.COLLECTOR_STATS_DIR) return path.resolve(env.COLLECTOR_STATS_DIR)
  return path.join(stateHome({ env, pm2Home }), 'collector-stats')
}

/**
 * @param {string} name collector name
 * @param {string} dir
 * @returns {string} `<dir>/<name>.json`
 */
function statsPath (name, dir) {
  return path.join(dir, `${name}.json`)
}

/**
 * Writes a snapshot atomically (a temporary file renamed over the old one),
 * so a reader never sees half a file.
 * @param {string} dir
 * @param {object} snapshot with a `name`
 * @returns {Promise<string>} the path written
 */
async function writeStats (dir, snapshot) {
  makeDir(dir, PRIVATE_DIR)
  const file = statsPath(snapshot.name, dir)
  await replaceFile(file, JSON.stringify(snapshot) + '\n')
  return file
}

// A new file renamed over the old one: readers never see half a file, and
// the mode is the new file's (a file written in place keeps its old mode).
async function replaceFile (file, text) {
  const tmp = `${file}.${process.pid}.tmp`
  await fs.promises.writeFile(tmp, text, { mode: PRIVATE_FILE })
  await fs.promises.rename(tmp, file)
}

/**
 * Why a collector's last start failed: `<dir>/<name>.failed`, JSON
 * `{ pid, time, code, message }`, written by the entry before it exits 1
 * and read by the launcher (and `status`). Not a `.json` file: readers of
 * snapshots never see it.
 */
function failurePath (name, dir) {
  return path.join(dir, `${name}.failed`)
}

async function writeFailure (dir, name, err) {
  makeDir(dir, PRIVATE_DIR)
  const failure = { pid: process.pid, time: new Date().toISOString(), code: (err && err.code) || null, message: String((err && err.message) || err) }
  await replaceFile(failurePath(name, dir), JSON.stringify(failure) + '\n')
}

async function readFailure (name, dir) {
  try {
    return JSON.parse(await fs.promises.readFile(failurePath(name, dir), 'utf8'))
  } catch {
    return null
  }
}

async function removeFailure (name, dir) {
  await fs.promises.rm(failurePath(name, dir), { force: true })
}

/**
 * Reads one collector's snapshot, with `age` (ms since written) added; its
 * rates are 0 once it stopped or its file went stale.
 * @param {string} name
 * @param {string} dir
 * @returns {Promise<object|null>} null when there is none (or it is unreadable)
 */
async function readStats (name, dir) {
  try {
    const snapshot = JSON.parse(await fs.promises.readFile(statsPath(name, dir), 'utf8'))
    const age = Date.now() - snapshot.timestamp
    return { ...snapshot, age, rates: current(snapshot, age) ? snapshot.rates : zeroRates(snapshot.rates) }
  } catch {
    return null
  }
}

// Rates are "now": a collector that stopped, or stopped writing its file
// (killed), receives nothing now, whatever its last interval measured.
function current (snapshot, age) {
  return snapshot.state === 'running' && age <= 3 * (snapshot.interval || 1000)
}

function zeroRates (rates) {
  if (!rates || typeof rates !== 'object') return rates
  const zeroed = {}
  for (const [key, value] of Object.entries(rates)) {
    if (typeof value === 'number') zeroed[key] = 0
    else if (Array.isArray(value)) zeroed[key] = value.map(zeroRates)
    else zeroed[key] = value
  }
  return zeroed
}

/**
 * Every snapshot in `dir`, by name.
 * @param {string} dir
 * @returns {Promise<object[]>}
 */
async function readAllStats (dir) {
  let files
  try {
    files = await fs.promises.readdir(dir)
  } catch {
    return []
  }
  const names = files.filter((f) => f.endsWith('.json')).map((f) => f.slice(0, -5)).sort()
  const snapshots = await Promise.all(names.map((name) => readStats(name, dir)))
  return snapshots.filter(Boolean)
}

/**
 * Removes a collector's stats file (after `delete`); no error if absent.
 * @param {string} name
 * @param {string} dir
 */
async function removeStats (name, dir) {
  await fs.promises.rm(statsPath(name, dir), { force: true })
  await removeFailure(name, dir)
}

const RATE_KEYS = ['received', 'processed', 'failed', 'bytes']

/**
 * Per-second rates between two stats() results taken `ms` apart; totals
 * and per worker (matched by slot and pid, so a replaced worker starts
 * afresh). Rates are null when there is no previous sample.
 * @param {object} stats current LoadBalancer#stats() result
 * @param {object|null} previous the one before
 * @param {number} ms time between them
 * @returns {object}
 */
function computeRates (stats, previous, ms) {
  const per = (now, before) => (before === undefined || !(ms > 0) ? null : round(Math.max(0, now - before) * 1000 / ms))
  const rates = {}
  for (const key of RATE_KEYS) rates[key] = per(stats[key], previous ? previous[key] : undefined)
  rates.dropped = per(stats.dropped.total, previous ? previous.dropped.total : undefined)
  rates.workers = stats.workers.map((w) => workerRates(w, findWorker(previous, w), per))
  return rates
}

function findWorker (previous, worker) {
  if (!previous) return undefined
  return previous.workers.find((w) => w.slot === worker.slot && w.pid === worker.pid)
}

function workerRates (worker, before, per) {
  const writes = writesOf(worker)
  return {
    slot: worker.slot,
    pid: worker.pid,
    processed: per(worker.processed, before && before.processed),
    failed: per(worker.failed, before && before.failed),
    writes: writes === undefined ? null : per(writes, before && writesOf(before))
  }
}

/**
 * The database writes of the workers in `previous` that are gone from
 * `current` (replaced: respawned, or rolled), as last reported: what the
 * collector's total keeps of them, so that it only grows (QA: `top`'s
 * WRITES fell when a worker respawned). What a worker wrote after its last
 * report before it died is not counted.
 */
function retiredWritesOf (current, previous) {
  if (!previous) return 0
  let writes = 0
  for (const w of previous.workers) if (!findWorker(current, w)) writes += writesOf(w) || 0
  return writes
}

/**
 * Database writes a worker reports through its own stats() (`dbWrites`,
 * the one name every built-in worker uses), or undefined.
 * @param {object} worker one entry of stats().workers
 * @returns {number|undefined}
 */
function writesOf (worker) {
  const custom = worker && worker.custom
  return workerStats(custom).dbWrites
}

function round (value) {
  return Math.round(value * 10) / 10
}

/**
 * The stats-file document (format 1).
 * @param {object} meta `{ name, collector, pid, interval }`
 * @param {object} stats LoadBalancer#stats()
 * @param {object} rates computeRates()
 * @returns {object}
 */
function buildSnapshot (meta, stats, rates) {
  const now = Date.now()
  return {
    format: FORMAT,
    name: meta.name,
    collector: meta.collector,
    // Once stopped the process is gone, and its number may be another's.
    pid: stats.state === 'stopped' ? null : meta.pid,
    timestamp: now,
    time: new Date(now).toISOString(),
    interval: meta.interval,
    state: stats.state,
    // The last rolling restart that failed ({ message, at }), null while none did.
    restartFailed: meta.restartFailed || null,
    // Database writes of workers since replaced (retiredWritesOf): with the live workers', the collector's total.
    retiredWrites: meta.retiredWrites || 0,
    stats,
    rates
  }
}

/**
 * Claims a collector name in the stats directory for this process
 * (`<dir>/<name>.pid`), so that two collectors of one name (two `collector
 * run`, or a `run` beside a `start`) do not write one stats file, disk
 * buffer and dead letters; a claim left by a process that is gone is taken
 * over. Returns its release (it releases only this process's claim).
 * @throws {CollectorError} ERR_NAME_IN_USE, with the pid of the holder
 */
function claimName (dir, name) {
  makeDir(dir, PRIVATE_DIR)
  const file = path.join(dir, `${name}.pid`)
  const holder = takeClaim(file)
  if (holder !== null) throw new CollectorError(`a collector named ${name} runs already (pid ${holder}): give this one another --name, or stop that one`, 'ERR_NAME_IN_USE', { name, pid: holder })
  return () => releaseClaim(file)
}

module.exports = {
  FORMAT,
  claimName,
  statsDir,
  statsPath,
  writeStats,
  readStats,
  readAllStats,
  removeStats,
  computeRates,
  buildSnapshot,
  writesOf,
  retiredWritesOf,
  writeFailure,
  readFailure,
  removeFailure
}
