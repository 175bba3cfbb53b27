'use strict'

const { checkAccounted } = require('./write-accounting')

const pad = (n) => String(n).padStart(2, '0')
const DUPLICATE_KEY = 11000

/**
 * Time-series counters in the style of MMS: one document per metric per UTC
 * day, `_id: 'YYYYMMDD/metric'`, with `daily`, `hourly.HH` and
 * `minute.HH.MM`, updated by `$inc` upserts. Increments are coalesced in
 * memory and written by `flush()` in one unordered bulkWrite. With
 * probability `preallocateRate` per flushed document the next day's document
 * is created with zeroed fields ahead of time (a `$setOnInsert` upsert, so
 * running it any number of times is harmless).
 *
 * Redelivery without double counting: each increment names its batch
 * (`mark`: `{ origin, batchId, seq, redelivered }`, the worker's
 * `delivery()`), and each write records per origin the highest batch it
 * covers (`watermarks.<origin>`, `$max`). An origin's batches are processed
 * in order, so a batch at or below a document's watermark for its origin is
 * already counted there.
 *
 * That is enforced by the write itself, not by a read before it: the upsert
 * of an origin's increments matches only while the document's watermark is
 * below the first batch it carries. Two writers of one origin's batches (the
 * workers of a master that was SIGKILLed, still flushing, and the next run
 * replaying the same batches from its disk buffer) may read the same old
 * watermark, but only one of their writes applies each batch: the other
 * misses its filter, the upsert collides on `_id` (E11000), and the store
 * reads the watermark and keeps only what lies above it. Pending increments
 * of one document and origin are kept in segments, each a run of batches
 * (one batch each when redelivered), so that what lies above it is known.
 * A watermark inside a segment means another writer is replaying this
 * origin's batches one by one, from below that segment on: this store then
 * leaves the document's count for that origin to it (`yielded`), since a
 * write of its later batches would raise the watermark over the ones in
 * between.
 */
class CounterStore {
  /**
   * @param {object} collection the native `counters` collection (may be set later)
   * @param {{ preallocateRate?: number, random?: () => number, minuteFields?: string[] }} [options]
   *   minuteFields: prefixes of incrementMinute's figures, preallocated too
   */
  constructor (collection, { preallocateRate = 0, random = Math.random, minuteFields = [] } = {}) {
    this.collection = collection
    this.preallocateRate = preallocateRate
    this.minuteFields = minuteFields
    this.random = random
    this.pending = new Map() // _id, or _id and origin → entry (see pendingDoc)
    this.writing = null // the entries of the write in progress
    // alreadyCounted: segments of increments not written because their document had counted their batches
    // yielded: documents whose count for an origin was left to another writer of its batches (see keepUncounted)
    this.stats = { ops: 0, preallocations: 0, alreadyCounted: 0, yielded: 0 }
    this.yieldedKeys = new Set() // document and origin keys left to another writer
  }

  /** Counts `n` events of `metric` at `date` (a Date or epoch ms); `mark` names the batch they came from. */
  increment (metric, date, n = 1, mark = null) {
    const d = date instanceof Date ? date : new Date(date)
    const inc = this.pendingInc(metric, d, mark)
    const hh = pad(d.getUTCHours())
    add(inc, 'daily', n)
    add(inc, `hourly.${hh}`, n)
    add(inc, `minute.${hh}.${pad(d.getUTCMinutes())}`, n)
  }

  /**
   * Adds `n` (may be negative) to `<prefix>.HH.MM` of `metric`'s document,
   * the minute of `date`: per-minute figures beside the count (the RTCP
   * collector's calls by MOS band). Written and deduplicated on redelivery
   * with the document's other increments.
   */
  incrementMinute (metric, date, prefix, n, mark = null) {
    const d = date instanceof Date ? date : new Date(date)
    add(this.pendingInc(metric, d, mark), `${prefix}.${pad(d.getUTCHours())}.${pad(d.getUTCMinutes())}`, n)
  }

