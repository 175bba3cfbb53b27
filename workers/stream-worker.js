'use strict'

const MongoWorker = require('./mongo-worker')
const DecodeError = require('../exceptions/decode-error')
const { PacketCoalescer, invalidReason } = require('./storage/packet-coalescer')
const StreamWriter = require('./storage/stream-writer')
const { CounterStore } = require('./storage/counter-store')
const { directionKey } = require('./storage/stream-key')
const StreamSweeper = require('./storage/stream-sweeper')
const { defineModels, missingIndexes } = require('./storage/schemas')
const { streamAnalytics } = require('./storage/stream-analytics')
const { STREAM_SETTINGS } = require('./mongo-settings')

/**
 * A Worker that turns decoded packets into race-free stream upserts.
 * Subclasses implement `decode(message)` → an item or array of items:
 * - packet `{ fromID, toID, IP, highestPacketNum, timestamp, fields?, stats?, counts? }`
 *   (`fields` are the side's last values, `$set`; `stats`, statistics over
 *   the reports: an object with `merge(other)`, which folds in the stats of
 *   another item of the same side when they coalesce (the coalescer keeps
 *   the first item's object of a run of batches and merges into it), and
 *   `addTo(update, side)`, which adds them to the side's upsert with
 *   order-free operators ($min, $max, $inc; of numbers, dates or documents
 *   of them), so that they are exact however items coalesce and, like the
 *   packet counts, applied once however often their batches are written
 *   (see StreamWriter); collectors/rtcp/quality-stats.js is one; `counts`, per-minute counter increments, see
 *   CounterStore#incrementMinute)
 * - side update `{ sideID, IP?, timestamp, fields }`
 * - end `{ endID, timestamp }` (the endpoint said goodbye)
 * To refuse a message (counted by its `reason`, skipped) it returns a
 * DecodeError, or throws one: returning costs no unwinding, which matters
 * when a flood of malformed datagrams arrives.
 */
class StreamWorker extends MongoWorker {
  /** Its settings, with streamTimeout and byeGrace (workers/mongo-settings.js). */
  static settings = STREAM_SETTINGS

  constructor (options = {}, defaults = {}) {
    super(options, defaults)
    this.coalescer = new PacketCoalescer(this.settings.maxPending)
    this.counterStore = new CounterStore(null, { preallocateRate: this.settings.preallocateRate, minuteFields: this.constructor.minuteFields })
    this.counts = { packets: 0, items: 0, malformed: {}, dropped: 0, rejected: 0 }
    this.writing = [] // entries of the write in progress (they count against maxPending)
  }

  decode () {
    throw new Error(`${this.constructor.name} must implement decode(message)`)
  }

  async init () {
    this.metric = this.settings.counterMetric || `${this.collectorName || 'streams'}.packets`
    await super.init()
  }

  // Indexes first: no stream is written before the unique index exists.
  async prepare () {
    const { Stream, Counter } = await defineModels(this.connection, {
      streams: this.settings.streamsCollection,
      counters: this.settings.countersCollection
    })
    await StreamWriter.prepare(Stream.collection)
    this.writer = new StreamWriter(Stream.collection, { ensureIndexes: () => this.restoreIndexes(Stream), guardAll: () => this.guardsEveryWrite() })
    this.counterStore.collection = Counter.collection
    this.sweeper = new StreamSweeper(Stream.collection, {
      streamTimeout: this.settings.streamTimeout,
      byeGrace: this.settings.byeGrace,
      interval: this.settings.sweepInterval,
      logger: this.logger,
      analytics: (doc, endedAt) => this.streamAnalytics(doc, endedAt)
    })
    if (this.leader) this.startSweeper()
    this.backfillIfLeader()
  }

  // A collection dropped or recreated under running collectors comes back
  // without its indexes: noticed by a read, created again only then.
  async restoreIndexes (model) {
    const missing = await missingIndexes(model)
    if (missing.length === 0) return
    await model.createIndexes()
    this.logger.warn({ collection: model.collection.collectionName, indexes: missing.map(([fields]) => Object.keys(fields).join('+')) },
      'indexes were missing (the collection was dropped or recreated?): created again before writing')
  }

