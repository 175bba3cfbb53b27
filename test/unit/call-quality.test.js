'use strict'

// The call-quality figures report by report (collectors/rtcp/call-quality.js),
// what a stored side concludes (quality-analytics.js), the E-model against
// the independent oracle, and the master's call affinity.

const test = require('node:test')
const assert = require('node:assert/strict')
const { CallQuality } = require('../../collectors/rtcp/call-quality')
const { sideQuality } = require('../../collectors/rtcp/quality-analytics')
const { rFactor, mosFromR } = require('../../collectors/rtcp/e-model')
const { CallAffinity } = require('../../collectors/rtcp/call-affinity')
const { encodeRtcp, encodeReport } = require('../../collectors/rtcp/encoder')
const { decodeRtcp } = require('../../collectors/rtcp/decoder')
const { toStreamUpdates } = require('../../collectors/rtcp/to-stream-updates')
const { PacketCoalescer } = require('../../workers/storage/packet-coalescer')
const { compareWorst } = require('../../collectors/rtcp/quality-stats')
const { writeEntry, entrySize } = require('../../lib/shared/batch-codec')
const { oracleRatings } = require('../helpers/emodel-oracle')
const { block, scoredReport } = require('../helpers/scored-reports')

// MongoDB's order for what the statistics hold: null below numbers,
// Dates by time, documents field by field.
function bsonCompare (a, b) {
  if (a === b) return 0
  if (a === null || a === undefined) return -1
  if (b === null || b === undefined) return 1
  if (typeof a === 'object' && !(a instanceof Date)) {
    for (const key of Object.keys(a)) {
      const order = bsonCompare(a[key], b[key])
      if (order !== 0) return order
    }
    return 0
  }
  return +a < +b ? -1 : +a > +b ? 1 : 0
}

// What MongoDB does with one update's $min, $max, $inc and $set on `doc`.
function applyUpdate (doc, update) {
  const at = (path) => {
    const parts = path.split('.')
    let node = doc
    for (const part of parts.slice(0, -1)) node = node[part] || (node[part] = {})
    return [node, parts[parts.length - 1]]
  }
  for (const [path, value] of Object.entries(update.$min || {})) { const [n, k] = at(path); if (!(k in n) || bsonCompare(value, n[k]) < 0) n[k] = value }
  for (const [path, value] of Object.entries(update.$max || {})) { const [n, k] = at(path); if (!(k in n) || bsonCompare(value, n[k]) > 0) n[k] = value }
  for (const [path, value] of Object.entries(update.$inc || {})) { const [n, k] = at(path); n[k] = (n[k] || 0) + value }
  for (const [path, value] of Object.entries(update.$set || {})) { const [n, k] = at(path); n[k] = value }
  return doc
}

// A side document as one upsert per report (each its own flush) would leave it.
function storedSide (results) {
  const doc = {}
  for (const r of results) {
    const update = {}
    r.stats.addTo(update, 'side')
    applyUpdate(doc, update)
  }
  doc.side = doc.side || {}
  doc.side.packets = results.length
  Object.assign(doc.side, results[results.length - 1].fields)
  return doc.side
}

test('loss per interval is Δcumulative / Δhighest; the first report uses its fraction lost; the stream is first to last', () => {
  const q = new CallQuality()
  const r1 = q.report(1, block({ highestSeq: 1000, cumulativeLost: 10, fractionLost: 3 }), 0)
  const r2 = q.report(1, block({ highestSeq: 1500, cumulativeLost: 20 }), 5000)
  const r3 = q.report(1, block({ highestSeq: 2500, cumulativeLost: 70 }), 10000)
  assert.equal(r1.fields.lossRate, 3 / 256)
  assert.equal(r2.fields.lossRate, 10 / 500)
  assert.equal(r3.fields.lossRate, 50 / 1000)
  const side = sideQuality(storedSide([r1, r2, r3]))
  assert.equal(side.lossBasis, 'first-last')
  assert.equal(side.lossRate, 60 / 1500)
  assert.deepEqual([side.loss.min, side.loss.max, side.loss.count], [3 / 256, 0.05, 3])
})

test('the 16-bit sequence wrapping is carried by the extended highest sequence number', () => {
  const q = new CallQuality()
  q.report(1, block({ highestSeq: 65400, cumulativeLost: 0 }), 0)
  const r = q.report(1, block({ highestSeq: 65536 + 64, cumulativeLost: 4 }), 5000) // cycles 1, seq 64
  assert.equal(r.fields.lossRate, 4 / 200)
})

test('a restart of the numbering is counted and the stream loss sums the intervals', () => {
  const q = new CallQuality()
  const reports = [
    q.report(1, block({ highestSeq: 50000, cumulativeLost: 0 }), 0),
    q.report(1, block({ highestSeq: 51000, cumulativeLost: 10 }), 5000),
    q.report(1, block({ highestSeq: 200, cumulativeLost: 0, fractionLost: 0 }), 10000), // the reporter started over
    q.report(1, block({ highestSeq: 1200, cumulativeLost: 30 }), 15000)
  ]
  assert.equal(reports[2].stats.restarts, 1)
  const side = sideQuality(storedSide(reports))
  assert.equal(side.lossBasis, 'intervals')
  assert.equal(side.lossRate, 40 / 2000)
})

