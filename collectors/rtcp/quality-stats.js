'use strict'

// Runs in an RTCP worker: the call-quality statistics of one stream side
// over the reports of a flush, as the stream worker's `stats` of a packet
// item (workers/stream-worker.js): `merge(other)` folds another report's in
// when packets coalesce, `addTo(update, side)` writes them into the side's
// one upsert with `$min`, `$max` and `$inc`. All three operators are
// order-free, so the stored figures are exact however reports are
// coalesced or redelivered (docs/call-quality.md lists every path).
// Numbers in fixed fields, not maps of paths: this runs once per report.

// jitter: RTP timestamp units (ms where read, with the side's best clock
// rate, `clock`); rttMs: measured both ways; rttEstimatedMs: twice one
// direction (see CallQuality#roundTrip); delayMs and mos: of reports scored
// with a measured round trip; mosEndpoints: of reports scored without one
// (delayBasis 'endpoints'); endpointsMs: the jitter buffer and codec delay
// of every scored report, the delay the endpoints add in this direction;
// pathMs: this direction's term of a round trip measured both ways (the
// source's SR to the reporter's report, as the collector sees them: the
// one-way delay plus the difference of the two ends' delays to the
// collector; the two directions' terms sum to the round trip).
const FIGURES = ['loss', 'jitter', 'rttMs', 'rttEstimatedMs', 'delayMs', 'mos', 'mosEndpoints', 'endpointsMs', 'pathMs']
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
    this.excessReceived = 0 // packets received beyond those expected (Δ cumulative lost < 0)
    this.windowsCoarse = 0 // reports booked whole to one window, over the side's allowance (window-allowance.js)
    this.clock = null // { rank, rate, source }: the best the reporter's stream is known to run at
    this.codec = null // { rank, name, source, format }
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
    this.windows = null // '<span>.<index>' (packets per window, window) → { lost, expected, delaySum, delayCount, at }
    this.packet = null // { rank, ms, source }: the stream's packet interval, the surest known (packet-time.js)
    this.xr = null // { seq, discardRate, burstR }: the last XR VoIP Metrics' (since the start of reception)
  }

  /** The clock and codec of the stream these reports are about (CallQuality#mediaOf). */
  setMedia (media) {
    this.clock = media.clockDoc
    this.codec = media.codecDoc
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
   * windows of media of `span` packets it is booked to (`[index, packets]`,
   * see packet-time.js windowsOf and window-allowance.js; none for a report
   * with neither an interval nor a measured delay), its loss and delay
   * apportioned by packets. Only a
   * MOS scored with a measured round trip enters `mos`, the worst, the
   * minute's MOS and the windows' delay; one scored on the endpoints' delay
   * alone is kept in `mosEndpoints`.
   */
  addReport (figures, at, minuteKey, span, windows) {
    const { loss, jitter, rttMs, delayMs, mos } = figures
    this.addFigure('loss', loss)
    this.addFigure('jitter', jitter)
    this.addRtt(rttMs, figures.rttBasis)
    this.addFigure('endpointsMs', figures.endpointsMs)
    if (figures.pathMs !== undefined) this.addFigure('pathMs', figures.pathMs)
    const measuredRtt = figures.rttBasis === 'both-directions' ? rttMs : null
    const scored = figures.delayBasis === 'measured'
    if (scored) {
      this.addFigure('delayMs', delayMs)
      this.addFigure('mos', mos)
      const worst = { mos, rFactor: figures.rFactor, loss, jitter, rttMs, delayMs, at }
      if (this.worst === null || compareWorst(worst, this.worst) < 0) this.worst = worst
    } else this.addFigure('mosEndpoints', mos)
    this.addBucket({ key: minuteKey, mosMin: scored ? mos : Infinity, mosSum: scored ? mos : 0, reports: scored ? 1 : 0, lossMax: loss, jitterMax: jitter, rttMsMax: measuredRtt })
    const expected = this.intervalExpected
    for (const [index, packets] of windows) {
      const share = expected > 0 ? packets / expected : 1
      this.addWindow(`${span}.${index}`, { lost: this.intervalLost * share, expected: expected > 0 ? packets : 0, delaySum: scored ? delayMs * share : 0, delayCount: scored ? share : 0, at })
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
    this.excessReceived += other.excessReceived
    this.windowsCoarse += other.windowsCoarse
    if (other.clock !== null && (this.clock === null || other.clock.rank > this.clock.rank)) this.clock = other.clock
    if (other.codec !== null && (this.codec === null || other.codec.rank > this.codec.rank)) this.codec = other.codec
    if (other.packet !== null && (this.packet === null || surer(other.packet, this.packet))) this.packet = other.packet
    if (other.xr !== null && (this.xr === null || compareDocs(other.xr, this.xr, ['seq', 'discardRate', 'burstR']) > 0)) this.xr = other.xr
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
    const p = pathsOf(side)
    if (this.firstSeq >= 0) min[p.first] = { seq: this.firstSeq, lost: this.firstLost }
    if (this.lastSeq >= 0) max[p.last] = { seq: this.lastSeq, lost: this.lastLost }
    if (this.intervalExpected > 0) {
      inc[p.intervalLost] = this.intervalLost
      inc[p.intervalExpected] = this.intervalExpected
    }
    if (this.restarts > 0) inc[p.restarts] = this.restarts
    if (this.excessReceived > 0) inc[p.excessReceived] = this.excessReceived
    if (this.windowsCoarse > 0) inc[p.windowsCoarse] = this.windowsCoarse
    // Documents compared field by field, rank first: the best known wins.
    if (this.clock !== null) max[p.clock] = this.clock
    if (this.codec !== null) max[p.codec] = this.codec
    // $max compares rank, then `shorter` (-ms): at equal rank the shortest interval stands, as the
    // worker keeps it (a packet interval measured under silence suppression only lengthens);
    // by ms, the longest stood (40 ms stored for a call at 20, its worst window twice as long).
    if (this.packet !== null) max[`${q}.packet`] = { rank: this.packet.rank, shorter: -this.packet.ms, ms: this.packet.ms, source: this.packet.source }
    if (this.xr !== null) max[`${q}.xr`] = this.xr
    for (const name of FIGURES) {
      const k = KEYS[name]
      if (this[k.count] === 0) continue
      const path = p.figures[name]
      min[path.min] = this[k.min]
      max[path.max] = this[k.max]
      inc[path.sum] = this[k.sum]
      inc[path.count] = this[k.count]
    }
    // A document compared field by field, in this order: the lowest MOS wins.
    if (this.worst !== null) min[p.worst] = { ...this.worst, at: new Date(this.worst.at) }
    if (this.minute !== null) addBucketTo(update, p.minutes, this.minute)
    if (this.otherMinutes !== null) for (const bucket of this.otherMinutes.values()) addBucketTo(update, p.minutes, bucket)
    if (this.invalid !== null) for (const reason in this.invalid) inc[`${q}.invalid.${reason}`] = this.invalid[reason]
    if (this.unscored !== null) for (const reason in this.unscored) inc[`${q}.unscored.${reason}`] = this.unscored[reason]
    if (this.windows !== null) addWindowsTo(min, inc, q, this.windows)
  }
}

function addWindowsTo (min, inc, q, windows) {
  for (const [index, w] of windows) {
    const path = `${q}.spans.${index}`
    inc[`${path}.lost`] = w.lost
    inc[`${path}.expected`] = w.expected
    inc[`${path}.delaySum`] = w.delaySum
    inc[`${path}.delayCount`] = w.delayCount
    min[`${path}.at`] = new Date(w.at)
  }
}

// The update paths of a side's statistics, made once per side name ('from',
// 'to'): addTo runs once per report, and building them was most of its time.
const PATHS = new Map()

function pathsOf (side) {
  let paths = PATHS.get(side)
  if (paths) return paths
  const q = `${side}.quality`
  paths = {
    first: `${q}.loss.first`,
    last: `${q}.loss.last`,
    intervalLost: `${q}.loss.intervalLost`,
    intervalExpected: `${q}.loss.intervalExpected`,
    restarts: `${q}.loss.restarts`,
    excessReceived: `${q}.loss.excessReceived`,
    windowsCoarse: `${q}.windowsCoarse`,
    clock: `${q}.clock`,
    codec: `${q}.codec`,
    worst: `${q}.worst`,
    minutes: `${q}.minutes`,
    figures: Object.fromEntries(FIGURES.map((name) => [name, { min: `${q}.${name}.min`, max: `${q}.${name}.max`, sum: `${q}.${name}.sum`, count: `${q}.${name}.count` }]))
  }
  if (PATHS.size < 16) PATHS.set(side, paths) // 'from' and 'to' in use; other names (tests) are not kept past a few
  return paths
}

function mergeBucket (into, bucket) {
  if (bucket.mosMin < into.mosMin) into.mosMin = bucket.mosMin
  into.mosSum += bucket.mosSum
  into.reports += bucket.reports
  if (bucket.lossMax > into.lossMax) into.lossMax = bucket.lossMax
  if (bucket.jitterMax > into.jitterMax) into.jitterMax = bucket.jitterMax
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
  update.$max[`${path}.jitterMax`] = bucket.jitterMax
  if (bucket.rttMsMax !== null) update.$max[`${path}.rttMsMax`] = bucket.rttMsMax
}

// MongoDB's order ($max) of two documents with the same `keys`, numbers all.
function compareDocs (a, b, keys) {
  for (const key of keys) if (a[key] !== b[key]) return a[key] < b[key] ? -1 : 1
  return 0
}

// MongoDB's order for the stored `worst` documents: field by field, null
// (an unknown RTT) below any number.
function compareWorst (a, b) {
  for (const key of ['mos', 'rFactor', 'loss', 'jitter', 'rttMs', 'delayMs', 'at']) {
    const x = a[key]
    const y = b[key]
    if (x === y) continue
    if (x === null) return -1
    if (y === null) return 1
    return x < y ? -1 : 1
  }
  return 0
}

// A packet interval surer than another: a higher rank, or at the same rank a shorter one.
function surer (a, b) {
  return a.rank > b.rank || (a.rank === b.rank && a.ms < b.ms)
}

module.exports = { QualityStats, compareWorst }
