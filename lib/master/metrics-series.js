'use strict'

const client = require('prom-client')
const { workerStats, storageOf, sweeperOf } = require('../shared/worker-stats')

// The series /metrics serves (metrics-server.js), read from the balancer
// when scraped: no second set of counters to drift.

/** Registers on `registry` every series of balancer `lb`. */
function defineMetrics (registry, lb) {
  const register = [registry]
  const total = (name, help, read, labelNames = []) => new client.Counter({
    name, help, labelNames, registers: register,
    async collect () { fill(this, await read(), (labels, value) => this.inc(labels, value)) }
  })
  const gauge = (name, help, read, labelNames = []) => new client.Gauge({
    name, help, labelNames, registers: register,
    async collect () { fill(this, await read(), (labels, value) => this.set(labels, value)) }
  })
  // One stats() per scrape, shared by every series: the totals and the
  // per-worker series of one scrape are one moment's (they add up).
  let scrape = null
  const stats = () => {
    if (!scrape) scrape = lb.stats().finally(() => setImmediate(() => { scrape = null }))
    return scrape
  }
  defineBalancerSeries({ total, gauge }, stats, lb)
  // The buffer is on or off for the balancer's life: when off, no series
  // at all (an unlabelled series would read 0, as if it were on and empty).
  if (lb.summary().buffer !== null) defineBufferSeries({ total, gauge }, stats)
  defineWorkerSeries({ total, gauge }, stats)
  defineStorageSeries({ total, gauge }, stats)
}

// A metric's series, those `rows` give ([labels, value]). prom-client's
// reset() puts back a 0 for a metric without labels (prom-client 15), so
// one with nothing to say (no budget, no streams) served `… 0` where its
// help says it has no series: its values are emptied then (`hashMap`, the
// store its get() reads).
function fill (metric, rows, put) {
  metric.reset()
  if (rows.length === 0 && metric.labelNames.length === 0) metric.hashMap = {}
  for (const [labels, value] of rows) put(labels, value)
}

// The balancer's own series: what the master received, handed out and lost.
function defineBalancerSeries ({ total, gauge }, stats, lb) {
  const one = (read) => async () => [[{}, read(await stats())]]
  total('collector_messages_received_total', 'Messages received by the master (datagrams, TCP frames).', one((s) => s.received))
  total('collector_bytes_received_total', 'Bytes of the messages received.', one((s) => s.bytes))
  total('collector_messages_processed_total', 'Messages acknowledged by the workers (stored, for the MongoDB workers).', one((s) => s.processed))
  total('collector_messages_failed_total', 'Messages whose doWork failed.', one((s) => s.failed))
  total('collector_messages_dropped_total', 'Messages dropped, by reason (kernel: lost in the receive buffer).',
    async () => Object.entries((await stats()).dropped).filter(([reason]) => reason !== 'total').map(([reason, n]) => [{ reason }, n]), ['reason'])
  total('collector_events_total', 'Listener events (connections, connectionsRejected, connectionsEvicted, tlsRejected, idleTimeouts, frameTimeouts, …), by reason where they have one.',
    async () => eventSeries(await stats()), ['event', 'reason'])
  gauge('collector_messages_in_flight', 'Messages handed to workers and not yet acknowledged.', one((s) => s.inFlight))
  gauge('collector_oldest_unacknowledged_seconds', 'Age of the oldest unacknowledged batch (a stalled database shows here).', one((s) => s.oldestUnackedMs / 1000))
  total('collector_worker_restarts_total', 'Workers respawned after they died.', one((s) => s.restarts.workers))
  total('collector_listener_restarts_total', 'Listener restarts after socket errors.', one((s) => s.restarts.listener))
  gauge('collector_ready', '1 while the listener is bound and every worker slot is online.', async () => [[{}, lb.readiness().ready ? 1 : 0]])
}