  /**
   * Whether every stream upsert is guarded by its sides' watermarks, so that
   * a batch is applied once whoever else writes it (StreamWriter). Yes,
   * except on a server that does not say which build it is (`compatible`:
   * the embedded mongo-java-server is one), which answers a filter beyond an
   * index's exact keys with a scan of the whole collection (measured there:
   * 30,000 upserts/s unguarded, 1,300 guarded with 5,000 streams, 345 with
   * 20,000). There the writer guards the upserts that can meet a second
   * writer of their batches (redelivered ones, and those written again after
   * a write without a reply), and every upsert once this worker's master is
   * gone: the next run replays what the master held while this worker
   * still flushes it. A first delivery's upsert that a stalled server
   * applies after the same batches were written again still counts twice
   * there (docs/storage.md).
   */
  guardsEveryWrite () {
    return !(this.server && this.server.kind === 'compatible') || masterGone()
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
    if (!this.leader || !this.writer || this.backfilled || this.closing) return
    this.backfilled = StreamWriter.backfillPairKeys(this.writer.collection).then(({ updated }) => {
      if (updated > 0) this.logger.info({ updated }, 'gave streams of an earlier version their pairKey')
    }, (err) => {
      this.backfilled = null // the next leadership or start tries again
      if (this.closing) return this.logger.debug({ err: { message: err.message } }, 'pairKey backfill stopped by the worker closing; the next start runs it again')
      this.logger.warn({ err: { message: err.message } }, 'pairKey backfill failed; streams of an earlier version stay unresolved until it runs')
    })
  }

  /**
   * The figures a stream keeps once ended (`analytics`), from its document
   * as the sweeper read it. The default reads each item as one packet of a
   * sequence (stream-analytics.js); a protocol whose items are reports
   * overrides it.
   */
  streamAnalytics (doc, endedAt) {
    return streamAnalytics(doc, endedAt)
  }

  /**
   * decode() for prepareRedelivered, which only reads the items' endpoints
   * and times: a subclass whose decode() keeps state across messages
   * overrides it with a decode that keeps none (doWork decodes the same
   * messages again).
   */
  peek (message) {
    return this.decode(message)
  }

  doWork (message) {
    let items
    try {
      items = this.decode(message)
    } catch (err) {
      return this.refuse(err.reason || 'decode-error')
    }
    if (items === null || items === undefined) return
    if (items instanceof DecodeError) return this.refuse(items.reason)
    if (!Array.isArray(items)) items = [items]
    const delivery = this.delivery()
    if (delivery.redelivered) return this.acceptRedelivered(items, delivery)
    for (let i = 0; i < items.length; i++) this.accept(items[i], delivery, true)
  }

  /**
   * A batch redelivered after its worker died may be partly stored: per
   * stream side and counter document, the watermark of the batch's origin
   * says whether this batch is in it (one read per origin and document, on
   * this rare path only).
   */
  async acceptRedelivered (items, delivery) {
    await this.whenPrepared()
    for (const item of items) {
      if (invalidReason(item) || item.fromID === undefined) {
        this.stage(delivery, () => this.accept(item, delivery, false, true))
        continue
      }
      // The stream and the counter are written apart: each has its own answer.
      const at = itemTime(item)
      const id = this.counterStore.documentId(this.metric, at)
      const counted = await this.redeliveredApplied(delivery, 'counters', id, (origin) => this.counterStore.watermark(id, origin))
      const written = await this.redeliveredApplied(delivery, 'streams', directionKey(item.fromID, item.toID), (origin) => this.writer.watermark(item, origin))
      if (!written) this.stage(delivery, () => this.accept(item, delivery, !counted, true))
      else if (!counted) this.stage(delivery, () => this.count(item, delivery))
    }
  }

  // The stream sides and counters a redelivered batch touches, read in one go each.
  async prepareRedelivered (messages, delivery) {
    await this.whenPrepared()
    const items = []
    for (const message of messages) {
      let decoded
      try {
        decoded = this.peek(message)
      } catch {
        continue
      }
      if (decoded === null || decoded === undefined || decoded instanceof DecodeError) continue
      for (const item of Array.isArray(decoded) ? decoded : [decoded]) {
        if (!invalidReason(item) && item.fromID !== undefined) items.push(item)
      }
    }
    if (items.length === 0) return
    const { origin } = delivery
    await this.prefetchWatermarks('counters', origin, items.map((item) => this.counterStore.documentId(this.metric, itemTime(item))), (ids) => this.counterStore.watermarks(ids, origin))
    const bySide = new Map(items.map((item) => [directionKey(item.fromID, item.toID), item]))
    await this.prefetchWatermarks('streams', origin, [...bySide.keys()], (keys) => this.writer.watermarks(keys.map((key) => bySide.get(key)), origin))
  }

  // A redelivered item committed after its batch (staged) is past the bound
  // check: the master already holds its message, and it is one batch's worth.
  accept (item, delivery, count, staged = false) {
    const reason = invalidReason(item)
    if (reason) return this.countMalformed(reason)
    this.counts.items++
    if (!this.coalescer.add(item, staged ? -Infinity : this.writing.length, delivery)) return this.dropPending()
    if (item.fromID === undefined) return
    this.counts.packets++
    if (count) this.count(item, delivery)
    if (this.coalescer.size >= this.settings.maxStreamsPerFlush) this.flushSoon()
  }

