'use strict'

/**
 * The fields of a worker's own stats() (`custom` in the master's summary)
 * that the master, the CLI and the metrics endpoint read, declared once
 * with their types: a worker that reports them (the MongoDB workers do)
 * shows in `collector top`, the stats file and /metrics. Anything else a
 * worker reports is shown as it is and read by nobody here.
 */
const WORKER_STATS = Object.freeze({
  dbWrites: 'number', // database write operations so far
  dbErrors: 'number', // failed connects and writes so far
  driverReconnects: 'number', // driver clients reconnected because their monitor was stuck (lib/mongo/heartbeat-watch.js)
  dbDown: 'boolean', // the database cannot be reached now
  held: 'object', // per-sender state held now, by map: { map: keys }
  evicted: 'object', // per-sender state forgotten over its bound so far, by map
  // The leader's StorageKeeper figures (workers/storage/storage-keeper.js),
  // null in the other workers: per collection documents, bytes, oldest and
  // newest, growth, retention and what it deleted; the budget and days left.
  storage: 'object',
  // The leader's stream sweeper (workers/storage/stream-sweeper.js), null
  // in the other workers: heldBackMs, how far back it judges streams.
  sweeper: 'object'
})

/** The declared fields of a worker's custom stats, each undefined unless it has the declared type. */
function workerStats (custom) {
  const out = {}
  for (const [name, type] of Object.entries(WORKER_STATS)) {
    const value = custom ? custom[name] : undefined
    out[name] = typeOf(value) === type ? value : undefined
  }
  return out
}

/** The storage figures of a stats() reply: those of the worker that reports them (the leader), or null. */
function storageOf (stats) {
  for (const w of (stats && stats.workers) || []) {
    const { storage } = workerStats(w.custom)
    if (storage) return storage
  }
  return null
}

function typeOf (value) {
  return value === null ? 'null' : typeof value
}

/** The leader's stream sweeper figures of a stats() reply, or null. */
function sweeperOf (stats) {
  for (const w of (stats && stats.workers) || []) {
    const { sweeper } = workerStats(w.custom)
    if (sweeper) return sweeper
  }
  return null
}

module.exports = { WORKER_STATS, workerStats, storageOf, sweeperOf }
