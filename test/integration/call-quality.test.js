'use strict'

// Call quality end to end: synthetic two-way calls whose loss, jitter,
// clock rate and delay the test sets (test/helpers/rtcp-calls.js) go
// through a real RtcpCollector (2 workers) into the real server; what the
// sweeper concludes when both ends said BYE must be what was sent, and each
// MOS what the independent E-model (test/oracles/emodel) gives for the same
// inputs.

const test = require('node:test')
const assert = require('node:assert/strict')
const rtcp = require('../../collectors/rtcp')
const { startTestCollector } = require('../helpers/collector')
const { sendCalls } = require('../helpers/rtcp-calls')
const { oracleRatings } = require('../helpers/emodel-oracle')
const { waitFor, streamDocs } = require('../helpers/streams')
const { CODECS } = require('../../collectors/rtcp/codecs')
const { JITTER_BUFFER_MS } = require('../../collectors/rtcp/constants')
const { callsByMinute } = require('../../app/commands/calls')
const { killLoop } = require('../helpers/kill-loop')
const { sideQuality } = require('../../collectors/rtcp/quality-analytics')

const G711 = CODECS['G.711']

// The collector's mouth-to-ear delay (docs/call-quality.md): half the RTT,
// the declared jitter buffer (default), the codec's delay.
function oracleInput ({ loss, rttMs }) {
  const T = rttMs / 2 + JITTER_BUFFER_MS + G711.delayMs
  return { Ie: G711.Ie, Bpl: G711.Bpl, Ppl: loss * 100, T, Ta: T, Tr: 2 * T }
}

// Calls counted per minute must all fall in one minute: wait out the end of one.
async function awayFromMinuteEnd (ms) {
  const left = 60000 - (Date.now() % 60000)
  if (left < ms) await new Promise((resolve) => setTimeout(resolve, left + 50))
}

