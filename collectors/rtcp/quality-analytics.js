'use strict'

// What a call's stored statistics (call-quality.js, written per report)
// conclude: read by the sweeper when a stream ends (its `analytics`) and by
// `collector calls` for calls still open. Runs wherever a stream document
// is read; holds no state.

const { bandOf, WINDOW_MS } = require('./call-quality')
const { voipRFactor, mosFromR } = require('./e-model')
const { CODECS, DEFAULT_CODEC } = require('./codecs')

/**
 * The analytics of an RTCP stream: its duration, reports stored, each
 * side's quality, and the call's verdict: `mos` and `band` from the worse
 * side's call-level E-model (sideQuality's `verdict`), the worst window of
 * media of either side, and `mosMin`, the lowest MOS of a single report.
 *
 * @param {object} doc a `streams` document
 * @param {Date} [endedAt]
 */
function callAnalytics (doc, endedAt) {
  const start = doc.startTime ? new Date(doc.startTime).getTime() : null
  const end = doc.endTime ? new Date(doc.endTime).getTime() : null
  const from = sideQuality(doc.from)
  const to = sideQuality(doc.to)
  const mins = [from, to].map((side) => side && side.mos ? side.mos.min : null).filter((mos) => mos !== null)
  const verdict = lowest([from, to].map((side) => side && side.verdict))
  const windows = [['from', from], ['to', to]].map(([name, side]) => side && side.worstWindow && { side: name, ...side.worstWindow })
  const mos = verdict ? verdict.mos : null
  const analytics = {
    durationMs: start !== null && end !== null ? end - start : 0,
    reports: (doc.metadata && doc.metadata.packets) || 0,
    from,
    to,
    mos,
    band: bandOf(mos),
    worstWindow: lowest(windows),
    mosMin: mins.length > 0 ? Math.min(...mins) : null
  }
  if (endedAt !== undefined) analytics.endedAt = endedAt
  return analytics
}

/**
 * The band the call of stream `doc` had in each UTC minute it had media
 * (`YYYYMMDDHHmm` → band): the band of the lower of its two sides'
 * `minutes.<key>.mosMin`, `unknown` when neither side scored a report that
 * minute. Each call is one band per minute however its reports were spread
 * over workers, worker deaths and redelivery: the buckets are written by
 * the stream's own upserts ($min, $inc applied once), not by a worker's
 * memory of what it counted.
 */
function minuteBands (doc) {
  const lows = new Map()
  for (const side of [doc.from, doc.to]) {
    const minutes = side && side.quality && side.quality.minutes
    if (!minutes) continue
    for (const [key, bucket] of Object.entries(minutes)) {
      const low = typeof bucket.mosMin === 'number' ? bucket.mosMin : null
      const seen = lows.get(key)
      if (seen === undefined || (low !== null && (seen === null || low < seen))) lows.set(key, low)
    }
  }
  const bands = new Map()
  for (const [key, low] of lows) bands.set(key, bandOf(low))
  return bands
}

/**
 * One side's figures: loss over the stream (RFC 3550 A.3) from its first
 * and last reports, or, when the reporter restarted its numbering, the sum
 * of the intervals; min / avg / max of the per-report loss, jitter (ms),
 * RTT (ms, measured both ways; `rttEstimatedMs`: twice one direction),
 * delay and MOS; the values at the worst MOS; reports not used and reports
 * not scored, by reason; the call-level `verdict` and the `worstWindow`.
 * Null for a side that sent no report block.
 */
function sideQuality (side) {
  const q = side && side.quality
  if (!q) return null
  const codecName = Object.hasOwn(CODECS, side.codec) ? side.codec : DEFAULT_CODEC
  const codec = CODECS[codecName]
  const overall = overallLoss(q.loss)
  const delayMs = spread(q.delayMs)
  return {
    reports: side.packets || 0,
    ...overall,
    loss: spread(q.loss),
    jitterMs: spread(q.jitterMs),
    rttMs: spread(q.rttMs),
    rttEstimatedMs: spread(q.rttEstimatedMs),
    delayMs,
    mos: spread(q.mos),
    worst: q.worst || null,
    verdict: overall.lossRate === null || delayMs === null ? null : { ...rating(codec, overall.lossRate, delayMs.avg), loss: overall.lossRate, delayMs: delayMs.avg },
    worstWindow: worstWindow(q.windows, codec, delayMs),
    codec: codecName,
    clockRate: side.clockRate === undefined ? null : side.clockRate,
    clockRateSource: side.clockRateSource || null,
    invalid: q.invalid || {},
    unscored: q.unscored || {}
  }
}

/**
 * The window of WINDOW_MS of media (by sequence numbers: hold and silence
 * take none) with the lowest MOS, over the intervals ending in it: its loss,
 * and the delay its reports were scored with (else the side's average).
 * Windows with less than half a span of media expected (a call's first and
 * last) are left out.
 */
function worstWindow (windows, codec, delayMs) {
  const span = WINDOW_MS / codec.packetMs
  let worst = null
  for (const [index, w] of Object.entries(windows || {})) {
    if (!(w.expected >= span / 2)) continue
    const delay = w.delayCount > 0 ? w.delaySum / w.delayCount : delayMs && delayMs.avg
    if (typeof delay !== 'number') continue
    const loss = w.lost / w.expected
    const window = { ...rating(codec, loss, delay), loss, delayMs: delay, lost: w.lost, expected: w.expected, at: w.at || null, window: Number(index) }
    if (worst === null || window.mos < worst.mos) worst = window
  }
  return worst
}

/** R and MOS (G.107) of random loss `loss` (0–1) at a mouth-to-ear delay of `delayMs`. */
function rating (codec, loss, delayMs) {
  const R = voipRFactor(codec.Ie, codec.Bpl, loss * 100, 1, delayMs, delayMs, 2 * delayMs)
  return { mos: mosFromR(R), rFactor: R }
}

function lowest (ratings) {
  let low = null
  for (const r of ratings) if (r && (low === null || r.mos < low.mos)) low = r
  return low
}

function overallLoss (loss) {
  if (!loss) return { lossRate: null, lossBasis: null }
  const { first, last } = loss
  if (!loss.restarts && first && last && last.seq > first.seq) {
    return { lossRate: clamp01((last.lost - first.lost) / (last.seq - first.seq)), lossBasis: 'first-last' }
  }
  if (loss.intervalExpected > 0) return { lossRate: clamp01(loss.intervalLost / loss.intervalExpected), lossBasis: 'intervals' }
  // One report only: what it said of the time before it.
  if (loss.count > 0) return { lossRate: loss.sum / loss.count, lossBasis: 'fraction-lost' }
  return { lossRate: null, lossBasis: null }
}

function spread (figure) {
  if (!figure || !(figure.count > 0)) return null
  return { min: figure.min, avg: figure.sum / figure.count, max: figure.max, count: figure.count }
}

function clamp01 (x) {
  return Math.min(1, Math.max(0, x))
}

module.exports = { callAnalytics, sideQuality, minuteBands }
