'use strict'

// What a call's stored statistics (call-quality.js, written per report)
// conclude: read by the sweeper when a stream ends (its `analytics`) and by
// `collector calls` for calls still open. Runs wherever a stream document
// is read; holds no state.

const { bandOf } = require('./call-quality')

/**
 * The analytics of an RTCP stream: its duration, reports stored, each
 * side's quality, and the call's worst MOS and its band.
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
  const mosMin = mins.length > 0 ? Math.min(...mins) : null
  const analytics = {
    durationMs: start !== null && end !== null ? end - start : 0,
    reports: (doc.metadata && doc.metadata.packets) || 0,
    from,
    to,
    mosMin,
    band: bandOf(mosMin)
  }
  if (endedAt !== undefined) analytics.endedAt = endedAt
  return analytics
}

/**
 * One side's figures: loss over the stream (RFC 3550 A.3) from its first
 * and last reports, or, when the reporter restarted its numbering, the sum
 * of the intervals; min / avg / max of the per-report loss, jitter (ms),
 * RTT (ms) and MOS; the values at the worst MOS; reports not used, by
 * reason. Null for a side that sent no report block.
 */
function sideQuality (side) {
  const q = side && side.quality
  if (!q) return null
  return {
    reports: side.packets || 0,
    ...overallLoss(q.loss),
    loss: spread(q.loss),
    jitterMs: spread(q.jitterMs),
    rttMs: spread(q.rttMs),
    mos: spread(q.mos),
    worst: q.worst || null,
    clockRate: side.clockRate === undefined ? null : side.clockRate,
    clockRateSource: side.clockRateSource || null,
    invalid: q.invalid || {}
  }
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

module.exports = { callAnalytics, sideQuality }