test('loss, jitter in ms, RTT and MOS of closed calls are what the calls carried', { timeout: 60000 }, async (t) => {
  const { collector, db, port } = await startTestCollector(t, rtcp, ['--stream-timeout', '30s'])
  const calls = []
  for (let i = 0; i < 10; i++) {
    const lostPerRound = i < 5 ? 5 : 25 // 2 % and 10 % of 250
    const rate = i === 9 ? 16000 : 8000
    const media = { lostPerRound, rate, jitter: rate / 50, delayMs: 40 } // 20 ms of jitter
    calls.push({ a: 0x1000 + 2 * i, b: 0x1001 + 2 * i, ab: media, ba: media })
  }
  await awayFromMinuteEnd(8000)
  const minute = new Date()
  const { sent } = await sendCalls(port, calls)
  await waitFor(() => collector.summary().processed === sent, { what: 'every datagram processed' })
  await waitFor(async () => (await streamDocs(db, { active: false })).length === 10, { what: 'the sweeper closing 10 calls' })
  const docs = await streamDocs(db)
  assert.equal(docs.length, 10, 'one stream per call')

  const sides = []
  for (const doc of docs) {
    const call = calls.find((c) => [String(c.a), String(c.b)].includes(doc.from.ID))
    const expectedLoss = call.ab.lostPerRound / 250
    for (const name of ['from', 'to']) {
      const side = doc.analytics[name]
      assert.ok(side, `${name} side has figures`)
      assert.equal(side.reports, 12)
      assert.equal(side.lossBasis, 'first-last')
      assert.ok(Math.abs(side.lossRate - expectedLoss) < 1e-12, `loss ${side.lossRate} is ${expectedLoss} (Δcumulative / Δhighest)`)
      assert.equal(side.clockRate, call.ab.rate, 'clock rate inferred from the SRs')
      assert.equal(side.clockRateSource, 'sender-reports')
      assert.ok(Math.abs(side.jitterMs.min - 20) < 1e-9, `jitter ${side.jitterMs.min} ms`)
      // Before its second SR a sender's rate is not known: its first jitter
      // is kept in timestamp units and reads at the rate learned later (it
      // read twice as long for the 16 kHz sender, converted at 8000 Hz).
      assert.ok(Math.abs(side.jitterMs.max - 20) < 1e-9, `first jitter ${side.jitterMs.max} ms`)
      assert.ok(Math.abs(side.rttMs.avg - 80) < 10, `RTT ${side.rttMs.avg} ms ≈ 2 × 40`)
      // The first end's first block names no SR yet (LSR 0): no RTT for it.
      // Until the other end has echoed an SR too, an RTT is twice one direction: kept apart.
      const estimated = side.rttEstimatedMs ? side.rttEstimatedMs.count : 0
      // The first end is call.a, whichever side the stream document names it (the one whose report came first: ci4 B's).
      assert.equal(side.rttMs.count + estimated, doc[name].ID === String(call.a) ? 11 : 12, `an RTT for every block with an LSR: ${name} ${JSON.stringify([side.rttMs, side.rttEstimatedMs, side.unscored, side.mos])}`)
      assert.ok(estimated <= 1, `${estimated} one-direction estimates: only before both directions are known`)
      const onEndpoints = side.mosEndpoints ? side.mosEndpoints.count : 0
      assert.equal(side.mos.count + onEndpoints, 12, `a block before any measured RTT is scored on the endpoints' delay, apart: ${JSON.stringify([side.mos, side.mosEndpoints, side.loss, side.rttMs, side.rttEstimatedMs])}`)
      assert.ok(onEndpoints <= 2, `${onEndpoints} before the round trip was measured`)
      assert.deepEqual(side.invalid, {})
      sides.push(side)
    }
  }
  // Every worst-MOS record is what G.107 gives for its own loss, jitter and RTT.
  const oracle = oracleRatings(sides.map((side) => oracleInput(side.worst)))
  sides.forEach((side, i) => {
    assert.ok(Math.abs(side.worst.mos - oracle[i].MOS) < 1e-6, `MOS ${side.worst.mos} = oracle ${oracle[i].MOS}`)
    assert.ok(Math.abs(side.worst.rFactor - oracle[i].R) < 1e-6)
    assert.ok(side.mos.min <= side.mos.avg && side.mos.avg <= side.mos.max)
  })
  const bands = docs.map((doc) => doc.analytics.band)
  assert.deepEqual(bands.filter((b) => b === 'good').length, 5, `2 % calls are good: ${bands}`)
  assert.deepEqual(bands.filter((b) => b === 'poor').length, 5, `10 % calls are poor: ${bands}`)

  // Per minute, each call once, in the band of its worst report that minute.
  const minutes = await callsByMinute(db.collection('streams'), { since: minute.getTime() })
  const total = minutes.reduce((n, m) => n + m.good + m.fair + m.poor + m.unknown, 0)
  assert.equal(total, 10 * minutes.length, `each call once a minute: ${JSON.stringify(minutes)}`)
  const first = minutes[0]
  assert.equal(first.minute, minute.toISOString().slice(0, 16).replace(/[-T:]/g, ''))
  assert.equal(first.poor, 5, 'the 10 % calls are poor')
  assert.equal(first.good + first.fair, 5, JSON.stringify(first))
  await collector.stop()
})