test('a long gap between reports whose lost count fits is an interval, not a restart', () => {
  const q = new CallQuality()
  const reports = [
    q.report(1, block({ highestSeq: 1000, cumulativeLost: 0 }), 0),
    q.report(1, block({ highestSeq: 1000 + 60000, cumulativeLost: 600 }), 60000) // a minute of 1,000 packets/s
  ]
  assert.equal(reports[1].stats.restarts, 0)
  assert.equal(reports[1].fields.lossRate, 0.01)
  assert.equal(sideQuality(storedSide(reports)).lossRate, 0.01)
})

test('a report arriving after a later one is skipped; the next interval counts from the later one', () => {
  const q = new CallQuality()
  q.report(1, block({ highestSeq: 1000, cumulativeLost: 0 }), 0)
  q.report(1, block({ highestSeq: 2000, cumulativeLost: 20 }), 10000)
  const late = q.report(1, block({ highestSeq: 1500, cumulativeLost: 5 }), 10001)
  assert.deepEqual(late, { skip: 'late' }, 'not stored: its raw figures would undo the newer report\'s')
  assert.equal(q.stats().unscored.late, 1)
  const next = q.report(1, block({ highestSeq: 2500, cumulativeLost: 30 }), 15000)
  assert.equal(next.fields.lossRate, 10 / 500)
})

// A datagram the network sent twice was a second report (flagged
// fraction-without-expected when it had loss); and a Δ lost below zero in an
// interval without media was counted again at the next report.
test('the side\'s last report again within 500 ms is a duplicate, not stored; the same figures 5 s later (on hold) are a report; excess received counted once', () => {
  const q = new CallQuality()
  const first = block({ highestSeq: 1000, cumulativeLost: 10, fractionLost: 25 })
  q.report(1, first, 0)
  assert.deepEqual(q.report(1, first, 200), { skip: 'duplicate' })
  assert.equal(q.stats().invalid['fraction-without-expected'], 0)
  assert.ok(q.report(1, first, 5000).stats, 'the same figures a report interval later: a report (no media)')
  q.report(1, block({ highestSeq: 1000, cumulativeLost: 8 }), 10000) // 2 counted lost came late
  const next = q.report(1, block({ highestSeq: 1500, cumulativeLost: 8 }), 15000)
  assert.equal(next.stats.excessReceived, 0, 'the 2 were counted at the report that showed them, not again')
  assert.deepEqual(q.stats().unscored, { 'no-media': 1, duplicate: 1, late: 0 })
})

test('reports coalesced in one flush make the same update as one upsert each: first and last, sums, the worst MOS record', () => {
  const q = new CallQuality()
  const coalescer = new PacketCoalescer(10)
  const results = []
  for (let i = 0; i < 4; i++) results.push(scoredReport(q, 1, { highestSeq: 1000 + i * 500, cumulativeLost: i * (i === 2 ? 60 : 5) }, i * 5000))
  const alone = storedSide(results) // before the coalescer merges into the first report's stats
  results.forEach((r, i) => coalescer.add({ fromID: '1', toID: '2', highestPacketNum: 1000 + i * 500, timestamp: i * 5000, fields: r.fields, stats: r.stats }))
  const [entry] = coalescer.take()
  const update = {}
  entry.segments[0].stats.addTo(update, 'side')
  const merged = applyUpdate({}, update).side
  assert.deepEqual(merged.quality, alone.quality)
  assert.deepEqual(merged.quality.loss.first, { seq: 1000, lost: 0 })
  assert.deepEqual(merged.quality.loss.last, { seq: 2500, lost: 15 })
  assert.equal(merged.quality.mos.count, 4)
  const mosValues = results.map((r) => r.fields.mos)
  assert.equal(merged.quality.worst.mos, Math.min(...mosValues))
  assert.ok(compareWorst({ mos: 3, rFactor: 9 }, { mos: 3.1, rFactor: 1 }) < 0)
  assert.ok(compareWorst({ mos: 3, rFactor: 9, loss: 0, jitterMs: 1, rttMs: null }, { mos: 3, rFactor: 9, loss: 0, jitterMs: 1, rttMs: 0 }) < 0, 'null sorts below numbers, as in BSON')
})

test('impossible values are not used, counted by reason and flagged on the side', () => {
  const q = new CallQuality()
  const cases = [
    [block({ highestSeq: 1000, cumulativeLost: 0x7fffff }), 'lost-exceeds-expected'],
    [block({ highestSeq: 1000, cumulativeLost: 0, fractionLost: 40 }), 'fraction-without-expected'], // nothing expected since the last
    [block({ highestSeq: 1100, cumulativeLost: 200 }), 'lost-exceeds-expected'], // 200 lost of 100
    [block({ highestSeq: 1200, jitter: 8000 * 11 }), 'jitter-out-of-range']
  ]
  q.report(1, block({ highestSeq: 1000 }), 0)
  for (const [b, reason] of cases) {
    const r = q.report(1, b, 1000)
    assert.equal(r.stats.invalid[reason], 1, reason)
    assert.equal(r.fields.mos, undefined, `${reason}: no MOS from it`)
    assert.equal(r.stats.mosCount, 0)
  }
  // An LSR naming no SR of the source seen here, while its SRs do come here.
  q.clocks.reference(2, 100, 0, 0, 0)
  const r = q.report(1, block({ highestSeq: 1300, lsr: 0x00650000 + 7 }), 1000)
  assert.equal(r.stats.invalid['lsr-unknown'], 1)
  assert.equal(r.fields.rttMs, null, 'no RTT from it')
  assert.deepEqual([r.fields.lossRate, r.fields.jitterMs], [0, 10], 'its loss and jitter stand')
  assert.deepEqual([r.fields.delayBasis, r.stats.mosCount, r.stats.mosEndpointsCount], ['endpoints', 0, 1], 'no round trip measured: scored on the endpoints\' delay, apart')
  assert.deepEqual(q.stats().invalid, { 'lost-exceeds-expected': 2, 'fraction-without-expected': 1, 'jitter-out-of-range': 1, 'lsr-unknown': 1, 'rtt-negative': 0 })
})

