'use strict'

const AdaptiveBatch = require('./adaptive-batch')
const { isUnreachable } = require('../../lib/mongo/unreachable')
const InvalidOptionError = require('../../exceptions/invalid-option-error')
const { pairKey, closedKey } = require('./stream-key')
const { streamAnalytics } = require('./stream-analytics')

/**
 * Ends streams: idle for `streamTimeout`, ended by both sides, or ended by
 * one side (BYE) and quiet for `byeGrace`; and ends a segment of a stream
 * that spans `segmentSpan` (below). Ending sets `stream_ended`,
 * `active: false`, the analytics, and releases the pair's `openKey` (and
 * `flowKey`) so the next packet starts a new stream; `pairKey`, the shard
 * key, stays. Each close is conditional on the `metadata.lastUpdated` it
 * read, so a stream that just got a packet is left open. Run by exactly one
 * process per collector (the leader worker).
 *
 * A stream is judged as of the time through which everything received is
 * stored: now, or earlier when the master still holds a message received
 * before (`heldSince`). A worker that dies leaves what it held to its
 * slot's next worker, while later messages of the same call (its BYEs) go
 * to another one and may be stored first; ended then, the call would get a
 * second stream from each report stored late. The scan for due streams
 * cannot name a pair: on a sharded cluster it asks every shard, once per
 * batch; each close names its pair and goes to one.
 *
 * Segments: a stream whose reports span `segmentSpan` or more (`endTime` −
 * `startTime`, its own times) is closed as a segment (`endReason:
 * 'segment'`, its analytics those of its segment, `stream_ended` as it
 * was), and its pair's next report starts the next one: a document gains
 * per-minute buckets and windows for as long as its stream lives, and an
 * always-on stream would otherwise reach MongoDB's 16 MiB bound on one
 * document (docs/call-quality.md). It is closed by the rule any close keeps:
 * only when every message received before its last write is stored
 * (`metadata.lastUpdated` before `heldSince`), and conditional on the
 * `lastUpdated` it read; so no batch written to the closed segment is ever
 * delivered again, to land in the next one too (its guard there sees no
 * watermark). The scan evaluates an expression on every open stream written
 * before then, so it runs every `segmentSpan` / 4, at most once a minute.
 */
class StreamSweeper {
  /**
   * @param {object} collection the native `streams` collection
   * @param {{ streamTimeout: number, byeGrace: number, interval: number, logger?: object, batch?: object,
   *   analytics?: (doc: object, endedAt: Date) => object, heldSince?: () => Promise<number> }} options the
   *   times are the StreamWorker's settings (streamTimeout, byeGrace, sweepInterval:
   *   workers/mongo-settings.js), in ms; analytics: the figures an ended stream keeps (default:
   *   stream-analytics.js); heldSince: when the oldest message not stored yet was received, epoch ms
   *   (Worker#heldSince; default: none is held); segmentSpan: the span of a stream's times at which
   *   a segment of it is closed (0: never; the StreamWorker setting streamSegment)
   */
  constructor (collection, { streamTimeout, byeGrace, interval, segmentSpan = 0, logger, batch, analytics = streamAnalytics, heldSince = async () => Infinity } = {}) {
    // No defaults here: the worker's settings have them, and a second copy drifts.
    for (const [name, value] of Object.entries({ streamTimeout, byeGrace, interval, segmentSpan })) {
      if (!Number.isInteger(value) || value < 0) throw new InvalidOptionError(name, value, 'must be an integer number of ms (the StreamWorker setting)')
    }
    this.collection = collection
    this.analytics = analytics
    this.heldSince = heldSince
    this.streamTimeout = streamTimeout
    this.byeGrace = byeGrace
    this.interval = interval
    this.segmentSpan = segmentSpan
    this.segmentEvery = Math.min(60000, Math.max(interval, Math.floor(segmentSpan / 4)))
    this.segmentsAt = 0
    this.logger = logger
    this.batch = new AdaptiveBatch(batch)
    this.timer = null
    this.running = null
    this.stats = { sweeps: 0, ended: 0, segments: 0, skipped: 0, errors: 0, batchSize: this.batch.size, heldBackMs: 0, unanswered: 0 }
    this.warnedAt = 0
  }

  start () {
    if (this.timer) return
    this.timer = setInterval(() => this.tick(), this.interval)
    this.timer.unref()
  }

  async stop () {
    clearInterval(this.timer)
    this.timer = null
    if (this.running) await this.running
  }

  tick () {
    if (this.running) return
    this.running = this.sweep().catch((err) => {
      this.stats.errors++
      // A database away is said by the worker, once a while; one line otherwise (err: a block with an empty stack).
      if (this.logger && !isUnreachable(err)) this.logger.warn({ error: err.message }, `stream sweep failed (${err.message}); will retry`)
    }).finally(() => { this.running = null })
  }