// The disk buffer (summary.buffer): what waits in it, its size against its
// bound, and what a start found there. Its drops are dropped{reason="bufferFull"}.
function defineBufferSeries ({ total, gauge }, stats) {
  const one = (read) => async () => [[{}, read(await stats())]]
  gauge('collector_messages_buffered', 'Messages waiting in the disk buffer for room at a worker, plus after a stop those left there for the next start.', one((s) => s.buffered))
  gauge('collector_oldest_buffered_seconds', 'Age of the oldest message waiting in the disk buffer (0 when none waits).', one((s) => s.buffer.oldestMs / 1000))
  total('collector_messages_replayed_total', 'Messages a previous run left in the disk buffer, delivered by this one.', one((s) => s.replayed))
  gauge('collector_buffer_bytes', 'Bytes of the disk buffer\'s segment files.', one((s) => s.buffer.bytes))
  gauge('collector_buffer_max_bytes', 'The disk buffer\'s bound (bufferMaxBytes): at it, new messages are dropped (reason bufferFull).', one((s) => s.buffer.maxBytes))
  gauge('collector_buffer_segments', 'Segment files in the disk buffer.', one((s) => s.buffer.segments))
  gauge('collector_buffer_full', '1 while the disk buffer is at its bound (new messages dropped, TCP senders paused).', one((s) => Number(s.buffer.full)))
  total('collector_buffer_damaged_records_total', 'Damaged records (cut short by a crash, or corrupted) skipped when the disk buffer was opened.', one((s) => s.buffer.damagedRecords))
  total('collector_buffer_damaged_bytes_total', 'Bytes of the damaged records skipped when the disk buffer was opened.', one((s) => s.buffer.damagedBytes))
  total('collector_buffer_kept_messages_total', 'Messages left in the disk buffer for the next start by a stop (the database was away).', one((s) => s.buffer.kept))
  total('collector_buffer_syncs_total', 'fdatasync calls on the disk buffer (bufferSync interval or batch).', one((s) => s.buffer.syncs))
  total('collector_buffer_write_errors_total', 'Disk buffer writes and syncs that failed (batches then held in memory only; events.bufferWriteFailed by errno).', one((s) => s.buffer.writeErrors))
}

// Per worker slot: the workers' acknowledgements and what they report of
// themselves (database counters, per-sender state); a slot without a
// figure has no series.
function defineWorkerSeries ({ total, gauge }, stats) {
  const perWorker = (read) => async () => (await stats()).workers.map((w) => [{ slot: String(w.slot) }, read(w)]).filter(([, v]) => Number.isFinite(v))
  const perWorkerMap = (field) => async () => (await stats()).workers.flatMap((w) => Object.entries(workerStats(w.custom)[field] || {})
    .filter(([, v]) => Number.isFinite(v)).map(([map, v]) => [{ slot: String(w.slot), map }, v]))
  total('collector_worker_messages_processed_total', 'Messages acknowledged, per worker slot (resets when a slot\'s worker is replaced).', perWorker((w) => w.processed), ['slot'])
  gauge('collector_worker_messages_in_flight', 'Messages in flight, per worker slot.', perWorker((w) => w.inFlight), ['slot'])
  total('collector_worker_db_writes_total', 'Database write operations, per worker slot (workers that report dbWrites).', perWorker((w) => workerStats(w.custom).dbWrites), ['slot'])
  total('collector_worker_db_errors_total', 'Database errors, per worker slot.', perWorker((w) => workerStats(w.custom).dbErrors), ['slot'])
  total('collector_worker_driver_reconnects_total', 'Driver clients reconnected because their monitor was stuck, per worker slot.', perWorker((w) => workerStats(w.custom).driverReconnects), ['slot'])
  gauge('collector_worker_db_down', '1 while a worker cannot reach its database.', perWorker((w) => { const { dbDown } = workerStats(w.custom); return dbDown === undefined ? undefined : Number(dbDown) }), ['slot'])
  total('collector_worker_state_evicted_total', 'Per-sender state forgotten over its bound, per worker slot and map (workers that report evicted).', perWorkerMap('evicted'), ['slot', 'map'])
  gauge('collector_worker_state_held', 'Per-sender state held, per worker slot and map (keys; bounded, see docs/call-quality.md, Memory).', perWorkerMap('held'), ['slot', 'map'])
  gauge('collector_streams_held_back_seconds', 'How far back the leader worker judges which streams have ended: the age of the oldest message the master still holds (streams active after it wait for it). Collectors with streams only.',
    async () => {
      const sweeper = sweeperOf(await stats())
      return sweeper && Number.isFinite(sweeper.heldBackMs) ? [[{}, sweeper.heldBackMs / 1000]] : []
    })
}

