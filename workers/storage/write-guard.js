'use strict'

/**
 * Whether every upsert that counts a batch (`$inc`) must be guarded by the
 * batch watermark of its origin, so that it applies once whoever else
 * writes the same batches (UpdateStore, StreamWriter). Yes, except on a
 * server that does not say which build it is (`compatible`: the embedded
 * mongo-java-server is one), which uses an index only for a filter of
 * exactly its keys and answers a guarded filter with a scan of the whole
 * collection (measured there: 30,000 stream upserts/s unguarded, 1,300
 * guarded with 5,000 streams, 345 with 20,000; benchmarks/guarded-upserts.js
 * for the updates sinks). There the writers guard only the upserts that can
 * meet a second writer of their batches: redelivered ones, those written
 * again after a write without a proven reply, and every upsert once this
 * worker's master is gone (the next run replays what the master held while
 * this worker still flushes it). A first delivery's upsert that a stalled
 * server applies after the same batches were written again still counts
 * twice there (docs/storage.md).
 * @param {{ kind?: string } | null | undefined} server the worker's identified server
 */
function guardsEveryWrite (server) {
  return !(server && server.kind === 'compatible') || masterGone()
}

// A forked worker whose IPC channel closed: its master died (a worker
// started otherwise has no channel).
function masterGone () {
  return typeof process.send === 'function' && !process.connected
}

// A stream packet entry's upsert (StreamWriter) is guarded when it carries
// batches (segments of an origin) and every write is, or one of them may
// meet a second writer.
function entryGuarded (entry, guardAll) {
  let marked = false
  let risky = false
  for (const segment of entry.segments) {
    if (segment.origin === null) continue
    marked = true
    if (segment.redelivered || segment.retried) risky = true
  }
  return marked && (guardAll || risky)
}

// An upsert whose filter names a watermark is a guarded one.
function isGuardedFilter (filter) {
  for (const key in filter) if (key.includes('.watermarks.')) return true
  return false
}

module.exports = { guardsEveryWrite, entryGuarded, isGuardedFilter }
