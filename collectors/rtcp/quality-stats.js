'use strict'

// Runs in an RTCP worker: the call-quality statistics of one stream side
// over the reports of a flush, as the stream worker's `stats` of a packet
// item (workers/stream-worker.js): `merge(other)` folds another report's in
// when packets coalesce, `addTo(update, side)` writes them into the side's
// one upsert with `$min`, `$max` and `$inc`. All three operators are
// order-free, so the stored figures are exact however reports are
// coalesced or redelivered (docs/call-quality.md lists every path).
// Numbers in fixed fields, not maps of paths: this runs once per report.

// rttMs: measured both ways; rttEstimatedMs: twice one direction (see
// CallQuality#roundTrip); delayMs: the mouth-to-ear delay a MOS was scored with.
const FIGURES = ['loss', 'jitterMs', 'rttMs', 'rttEstimatedMs', 'delayMs', 'mos']
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
    for (const name of FIGURES) {
      const k = KEYS[name]
      this[k.min] = Infinity
      this[k.max] = -Infinity
      this[k.sum] = 0
      this[k.count] = 0
    }
    this.worst = null // { mos, rFactor, loss, jitterMs, rttMs, delayMs, at }: the lowest MOS
    this.minute = null // the bucket of the minute of these reports, { key, ... }
    this.otherMinutes = null // more buckets, when a flush spans minutes
    this.invalid = null // reason → reports
    this.unscored = null // reason → reports that gave no MOS
    this.windows = null // window index → { lost, expected, delaySum, delayCount, at }
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

  /** An RTT by its basis: measured both ways, or estimated from one direction. */
  addRtt (rttMs, basis) {
    this.addFigure(basis === 'one-direction' ? 'rttEstimatedMs' : 'rttMs', rttMs)
  }

  /**
   * One report's figures at `at` (ms), with the key of its minute and the
   * window of media its interval ends in. A MOS of null (no delay known)
   * leaves the report out of the MOS figures, the worst and the minute's
   * MOS, not out of its loss and jitter.
   */
  addReport (figures, at, minuteKey, window) {
    const { loss, jitterMs, rttMs, delayMs, mos } = figures
    this.addFigure('loss', loss)
    this.addFigure('jitterMs', jitterMs)
    this.addRtt(rttMs, figures.rttBasis)
    this.addFigure('delayMs', delayMs)
    const measuredRtt = figures.rttBasis === 'both-directions' ? rttMs : null
    const scored = mos !== null
    if (scored) {
      this.addFigure('mos', mos)
      const worst = { mos, rFactor: figures.rFactor, loss, jitterMs, rttMs, delayMs, at }
      if (this.worst === null || compareWorst(worst, this.worst) < 0) this.worst = worst
    }
    this.addBucket({ key: minuteKey, mosMin: scored ? mos : Infinity, mosSum: scored ? mos : 0, reports: scored ? 1 : 0, lossMax: loss, jitterMsMax: jitterMs, rttMsMax: measuredRtt })
    if (this.intervalExpected > 0 || scored) {
      this.addWindow(window, { lost: this.intervalLost, expected: this.intervalExpected, delaySum: scored ? delayMs : 0, delayCount: scored ? 1 : 0, at })
    }
  }

  addWindow (index, figures) {
    const windows = this.windows || (this.windows = new Map())
    const into = windows.get(index)
    if (!into) return windows.set(index, { ...figures })
    into.lost += figures.lost
    into.expected += figures.expected
    into.delaySum += figures.delaySum
    into.delayCount += figures.delayCount
    if (figures.at < into.at) into.at = figures.at
  }

  addInvalid (reason, n = 1) {
    const invalid = this.invalid || (this.invalid = {})
    invalid[reason] = (invalid[reason] || 0) + n
  }

  addUnscored (reason, n = 1) {
    const unscored = this.unscored || (this.unscored = {})
    unscored[reason] = (unscored[reason] || 0) + n
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
    if (other.unscored !== null) for (const reason in other.unscored) this.addUnscored(reason, other.unscored[reason])
    if (other.windows !== null) for (const [index, figures] of other.windows) this.addWindow(index, figures)
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
    if (this.unscored !== null) for (const reason in this.unscored) inc[`${q}.unscored.${reason}`] = this.unscored[reason]
    if (this.windows !== null) {
      for (const [index, w] of this.windows) {
        const path = `${q}.windows.${index}`
        inc[`${path}.lost`] = w.lost
        inc[`${path}.expected`] = w.expected
        inc[`${path}.delaySum`] = w.delaySum
        inc[`${path}.delayCount`] = w.delayCount
        min[`${path}.at`] = new Date(w.at)
      }
    }
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
  if (bucket.reports > 0) {
    update.$min[`${path}.mosMin`] = bucket.mosMin
    update.$inc[`${path}.mosSum`] = bucket.mosSum
    update.$inc[`${path}.reports`] = bucket.reports
  }
  update.$max[`${path}.lossMax`] = bucket.lossMax
  update.$max[`${path}.jitterMsMax`] = bucket.jitterMsMax
  if (bucket.rttMsMax !== null) update.$max[`${path}.rttMsMax`] = bucket.rttMsMax
}

// MongoDB's order for the stored `worst` documents: field by field, null
// (an unknown RTT) below any number.
function compareWorst (a, b) {
  for (const key of ['mos', 'rFactor', 'loss', 'jitterMs', 'rttMs', 'delayMs', 'at']) {
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