test('the clock rate comes from two SRs a second apart, else the configured one, else the default', () => {
  const q = new CallQuality({ clockRate: 8000 })
  assert.equal(q.report(1, block({ jitter: 480 }), 0).fields.jitterMs, 60)
  q.clocks.reference(2, 1000, 0, 5000, 0)
  q.clocks.reference(2, 1001, 0x80000000, 5000 + 72000, 1500) // 1.5 s later, 72,000 ticks: 48 kHz
  const r = q.report(1, block({ highestSeq: 1100, jitter: 480 }), 2000)
  assert.deepEqual([r.fields.clockRate, r.fields.clockRateSource, r.fields.jitterMs], [48000, 'sender-reports', 10])
  q.clocks.reference(3, 1000, 0, 0, 0)
  q.clocks.reference(3, 1002, 0, 12345, 2000) // 6,172 Hz: no usual rate
  assert.equal(q.report(1, block({ ssrc: 3 }), 3000).fields.clockRateSource, 'configured')
  assert.deepEqual(['clockRate', 'clockRateSource'].map((k) => new CallQuality().report(1, block({ ssrc: 3 }), 0).fields[k]), [8000, 'default'])
})

test('RTT: one direction doubled, then both directions summed; an XR DLRR stands in for a missing SR', () => {
  const q = new CallQuality()
  const ntp = (sec) => [sec, 0]
  const mid = (sec) => (sec & 0xffff) << 16
  // 2's SR at 1000 ms; 1 holds it 200 ms and its report arrives at 1230: 30 ms from 2 to 1.
  q.clocks.reference(2, ...ntp(7), 0, 1000)
  const one = q.report(1, block({ lsr: mid(7), dlsr: 0.2 * 65536 }), 1230)
  assert.ok(Math.abs(one.fields.rttMs - 60) < 1e-9)
  // 1's SR at 1300; 2's report at 1420 after holding it 70 ms: 50 ms from 1 to 2.
  q.clocks.reference(1, ...ntp(9), 0, 1300)
  const both = q.report(2, block({ ssrc: 1, lsr: mid(9), dlsr: 0.07 * 65536 }), 1420)
  assert.ok(Math.abs(both.fields.rttMs - 80) < 1e-9, `${both.fields.rttMs}`)
  // A receive-only end 5 sends XR RRTR; 6 answers with DLRR; 5's RR about 6 closes the loop.
  q.clocks.reference(5, ...ntp(20), undefined, 2000)
  q.delayReport(6, 5, mid(20), 0.1 * 65536, 2125) // 25 ms from 5 to 6
  q.clocks.reference(6, ...ntp(21), 0, 2200)
  const rr = q.report(5, block({ ssrc: 6, lsr: mid(21), dlsr: 0.05 * 65536 }), 2285) // 35 ms from 6 to 5
  assert.ok(Math.abs(rr.fields.rttMs - 60) < 1e-9, `${rr.fields.rttMs}`)
  // Arrival times that make the loop negative are refused.
  q.clocks.reference(8, ...ntp(30), 0, 3000)
  const bad = q.report(7, block({ ssrc: 8, lsr: mid(30), dlsr: 65536 }), 3100)
  assert.equal(bad.stats.invalid['rtt-negative'], 1)
})

test('XR VoIP Metrics: its loss, discard, burst and jitter buffer feed the MOS and are stored as sent', () => {
  const voip = Buffer.alloc(32)
  voip.writeUInt32BE(2, 0) // about SSRC 2
  voip[4] = 13 // loss 13/256
  voip[5] = 5 // discard 5/256
  voip.writeUInt16BE(100, 8) // burst 100 ms
  voip.writeUInt16BE(900, 10) // gap 900 ms
  voip.writeUInt16BE(40, 12) // round trip 40 ms
  voip[20] = 127 // R unavailable
  voip[22] = 38 // MOS-LQ 3.8
  voip.writeUInt16BE(60, 26) // nominal jitter buffer 60 ms
  const datagram = encodeRtcp([
    { type: 'RR', ssrc: 1, reports: [block({ highestSeq: 1000 })] },
    { type: 'XR', ssrc: 1, blocks: [{ bt: 7, data: voip }] }
  ])
  const q = new CallQuality()
  const [item] = toStreamUpdates(decodeRtcp(datagram), { address: '10.0.0.1' }, 0, q)
  const xr = item.fields.xr
  assert.equal(xr.lossRate, 13 / 256)
  assert.equal(xr.rFactor, null)
  assert.equal(xr.mosLq, 3.8)
  assert.equal(xr.burstR, 1 / (20 / 900 + 20 / 100))
  const T = 40 / 2 + 60 + 20 // XR's round trip (none of ours yet), its jitter buffer, the codec
  const R = rFactor({ Ie: 0, Bpl: 25.1, Ppl: 18 / 256 * 100, BurstR: xr.burstR, T, Ta: T, Tr: 2 * T })
  assert.equal(item.fields.rFactor, R)
  assert.equal(item.fields.mos, mosFromR(R))
})

