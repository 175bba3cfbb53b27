'use strict'

const { UpdateStore } = require('./update-store')

const pad = (n) => String(n).padStart(2, '0')
const MINUTES_KEPT = 1440 // minutes remembered by increment(): a day of them
const ID_MINUTES = 3 // of those, the latest whose metrics' ids are remembered too
const IDS_PER_MINUTE = 20000 // at most, per minute (then forgotten, made again as they come)

/**
 * Time-series counters in the style of MMS: one document per metric per UTC
 * day, `_id: 'YYYYMMDD/metric'`, with `daily`, `hourly.HH` and
 * `minute.HH.MM`, updated by `$inc` upserts that count each batch once
 * (UpdateStore: conditional on the batch watermark of their origin). With
 * probability `preallocateRate` per flushed document the next day's document
 * is created with zeroed fields ahead of time (a `$setOnInsert` upsert, so
 * running it any number of times is harmless).
 */
class CounterStore extends UpdateStore {
  /**
   * @param {object} collection the native `counters` collection (may be set later)
   * @param {{ preallocateRate?: number, random?: () => number, minuteFields?: string[], guardAll?: () => boolean }} [options]
   *   minuteFields: prefixes of incrementMinute's figures, preallocated too; guardAll: UpdateStore's
   */
  constructor (collection, { preallocateRate = 0, random = Math.random, minuteFields = [], guardAll } = {}) {
    super(collection, { what: 'counter upserts', guardAll })
    this.preallocateRate = preallocateRate
    this.minuteFields = minuteFields
    this.random = random
    this.stats.preallocations = 0
    this.minutes = new Map() // minute since the epoch → its day and counter paths, for increment()
    this.idMinutes = [] // the minutes whose `ids` are kept (ID_MINUTES)
  }

  /** Counts `n` events of `metric` at `date` (a Date or epoch ms); `mark` names the batch they came from. */
  increment (metric, date, n = 1, mark = null) {
    const minute = this.minuteOf(date instanceof Date ? date.getTime() : Number(date))
    if (minute === null) { // as any other time was before the cache: under NaN paths
      const d = new Date(date)
      return this.update(this.documentId(metric, d), { inc: { daily: n, 'hourly.NaN': n, 'minute.NaN.NaN': n } }, mark, dayFields(metric, d))
    }
    const doc = this.documentOf(minute, metric)
    const origin = mark ? mark.origin : null
    if (doc.origin !== origin) {
      doc.origin = origin
      doc.key = this.keyOf(doc.id, origin)
    }
    this.incrementPaths(doc.id, minute.paths, n, mark, doc.setOnInsert, doc.key)
  }

  // A metric's document in a recent minute: its id, the fields a new one
  // gets and its pending key for the last origin, made once, not per message
  // (every string made per message is hashed again in each map it meets).
  documentOf (minute, metric) {
    let ids = minute.ids
    if (ids === null) {
      ids = minute.ids = new Map()
      this.idMinutes.push(minute)
      if (this.idMinutes.length > ID_MINUTES) this.idMinutes.shift().ids = null
    }
    let doc = ids.get(metric)
    if (doc === undefined) {
      if (ids.size >= IDS_PER_MINUTE) ids.clear()
      const id = `${minute.day}/${metric}`
      doc = { id, origin: undefined, key: id, setOnInsert: { metric, day: minute.day, dayStart: minute.dayStart } }
      ids.set(metric, doc)
    }
    return doc
  }

  // What increment() needs of a minute, made once per minute seen (not per
  // message): its day, the day's start, and the paths it adds to. Null for
  // a time that is not one (an invalid date).
  minuteOf (ms) {
    const key = Math.floor(ms / 60000)
    let minute = this.minutes.get(key)
    if (minute !== undefined) return minute
    if (!Number.isFinite(key)) return null
    if (this.minutes.size >= MINUTES_KEPT) {
      this.minutes.clear()
      for (const kept of this.idMinutes) kept.ids = null
      this.idMinutes = []
    }
    const d = new Date(key * 60000)
    const hh = pad(d.getUTCHours())
    minute = { day: dayOf(d), dayStart: dayFields('', d).dayStart, paths: ['daily', `hourly.${hh}`, `minute.${hh}.${pad(d.getUTCMinutes())}`], ids: null }
    this.minutes.set(key, minute)
    return minute
  }

