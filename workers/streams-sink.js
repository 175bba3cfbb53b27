'use strict'

const { PacketCoalescer, invalidReason } = require('./storage/packet-coalescer')
const StreamWriter = require('./storage/stream-writer')
const { removeLegacySentinel, backfillPairKeys } = require('./storage/stream-upgrade')
const { CounterStore, counterTarget } = require('./storage/counter-store')
const StreamSweeper = require('./storage/stream-sweeper')
const { defineModels, missingIndexes } = require('./storage/schemas')
const { streamAnalytics } = require('./storage/stream-analytics')
const { guardsEveryWrite } = require('./storage/write-guard')
const { pairKey } = require('./storage/stream-key')
const { Sink, HELD_ENTRY_BYTES } = require('./sink')

/**
 * The store of a streams sink (lib/collector/sinks.js `streams`):
 * bilateral streams written as race-free upserts (StreamWriter), the packet
 * counter and the items' per-minute counts (CounterStore), and the sweeper
 * that ends streams, run by the leader worker. The one owner of the stream
 * storage: StreamWorker and a definition's worker both hold one.
 *
 * A record is an item of StreamWorker's decode():
 * - packet `{ fromID, toID, IP, highestPacketNum, timestamp, fields?, stats?, counts? }`
 * - side update `{ sideID, IP?, timestamp, fields }`
 * - end `{ endID, IP?, callId?, timestamp }` (IP, callId: only that SSRC's streams from that address, in that call)
 *
 * It keeps the contract of Sink (sink.js, docs/sinks.md); its `onLeader`
 * starts or stops the sweeper and the pairKey backfill, and it adds
 * `stateStats()` and `dropped` (items refused by the maxPending bound).
 * `host` (sink.js sinkHost): its models come from the host's connection.
 * Every upsert of a redelivered batch is guarded by its sides' watermarks
 * and every counter increment by the counter's: a redelivered batch is
 * applied as it comes and stays exact.
 */
class StreamsSink extends Sink {
  constructor (spec, host) {
    super(spec, host)
    this.coalescer = new PacketCoalescer(spec.maxPending)
    this.counterStore = new CounterStore(null, { preallocateRate: spec.preallocateRate, minuteFields: spec.minuteFields || [], guardAll: () => this.guardsEveryWrite() })
    this.counts = { packets: 0, items: 0, malformed: {}, dropped: 0, rejected: 0, tooLarge: 0 }
    this.writing = [] // entries of the write in progress (they count against maxPending)
    this.maxBatch = spec.maxBatch
    this.writer = null
    this.sweeper = null
    this.closing = false
    this._metric = undefined
  }

  /**
   * The packet counter's metric, `<collector name>.packets` by default: the
   * name is known once the worker runs, before its first message, which may
   * come long before prepare() (the database away): counted under it already.
   */
  get metric () {
    if (this._metric === undefined) this._metric = this.spec.counterMetric || `${this.host.collectorName || 'streams'}.packets`
    return this._metric
  }

  // Indexes first: no stream is written before the unique index exists.
  // Its models (mongoose, the stream schema) live on the host's connection, `db`'s.
  async prepare () {
    const host = this.host
    const { Stream, Counter } = await defineModels(host.connection, { streams: this.spec.collection, counters: this.spec.countersCollection })
    await removeLegacySentinel(Stream.collection)
    this.writer = new StreamWriter(Stream.collection, { ensureIndexes: () => this.restoreIndexes(Stream), guardAll: () => this.guardsEveryWrite() })
    this.counterStore.collection = Counter.collection
    this.sweeper = new StreamSweeper(Stream.collection, {
      streamTimeout: this.spec.streamTimeout,
      byeGrace: this.spec.byeGrace,
      segmentSpan: this.spec.streamSegment || 0,
      interval: this.spec.sweepInterval,
      logger: host.logger,
      analytics: this.spec.analytics || streamAnalytics,
      heldSince: () => host.heldSince()
    })
    if (host.leader) this.onLeader(true)
  }

  // A collection dropped or recreated under running collectors comes back
  // without its indexes: noticed by a read, created again only then.
  async restoreIndexes (model) {
    const missing = await missingIndexes(model)
    if (missing.length === 0) return
    await model.createIndexes()
    this.host.logger.warn({ collection: model.collection.collectionName, indexes: missing.map(([fields]) => Object.keys(fields).join('+')) },
      'indexes were missing (the collection was dropped or recreated?): created again before writing')
  }

  /**
   * Whether every stream upsert is guarded by its sides' watermarks, so that
   * a batch is applied once whoever else writes it (StreamWriter): on
   * MongoDB, and not on the embedded server until its master is gone
   * (storage/write-guard.js says why).
   */
  guardsEveryWrite () {
    return guardsEveryWrite(this.host.server)
  }