test('per minute a call is in one band, that of its worst report that minute over both sides; unknown when none was scored', () => {
  const { minuteBands } = require('../../collectors/rtcp/quality-analytics')
  const q = new CallQuality()
  const at = Date.UTC(2026, 10, 24, 14, 5, 0)
  const ab = [
    scoredReport(q, 1, { highestSeq: 1000 }, at),
    scoredReport(q, 1, { highestSeq: 1500 }, at + 5000),
    scoredReport(q, 1, { highestSeq: 2000, cumulativeLost: 100 }, at + 10000), // 20 %: poor
    scoredReport(q, 1, { highestSeq: 2500, cumulativeLost: 100 }, at + 60000) // the next minute, clean
  ]
  const other = new CallQuality() // the other direction, in a worker that measured no round trip
  const ba = [
    other.report(2, block({ ssrc: 1, highestSeq: 700 }), at + 61000), // no RTT measured: on the endpoints' delay, not in the bands
    other.report(2, block({ ssrc: 1, highestSeq: 900 }), at + 125000)
  ]
  const doc = { from: { ID: '1', ...storedSide(ab) }, to: { ID: '2', ...storedSide(ba) } }
  assert.deepEqual(Object.fromEntries(minuteBands(doc)), { 202611241405: 'poor', 202611241406: 'good', 202611241407: 'unknown' })
})

test('the E-model agrees with the independent oracle (G.107, written apart) across loss, burst, codec and delay', () => {
  const inputs = []
  for (const [Ie, Bpl] of [[0, 25.1], [0, 4.3], [11, 19], [15, 16.1]]) {
    for (const Ppl of [0, 0.5, 2, 7, 20]) {
      for (const T of [10, 100, 180, 350]) inputs.push({ Ie, Bpl, Ppl, BurstR: Ppl > 5 ? 1.7 : 1, T, Ta: T, Tr: 2 * T })
    }
  }
  inputs.push({}) // all defaults: G.107 says 93.2
  const oracle = oracleRatings(inputs)
  inputs.forEach((input, i) => {
    const R = rFactor(input)
    assert.ok(Math.abs(R - oracle[i].R) < 1e-6, `R ${R} vs ${oracle[i].R} for ${JSON.stringify(input)}`)
    assert.ok(Math.abs(mosFromR(R) - oracle[i].MOS) < 1e-9)
  })
  assert.equal(Math.round(rFactor({}) * 10) / 10, 93.2)
  assert.deepEqual([mosFromR(-3), mosFromR(0), mosFromR(100), mosFromR(120)], [1, 1, 4.5, 4.5])
})

test('call affinity: both ends of a call, and a one-way sender\'s SRs, share a key; batch entries hash the same', () => {
  const affinity = new CallAffinity()
  const aboutB = encodeReport({ ssrc: 0xa, sender: { ntpSec: 1, ntpFrac: 0, rtpTimestamp: 0, packetCount: 0, octetCount: 0 }, reports: [block({ ssrc: 0xb })], cname: 'a' })
  const aboutA = encodeReport({ ssrc: 0xb, reports: [block({ ssrc: 0xa })], cname: 'b' })
  const key = affinity.keyOf(aboutA, 0, aboutA.length)
  assert.equal(affinity.keyOf(aboutB, 0, aboutB.length), key)
  const blockless = encodeReport({ ssrc: 0xa, sender: { ntpSec: 2, ntpFrac: 0, rtpTimestamp: 0, packetCount: 1, octetCount: 1 }, cname: 'a' })
  assert.equal(affinity.keyOf(blockless, 0, blockless.length), key, 'a sender without blocks follows the pair it was reported in')
  assert.equal(affinity.keyOf(Buffer.from('nope'), 0, 4), -1)
  // Reduced-size (RFC 5506): a lone NACK, SDES or BYE follows its SSRC's pair; RTP's payload types do not.
  const lone = (pt, ssrc) => { const b = Buffer.alloc(12); b[0] = 0x81; b[1] = pt; b.writeUInt16BE(2, 2); b.writeUInt32BE(ssrc, 4); return b }
  for (const pt of [205, 206, 202, 203]) assert.equal(affinity.keyOf(lone(pt, 0xa), 0, 12), key, `type ${pt}`)
  assert.equal(affinity.keyOf(lone(8, 0xa), 0, 12), -1, 'RTP (payload type 8)')
  const other = encodeReport({ ssrc: 0xc, reports: [block({ ssrc: 0xd })], cname: 'c' })
  assert.notEqual(affinity.keyOf(other, 0, other.length), key)
  // The same datagram inside a batch entry gives the same key.
  const RtcpCollector = require('../../collectors/rtcp').Collector
  const collector = Object.create(RtcpCollector.prototype)
  collector._affinity = affinity
  const buf = Buffer.alloc(entrySize(aboutA, '10.1.2.3') + 3)
  writeEntry(buf, 3, aboutA, '10.1.2.3', 4000)
  assert.equal(collector.entryKey(buf, 3), key)
  assert.equal(collector.key({ data: aboutA, rinfo: { address: '10.1.2.3', port: 4000 } }), key)
})