test('calls by band per minute stay exact while workers are killed: each call once a minute, in one band', { timeout: 120000 }, async (t) => {
  const { collector, db, port } = await startTestCollector(t, rtcp, ['--stream-timeout', '30s'])
  const calls = Array.from({ length: 20 }, (_, i) => {
    const media = { lostPerRound: i % 2 ? 25 : 0, jitter: 160, delayMs: 20 }
    return { a: 0x7000 + 2 * i, b: 0x7001 + 2 * i, ab: media, ba: media }
  })
  await awayFromMinuteEnd(40000)
  const since = Date.now()
  const kills = killLoop(collector, 250)
  // A kill waits for the workers to be up and the last victim's batches
  // stored: on a loaded machine that outlasted the 3 s of calls (a CI run
  // killed one). Rounds 8 and 16 wait for the first and second kill.
  const beforeRound = (round) => round % 8 || !round ? null : waitFor(() => kills.killed() >= round / 8, { what: `kill ${round / 8} during the calls`, timeout: 15000 })
  const { sent } = await sendCalls(port, calls, { rounds: 24, beforeRound })
  const killed = await kills.stop()
  await waitFor(() => collector.summary().processed === sent, { what: 'every datagram processed' })
  await collector.stop()
  assert.ok(killed >= 2, `${killed} workers killed during the calls`)
  const minutes = await callsByMinute(db.collection('streams'), { since })
  assert.equal(minutes.length, 1, JSON.stringify(minutes))
  const [m] = minutes
  assert.equal(m.good + m.fair + m.poor + m.unknown, calls.length, `each call once: ${JSON.stringify(m)}`)
  assert.equal(m.poor, 10, 'the 10 % calls are poor that minute')
})

// The 10 s window a listener would judge, worked out from the packets the test sent (not the
// collector's code): windows of 10 s of media (10000 / packetMs packets) by sequence number, and the
// one holding the lost packets.
function windowOfLoss ({ packetMs, firstLostSeq, lost }) {
  const span = Math.round(10000 / packetMs)
  const index = Math.floor(firstLostSeq / span)
  assert.equal(Math.floor((firstLostSeq + lost - 1) / span), index, 'the test\'s outage lies in one window')
  return { span, index, lost, expected: span }
}

test('a 60 ms PCMA call: its 10 s windows are 167 packets as its SRs show, its packetization delay 60 ms; the worst window and verdict are the E-model\'s at the loss the packets sent carry', { timeout: 60000 }, async (t) => {
  const { collector, db, port } = await startTestCollector(t, rtcp, ['--stream-timeout', '30s'])
  // 13 rounds of 80 packets of 60 ms (4.8 s each, 62.4 s of media); in round 6 a 2 s outage: 33 packets.
  // The first sequence number puts round 6's packets in one window of 167 (1503–1669).
  const lostPerRound = Array.from({ length: 13 }, (_, round) => round === 6 ? 33 : 0)
  const calls = [{ a: 0x2000, b: 0x2001, ab: { lostPerRound, jitter: 80, delayMs: 20 }, ba: { lostPerRound: 0, jitter: 80, delayMs: 20 } }]
  const options = { rounds: 13, packetsPerRound: 80, packetMs: 60, firstSeq: 1023 }
  const { sent } = await sendCalls(port, calls, options)
  await waitFor(() => collector.summary().processed === sent, { what: 'every datagram processed' })
  await collector.stop()
  const [doc] = await streamDocs(db)
  const side = sideQuality(doc.from.ID === String(0x2001) ? doc.from : doc.to) // B, about A's media
  const truth = windowOfLoss({ packetMs: 60, firstLostSeq: options.firstSeq + 6 * 80 + 1, lost: 33 })
  assert.deepEqual([side.packetMs, side.packetSource], [60, 'sender-reports'], 'the packet interval A\'s SRs show (Δ RTP time / Δ packets)')
  const w = side.worstWindow
  assert.deepEqual([w.span, w.window, w.lost, w.expected, w.packetMs, w.packetSource], [truth.span, truth.index, truth.lost, truth.expected, 60, 'sender-reports'], `worst window ${JSON.stringify(w)}`)
  // G.711's delay is one packet (no look-ahead): 60 ms here, with the default 50 ms jitter buffer; only
  // the first report, before A's second SR, is scored with the codec's 20 ms (on the endpoints' delay: no RTT yet).
  assert.equal(side.endpointsMs.max, JITTER_BUFFER_MS + 60)
  assert.ok(Math.abs(side.endpointsMs.avg * side.endpointsMs.count - (JITTER_BUFFER_MS + 20) - (side.endpointsMs.count - 1) * (JITTER_BUFFER_MS + 60)) < 1e-9, JSON.stringify(side.endpointsMs))
  const rttHalf = side.verdict.delayMs - JITTER_BUFFER_MS - 60
  assert.ok(Math.abs(rttHalf - 20) < 10, `the verdict's delay holds half the measured RTT (${rttHalf} ms ≈ 20)`)
  const input = (loss, T) => ({ Ie: G711.Ie, Bpl: G711.Bpl, Ppl: loss * 100, T, Ta: T, Tr: 2 * T })
  const [window, verdict] = oracleRatings([input(truth.lost / truth.expected, w.delayMs), input(33 / (12 * 80), side.verdict.delayMs)])
  assert.ok(Math.abs(w.mos - window.MOS) < 1e-9, `window MOS ${w.mos}, the E-model ${window.MOS}`)
  assert.ok(w.mos < 3.6, `33 of 167 packets lost in 10 s is poor (${w.mos})`)
  assert.ok(Math.abs(side.verdict.mos - verdict.MOS) < 1e-9, `verdict ${side.verdict.mos}, the E-model ${verdict.MOS}`)
  t.diagnostic(`worst window ${w.lost}/${w.expected} of ${w.packetMs} ms packets: MOS ${w.mos.toFixed(3)}; verdict ${side.verdict.mos.toFixed(3)} at ${side.verdict.delayMs.toFixed(1)} ms`)
})

