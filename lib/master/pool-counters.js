'use strict'

const ipc = require('../shared/ipc')

// The worker pool's counters, read for summary() and stats() (summary.js):
// the pool's and its workers' in one pass, and each worker's own stats.

/**
 * Every counter of `pool` (a WorkerPool) read in one synchronous pass, so that the
 * parts add up to the whole: `workers`, each live worker's counters
 * (draining ones too), with its own stats from `customs` (a Map from
 * handle to `{ custom, at }`, see collectCustom) and their age;
 * `retired`, what workers now gone processed, failed and were dispatched;
 * `orphaned`, messages waiting for a slot's next worker; `totals`:
 * processed and failed over every worker this pool ran (Σ workers +
 * retired), inFlight (Σ workers + orphaned), dispatched (Σ workers +
 * retired), and how long the oldest message held has waited.
 */
// eslint-disable-next-line max-lines-per-function -- 53 lines: one pass over live workers, then what waits for slots, read top to bottom (STYLE: one readable function over a relay)
function snapshotOf (pool, customs = null) {
  const now = Date.now()
  const retired = { ...pool.retired }
  const totals = { processed: retired.processed, failed: retired.failed, dispatched: retired.dispatched, inFlight: 0, buffered: 0, oldestUnackedMs: 0, oldestBufferedMs: 0 }
  let oldest = Infinity
  let oldestBuffered = Infinity
  const workers = []
  for (const h of pool.live) {
    const worker = handleCounters(h, now)
    totals.processed += worker.processed
    totals.failed += worker.failed
    totals.dispatched += worker.dispatched
    totals.inFlight += worker.inFlight
    totals.buffered += worker.buffered
    const sentAt = h.oldestSentAt()
    if (sentAt && sentAt < oldest) oldest = sentAt
    const bufferedAt = h.oldestBufferedAt()
    if (bufferedAt && bufferedAt < oldestBuffered) oldestBuffered = bufferedAt
    if (customs) {
      const reply = customs.get(h)
      worker.custom = reply ? reply.custom : null
      worker.customAgeMs = reply ? now - reply.at : null
    }
    workers.push(worker)
  }
  // Messages being formed into a batch for a slot whose worker is gone
  // (see WorkerPool#holders()): dispatched to it, waiting like its orphans.
  for (const h of pool.current) {
    if (h === null || h.state !== 'gone' || h.filling.count === 0) continue
    retired.dispatched += h.filling.count
    totals.dispatched += h.filling.count
    totals.buffered += h.filling.count
    if (h.filling.since < oldestBuffered) oldestBuffered = h.filling.since
  }
  // Orphans a dead worker was sent are in flight; those it never sent, buffered.
  let orphaned = 0
  for (const batches of pool.orphans) {
    for (const batch of batches) {
      if (batch.sentAt === 0) {
        totals.buffered += batch.count
        if (batch.receivedAt < oldestBuffered) oldestBuffered = batch.receivedAt
        continue
      }
      orphaned += batch.count
      if (batch.sentAt < oldest) oldest = batch.sentAt
    }
  }
  totals.inFlight += orphaned
  if (oldest !== Infinity) totals.oldestUnackedMs = now - oldest
  if (oldestBuffered !== Infinity) totals.oldestBufferedMs = now - oldestBuffered
  workers.sort((a, b) => a.slot - b.slot || a.id - b.id)
  return { totals, workers, retired, orphaned }
}

/**
 * When the oldest message `pool` still holds was received (epoch ms), or
 * null when it holds none: sent to a worker and not acknowledged, waiting
 * for room (in memory or in the disk buffer), waiting for a slot's next
 * worker, or being formed into a batch. A batch keeps its receivedAt
 * through redeliveries and replays. The answer to a worker's
 * ipc.HELD_REQ (Worker#heldSince): one pass over what is held.
 */
function heldSince (pool) {
  let since = Infinity
  const older = (batches) => {
    for (const batch of batches) if (batch.receivedAt < since) since = batch.receivedAt
  }
  const filling = (h) => {
    if (h.filling.count > 0 && h.filling.since < since) since = h.filling.since
  }
  for (const h of pool.live) {
    older(h.unacked)
    older(h.backlog)
    filling(h)
  }
  for (const h of pool.current) if (h !== null && h.state === 'gone') filling(h)
  for (const batches of pool.orphans) older(batches)
  return since === Infinity ? null : since
}

/**
 * Each live worker's own stats (its Worker#stats(), over IPC): a Map from
 * handle to `{ custom, at }`, `at` when the reply came (null custom if
 * none came within `timeoutMs`). Read the counters after it, in one
 * snapshot(): they move while the replies are on their way.
 */
async function collectCustom (pool, timeoutMs) {
  const handles = [...pool.live].filter((h) => h.state !== 'starting')
  const replies = await Promise.all(handles.map((h) => askStats(pool, h, timeoutMs)))
  return new Map(handles.map((h, i) => [h, replies[i]]))
}

function askStats (pool, handle, timeoutMs) {
  const id = ++pool.statsRequests
  return new Promise((resolve) => {
    const finish = (custom) => {
      clearTimeout(timer)
      handle.removeListener('stats', onStats)
      resolve({ custom, at: Date.now() })
    }
    const onStats = (requestId, custom) => { if (requestId === id) finish(custom) }
    const timer = setTimeout(() => finish(null), timeoutMs)
    handle.on('stats', onStats)
    if (!handle.send([ipc.STATS_REQ, id])) finish(null)
  })
}

// One worker's counters (WorkerHandle's) for stats().
function handleCounters (h, now) {
  const oldest = h.oldestSentAt()
  return {
    id: h.id,
    slot: h.slot,
    pid: h.pid,
    state: h.state,
    dispatched: h.dispatched,
    processed: h.processed,
    failed: h.failed,
    inFlight: h.inFlight,
    buffered: h.buffered,
    oldestUnackedMs: oldest ? now - oldest : 0
  }
}

/**
 * Bytes of the batches being filled, not yet in the disk buffer: what the
 * buffer will take once they are formed (batchDelay later), so its bound
 * counts them before it takes more (a burst within batchDelay went past it).
 */
function fillingBytes (pool) {
  let bytes = 0
  for (const h of pool.live) bytes += h.filling.length
  for (const h of pool.current) if (h !== null && h.state === 'gone') bytes += h.filling.length
  return bytes
}

module.exports = { snapshotOf, collectCustom, heldSince, fillingBytes }