test('call affinity: what is not RTCP keeps the source\'s key on both paths', () => {
  const RtcpCollector = require('../../collectors/rtcp').Collector
  const collector = Object.create(RtcpCollector.prototype)
  collector._affinity = new CallAffinity()
  const junk = Buffer.from('not rtcp at all')
  const buf = Buffer.alloc(entrySize(junk, '10.9.8.7'))
  writeEntry(buf, 0, junk, '10.9.8.7', 5060)
  assert.equal(collector.key({ data: junk, rinfo: { address: '10.9.8.7', port: 5060 } }), collector.entryKey(buf, 0))
})

test('the per-report E-model path is the general one', () => {
  const { voipRFactor } = require('../../collectors/rtcp/e-model')
  for (const [Ie, Bpl, Ppl, BurstR, T] of [[0, 25.1, 0, 1, 20], [11, 19, 3.5, 1.4, 180], [15, 16.1, 12, 2, 420], [0, 4.3, 1, 1, 0.5]]) {
    assert.equal(voipRFactor(Ie, Bpl, Ppl, BurstR, T, T, 2 * T), rFactor({ Ie, Bpl, Ppl, BurstR, T, Ta: T, Tr: 2 * T }))
  }
})

test('an interval without media (hold, the call\'s end) gives no loss and no MOS: counted, out of the figures, the worst and the minute', () => {
  const q = new CallQuality()
  const at = Date.UTC(2026, 10, 24, 14, 5, 0)
  const results = [
    scoredReport(q, 1, { highestSeq: 1000, cumulativeLost: 0 }, at),
    scoredReport(q, 1, { highestSeq: 1250, cumulativeLost: 25 }, at + 5000), // 10 %
    scoredReport(q, 1, { highestSeq: 1250, cumulativeLost: 25 }, at + 10000), // on hold: nothing expected
    scoredReport(q, 1, { highestSeq: 1250, cumulativeLost: 25 }, at + 15000)
  ]
  for (const r of results.slice(2)) {
    assert.deepEqual([r.fields.lossRate, r.fields.mos], [null, null])
    assert.equal(r.stats.unscored['no-media'], 1)
    assert.equal(r.stats.lossCount + r.stats.mosCount + r.stats.jitterCount, 0)
    assert.equal(r.stats.minute, null, 'no per-minute bucket')
    assert.equal(r.stats.rttMsCount, 1, 'RTCP still flows: its round trip stands')
  }
  const side = sideQuality(storedSide(results))
  assert.deepEqual([side.mos.count, side.loss.count, side.unscored['no-media']], [2, 2, 2])
  assert.equal(side.minutes, undefined)
  const minutes = storedSide(results).quality.minutes
  assert.equal(Object.values(minutes)[0].reports, 2, 'the minute holds the two reports with media')
  assert.equal(side.worst.loss, 0.1, 'the worst is a report with media')
  assert.equal(q.stats().unscored['no-media'], 2)
})

test('the delay scored: a measured round trip, never a one-direction estimate; without one, the endpoints\' delay, labelled; the jitter buffer is the declared one', () => {
  const q = new CallQuality({ jitterBuffer: 60 })
  const first = q.report(1, block({ highestSeq: 1000 }), 500) // LSR 0: no SR echoed yet
  assert.deepEqual([first.fields.rttMs, first.fields.delayBasis, first.fields.delayMs], [null, 'endpoints', 60 + 20])
  assert.deepEqual([first.stats.mosCount, first.stats.mosEndpointsCount, first.stats.lossCount], [0, 1, 1], 'its loss stands; its MOS is kept apart')
  const mid = (sec) => (sec & 0xffff) << 16
  q.clocks.reference(2, 7, 0, undefined, 1000)
  const one = q.report(1, block({ highestSeq: 1250, lsr: mid(7), dlsr: 0.2 * 65536 }), 1230) // 30 ms from 2 to 1
  assert.equal(one.fields.rttBasis, 'one-direction')
  assert.deepEqual([one.stats.rttMsCount, one.stats.rttEstimatedMsCount], [0, 1], 'an estimate, not a measured RTT')
  assert.deepEqual([one.fields.delayBasis, one.fields.delayMs], ['endpoints', 60 + 20], 'the estimate scores nothing')
  assert.equal(one.stats.mosCount, 0, 'nor sets the MOS figures, the worst or a minute\'s band')
  assert.equal(one.stats.minute.reports, 0)
  q.clocks.reference(1, 9, 0, undefined, 1300)
  const both = q.report(2, block({ ssrc: 1, highestSeq: 1250, lsr: mid(9), dlsr: 0.07 * 65536 }), 1420) // 50 ms from 1 to 2
  assert.equal(both.fields.rttBasis, 'both-directions')
  assert.ok(Math.abs(both.fields.rttMs - 80) < 1e-9)
  assert.deepEqual([both.stats.rttMsCount, both.stats.rttEstimatedMsCount], [1, 0])
  // Mouth-to-ear: half the RTT + the jitter buffer (60) + G.711's 20 ms, whatever the jitter.
  assert.ok(Math.abs(both.fields.delayMs - (40 + 60 + 20)) < 1e-9)
  assert.equal(both.fields.delayBasis, 'measured')
  // Once measured, the call's round trip scores both directions, a later estimate or none.
  q.clocks.reference(2, 11, 0, undefined, 61000 + 1000)
  const later = q.report(1, block({ highestSeq: 4090, lsr: mid(11), dlsr: 0 }), 61000 + 1300) // 300 ms one way, the other end's term stale; 61.8 s of 20 ms packets since its first
  assert.equal(later.fields.rttBasis, 'one-direction')
  assert.deepEqual([later.fields.delayBasis, later.fields.delayMs], ['measured', 40 + 60 + 20], 'scored with the measured 80 ms, not the 600 ms estimate')
  assert.equal(later.stats.rttEstimatedMsCount, 1, 'the estimate is kept, apart')
  const noLsr = q.report(2, block({ ssrc: 1, highestSeq: 4090 }), 62000)
  assert.deepEqual([noLsr.fields.delayBasis, noLsr.stats.mosCount], ['measured', 1])
  assert.equal(new CallQuality().jitterBuffer, 50, 'the default: a typical adaptive buffer')
})

