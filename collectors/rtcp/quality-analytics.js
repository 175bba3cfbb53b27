'use strict'

// What a call's stored statistics (call-quality.js, written per report)
// conclude: read by the sweeper when a stream ends (its `analytics`) and by
// `collector calls` for calls still open. Runs wherever a stream document
// is read; holds no state.

const { bandOf } = require('./call-quality')
const { windowSpan } = require('./packet-time')
const { voipRFactor, mosFromR, MODEL } = require('./e-model')
const { CODECS, DEFAULT_CODEC } = require('./codecs')

// Two directions' delays closer than this are not told apart: each term of a round trip is
// good to 1 ms of arrival time and 1/65536 s of DLSR (call-quality.js RTT_PRECISION_MS).
const SAME_DELAY_MS = 2

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
  const excess = [from, to].reduce((n, side) => n + (side ? side.excessReceived : 0), 0)
  const windows = [['from', from], ['to', to]].map(([name, side]) => side && side.worstWindow && { side: name, ...side.worstWindow })
  const mos = verdict ? verdict.mos : null
  const analytics = {
    durationMs: start !== null && end !== null ? end - start : 0,
    reports: (doc.metadata && doc.metadata.packets) || 0,
    from,
    to,
    mos,
    model: MODEL,
    band: bandOf(mos),
    delayBasis: verdict ? verdict.delayBasis : null,
    worstWindow: lowest(windows),
    excessReceived: excess,
    mosMin: mins.length > 0 ? Math.min(...mins) : null,
    delayByDirection: delayByDirection(doc, from, to)
  }
  if (endedAt !== undefined) analytics.endedAt = endedAt
  return analytics
}

/**
 * Where the call's delay is, by direction of media, as far as RTCP can say
 * (docs/call-quality.md, Delay by direction). Per direction (the side that
 * receives it): `endpointsMs`, the receiving end's jitter buffer and codec
 * delay (its own, known per direction), and `pathMs`, that direction's term
 * of the round trip measured both ways. A round trip alone cannot be split:
 * each term is the one-way delay plus the difference of the two ends'
 * delays to the collector, so the split is `collector-relative` (exact when
 * both ends are as far from the collector, as with a capture agent at each)
 * and `none` unless both terms were measured. `longer` names the direction
 * with the larger mouth-to-ear delay (`longerBasis` says on which figures:
 * `collector-relative`, else `endpoints` alone), null when they are within
 * SAME_DELAY_MS.
 */