  // Streams written before `pairKey` get it from one worker per collector,
  // the leader, in the background: on a server that cannot answer
  // `$exists: false` from an index the pass scans the collection, so not N
  // times per start. Meanwhile upserts on such a stream bounce (unresolved,
  // written again next flush) and never duplicate it: the earlier unique
  // indexes stay until the operator drops them (docs/scaling.md).
  // A worker that is closing starts none, and a pass its own close cut off
  // (the driver's "client was closed") is no failure: the next start runs it.
  backfillIfLeader () {
    if (!this.host.leader || !this.writer || this.backfilled || this.closing) return
    const logger = this.host.logger
    this.backfilled = backfillPairKeys(this.writer.collection).then(({ updated }) => {
      if (updated > 0) logger.info({ updated }, 'gave streams of an earlier version their pairKey')
    }, (err) => {
      this.backfilled = null // the next leadership or start tries again
      if (this.closing) return logger.debug({ err: { message: err.message } }, 'pairKey backfill stopped by the worker closing; the next start runs it again')
      logger.warn({ err: { message: err.message } }, 'pairKey backfill failed; streams of an earlier version stay unresolved until it runs')
    })
  }

  /**
   * Streams by their last activity (`metadata.lastUpdated`, which every
   * upsert moves forward), and only once ended: an open stream is never
   * deleted, and an ended one is never written again (the sweeper released
   * its openKey and flowKey; a later packet starts a new stream), so
   * deleting it races no writer. The packet counters by day.
   */
  storageTargets () {
    return [
      { collection: this.spec.collection, field: 'metadata.lastUpdated', partial: { active: false } },
      counterTarget(this.spec.countersCollection || 'counters')
    ]
  }

  /** The sinks' shape: what the declaration's `of` makes of a record (the record itself without one). */
  shape (record, message) {
    return this.spec.of ? listOf(this.spec.of(record, message)) : [record]
  }

  /** The sinks' accept: the items under their message's batch, counted. */
  accept (items, context) {
    let held = true
    for (let i = 0; i < items.length; i++) held = this.add(items[i], context.mark, true) && held
    return held
  }

  /**
   * Holds an item of `delivery`; `count`: also in the counters. A
   * redelivered item committed after its batch (`staged`) is past the bound
   * check: the master already holds its message, and it is one batch's
   * worth. False when the maxPending bound refused it (counted in dropped).
   */
  add (item, delivery, count, staged = false) {
    const reason = invalidReason(item)
    if (reason) return this.countMalformed(reason)
    this.counts.items++
    if (!this.coalescer.add(item, staged ? -Infinity : this.writing.length, delivery)) return this.dropPending()
    if (item.fromID === undefined) return true
    this.counts.packets++
    if (count) this.count(item, delivery)
    if (this.hasBacklog()) this.host.flushSoon()
    return true
  }

  // The packet counter, and the item's per-minute counts (`counts`: prefix → n).
  count (item, delivery) {
    const at = countTime(item, delivery)
    this.counterStore.increment(this.metric, at, 1, delivery)
    if (item.counts) for (const prefix of Object.keys(item.counts)) this.counterStore.incrementMinute(this.metric, at, prefix, item.counts[prefix], delivery)
  }

  /** The counter document an item counts in. */
  counterId (item, delivery) {
    return this.counterStore.documentId(this.metric, countTime(item, delivery))
  }

  // An item of a message that is refused alone (the message's other items are kept).
  countMalformed (reason) {
    this.counts.malformed[reason] = (this.counts.malformed[reason] || 0) + 1
    return true
  }

  dropPending () {
    this.counts.dropped++
    this.host.dropMessage('workerFull')
    this.host.logAtMost('dropPending', 'error', { maxPending: this.spec.maxPending, dropped: this.counts.dropped },
      'pending stream updates reached maxPending while the database is unavailable; dropping packets')
    return false
  }

  async write () {
    const entries = this.coalescer.take()
    this.writing = entries
    try {
      await this.writeEntries(entries)
    } finally {
      this.writing = []
    }
    await this.counterStore.flush()
  }

  async writeEntries (entries) {
    if (entries.length === 0) return
    let result
    try {
      result = await this.writer.write(entries)
    } catch (err) {
      this.coalescer.restore(err.unwritten || entries)
      throw err
    }
    this.coalescer.restore(result.unresolved)
    for (const { entry, error, tooLarge } of result.failed) {
      this.counts.rejected += entry.count
      if (!tooLarge) {
        this.host.logAtMost('rejected', 'error', { error }, 'the database rejected a stream update')
        continue
      }
      this.counts.tooLarge += entry.count
      this.host.logAtMost('tooLarge', 'error', { pairKey: pairKey(String(entry.fromID), String(entry.toID)), streamSegment: this.spec.streamSegment, error },
        'a stream document reached MongoDB\'s 16 MiB bound on one document: the server refuses every update of its pair, whose reports are not stored (counted in tooLarge); a lower --stream-segment closes streams sooner')
    }
  }