test('a round trip within the clocks\' precision below zero is zero, measured; further below it is refused', () => {
  const q = new CallQuality()
  const mid = (sec) => (sec & 0xffff) << 16
  q.clocks.reference(2, 7, 0, undefined, 1000)
  q.clocks.reference(1, 9, 0, undefined, 1000)
  q.report(2, block({ ssrc: 1, lsr: mid(9), dlsr: 0.0002 * 65536 }), 1000) // −0.2 ms from 1 to 2: a LAN
  const lan = q.report(1, block({ highestSeq: 1250, lsr: mid(7), dlsr: 0.0003 * 65536 }), 1000) // −0.3 ms back
  assert.deepEqual([lan.fields.rttMs, lan.fields.rttBasis, lan.fields.delayBasis], [0, 'both-directions', 'measured'])
  assert.equal(lan.stats.invalid, null, 'not an impossible value')
  assert.equal(lan.stats.rttMsCount, 1)
  q.clocks.reference(2, 8, 0, undefined, 2000)
  const wrong = q.report(1, block({ highestSeq: 1500, lsr: mid(8), dlsr: 0.5 * 65536 }), 2010) // −490 ms
  assert.deepEqual([wrong.fields.rttMs, wrong.stats.invalid['rtt-negative']], [null, 1])
})

test('per-report MOS agrees with the independent E-model on the same loss, measured RTT and declared jitter buffer, and without any RTT', () => {
  const inputs = []
  const results = []
  const mid = (sec) => (sec & 0xffff) << 16
  for (const buffer of [40, 50, 100]) {
    for (const [lossPct, oneWayMs] of [[0, 10], [1, 75], [5, 150], [20, 30]]) {
      const q = new CallQuality({ jitterBuffer: buffer })
      q.report(1, block({ highestSeq: 1000 }), 0)
      q.clocks.reference(2, 7, 0, undefined, 1000)
      q.clocks.reference(1, 9, 0, undefined, 1000)
      q.delayReport(2, 1, mid(9), 0, 1000 + oneWayMs) // 2 held 1's RRTR: one way measured by XR DLRR
      const r = q.report(1, block({ highestSeq: 2000, cumulativeLost: lossPct * 10, jitter: 8 * 30, lsr: mid(7), dlsr: 0 }), 1000 + oneWayMs)
      const T = oneWayMs + buffer + 20 // half the round trip, the buffer, G.711's packet
      inputs.push({ Ie: 0, Bpl: 25.1, Ppl: lossPct, T, Ta: T, Tr: 2 * T })
      results.push(r.fields)
      const alone = new CallQuality({ jitterBuffer: buffer })
      alone.report(1, block({ highestSeq: 1000 }), 0)
      const rr = alone.report(1, block({ highestSeq: 2000, cumulativeLost: lossPct * 10 }), 1000) // receiver reports only
      const E = buffer + 20
      inputs.push({ Ie: 0, Bpl: 25.1, Ppl: lossPct, T: E, Ta: E, Tr: 2 * E })
      results.push(rr.fields)
    }
  }
  const oracle = oracleRatings(inputs)
  results.forEach((fields, i) => {
    assert.equal(fields.delayBasis, i % 2 === 0 ? 'measured' : 'endpoints')
    assert.ok(Math.abs(fields.rFactor - oracle[i].R) < 1e-9, `R ${fields.rFactor} vs oracle ${oracle[i].R} for ${JSON.stringify(inputs[i])}`)
    assert.ok(Math.abs(fields.mos - oracle[i].MOS) < 1e-9)
  })
  assert.ok(results[results.length - 4].mos < 3.8, 'at 150 ms each way with a 100 ms buffer the call is not good')
})