  // The increments to add to: those of the open segment of the entry for
  // the document and the batch's origin. An entry without a mark (code that
  // counts outside a worker) is written unconditionally.
  pendingInc (metric, d, mark) {
    const day = dayOf(d)
    const id = `${day}/${metric}`
    const origin = mark ? mark.origin : null
    const key = origin === null ? id : `${id}\u0000${origin}`
    if (this.yieldedKeys.has(key)) return {}
    let entry = this.pending.get(key)
    if (!entry) {
      entry = { id, metric, day, origin, segments: [], minSeq: Infinity }
      this.pending.set(key, entry)
    }
    if (!mark) return openSegment(entry, 0, false).inc
    if (mark.seq < entry.minSeq) entry.minSeq = mark.seq
    const segment = openSegment(entry, mark.batchId, mark.redelivered)
    if (mark.batchId > segment.last) segment.last = mark.batchId
    return segment.inc
  }

  get size () {
    return this.pending.size
  }

  /** The smallest checkpoint (`mark.seq`) of the increments held, pending or being written; Infinity if none. */
  oldestPending () {
    let min = Infinity
    for (const docs of [this.pending, this.writing]) {
      if (docs) for (const entry of docs.values()) if (entry.minSeq < min) min = entry.minSeq
    }
    return min
  }

  /** For a worker's stats(): segments skipped as counted already, and documents left to another writer. */
  repeats () {
    return { alreadyCounted: this.stats.alreadyCounted, yielded: this.stats.yielded }
  }

  /** The `_id` of the document counting `metric` on the day of `date`. */
  documentId (metric, date) {
    return `${dayOf(date instanceof Date ? date : new Date(date))}/${metric}`
  }

  /** The highest batch of `origin` stored in the counter document `id`, or null (a read: redelivery only). */
  async watermark (id, origin) {
    return (await this.watermarks([id], origin)).get(id)
  }

  /** The same for many documents in one read: a Map from each id to its watermark or null. */
  async watermarks (ids, origin) {
    const docs = await this.collection.find({ _id: { $in: ids } }, { projection: { [`watermarks.${origin}`]: 1 } }).toArray()
    const found = new Map(docs.map((doc) => [doc._id, doc.watermarks && doc.watermarks[origin]]))
    return new Map(ids.map((id) => [id, typeof found.get(id) === 'number' ? found.get(id) : null]))
  }

  /**
   * Writes the pending increments; on failure they stay pending (kept apart
   * from newer ones, as closed segments). A write that missed its filter
   * because the document had counted some of its batches already keeps
   * only the segments above the document's watermark.
   */
  async flush () {
    if (this.pending.size === 0) return
    const entries = this.pending
    this.pending = new Map()
    this.writing = entries
    const ops = []
    const opEntries = [] // ops[i]'s entry; null for a preallocation
    for (const entry of entries.values()) {
      ops.push(upsertOp(entry))
      opEntries.push(entry)
      if (this.random() < this.preallocateRate) {
        ops.push(preallocateOp(entry, this.minuteFields))
        opEntries.push(null)
        this.stats.preallocations++
      }
    }
    try {
      const collided = await this.bulkWrite(ops, opEntries)
      if (collided.length > 0) await this.keepUncounted(collided)
      this.stats.ops += ops.length
    } catch (err) {
      this.restore(entries.values())
      throw err
    } finally {
      this.writing = null
    }
  }

  // The unordered bulkWrite of ops; returns the entries whose upsert missed
  // its watermark filter (E11000 on `_id`). Any other refusal fails the write.
  async bulkWrite (ops, opEntries) {
    let result
    let errors = []
    try {
      result = await this.collection.bulkWrite(ops, { ordered: false })
    } catch (err) {
      if (!Array.isArray(err.writeErrors) || !err.writeErrors.every((e) => e.code === DUPLICATE_KEY)) throw err
      result = err.result
      errors = err.writeErrors
    }
    checkAccounted(result, ops.length, errors.length, 'counter upserts')
    // A preallocation that collides found its document there: nothing to do.
    return errors.map((e) => opEntries[e.index]).filter((entry) => entry && entry.origin !== null)
  }