  get size () { return this.coalescer.size + this.counterStore.size }
  get heldBytes () { return (this.coalescer.size + this.writing.length + this.counterStore.held) * HELD_ENTRY_BYTES } // a write's too

  // Its own bound too: pending items with the write in progress (PacketCoalescer#add).
  roomFor (needed, bound) {
    return super.roomFor(needed, bound) && this.coalescer.size + this.writing.length + needed <= this.spec.maxPending
  }

  get pending () { return this.coalescer.size }
  hasBacklog () { return this.coalescer.size >= this.maxBatch }

  oldestPending () {
    let min = Math.min(this.coalescer.oldestPending(), this.counterStore.oldestPending())
    for (const entry of this.writing) if (entry.minSeq < min) min = entry.minSeq
    return min
  }

  // Entries of a write still in progress may or may not land: they are
  // counted here too, since this worker will not hear the answer.
  abandon () {
    const count = (entries) => entries.reduce((sum, entry) => sum + entry.count, 0)
    const pending = count(this.coalescer.take())
    const unconfirmed = count(this.writing)
    this.counts.dropped += pending + unconfirmed
    this.counterStore.clear()
    return { pending, unconfirmed }
  }

  async close () {
    this.closing = true
    if (this.sweeper) await this.sweeper.stop()
  }

  onLeader (isLeader) {
    this.backfillIfLeader()
    if (isLeader) {
      if (this.sweeper && this.spec.sweep !== false) this.sweeper.start()
    } else if (this.sweeper) this.sweeper.stop()
  }

  stats () {
    const w = this.writer ? this.writer.stats : null
    const streamOps = w ? w.ops : 0
    return {
      packets: this.counts.packets,
      malformed: { ...this.counts.malformed },
      dropped: this.counts.dropped,
      rejected: this.counts.rejected,
      // Of the rejected, refused because their stream's document is at MongoDB's 16 MiB bound.
      tooLarge: this.counts.tooLarge,
      pending: this.coalescer.size,
      writes: streamOps + this.counterStore.stats.ops,
      counterRepeats: this.counterStore.repeats(),
      // Stream segments not written because their side had stored their
      // batches, and sides left to another writer of an origin's batches.
      streamRepeats: { alreadyApplied: w ? w.alreadyApplied : 0, yielded: w ? w.yielded : 0 },
      // Bulks of stream upserts written again in halves: the server's reply did not account for them.
      streamSplits: w ? w.splits : 0,
      streamWrites: streamOps,
      writesPerPacket: this.counts.packets ? streamOps / this.counts.packets : 0,
      duplicateRetries: w ? w.duplicateRetries : 0,
      // Side fields without report blocks (an SR's packet and octet counts,
      // a CNAME) stored on the open streams of their SSRC: updates written,
      // and the streams they reached (none: no open stream has that SSRC).
      sideUpdates: w ? w.sideUpdates : 0,
      sideStreamsUpdated: w ? w.sideMatches : 0,
      sweeper: this.host.leader && this.sweeper ? { ...this.sweeper.stats } : null
    }
  }

  /** Its figures a definition's worker also reports as its own (all but those the worker has: pending, malformed, dropped, writes). */
  workerStats () {
    const { pending, malformed, dropped, writes, ...own } = this.stats()
    return own
  }

  // The writer's memory of which side each sender holds.
  stateStats () {
    const sides = this.writer ? this.writer.sides : null
    return { held: { streamSides: sides ? sides.size : 0 }, evicted: { streamSides: sides ? sides.evicted : 0 } }
  }
}

function listOf (value) {
  if (value === null || value === undefined) return []
  return Array.isArray(value) ? value : [value]
}

// Counted at its batch's arrival (the master's stamp, kept when the batch is
// delivered again, so a redelivery finds the same counter document): the
// counters' day is what retention ages them by, and an item's own time may
// be a sender's clock (HEP's capture time: an agent dated 1970 had its counts
// deleted at once, one dated 9999 kept them for ever). The item's time for
// a delivery without one.
function countTime (item, delivery) {
  return delivery && delivery.receivedAt ? delivery.receivedAt : itemTime(item) // epoch ms: no Date per item
}

// When an item happened: its own timestamp, else now.
function itemTime (item) {
  return item.timestamp === undefined ? Date.now() : item.timestamp
}

module.exports = { StreamsSink, itemTime }
