'use strict'

const { checkAccounted } = require('./write-accounting')

const pad = (n) => String(n).padStart(2, '0')

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
 * (`mark`: `{ origin, batchId, seq }`, the worker's `delivery()`), and each
 * write records per origin the highest batch it covers
 * (`watermarks.<origin>`, `$max`). An origin's batches are processed in
 * order, so a batch at or below a document's watermark for its origin is
 * already counted there: `watermark()` reads it, on the rare redelivery
 * path.
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
    this.pending = new Map() // _id → { metric, day, inc: { path: n }, marks: { origin: batchId }, minSeq }
    this.writing = null // the docs of the write in progress
    this.stats = { ops: 0, preallocations: 0 }
  }

  /** Counts `n` events of `metric` at `date` (a Date or epoch ms); `mark` names the batch they came from. */
  increment (metric, date, n = 1, mark = null) {
    const d = date instanceof Date ? date : new Date(date)
    const doc = this.pendingDoc(metric, d, mark)
    const hh = pad(d.getUTCHours())
    add(doc.inc, 'daily', n)
    add(doc.inc, `hourly.${hh}`, n)
    add(doc.inc, `minute.${hh}.${pad(d.getUTCMinutes())}`, n)
  }

  /**
   * Adds `n` (may be negative) to `<prefix>.HH.MM` of `metric`'s document,
   * the minute of `date`: per-minute figures beside the count (the RTCP
   * collector's calls by MOS band). Written and deduplicated on redelivery
   * with the document's other increments.
   */
  incrementMinute (metric, date, prefix, n, mark = null) {
    const d = date instanceof Date ? date : new Date(date)
    const doc = this.pendingDoc(metric, d, mark)
    add(doc.inc, `${prefix}.${pad(d.getUTCHours())}.${pad(d.getUTCMinutes())}`, n)
  }

  pendingDoc (metric, d, mark) {
    const day = dayOf(d)
    const id = `${day}/${metric}`
    let doc = this.pending.get(id)
    if (!doc) {
      doc = { metric, day, inc: {}, marks: {}, minSeq: Infinity }
      this.pending.set(id, doc)
    }
    if (mark) addMark(doc, mark)
    return doc
  }

  get size () {
    return this.pending.size
  }

  /** The smallest checkpoint (`mark.seq`) of the increments held, pending or being written; Infinity if none. */
  oldestPending () {
    let min = Infinity
    for (const docs of [this.pending, this.writing]) {
      if (docs) for (const doc of docs.values()) if (doc.minSeq < min) min = doc.minSeq
    }
    return min
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

  /** Writes the pending increments; on failure they stay pending (merged with newer ones). */
  async flush () {
    if (this.pending.size === 0) return
    const docs = this.pending
    this.pending = new Map()
    this.writing = docs
    const ops = []
    for (const [id, doc] of docs) {
      const update = { $inc: doc.inc, $setOnInsert: { metric: doc.metric, day: doc.day } }
      const marks = Object.keys(doc.marks)
      if (marks.length > 0) {
        update.$max = {}
        for (const origin of marks) update.$max[`watermarks.${origin}`] = doc.marks[origin]
      }
      ops.push({ updateOne: { filter: { _id: id }, update, upsert: true } })
      if (this.random() < this.preallocateRate) {
        ops.push(preallocateOp(doc, this.minuteFields))
        this.stats.preallocations++
      }
    }
    try {
      checkAccounted(await this.collection.bulkWrite(ops, { ordered: false }), ops.length, 0, 'counter upserts')
      this.stats.ops += ops.length
    } catch (err) {
      this.restore(docs)
      throw err
    } finally {
      this.writing = null
    }
  }

  restore (docs) {
    for (const [id, doc] of docs) {
      const current = this.pending.get(id)
      if (!current) {
        this.pending.set(id, doc)
        continue
      }
      for (const [path, n] of Object.entries(doc.inc)) add(current.inc, path, n)
      for (const origin of Object.keys(doc.marks)) addMark(current, { origin, batchId: doc.marks[origin], seq: doc.minSeq })
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

function addMark (doc, { origin, batchId, seq }) {
  if (!(doc.marks[origin] >= batchId)) doc.marks[origin] = batchId
  if (seq < doc.minSeq) doc.minSeq = seq
}

function add (inc, path, n) {
  inc[path] = (inc[path] || 0) + n
}

module.exports = { CounterStore, dayOf }