  /**
   * Adds `n` (may be negative) to `<prefix>.HH.MM` of `metric`'s document,
   * the minute of `date`: per-minute figures beside the count (the RTCP
   * collector's calls by MOS band). Written and deduplicated on redelivery
   * with the document's other increments.
   */
  incrementMinute (metric, date, prefix, n, mark = null) {
    const d = date instanceof Date ? date : new Date(date)
    const inc = { [`${prefix}.${pad(d.getUTCHours())}.${pad(d.getUTCMinutes())}`]: n }
    this.update(this.documentId(metric, d), { inc }, mark, dayFields(metric, d))
  }

  /** The `_id` of the document counting `metric` on the day of `date`. */
  documentId (metric, date) {
    return `${dayOf(date instanceof Date ? date : new Date(date))}/${metric}`
  }

  /**
   * Claims batch `batchId` of `origin` in the document of `metric` on the
   * day of each of `dates`: raises its watermark to the batch (creating the
   * document, counting nothing) and answers which held the batch already
   * (a Set of ids). A guarded write of the batch that lands after the claim
   * is refused there (CounterKeyCap: the choice between two documents).
   */
  async claim (metric, dates, origin, batchId) {
    const field = `watermarks.${origin}`
    const held = new Set()
    const days = new Map()
    for (const date of dates) {
      const d = new Date(date)
      days.set(this.documentId(metric, d), d)
    }
    for (const [id, d] of days) {
      const update = { $max: { [field]: batchId }, $setOnInsert: { ...dayFields(metric, d), daily: 0 } }
      const before = await this.collection.findOneAndUpdate({ _id: id }, update, { upsert: true, returnDocument: 'before', projection: { watermarks: 1 } })
      const watermark = before && before.watermarks && before.watermarks[origin]
      if (typeof watermark === 'number' && watermark >= batchId) held.add(id)
    }
    return held
  }

  // With probability preallocateRate, the document's next day, zeroed.
  extraOps (entry) {
    if (!(this.random() < this.preallocateRate)) return []
    this.stats.preallocations++
    return [preallocateOp(entry.setOnInsert, this.minuteFields)]
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
  const doc = { metric, day, dayStart: dayStartOf(day), daily: 0, hourly: {}, minute: zeroMinutes() }
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

// What a new document of `metric` on the day of `d` is given: its metric,
// its day, and the day's start as a date, its age field for retention (a
// TTL index needs a date; `day` is a string).
function dayFields (metric, d) {
  return { metric, day: dayOf(d), dayStart: new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate())) }
}

// 'YYYYMMDD' → the day's start (a Date), or null.
function dayStartOf (day) {
  const m = /^(\d{4})(\d{2})(\d{2})$/.exec(day)
  return m ? new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]))) : null
}

/**
 * The retention target of a counters collection (workers/storage/retention.js):
 * per-day documents, by their day's start, deleted once the whole day is
 * older than the retention; documents of an earlier version, without
 * `dayStart`, get it from their `day`. A late increment of a day already
 * deleted makes its document again, whole in shape ($setOnInsert), and the
 * next pass deletes it.
 */
function counterTarget (collection) {
  return { collection, field: 'dayStart', perDay: true, legacy: { projection: { day: 1 }, value: (doc) => dayStartOf(doc.day) } }
}

function nextDay (day) {
  const d = new Date(Date.UTC(Number(day.slice(0, 4)), Number(day.slice(4, 6)) - 1, Number(day.slice(6, 8)) + 1))
  return dayOf(d)
}

module.exports = { CounterStore, dayOf, counterTarget }
