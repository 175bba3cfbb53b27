'use strict'

const MongoWorker = require('./mongo-worker')
const DecodeError = require('../exceptions/decode-error')
const { invalidReason } = require('./storage/packet-coalescer')
const { directionKey } = require('./storage/stream-key')
const { streamAnalytics } = require('./storage/stream-analytics')
const { STREAM_SETTINGS } = require('./mongo-settings')
const { createSink } = require('./sink-stores')
const { sinkHost } = require('./sink')
const sinks = require('../lib/collector/sinks')

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
 * - end `{ endID, IP?, callId?, timestamp }` (the endpoint said goodbye)
 * To refuse a message (counted by its `reason`, skipped) it returns a
 * DecodeError, or throws one: returning costs no unwinding, which matters
 * when a flood of malformed datagrams arrives.
 *
 * The storage is one StreamsSink (workers/streams-sink.js), the same a
 * collector definition's `sinks.streams` gets; this class decodes, and
 * reads ahead the watermarks of a redelivered batch so that what is stored
 * already is not written again (an optimisation: the sink's writes are
 * exact under redelivery by themselves).
 */
class StreamWorker extends MongoWorker {
  /** Its settings, with streamTimeout and byeGrace (workers/mongo-settings.js). */
  static settings = STREAM_SETTINGS

  constructor (options = {}, defaults = {}) {
    super(options, defaults)
    const spec = sinks.streams({ minuteFields: this.constructor.minuteFields, analytics: (doc, endedAt) => this.streamAnalytics(doc, endedAt) })
    /** @type {import('./streams-sink').StreamsSink} */
    this.sink = createSink(spec, this.settings, sinkHost(this))
    // One set of counts: a refused message (refuse()) and an item refused alone count in the same `malformed`.
    this.counts = this.sink.counts
  }

  decode () {
    throw new Error(`${this.constructor.name} must implement decode(message)`)
  }

  prepare () {
    return this.sink.prepare(this.connection.db)
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
    // Several items: all held or none (one alone may still merge into a full sink's held stream).
    if (items.length > 1 && !this.sink.roomFor(items.length, Infinity)) return this.sink.dropPending()
    for (let i = 0; i < items.length; i++) this.accept(items[i], delivery, true)
  }

  /** Holds an item (StreamsSink#add): a subclass that stores some items elsewhere overrides it. */
  accept (item, delivery, count, staged = false) {
    return this.sink.add(item, delivery, count, staged)
  }

  /**
   * A batch redelivered after its worker died may be partly stored: per
   * stream side and counter document, the watermark of the batch's origin
   * says whether this batch is in it (one read per origin and document, on
   * this rare path only).
   */
  async acceptRedelivered (items, delivery) {
    await this.whenPrepared()
    const sink = this.sink
    for (const item of items) {
      if (invalidReason(item) || item.fromID === undefined) {
        this.stage(delivery, () => this.accept(item, delivery, false, true))
        continue
      }
      // The stream and the counter are written apart: each has its own answer.
      const id = sink.counterId(item, delivery)
      const counted = await this.redeliveredApplied(delivery, 'counters', id, (origin) => sink.counterStore.watermark(id, origin))
      const written = await this.redeliveredApplied(delivery, 'streams', directionKey(item.fromID, item.toID), (origin) => sink.writer.watermark(item, origin))
      if (!written) this.stage(delivery, () => this.accept(item, delivery, !counted, true))
      else if (!counted) this.stage(delivery, () => sink.count(item, delivery))
    }
  }

  // The stream sides and counters a redelivered batch touches, read in one go each.
  async prepareRedelivered (messages, delivery) {
    await super.prepareRedelivered(messages, delivery)
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
    const sink = this.sink
    await this.prefetchWatermarks('counters', origin, items.map((item) => sink.counterId(item, delivery)), (ids) => sink.counterStore.watermarks(ids, origin))
    const bySide = new Map(items.map((item) => [directionKey(item.fromID, item.toID), item]))
    await this.prefetchWatermarks('streams', origin, [...bySide.keys()], (keys) => sink.writer.watermarks(keys.map((key) => bySide.get(key)), origin))
  }

  writePending () {
    return this.sink.write()
  }

  hasPending () {
    return this.sink.size > 0
  }

  hasBacklog () {
    return this.sink.hasBacklog()
  }

  oldestPending () {
    return this.sink.oldestPending()
  }

  abandonPending () {
    const { pending, unconfirmed } = this.sink.abandon()
    this.logger.warn({ pending, unconfirmed, flushTimeout: this.settings.flushTimeout, uri: this.uri },
      'database too slow or unavailable at shutdown: stream updates not stored; the master still has their messages (the slot\'s next worker takes them, or a stop keeps them in the disk buffer or as dead letters); unconfirmed ones may still land')
  }

  async close () {
    await this.sink.close()
    await super.close()
  }

  onLeader (isLeader) {
    super.onLeader(isLeader)
    this.sink.onLeader(isLeader)
  }

  storageTargets () {
    return this.sink.storageTargets()
  }

  stats () {
    const { writes, sweeper, ...streams } = this.sink.stats()
    return {
      ...streams,
      dbWrites: writes,
      ...this.dbStats(),
      ...this.stateStats(),
      sweeper
    }
  }

  // Beside the watermarks, the stream sink's memory of which side each sender holds.
  stateStats () {
    return mergeState(super.stateStats(), this.sink.stateStats())
  }
}

/** Prefixes of the items' per-minute `counts`, preallocated in each day's counter document. */
StreamWorker.minuteFields = []

/** Two stateStats() as one: `held` and `evicted` of both. */
function mergeState (a, b) {
  return { held: { ...a.held, ...b.held }, evicted: { ...a.evicted, ...b.evicted } }
}

module.exports = StreamWorker