test('a call whose reports carry XR VoIP Metrics: the verdict and worst window take its discard rate and burst ratio, as each report does, so the call is no better than its reports', { timeout: 60000 }, async (t) => {
  const { collector, db, port } = await startTestCollector(t, rtcp, ['--stream-timeout', '30s'])
  const xr = { loss: 5 / 256, discard: 10 / 256, burstMs: 100, gapMs: 900 }
  const calls = [{ a: 0x3000, b: 0x3001, ab: { lostPerRound: 5, jitter: 80, delayMs: 20, xr }, ba: { lostPerRound: 0, jitter: 80, delayMs: 20 } }]
  const { sent } = await sendCalls(port, calls)
  await waitFor(() => collector.summary().processed === sent, { what: 'every datagram processed' })
  await collector.stop()
  const [doc] = await streamDocs(db)
  const side = sideQuality(doc.from.ID === String(0x3001) ? doc.from : doc.to)
  // G.107's burst ratio from XR's mean burst and gap lengths in 20 ms packets (1 / (1/gap + 1/burst)).
  const burstR = 1 / (20 / xr.gapMs + 20 / xr.burstMs)
  const input = (loss, T) => ({ Ie: G711.Ie, Bpl: G711.Bpl, Ppl: (loss + xr.discard) * 100, BurstR: burstR, T, Ta: T, Tr: 2 * T })
  const w = side.worstWindow
  const [verdict, window] = oracleRatings([input(5 / 250, side.verdict.delayMs), input(w.loss, w.delayMs)])
  assert.deepEqual([side.verdict.discardRate, side.verdict.burstR], [xr.discard, burstR])
  assert.ok(Math.abs(side.verdict.mos - verdict.MOS) < 1e-9, `verdict ${side.verdict.mos}, the E-model ${verdict.MOS}`)
  assert.ok(Math.abs(w.mos - window.MOS) < 1e-9, `window ${w.mos}, the E-model ${window.MOS}`)
  assert.ok(side.verdict.mos <= side.mos.min + 1e-9, `the call (${side.verdict.mos}) is no better than its worst report (${side.mos.min})`)
  t.diagnostic(`verdict ${side.verdict.mos.toFixed(3)}, reports ${side.mos.min.toFixed(3)}–${side.mos.max.toFixed(3)}, worst window ${w.mos.toFixed(3)}`)
})
