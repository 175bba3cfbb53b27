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
      assert.equal(side.rttMs.count + estimated, doc.from.ID === String(call.a) && name === 'from' ? 11 : 12, `an RTT for every block with an LSR: ${name} ${JSON.stringify([side.rttMs, side.rttEstimatedMs, side.unscored, side.mos])}`)
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

test('calls by band per minute stay exact while workers are killed: each call once a minute, in one band', { timeout: 60000 }, async (t) => {
  const { collector, db, port } = await startTestCollector(t, rtcp, ['--stream-timeout', '30s'])
  const calls = Array.from({ length: 20 }, (_, i) => {
    const media = { lostPerRound: i % 2 ? 25 : 0, jitter: 160, delayMs: 20 }
    return { a: 0x7000 + 2 * i, b: 0x7001 + 2 * i, ab: media, ba: media }
  })
  await awayFromMinuteEnd(15000)
  const since = Date.now()
  const kills = killLoop(collector, 250)
  const { sent } = await sendCalls(port, calls, { rounds: 24 })
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