  // Entries whose write missed its filter: the document had counted some of
  // their batches (another writer of the same batches got there first), or
  // it did not exist yet and another upsert created it meanwhile. The
  // watermark tells which: what lies above it goes back to pending.
  async keepUncounted (entries) {
    const byOrigin = new Map()
    for (const entry of entries) {
      if (!byOrigin.has(entry.origin)) byOrigin.set(entry.origin, [])
      byOrigin.get(entry.origin).push(entry)
    }
    const kept = []
    for (const [origin, group] of byOrigin) {
      const watermarks = await this.watermarks(group.map((entry) => entry.id), origin)
      for (const entry of group) {
        const watermark = watermarks.get(entry.id)
        if (watermark !== null && entry.segments.some((segment) => segment.first <= watermark && segment.last > watermark)) {
          this.yieldedKeys.add(`${entry.id}\u0000${origin}`)
          this.stats.yielded++
          continue
        }
        const above = watermark === null ? entry.segments : entry.segments.filter((segment) => segment.first > watermark)
        this.stats.alreadyCounted += entry.segments.length - above.length
        if (above.length > 0) kept.push({ ...entry, segments: above })
      }
    }
    this.restore(kept)
  }

  restore (entries) {
    for (const entry of entries) {
      for (const segment of entry.segments) segment.open = false
      const key = entry.origin === null ? entry.id : `${entry.id}\u0000${entry.origin}`
      const current = this.pending.get(key)
      if (!current) {
        this.pending.set(key, entry)
        continue
      }
      current.segments.unshift(...entry.segments)
      if (entry.minSeq < current.minSeq) current.minSeq = entry.minSeq
    }
  }

  /** Drops everything held (the worker gives up at shutdown). */
  clear () {
    this.pending = new Map()
  }

  /** The next day's document with every counter at zero, unless it exists. */
  preallocate (metric, date) {
    const day = dayOf(new Date(date))
    return this.collection.bulkWrite([preallocateOp({ metric, day }, this.minuteFields)], { ordered: false })
  }
}

function preallocateOp ({ metric, day }, minuteFields) {
  const next = nextDay(day)
  return { updateOne: { filter: { _id: `${next}/${metric}` }, update: { $setOnInsert: zeroed(metric, next, minuteFields) }, upsert: true } }
}

function zeroed (metric, day, minuteFields = []) {
  const doc = { metric, day, daily: 0, hourly: {}, minute: zeroMinutes() }
  for (let h = 0; h < 24; h++) doc.hourly[pad(h)] = 0
  for (const prefix of minuteFields) setPath(doc, prefix, zeroMinutes())
  return doc
}

function zeroMinutes () {
  const minutes = {}
  for (let h = 0; h < 24; h++) {
    const hour = minutes[pad(h)] = {}
    for (let m = 0; m < 60; m++) hour[pad(m)] = 0
  }
  return minutes
}

function setPath (doc, path, value) {
  const parts = path.split('.')
  let at = doc
  for (const part of parts.slice(0, -1)) at = at[part] || (at[part] = {})
  at[parts[parts.length - 1]] = value
}

function dayOf (d) {
  return `${d.getUTCFullYear()}${pad(d.getUTCMonth() + 1)}${pad(d.getUTCDate())}`
}

function nextDay (day) {
  const d = new Date(Date.UTC(Number(day.slice(0, 4)), Number(day.slice(4, 6)) - 1, Number(day.slice(6, 8)) + 1))
  return dayOf(d)
}

// The segment new increments of batch `batchId` go to: the last one while
// it is open and, for a redelivered batch, holds that batch only.
function openSegment (entry, batchId, redelivered) {
  const last = entry.segments[entry.segments.length - 1]
  if (last && last.open && (!redelivered || (last.first === batchId && last.last === batchId))) return last
  const segment = { first: batchId, last: batchId, inc: {}, open: true }
  entry.segments.push(segment)
  return segment
}

// One entry's upsert: every segment's increments, applied only while the
// document's watermark for the origin is below the first batch.
function upsertOp (entry) {
  const inc = {}
  for (const segment of entry.segments) for (const path of Object.keys(segment.inc)) add(inc, path, segment.inc[path])
  const update = { $inc: inc, $setOnInsert: { metric: entry.metric, day: entry.day } }
  if (entry.origin === null) return { updateOne: { filter: { _id: entry.id }, update, upsert: true } }
  const field = `watermarks.${entry.origin}`
  update.$max = { [field]: entry.segments[entry.segments.length - 1].last }
  return { updateOne: { filter: { _id: entry.id, [field]: { $not: { $gte: entry.segments[0].first } } }, update, upsert: true } }
}

function add (inc, path, n) {
  inc[path] = (inc[path] || 0) + n
}

module.exports = { CounterStore, dayOf }