  // The packet counter, and the item's per-minute counts (`counts`: prefix → n).
  count (item, delivery) {
    const at = itemTime(item)
    this.counterStore.increment(this.metric, at, 1, delivery)
    if (item.counts) for (const prefix of Object.keys(item.counts)) this.counterStore.incrementMinute(this.metric, at, prefix, item.counts[prefix], delivery)
  }

  // An item of a message that is refused alone (the message's other items are kept).
  countMalformed (reason) {
    this.counts.malformed[reason] = (this.counts.malformed[reason] || 0) + 1
  }

  dropPending () {
    this.counts.dropped++
    this.dropMessage('workerFull')
    this.logAtMost('dropPending', 'error', { maxPending: this.settings.maxPending, dropped: this.counts.dropped },
      'pending stream updates reached maxPending while the database is unavailable; dropping packets')
  }

  async writePending () {
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
    for (const { entry, error } of result.failed) {
      this.counts.rejected += entry.count
      this.logAtMost('rejected', 'error', { error }, 'the database rejected a stream update')
    }
  }

  hasPending () {
    return this.coalescer.size > 0 || this.counterStore.size > 0
  }

  hasBacklog () {
    return this.coalescer.size >= this.settings.maxStreamsPerFlush
  }

  oldestPending () {
    let min = Math.min(this.coalescer.oldestPending(), this.counterStore.oldestPending())
    for (const entry of this.writing) if (entry.minSeq < min) min = entry.minSeq
    return min
  }

  // Entries of a write still in progress may or may not land: they are
  // counted here too, since this worker will not hear the answer.
  abandonPending () {
    const count = (entries) => entries.reduce((sum, entry) => sum + entry.count, 0)
    const pending = count(this.coalescer.take())
    const unconfirmed = count(this.writing)
    this.counts.dropped += pending + unconfirmed
    this.counterStore.clear()
    this.logger.error({ pending, unconfirmed, flushTimeout: this.settings.flushTimeout, uri: this.uri },
      'database too slow or unavailable at shutdown: stream updates not stored (their messages are counted by the master as dropped.shutdown, or kept in its disk buffer for the next start; unconfirmed ones may still land)')
  }

  async close () {
    this.closing = true
    if (this.sweeper) await this.sweeper.stop()
    await super.close()
  }

  onLeader (isLeader) {
    this.backfillIfLeader()
    if (isLeader) this.startSweeper()
    else if (this.sweeper) this.sweeper.stop()
  }

  startSweeper () {
    if (this.sweeper && this.settings.sweep) this.sweeper.start()
  }

  stats () {
    const streamOps = this.writer ? this.writer.stats.ops : 0
    return {
      packets: this.counts.packets,
      malformed: { ...this.counts.malformed },
      dropped: this.counts.dropped,
      rejected: this.counts.rejected,
      pending: this.coalescer.size,
      dbWrites: streamOps + this.counterStore.stats.ops,
      counterRepeats: this.counterStore.repeats(),
      // Stream segments not written because their side had stored their
      // batches, and sides left to another writer of an origin's batches.
      streamRepeats: this.writer ? { alreadyApplied: this.writer.stats.alreadyApplied, yielded: this.writer.stats.yielded } : { alreadyApplied: 0, yielded: 0 },
      // Bulks of stream upserts written again in halves: the server's reply did not account for them.
      streamSplits: this.writer ? this.writer.stats.splits : 0,
      streamWrites: streamOps,
      writesPerPacket: this.counts.packets ? streamOps / this.counts.packets : 0,
      duplicateRetries: this.writer ? this.writer.stats.duplicateRetries : 0,
      // Side fields without report blocks (an SR's packet and octet counts,
      // a CNAME) stored on the open streams of their SSRC: updates written,
      // and the streams they reached (none: no open stream has that SSRC).
      sideUpdates: this.writer ? this.writer.stats.sideUpdates : 0,
      sideStreamsUpdated: this.writer ? this.writer.stats.sideMatches : 0,
      ...this.dbStats(),
      ...this.stateStats(),
      sweeper: this.leader && this.sweeper ? { ...this.sweeper.stats } : null
    }
  }

  // Beside the watermarks, the writer's memory of which side each sender holds.
  stateStats () {
    const { held, evicted } = super.stateStats()
    const sides = this.writer ? this.writer.sides : null
    return { held: { ...held, streamSides: sides ? sides.size : 0 }, evicted: { ...evicted, streamSides: sides ? sides.evicted : 0 } }
  }
}

/** Prefixes of the items' per-minute `counts`, preallocated in each day's counter document. */
StreamWorker.minuteFields = []

// A forked worker whose IPC channel closed: its master died (a worker
// started otherwise has no channel).
function masterGone () {
  return typeof process.send === 'function' && !process.connected
}

// When an item happened: its own timestamp, else now.
function itemTime (item) {
  return item.timestamp === undefined ? Date.now() : item.timestamp
}

module.exports = StreamWorker
