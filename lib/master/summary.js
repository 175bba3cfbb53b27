'use strict'

const { totalDropped } = require('./counters')
const { fillingBytes } = require('./pool-counters')

const NO_TOTALS = Object.freeze({ processed: 0, failed: 0, inFlight: 0, buffered: 0, oldestUnackedMs: 0, oldestBufferedMs: 0 })

/**
 * The balancer's counters now (LoadBalancer#summary, docs/counters.md):
 * its own (counters.js), the workers' totals from `snapshot` (a pool
 * snapshot, or null before the pool exists) and the kernel's drops.
 */
function summarize (lb, snapshot) {
  const c = lb.counters.read()
  const dropped = { ...c.dropped, kernel: lb.supervisor.kernelDrops() }
  const pool = lb.pool
  const totals = snapshot ? snapshot.totals : NO_TOTALS
  return {
    name: lb.options.name,
    protocol: lb.options.protocol,
    receiver: lb.receiver(),
    state: lb.state,
    address: lb.address(),
    metrics: lb.metricsAddress(),
    uptime: lb.startedAt ? Date.now() - lb.startedAt : 0,
    instances: lb.options.instances,
    received: c.received,
    bytes: c.bytes,
    dispatched: c.dispatched,
    processed: totals.processed,
    failed: totals.failed,
    inFlight: totals.inFlight,
    oldestUnackedMs: totals.oldestUnackedMs,
    replayed: c.replayed,
    deadLettered: c.deadLettered,
    deadLetteredBy: c.deadLetteredBy,
    deadLetters: lb.deadLetters ? lb.deadLetters.stats() : null,
    buffered: totals.buffered + c.buffer.kept,
    buffer: bufferSummary(lb.options, lb.journal, totals, c.buffer, pool),
    lost: c.dropped.workerLost,
    dropped: { ...dropped, total: totalDropped(dropped) },
    events: c.events,
    eventReasons: c.eventReasons,
    restarts: {
      listener: c.restarts.listener,
      workers: pool ? pool.respawns : 0,
      rolling: pool ? pool.rollingRestarts : 0
    }
  }
}

// The disk buffer's part of the summary; null when it is off.
// `full` as the dispatcher decides it: the batches being filled count.
function bufferSummary (options, journal, totals, c, pool) {
  if (!options.buffer) return null
  const disk = journal ? journal.stats() : { dir: options.bufferDir, bytes: 0, maxBytes: options.bufferMaxBytes, segments: 0, records: 0, messages: 0, sync: options.bufferSync, syncs: 0, writeErrors: 0 }
  return { ...disk, full: journal ? journal.fullWith(pool ? fillingBytes(pool) : 0) : false, waiting: totals.buffered, oldestMs: totals.oldestBufferedMs, kept: c.kept, damagedRecords: c.damagedRecords, damagedBytes: c.damagedBytes }
}

/**
 * summarize() and every worker's counters, all read at one moment (the
 * parts add up to the totals: Σ workers + retired = processed, failed,
 * dispatched; Σ workers + orphaned = inFlight), with each worker's own
 * stats (`custom`), asked for first and `customAgeMs` old.
 */
async function collectStats (lb) {
  const customs = lb.pool ? await lb.pool.collectCustom() : null
  const snapshot = lb.pool ? lb.pool.snapshot(customs) : null
  const parts = snapshot ? { workers: snapshot.workers, retired: snapshot.retired, orphaned: snapshot.orphaned } : { workers: [], retired: { processed: 0, failed: 0, dispatched: 0 }, orphaned: 0 }
  return { ...summarize(lb, snapshot), ...parts }
}

/**
 * Whether the balancer can take traffic: the listener bound and every
 * worker slot online. `{ ready, state, listening, workers: { online, expected }, reason? }`.
 */
function readinessOf (lb) {
  const online = lb.pool ? lb.pool.rotation.length : 0
  const expected = lb.options.instances
  const listening = Boolean(lb.listener)
  const ready = lb.state === 'running' && listening && online === expected
  const reason = ready
    ? undefined
    : lb.state !== 'running' ? `state is ${lb.state}` : !listening ? 'listener is not bound (reopening)' : `${online} of ${expected} worker slots online`
  return { ready, state: lb.state, listening, workers: { online, expected }, ...(reason ? { reason } : {}) }
}

// Unacknowledged messages older than this are worth a warning (at most one
// per interval): the workers' database has stalled or falls behind.
const STALL_WARN_MS = 5000

function warnIfStalled (lb) {
  const { oldestUnackedMs, inFlight } = lb.pool.snapshot().totals
  if (oldestUnackedMs < STALL_WARN_MS) return
  lb.logger.warn({ oldestUnackedMs, inFlight, maxInFlightPerWorker: lb.options.maxInFlight, workers: lb.options.instances },
    `workers have not acknowledged messages for ${Math.round(oldestUnackedMs / 1000)} s (database stalled or slower than input); the master holds them`)
}

module.exports = { summarize, collectStats, readinessOf, warnIfStalled, STALL_WARN_MS }