test('the call verdict: a 2 s burst in a good minute leaves the call good, its worst 10 s window poor; both checked against the E-model oracle', () => {
  const q = new CallQuality()
  const { callAnalytics } = require('../../collectors/rtcp/quality-analytics')
  const results = []
  let lost = 0
  for (let i = 0; i <= 120; i++) { // a report every 0.5 s (25 packets of 20 ms) for 60 s
    if (i >= 60 && i < 64) lost += i % 2 === 0 ? 13 : 12 // 2 s at 50 %
    results.push(scoredReport(q, 1, { highestSeq: 10100 + 25 * i, cumulativeLost: lost }, 1000 + 500 * i)) // the burst: packets 11576–11675, in window 23
  }
  const side = storedSide(results)
  const a = callAnalytics({ from: { ID: '1', ...side }, to: null, startTime: new Date(0), endTime: new Date(61000) })
  const q1 = a.from
  assert.equal(q1.lossRate, 50 / 3000)
  assert.ok(q1.mos.min < 2, `the burst's own reports are very poor (${q1.mos.min})`)
  assert.equal(a.mos, q1.verdict.mos)
  assert.equal(a.band, 'good', `verdict ${a.mos}`)
  assert.equal(a.worstWindow.side, 'from')
  assert.deepEqual([a.worstWindow.lost, a.worstWindow.expected], [50, 500], 'the window holding the burst')
  assert.ok(a.worstWindow.mos < 3.6, `worst window ${a.worstWindow.mos} is poor`)
  const T = 20 + 50 + 20 // half the 40 ms RTT, the jitter buffer, G.711
  const oracle = oracleRatings([
    { Ie: 0, Bpl: 25.1, Ppl: 100 * 50 / 3000, T, Ta: T, Tr: 2 * T },
    { Ie: 0, Bpl: 25.1, Ppl: 10, T, Ta: T, Tr: 2 * T }
  ])
  assert.ok(Math.abs(a.mos - oracle[0].MOS) < 1e-9, `verdict ${a.mos} vs oracle ${oracle[0].MOS}`)
  assert.ok(Math.abs(a.worstWindow.mos - oracle[1].MOS) < 1e-9, `window ${a.worstWindow.mos} vs oracle ${oracle[1].MOS}`)
  // Windows are spans of media: a hold adds none; a short first or last one is merged with its neighbour.
  const windows = side.quality.spans['500'] // 10 s of G.711's 20 ms packets, as the reports' pace shows
  assert.ok(Object.values(windows).every((w) => w.expected <= 500))
  assert.equal(Object.values(windows).filter((w) => w.expected >= 250).length, 6)
})

test('windows hold 10 s of media each: a report\'s interval is apportioned over the windows it spans; a short window is merged, not dropped', () => {
  const q = new CallQuality()
  const { sideQuality } = require('../../collectors/rtcp/quality-analytics')
  // Reports every 5 s (250 packets) ending at 100, 350, 600, …: every other one spans a window's edge (…500).
  const lostBy = [0, 0, 0, 0, 90, 90, 90, 90, 90, 90] // 90 lost between packets 851 and 1100 (a 3 s burst there)
  const results = lostBy.map((lost, i) => scoredReport(q, 1, { highestSeq: 100 + 250 * i, cumulativeLost: lost }, 5000 * i))
  const side = storedSide(results)
  const windows = side.quality.spans['500']
  assert.deepEqual(Object.keys(side.quality.spans), ['500'], 'windows of 500 packets: 250 packets every 5 s are 20 ms each')
  assert.deepEqual(Object.keys(windows).map(Number), [0, 1, 2, 3, 4])
  assert.deepEqual(Object.values(windows).map((w) => w.expected), [399, 500, 500, 500, 351], 'each window holds its own packets')
  const lost = Object.values(windows).map((w) => w.lost)
  assert.ok(Math.abs(lost[1] - 90 * 149 / 250) < 1e-9 && Math.abs(lost[2] - 90 * 101 / 250) < 1e-9, `the burst's interval split by packets: ${lost}`)
  assert.ok(Math.abs(lost.reduce((a, b) => a + b, 0) - 90) < 1e-9, 'no loss lost or doubled')
  const worst = sideQuality(side).worstWindow
  assert.equal(worst.window, 1)
  const tail = sideQuality({ ...side, quality: { ...side.quality, spans: { 500: { ...windows, 5: { lost: 60, expected: 60, delaySum: 90, delayCount: 1, at: new Date(1) } } } } }).worstWindow
  assert.deepEqual([tail.window, tail.windows, tail.lost, tail.expected], [4, 2, 60, 411], 'a short last window with a burst is merged with the one before it, and is the worst')
})

// An outage of `lost` packets from `firstLost` on, and the window of `packetMs` packets holding it, from
// the packets alone: 10 s of media is 10000 / packetMs packets (rounded), windows by sequence number.
function outageWindow (packetMs, firstLost, lost) {
  const span = Math.round(10000 / packetMs)
  assert.equal(Math.floor(firstLost / span), Math.floor((firstLost + lost - 1) / span), 'the test\'s outage lies in one window')
  return { span, window: Math.floor(firstLost / span), lost, expected: span }
}