function delayByDirection (doc, from, to) {
  const directions = []
  for (const [name, side, other, q] of [['from', doc.from, doc.to, from], ['to', doc.to, doc.from, to]]) {
    if (!q) continue
    const endpointsMs = q.endpointsMs ? q.endpointsMs.avg : null
    const pathMs = q.pathMs ? q.pathMs.avg : null
    const mouthToEarMs = endpointsMs !== null && pathMs !== null ? endpointsMs + pathMs : null
    directions.push({ side: name, from: other ? other.ID : null, to: side.ID, endpointsMs, pathMs, mouthToEarMs })
  }
  const split = directions.length === 2 && directions.every((d) => d.pathMs !== null) ? 'collector-relative' : 'none'
  const key = split === 'none' ? 'endpointsMs' : 'mouthToEarMs'
  const [a, b] = directions
  const longer = b && a[key] !== null && b[key] !== null && Math.abs(a[key] - b[key]) > SAME_DELAY_MS ? (a[key] > b[key] ? a : b).side : null
  const rtts = [from, to].filter((q) => q && q.rttMs)
  const count = rtts.reduce((n, q) => n + q.rttMs.count, 0)
  const roundTripMs = count > 0 ? rtts.reduce((sum, q) => sum + q.rttMs.avg * q.rttMs.count, 0) / count : null
  return { roundTripMs, split, directions, longer, longerBasis: longer === null ? null : (split === 'none' ? 'endpoints' : split) }
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
 * delay, the endpoints' delay and this direction's term of the round trip
 * (`pathMs`, see delayByDirection) and MOS; the values at the worst MOS; reports not used and reports
 * not scored, by reason; the call-level `verdict` and the `worstWindow`
 * (`windowsCoarse`: reports booked whole to one window, window-allowance.js).
 * Null for a side that sent no report block.
 */
function sideQuality (side) {
  const q = side && side.quality
  if (!q) return null
  const stored = (q.codec && q.codec.name) || side.codec
  const codecName = Object.hasOwn(CODECS, stored) ? stored : DEFAULT_CODEC
  const codec = CODECS[codecName]
  const clock = clockOf(side)
  const overall = overallLoss(q.loss)
  const delay = verdictDelay(q)
  const packet = q.packet && q.packet.ms > 0 ? { ms: q.packet.ms, source: q.packet.source } : { ms: codec.packetMs, source: 'codec' }
  const xr = xrOf(q)
  return {
    reports: side.packets || 0,
    ...overall,
    excessReceived: (q.loss && q.loss.excessReceived) || 0,
    loss: spread(q.loss),
    jitterMs: q.jitter ? scaled(spread(q.jitter), 1000 / clock.rate) : spread(q.jitterMs),
    rttMs: spread(q.rttMs),
    rttEstimatedMs: spread(q.rttEstimatedMs),
    delayMs: spread(q.delayMs),
    endpointsMs: spread(q.endpointsMs),
    pathMs: spread(q.pathMs),
    mos: spread(q.mos),
    mosEndpoints: spread(q.mosEndpoints),
    worst: worstOf(q.worst, clock.rate),
    verdict: overall.lossRate === null || delay === null ? null : { ...rating(codec, overall.lossRate, delay.ms, xr), loss: overall.lossRate, ...xr, delayMs: delay.ms, delayBasis: delay.basis },
    worstWindow: worstWindow(q, codec, delay, packet, xr),
    packetMs: packet.ms, packetSource: packet.source, // a pair, as stored and shown
    codec: codecName,
    codecSource: (q.codec && q.codec.source) || 'default',
    model: MODEL,
    ieSource: codec.source,
    format: (q.codec && q.codec.format) || null,
    clockRate: clock.rate,
    clockRateSource: clock.source,
    invalid: q.invalid || {},
    unscored: q.unscored || {},
    windowsCoarse: q.windowsCoarse || 0
  }
}

/**
 * The clock rate a side's jitter is read at: the best its reports knew
 * (`quality.clock`, $max by rank: sdp, sender-reports, configured,
 * default), else the last one set (documents written before it was kept).
 */
function clockOf (side) {
  const clock = side.quality && side.quality.clock
  if (clock && clock.rate > 0) return { rate: clock.rate, source: clock.source }
  return { rate: side.clockRate > 0 ? side.clockRate : 8000, source: side.clockRateSource || 'default' }
}

/** A side's `minutes.<key>` bucket's highest jitter in ms (its jitter is stored in timestamp units). */
function minuteJitterMs (side, bucket) {
  if (typeof bucket.jitterMax === 'number') return bucket.jitterMax / clockOf(side).rate * 1000
  return typeof bucket.jitterMsMax === 'number' ? bucket.jitterMsMax : null
}

// What a side's verdict (its mos and band: sideQuality's `verdict`) reads
// of the stored side, for reads that need only the verdict of many calls
// (`collector calls` ranks and counts a window by it): its codec, as the
// reports or SDP named it, its loss, and both delays verdictDelay chooses from.
const VERDICT_FIELDS = Object.freeze(['codec', 'quality.codec', 'quality.loss', 'quality.delayMs', 'quality.endpointsMs', 'quality.mos', 'quality.xr'])

/** A projection of a stream document that callAnalytics gives the same mos and band from as from the whole. */
function verdictProjection () {
  return Object.fromEntries(['from', 'to'].flatMap((side) => VERDICT_FIELDS.map((path) => [`${side}.${path}`, 1])))
}

// The mouth-to-ear delay of the verdict: the average of the reports scored
// with a measured round trip, else the endpoints' own (no network term).
function verdictDelay (q) {
  if (q.delayMs && q.delayMs.count > 0) return { ms: q.delayMs.sum / q.delayMs.count, basis: 'measured' }
  if (q.endpointsMs && q.endpointsMs.count > 0) return { ms: q.endpointsMs.sum / q.endpointsMs.count, basis: 'endpoints' }
  return null
}

function worstOf (worst, rate) {
  if (!worst) return null
  if (typeof worst.jitter !== 'number') return worst
  const { jitter, ...rest } = worst
  return { ...rest, jitterMs: jitter / rate * 1000 }
}

function scaled (figure, factor) {
  return figure && { min: figure.min * factor, avg: figure.avg * factor, max: figure.max * factor, count: figure.count }
}

/**
 * The window of WINDOW_MS of media (by sequence numbers: hold and silence
 * take none) with the lowest MOS, in windows of the stream's packets
 * (`packet`: its SDP's ptime, else as its reports showed it, else the
 * codec's): its loss (each report's interval apportioned over the windows
 * it covers), with the call's XR discard rate and burst ratio when its
 * reports carried XR, and the delay its reports were scored with (else the
 * side's verdict delay, with its basis). A window with less than half a
 * span of media expected (a call's first and last, a stream's edge) is
 * merged with the window next to it, never left out.
 */
function worstWindow (q, codec, delay, packet, xr) {
  const span = windowSpan(packet.ms)
  let worst = null
  for (const w of mergedWindows(windowsAt(q, span, windowSpan(codec.packetMs)), span)) {
    if (!(w.expected > 0)) continue
    const measured = w.delayCount > 0
    const delayMs = measured ? w.delaySum / w.delayCount : delay && delay.ms
    if (typeof delayMs !== 'number') continue
    const loss = w.lost / w.expected
    const window = { ...rating(codec, loss, delayMs, xr), loss, ...xr, delayMs, delayBasis: measured ? 'measured' : delay.basis, lost: w.lost, expected: w.expected, span, packetMs: packet.ms, packetSource: packet.source, at: w.at || null, window: w.window, windows: w.windows }
    if (worst === null || window.mos < worst.mos) worst = window
  }
  return worst
}

/**
 * A side's stored windows as windows of `span` packets (index → figures).
 * Reports booked before the stream's packet interval was known (or before
 * a surer one was) are in windows of another span (`quality.spans.<span>`;
 * `quality.windows`, of documents written before, at the codec's
 * `codecSpan`): each is shared over the windows of `span` its sequence
 * numbers overlap, in proportion, as a report's interval is.
 */
function windowsAt (q, span, codecSpan) {
  const stored = Object.entries(q.spans || {}).map(([s, windows]) => [Number(s), windows])
  if (q.windows) stored.push([codecSpan, q.windows])
  const into = {}
  for (const [s, windows] of stored) {
    if (!(s > 0)) continue
    for (const [key, w] of Object.entries(windows || {})) {
      const index = Number(key)
      if (!Number.isFinite(index)) continue
      const start = index * s
      for (let target = Math.floor(start / span); target * span < start + s; target++) {
        const share = (Math.min(start + s, (target + 1) * span) - Math.max(start, target * span)) / s
        addShare(into[target] || (into[target] = { lost: 0, expected: 0, delaySum: 0, delayCount: 0, at: null }), w, share)
      }
    }
  }
  return into
}

function addShare (into, w, share) {
  into.lost += (w.lost || 0) * share
  into.expected += (w.expected || 0) * share
  into.delaySum += (w.delaySum || 0) * share
  into.delayCount += (w.delayCount || 0) * share
  if (w.at && (into.at === null || +w.at < +into.at)) into.at = w.at
}

// The stored windows in order, each short one (under half a span expected)
// folded into its neighbour: the previous when adjacent, else the next.
function mergedWindows (windows, span) {
  const list = Object.entries(windows || {})
    .map(([index, w]) => ({ window: Number(index), windows: 1, last: Number(index), lost: w.lost || 0, expected: w.expected || 0, delaySum: w.delaySum || 0, delayCount: w.delayCount || 0, at: w.at || null }))
    .filter((w) => Number.isFinite(w.window))
    .sort((a, b) => a.window - b.window)
  const merged = []
  for (let i = 0; i < list.length; i++) {
    const w = list[i]
    const previous = merged[merged.length - 1]
    const next = list[i + 1]
    const short = w.expected < span / 2
    if (short && previous && previous.last === w.window - 1) fold(previous, w)
    else if (short && next && next.window === w.window + 1) fold(next, w)
    else merged.push(w)
  }
  return merged
}

function fold (into, w) {
  into.lost += w.lost
  into.expected += w.expected
  into.delaySum += w.delaySum
  into.delayCount += w.delayCount
  into.windows += w.windows
  into.window = Math.min(into.window, w.window)
  into.last = Math.max(into.last, w.last)
  if (w.at !== null && (into.at === null || +w.at < +into.at)) into.at = w.at
}

/**
 * R and MOS (G.107) of loss `loss` (0–1) at a mouth-to-ear delay of
 * `delayMs`: random loss (BurstR 1), or with the call's XR (`xr`), Ppl =
 * loss + its discard rate and its burst ratio, as each report with XR is
 * scored (CallQuality#figures).
 */
function rating (codec, loss, delayMs, xr) {
  const Ppl = (loss + (xr ? xr.discardRate : 0)) * 100
  const R = voipRFactor(codec.Ie, codec.Bpl, Math.min(100, Ppl), xr ? xr.burstR : 1, delayMs, delayMs, 2 * delayMs)
  return { mos: mosFromR(R), rFactor: R }
}

// The call's discard rate and burst ratio as its last XR VoIP Metrics said
// them (since the start of reception, RFC 3611 §4.7.1), or null without XR.
function xrOf (q) {
  const xr = q.xr
  if (!xr || typeof xr.discardRate !== 'number' || !(xr.burstR > 0)) return null
  return { discardRate: xr.discardRate, burstR: xr.burstR }
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

module.exports = { callAnalytics, sideQuality, minuteBands, minuteJitterMs, verdictProjection }