// What the collector's collections hold, keep and deleted, as the leader
// worker measured them (docs/storage.md, Capacity); no series before it
// measured, nor for a figure it does not know (no budget: no days left).
function defineStorageSeries ({ total, gauge }, stats) {
  const perCollection = (read) => async () => {
    const storage = storageOf(await stats())
    if (!storage) return []
    return Object.entries(storage.collections).map(([collection, c]) => [{ collection }, read(c)]).filter(([, v]) => Number.isFinite(v))
  }
  const one = (read) => async () => {
    const storage = storageOf(await stats())
    const value = storage ? read(storage) : undefined
    return Number.isFinite(value) ? [[{}, value]] : []
  }
  gauge('collector_storage_documents', 'Documents per collection the collector writes.', perCollection((c) => c.documents), ['collection'])
  gauge('collector_storage_data_bytes', 'Data bytes per collection: on disk where the server reports it (MongoDB, compressed), else the documents\' BSON size.', perCollection((c) => c.dataBytes), ['collection'])
  gauge('collector_storage_index_bytes', 'Index bytes per collection (estimated where the server does not report them).', perCollection((c) => c.indexBytes), ['collection'])
  gauge('collector_storage_oldest_timestamp_seconds', 'Age field of the oldest document per collection (Unix time).', perCollection((c) => c.oldest === null ? undefined : c.oldest / 1000), ['collection'])
  gauge('collector_storage_newest_timestamp_seconds', 'Age field of the newest document per collection (Unix time).', perCollection((c) => c.newest === null ? undefined : c.newest / 1000), ['collection'])
  gauge('collector_storage_growth_bytes_per_day', 'Net growth per collection over the last hour, in bytes a day (0 when retention deletes as fast as data comes).', perCollection((c) => c.growthPerDay ? c.growthPerDay.bytes : undefined), ['collection'])
  gauge('collector_storage_retention_seconds', 'Retention per collection (0: kept forever).', perCollection((c) => c.retentionMs / 1000), ['collection'])
  total('collector_storage_deleted_total', 'Documents deleted per collection, by reason (retention by the leader worker\'s sweeper, budget); resets when the leader worker is replaced. TTL deletions by the server are not counted per collection.',
    async () => {
      const storage = storageOf(await stats())
      if (!storage) return []
      return Object.entries(storage.collections).flatMap(([collection, c]) => Object.entries(c.deleted).filter(([, n]) => Number.isFinite(n)).map(([reason, n]) => [{ collection, reason }, n]))
    }, ['collection', 'reason'])
  gauge('collector_storage_used_bytes', 'Bytes the collector\'s collections use, data and indexes (what --max-storage is held to).', one((s) => s.usedBytes))
  gauge('collector_storage_max_bytes', 'The storage budget (--max-storage); no series without one.', one((s) => s.maxStorage || undefined))
  gauge('collector_storage_days_left', 'Days until the budget is reached at the current growth; no series without a budget or growth.', one((s) => s.daysLeft ?? undefined))
}

// An event with reasons is one series per reason (they add up to its
// count); one without has reason="".
// An event counted both with and without a reason (count() allows both)
// keeps the reasonless part as reason="", so the series add up to it.
function eventSeries ({ events, eventReasons }) {
  return Object.entries(events).flatMap(([event, n]) => {
    const reasons = Object.entries(eventReasons[event] || {})
    const withReason = reasons.reduce((sum, [, r]) => sum + r, 0)
    const series = reasons.map(([reason, r]) => [{ event, reason }, r])
    return n > withReason ? [...series, [{ event, reason: '' }, n - withReason]] : series
  })
}

module.exports = { defineMetrics }