test('a 60 ms stream that only its receiver reports describe (no SR, no SDP): windows of 10 s of its packets as their pace shows, not the codec\'s 20 ms', () => {
  const q = new CallQuality()
  const { sideQuality } = require('../../collectors/rtcp/quality-analytics')
  // Reports every 4.8 s, 80 packets of 60 ms each; 33 lost between the 6th and 7th (packets 1503–1535).
  const results = []
  for (let r = 0; r <= 12; r++) results.push(scoredReport(q, 1, { highestSeq: 1102 + 80 * r, cumulativeLost: r >= 6 ? 33 : 0 }, 4800 * r))
  const side = sideQuality(storedSide(results))
  const truth = outageWindow(60, 1503, 33)
  assert.deepEqual([side.packetMs, side.packetSource], [60, 'receiver-reports'])
  const w = side.worstWindow
  assert.deepEqual([w.span, w.window, w.lost, w.expected], [truth.span, truth.window, truth.lost, truth.expected])
  // The E-model (independent) at that loss and its delay: half the 40 ms RTT, the 50 ms buffer, one 60 ms packet.
  const T = 20 + 50 + 60
  assert.equal(w.delayMs, T)
  const [oracle] = oracleRatings([{ Ie: 0, Bpl: 25.1, Ppl: 100 * 33 / 167, T, Ta: T, Tr: 2 * T }])
  assert.ok(Math.abs(w.mos - oracle.MOS) < 1e-9, `${w.mos} vs the E-model ${oracle.MOS}`)
})

test('L16/96000 over HEP with a=ptime:7.2 (1382-byte packets): a 10 s window is 1389 packets, from the SDP; windows booked before the SDP came are shared into them by sequence numbers', () => {
  const { parseSdp } = require('../../collectors/hep/sdp')
  const { sideQuality } = require('../../collectors/rtcp/quality-analytics')
  const q = new CallQuality()
  const results = []
  // Two reports before the call's SDP is known (the codec's 20 ms: windows of 500), then the SDP binds the stream.
  results.push(scoredReport(q, 1, { highestSeq: 10000 }, 0))
  results.push(scoredReport(q, 1, { highestSeq: 10100 }, 720))
  const sdp = ['v=0', 'o=- 1 1 IN IP4 10.0.0.2', 's=-', 'c=IN IP4 10.0.0.2', 't=0 0', 'm=audio 40000 RTP/AVP 96', 'a=rtpmap:96 L16/96000', 'a=ptime:7.2', ''].join('\r\n')
  q.clocks.announce('call', parseSdp(sdp), 'answer', 720)
  q.clocks.bindCall('call', { ip: '10.0.0.2', port: 40001 }, { ip: '10.0.0.1', port: 30001 }, [2], 720)
  // Then every 5 s (694 packets of 7.2 ms); 300 packets lost in the interval ending at 11488 (11389–11488 of window 8 after it).
  let seq = 10100
  let lost = 0
  for (let r = 1; r <= 8; r++) {
    seq += 694
    if (r === 2) lost += 300
    results.push(scoredReport(q, 1, { highestSeq: seq, cumulativeLost: lost }, 720 + 5000 * r))
  }
  const side = sideQuality(storedSide(results))
  assert.deepEqual([side.packetMs, side.packetSource, side.clockRate, side.clockRateSource], [7.2, 'sdp', 96000, 'sdp'])
  const w = side.worstWindow
  const span = Math.round(10000 / 7.2)
  assert.equal(w.span, span)
  assert.equal(span, 1389, '10 s of 7.2 ms packets, not 3.6 s (500 of them)')
  // The interval with the loss (10795–11488] is 694 packets over windows 7 (9723–11111) and 8 (11112–12500):
  // its loss apportioned by packets (a report says how many, not which). Window 7 is the worse: it holds
  // 317 of them in its 1111 packets of media (10001–11111: the call began in it), window 8 377 in 1389.
  assert.deepEqual([w.window, w.expected], [7, 11111 - 10000])
  assert.ok(Math.abs(w.lost - 300 * 317 / 694) < 1e-9, `${w.lost} lost, ${300 * 317 / 694} the interval's share`)
  // The packets before the SDP (10001–10100, booked in a window of 500: 10000–10499) are all in window 7, counted there.
  const stored = storedSide(results).quality.spans
  assert.deepEqual(Object.keys(stored).sort(), ['1389', '500'])
  const total = Object.values(stored).flatMap((windows) => Object.values(windows)).reduce((n, x) => n + x.expected, 0)
  assert.equal(total, seq - 10000, 'every packet expected once, whatever span it was booked in')
})

test('the endpoints-only ceiling docs/call-quality.md states (≤N, R) is the independent E-model\'s at the defaults, and the collector\'s', () => {
  const fs = require('node:fs')
  const path = require('node:path')
  const text = fs.readFileSync(path.join(__dirname, '../../docs/call-quality.md'), 'utf8')
  const m = /no loss reads `≤(\d\.\d\d)` \(R (\d+\.\d\d)\)/.exec(text)
  assert.ok(m, 'the doc states the ceiling')
  // No loss, no round trip: T = the 50 ms jitter buffer + one 20 ms packet of G.711 (no look-ahead).
  const T = 50 + 20
  const [oracle] = oracleRatings([{ Ie: 0, Bpl: 25.1, Ppl: 0, T, Ta: T, Tr: 2 * T }])
  assert.deepEqual([m[1], m[2]], [oracle.MOS.toFixed(2), oracle.R.toFixed(2)])
  const q = new CallQuality()
  q.report(1, block({ highestSeq: 1000 }), 0)
  const clean = q.report(1, block({ highestSeq: 1250 }), 5000)
  assert.equal(clean.fields.delayBasis, 'endpoints')
  assert.ok(Math.abs(clean.fields.mos - oracle.MOS) < 1e-9, `${clean.fields.mos} vs ${oracle.MOS}`)
})
