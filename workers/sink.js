'use strict'

/**
 * The contract of a sink's store, the one every store behind a definition's
 * sinks (sink-stores.js, streams-sink.js) and the kept state (kept-state.js)
 * keeps, and the worker (definition-worker.js) relies on. docs/sinks.md says
 * what each method must guarantee; index.d.ts types it (SinkStore).
 *
 * - `prepare(db)`: once the database answers, before any write: its
 *   collections and indexes (a unique index before any write that relies on it).
 * - `shape(record, message)`: what the declaration's `of` makes of a record
 *   of the message being processed, checked (sink-output.js: it throws,
 *   naming the sink, for what it could not store); the worker shapes every
 *   record of a message for every sink before any is accepted, so that a
 *   message fails whole or is held whole. By default the record itself.
 * - `accept(shaped, context)`: takes what shape() gave (`context`: its
 *   batch `mark`, arrival `index`, checkpoint `seq`, `key()`, `message`
 *   `{ receivedAt, remote, kept }`, the record's place `record`); holds
 *   what it will write under the message's checkpoint; never touches the
 *   database, never throws.
 * - `size`: entries held; `heldBytes`: the bytes they take (what the
 *   master counts against its worker's share of memoryBudget: a document
 *   as its BSON, an update or a count as HELD_ENTRY_BYTES); `hasBacklog()`: holds enough that the worker
 *   should write now; `roomFor(needed, bound)`: whether it takes `needed`
 *   more entries (what one message's records shaped to) within `bound`
 *   (maxPending): a message it has no room for is dropped whole, before
 *   any store holds a part of it (by default: size + needed ≤ bound).
 * - `due(now, quiet)`: whether this flush writes it: always, unless the
 *   declaration's `writeEvery` (ms) coalesces it across flushes; then when
 *   that long passed since its last write, it has a backlog, or `quiet`
 *   (no batch for 100 ms: input paused; the master waits for
 *   acknowledgements; at stop; beside kept state).
 * - `write()`: writes what is held; whatever it did not prove stored it
 *   keeps, then throws. Each write is exactly once by itself (inserts by
 *   key, upserts conditional on the batch's watermark), so a batch
 *   delivered again is applied as it comes.
 * - `oldestPending()`: the smallest checkpoint of what it holds (Infinity
 *   if none): the worker acknowledges everything before it.
 * - `abandon()`: at a stop whose time ran out, drops what it holds and
 *   says how much.
 * - `storageTargets()`: the collections retention and the storage budget
 *   reach, each by its date field (storage/retention.js).
 * - `onLeader(isLeader)`, `close()`: leadership (work only one worker does)
 *   and the worker's end.
 * - `stats()`: its counters, in the worker's stats.
 *
 * The defaults here are those of a store with no such work.
 */
// An entry a sink holds (an update, a count, a stream's), in heap bytes: an update of five fields (two $inc, a $max, a
// $min, a $set of two) measured 1,109 bytes a key over 50,000 keys (UpdateStore, node --expose-gc, heapUsed).
const HELD_ENTRY_BYTES = 1024

class Sink {
  /**
   * @param {object} spec the sink's declaration, its `fromSettings` resolved
   * @param {object|null} host what the store may use of its worker (sinkHost)
   */
  constructor (spec, host = null) {
    this.spec = spec
    this.host = host
    this.writtenAt = -Infinity // when due() last said write
  }

  shape (record) {
    return record
  }

  hasBacklog () {
    return false
  }

  get heldBytes () {
    return this.size * HELD_ENTRY_BYTES
  }

  roomFor (needed, bound) {
    return this.size + needed <= bound
  }

  due (now, quiet) {
    const every = this.spec.writeEvery
    if (!(every > 0) || quiet || this.hasBacklog() || !(now - this.writtenAt < every)) {
      this.writtenAt = now
      return true
    }
    return false
  }

  storageTargets () {
    return []
  }

  onLeader () {}

  async close () {}
}

/**
 * What a store may use of its worker, and nothing else: its logger and
 * rate-limited log, the server it writes to (storage/write-guard.js),
 * whether it leads, the collector's name, the mongoose connection (the
 * streams' models), and the three things a store asks of it: write soon,
 * drop the message being processed under a reason, and when the master
 * received the oldest message it still holds (Worker#heldSince).
 * @param {import('./mongo-worker')} worker
 */
function sinkHost (worker) {
  return Object.freeze({
    get logger () { return worker.logger },
    get server () { return worker.server },
    get leader () { return worker.leader },
    get collectorName () { return worker.collectorName },
    get connection () { return worker.connection },
    logAtMost: (key, level, fields, msg) => worker.logAtMost(key, level, fields, msg),
    flushSoon: () => worker.flushSoon(),
    heldSince: () => worker.heldSince(),
    dropMessage: (reason) => worker.dropMessage(reason),
    failMessages: (seq, places) => worker.failMessages(seq, places)
  })
}

module.exports = { Sink, sinkHost, HELD_ENTRY_BYTES }