  /**
   * Ends every stream due now, batch by batch, judged as of when the
   * oldest message held was received if that is earlier; resolves with how
   * many ended. In the stats: `heldBackMs`, how far back that was (null
   * when the master could not say: nothing is ended then, `unanswered`).
   */
  async sweep (now = Date.now()) {
    this.stats.sweeps++
    const held = await this.heldSince()
    if (held === 0) {
      this.stats.unanswered++
      this.stats.heldBackMs = null
      return 0
    }
    const asOf = Math.min(now, held)
    this.stats.heldBackMs = now - asOf
    if (this.stats.heldBackMs > this.streamTimeout) this.warnHeldBack(now)
    const ended = await this.endAll(this.dueFilter(asOf), now)
    if (this.segmentSpan === 0 || now - this.segmentsAt < this.segmentEvery) return ended
    this.segmentsAt = now
    return ended + await this.endAll(this.segmentFilter(asOf), now, 'segment')
  }

  // Ends the streams `filter` finds, batch by batch; `reason`: the endReason, when not the doc's own.
  async endAll (filter, now, reason) {
    let total = 0
    for (;;) {
      const limit = this.batch.size
      const docs = await this.collection.find(filter).limit(limit).toArray()
      if (docs.length === 0) return total
      const started = process.hrtime.bigint()
      total += await this.endBatch(docs, now, reason)
      this.stats.batchSize = this.batch.record(docs.length, Number(process.hrtime.bigint() - started) / 1e6)
      await new Promise((resolve) => setImmediate(resolve))
      if (docs.length < limit) return total
    }
  }

  // Streams wait for a message held longer than streamTimeout (a worker or
  // the database stalled, a replay of old data): said once a minute at most.
  warnHeldBack (now) {
    if (!this.logger || now - this.warnedAt < 60000) return
    this.warnedAt = now
    this.logger.warn({ heldBackMs: this.stats.heldBackMs, streamTimeout: this.streamTimeout },
      `no stream is ended past the oldest message the master still holds, received ${Math.round(this.stats.heldBackMs / 1000)} s ago (a stalled worker or database, or a replay of old data): they end once it is stored`)
  }

  // Due as of `asOf`: idle since streamTimeout before it, ended by both
  // sides before it, or by one side byeGrace before it.
  dueFilter (asOf) {
    return {
      active: true,
      $or: [
        { 'metadata.lastUpdated': { $lt: new Date(asOf - this.streamTimeout) } },
        { 'stream_ended.from': true, 'stream_ended.to': true, 'metadata.lastUpdated': { $lt: new Date(asOf) } },
        { endedAt: { $lt: new Date(asOf - this.byeGrace) }, 'metadata.lastUpdated': { $lt: new Date(asOf - this.byeGrace) } }
      ]
    }
  }

  // Open streams written last before `asOf` whose reports span segmentSpan or more.
  segmentFilter (asOf) {
    return {
      active: true,
      'metadata.lastUpdated': { $lt: new Date(asOf) },
      $expr: { $gte: [{ $subtract: ['$endTime', '$startTime'] }, this.segmentSpan] }
    }
  }

  // A segment keeps its `stream_ended` as it was: its stream goes on.
  async endBatch (docs, now, reason) {
    const endedAt = new Date(now)
    const ops = docs.map((doc) => {
      const filter = { _id: doc._id, active: true, 'metadata.lastUpdated': doc.metadata.lastUpdated }
      const set = {
        active: false,
        openKey: closedKey(doc.openKey, doc._id),
        flowKey: closedKey(doc.flowKey, doc._id),
        ...(reason === 'segment' ? {} : { 'stream_ended.from': true, 'stream_ended.to': true }),
        endReason: reason || endReason(doc),
        analytics: this.analytics(doc, endedAt)
      }
      // The shard key targets one shard. A stream that an earlier version
      // wrote after removeLegacySentinel ran (during a rolling upgrade, so
      // before any sharding) has none yet: it gets it as it closes.
      if (doc.pairKey !== undefined) filter.pairKey = doc.pairKey
      else if (doc.from && doc.to && typeof doc.from.ID === 'string' && typeof doc.to.ID === 'string') set.pairKey = pairKey(doc.from.ID, doc.to.ID)
      return { updateOne: { filter, update: { $set: set } } }
    })
    const result = await this.collection.bulkWrite(ops, { ordered: false })
    this.stats[reason === 'segment' ? 'segments' : 'ended'] += result.modifiedCount
    this.stats.skipped += docs.length - result.modifiedCount
    return result.modifiedCount
  }
}

function endReason (doc) {
  const ended = doc.stream_ended || {}
  return ended.from || ended.to ? 'bye' : 'timeout'
}

module.exports = StreamSweeper
