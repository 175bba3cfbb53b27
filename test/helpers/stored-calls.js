'use strict'

// Stream documents shaped like the ones the RTCP collector stores (both
// sides' `quality` with its spreads, per-minute buckets and 10 s windows,
// as call-quality.js writes them), made directly: for the calls view's
// tests and benchmark, which need many calls in a window without sending
// their reports. callAnalytics reads them as it reads stored ones.

const { ObjectId } = require('mongodb')
const { minuteKey } = require('../../collectors/rtcp/call-quality')

const PACKETS_PER_SECOND = 50 // G.711 at 20 ms
const REPORT_EVERY_S = 5

/**
 * One call of `durationS` seconds ending at `endTime` (ms), both ends
 * reporting every 5 s, `loss` (0–1) of the media each way.
 * @param {{ n: number, endTime: number, durationS?: number, loss?: number, active?: boolean }} call
 *   n: makes the endpoints (SSRCs 2n and 2n + 1) and pairKey unique
 */
function storedCall ({ n, endTime, durationS = 120, loss = 0, active = false }) {
  const startTime = endTime - durationS * 1000
  const [a, b] = [String(2 * n), String(2 * n + 1)]
  const pairKey = `5:${a}|${b}`
  return {
    _id: new ObjectId(),
    pairKey,
    openKey: active ? pairKey : `${pairKey}#${startTime}`,
    flowKey: `5:${a}>${b}`,
    active,
    ...(active ? {} : { endedAt: new Date(endTime + 30000), endReason: 'bye' }),
    startTime: new Date(startTime),
    endTime: new Date(endTime),
    metadata: { lastUpdated: new Date(endTime), packets: 2 * Math.floor(durationS / REPORT_EVERY_S) },
    from: side(a, { startTime, durationS, loss }),
    to: side(b, { startTime, durationS, loss })
  }
}

function side (ID, { startTime, durationS, loss }) {
  const reports = Math.max(1, Math.floor(durationS / REPORT_EVERY_S))
  const expected = durationS * PACKETS_PER_SECOND
  const lost = Math.round(expected * loss)
  const mos = 4.4 - 8 * loss
  const spread = (value) => ({ min: value, max: value, sum: value * reports, count: reports })
  const minutes = {}
  for (let s = 0; s < durationS; s += 60) {
    const n = Math.min(reports, 60 / REPORT_EVERY_S)
    minutes[minuteKey(startTime + s * 1000)] = { lossMax: loss, jitterMsMax: 20, rttMsMax: 40, mosMin: mos, mosSum: mos * n, reports: n }
  }
  const windows = {}
  for (let w = 0; w < durationS / 10; w++) {
    windows[w] = { at: new Date(startTime + (w + 1) * 10000), lost: Math.round(500 * loss), expected: 500, delaySum: 180, delayCount: 2 }
  }
  return {
    ID,
    IP_ADDRESS: '10.0.0.1',
    cname: `end-${ID}@bench`,
    highestPacketNum: 1000 + expected,
    firstPacketNum: 1000,
    packets: reports,
    codec: 'G.711',
    clockRate: 8000,
    clockRateSource: 'sender-reports',
    quality: {
      loss: { first: { seq: 1000, lost: 0 }, last: { seq: 1000 + expected, lost }, ...spread(loss), intervalLost: lost, intervalExpected: expected },
      jitterMs: spread(20),
      rttMs: spread(40),
      delayMs: spread(90),
      mos: spread(mos),
      minutes,
      worst: { mos, rFactor: 80, loss, jitterMs: 20, rttMs: 40, delayMs: 90, at: new Date(startTime) },
      windows
    }
  }
}

module.exports = { storedCall }
