'use strict'

// Runs in an RTCP worker: the call-quality statistics of one stream side
// over the reports of a flush, as the stream worker's `stats` of a packet
// item (workers/stream-worker.js): `merge(other)` folds another report's in
// when packets coalesce, `addTo(update, side)` writes them into the side's
// one upsert with `$min`, `$max` and `$inc`. All three operators are
// order-free, so the stored figures are exact however reports are
// coalesced or redelivered (README: Call quality lists every path).
// Numbers in fixed fields, not maps of paths: this runs once per report.

const FIGURES = ['loss', 'jitterMs', 'rttMs', 'mos']
// Each figure's four fields, named once (no key is built per report).
const KEYS = Object.fromEntries(FIGURES.map((name) => [name, { min: `${name}Min`, max: `${name}Max`, sum: `${name}Sum`, count: `${name}Count` }]))

class QualityStats {
  constructor () {
    this.firstSeq = -1 // the report with the lowest extended highest sequence (-1: none)
    this.firstLost = 0
    this.lastSeq = -1
    this.lastLost = 0
    this.intervalLost = 0
    this.intervalExpected = 0
    this.restarts = 0
    this.lossMin = this.jitterMsMin = this.rttMsMin = this.mosMin = Infinity
    this.lossMax = this.jitterMsMax = this.rttMsMax = this.mosMax = -Infinity
    this.lossSum = this.jitterMsSum = this.rttMsSum = this.mosSum = 0
    this.lossCount = this.jitterMsCount = this.rttMsCount = this.mosCount = 0
    this.worst = null // { mos, rFactor, loss, jitterMs, rttMs, at }: the lowest MOS
    this.minute = null // the bucket of the minute of these reports, { key, ... }
    this.otherMinutes = null // more buckets, when a flush spans minutes
    this.invalid = null // reason → reports
  }

  /** A report's `{ seq, lost }` (extended highest sequence, cumulative lost). */
  addEnds (seq, lost) {
    if (this.firstSeq < 0 || seq < this.firstSeq || (seq === this.firstSeq && lost < this.firstLost)) {
      this.firstSeq = seq
      this.firstLost = lost
    }
    if (seq > this.lastSeq || (seq === this.lastSeq && lost > this.lastLost)) {
      this.lastSeq = seq
      this.lastLost = lost
    }
  }

  addFigure (name, value) {
    if (value === null) return
    const k = KEYS[name]
    if (value < this[k.min]) this[k.min] = value
    if (value > this[k.max]) this[k.max] = value
    this[k.sum] += value
    this[k.count]++
  }

  /** One report's figures at `at` (ms), with the key of its minute. */
  addReport (figures, at, minuteKey) {
    const { loss, jitterMs, rttMs, mos } = figures
    this.addFigure('loss', loss)
    this.addFigure('jitterMs', jitterMs)
    this.addFigure('rttMs', rttMs)
    this.addFigure('mos', mos)
    const worst = { mos, rFactor: figures.rFactor, loss, jitterMs, rttMs, at }
    if (this.worst === null || compareWorst(worst, this.worst) < 0) this.worst = worst
    this.addBucket({ key: minuteKey, mosMin: mos, mosSum: mos, reports: 1, lossMax: loss, jitterMsMax: jitterMs, rttMsMax: rttMs })
  }

  addInvalid (reason, n = 1) {
    const invalid = this.invalid || (this.invalid = {})
    invalid[reason] = (invalid[reason] || 0) + n
  }

  addBucket (bucket) {
    if (this.minute === null) {
      this.minute = bucket
      return
    }
    if (this.minute.key === bucket.key) return mergeBucket(this.minute, bucket)
    const others = this.otherMinutes || (this.otherMinutes = new Map())
    const existing = others.get(bucket.key)
    if (existing) mergeBucket(existing, bucket)
    else others.set(bucket.key, { ...bucket })
  }

  /** Folds `other` in (the coalescing of two reports of one side); returns this. */
  merge (other) {
    if (other.firstSeq >= 0) this.addEnds(other.firstSeq, other.firstLost)
    if (other.lastSeq >= 0) this.addEnds(other.lastSeq, other.lastLost)
    this.intervalLost += other.intervalLost
    this.intervalExpected += other.intervalExpected
    this.restarts += other.restarts
    for (const name of FIGURES) {
      const k = KEYS[name]
      if (other[k.count] === 0) continue
      if (other[k.min] < this[k.min]) this[k.min] = other[k.min]
      if (other[k.max] > this[k.max]) this[k.max] = other[k.max]
      this[k.sum] += other[k.sum]
      this[k.count] += other[k.count]
    }
    if (other.worst !== null && (this.worst === null || compareWorst(other.worst, this.worst) < 0)) this.worst = other.worst
    if (other.minute !== null) this.addBucket(other.minute)
    if (other.otherMinutes !== null) for (const bucket of other.otherMinutes.values()) this.addBucket(bucket)
    if (other.invalid !== null) for (const reason in other.invalid) this.addInvalid(reason, other.invalid[reason])
    return this
  }

  /** Writes these statistics of `side` ('from' or 'to') into an update's $min, $max and $inc. */
  addTo (update, side) {
    const min = update.$min || (update.$min = {})
    const max = update.$max || (update.$max = {})
    const inc = update.$inc || (update.$inc = {})
    const q = `${side}.quality`
    if (this.firstSeq >= 0) min[`${q}.loss.first`] = { seq: this.firstSeq, lost: this.firstLost }
    if (this.lastSeq >= 0) max[`${q}.loss.last`] = { seq: this.lastSeq, lost: this.lastLost }
    if (this.intervalExpected > 0) {
      inc[`${q}.loss.intervalLost`] = this.intervalLost
      inc[`${q}.loss.intervalExpected`] = this.intervalExpected
    }
    if (this.restarts > 0) inc[`${q}.loss.restarts`] = this.restarts
    for (const name of FIGURES) {
      const k = KEYS[name]
      if (this[k.count] === 0) continue
      min[`${q}.${name}.min`] = this[k.min]
      max[`${q}.${name}.max`] = this[k.max]
      inc[`${q}.${name}.sum`] = this[k.sum]
      inc[`${q}.${name}.count`] = this[k.count]
    }
    // A document compared field by field, in this order: the lowest MOS wins.
    if (this.worst !== null) min[`${q}.worst`] = { ...this.worst, at: new Date(this.worst.at) }
    if (this.minute !== null) addBucketTo(update, `${q}.minutes`, this.minute)
    if (this.otherMinutes !== null) for (const bucket of this.otherMinutes.values()) addBucketTo(update, `${q}.minutes`, bucket)
    if (this.invalid !== null) for (const reason in this.invalid) inc[`${q}.invalid.${reason}`] = this.invalid[reason]
  }
}

function mergeBucket (into, bucket) {
  if (bucket.mosMin < into.mosMin) into.mosMin = bucket.mosMin
  into.mosSum += bucket.mosSum
  into.reports += bucket.reports
  if (bucket.lossMax > into.lossMax) into.lossMax = bucket.lossMax
  if (bucket.jitterMsMax > into.jitterMsMax) into.jitterMsMax = bucket.jitterMsMax
  if (bucket.rttMsMax !== null && !(bucket.rttMsMax <= into.rttMsMax)) into.rttMsMax = bucket.rttMsMax
}

function addBucketTo (update, prefix, bucket) {
  const path = `${prefix}.${bucket.key}`
  update.$min[`${path}.mosMin`] = bucket.mosMin
  update.$inc[`${path}.mosSum`] = bucket.mosSum
  update.$inc[`${path}.reports`] = bucket.reports
  update.$max[`${path}.lossMax`] = bucket.lossMax
  update.$max[`${path}.jitterMsMax`] = bucket.jitterMsMax
  if (bucket.rttMsMax !== null) update.$max[`${path}.rttMsMax`] = bucket.rttMsMax
}

// MongoDB's order for the stored `worst` documents: field by field, null
// (an unknown RTT) below any number.
function compareWorst (a, b) {
  for (const key of ['mos', 'rFactor', 'loss', 'jitterMs', 'rttMs', 'at']) {
    const x = a[key]
    const y = b[key]
    if (x === y) continue
    if (x === null) return -1
    if (y === null) return 1
    return x < y ? -1 : 1
  }
  return 0
}

module.exports = { QualityStats, compareWorst }
