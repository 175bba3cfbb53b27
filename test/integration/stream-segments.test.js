'use strict'

// An always-on stream (a trunk monitor, a bridge: one SSRC pair for days)
// must not grow one document without bound: its per-minute buckets and
// windows added about 1 KB a minute (benchmarks/stream-growth.js), so such
// a stream reached MongoDB's 16 MiB after about 11 days and every update of
// its pair was refused from then on. A stream whose reports span
// --stream-segment is closed as a segment and continues in the next
// document. Driven through a real hep collector (2 workers) with capture
// times (the stream's own times) stepping faster than real time, into the
// real server.

const test = require('node:test')
const assert = require('node:assert/strict')
const dgram = require('node:dgram')
const HEPjs = require('hep-js')
const { BSON } = require('mongodb')
const hep = require('../../collectors/hep')
const { startTestCollector } = require('../helpers/collector')
const { waitFor } = require('../helpers/streams')
const { callAnalytics } = require('../../collectors/rtcp/quality-analytics')
const { pairKey } = require('../../workers/storage/stream-key')
const { callsByMinute, worstCalls } = require('../../app/commands/calls')
const { minuteKey } = require('../../collectors/rtcp/minute-key')
const { killLoop } = require('../helpers/kill-loop')

const T0 = Date.UTC(2026, 10, 20, 0, 0, 0)
const A = 0x2a2a0001
const B = 0x2a2a0002
const ROUNDS_PER_PHASE = 6 // a report from each end every 5 s: 25 s of stream, past the 22 s bound (20 s at the round before)
const PHASES = 3
const LOST_PER_ROUND = [5, 40, 10] // of 250 packets: 2 %, 16 % (a poor phase), 4 %

function rcinfo (at, src, dst) {
  return { protocolFamily: 2, protocol: 17, srcIp: src[0], srcPort: src[1], dstIp: dst[0], dstPort: dst[1], timeSeconds: Math.floor(at / 1000), timeUseconds: (at % 1000) * 1000, payloadType: 5, captureId: 3, correlation_id: 'bridge@segments.example.com' }
}

// Round r: each end's RR about the other, 250 packets more, `lost` lost in all so far (the pair A + 2k, B + 2k).
function round (r, lost, k = 0) {
  const at = T0 + 5000 * r
  const block = (peer) => ({ source_ssrc: peer, highest_seq_no: 1000 + 250 * r, fraction_lost: 0, ia_jitter: 40, packets_lost: lost, lsr: 0, dlsr: 0 })
  const [a, b] = [A + 2 * k, B + 2 * k]
  return [
    HEPjs.encapsulate(JSON.stringify({ ssrc: a, type: 201, report_count: 1, report_blocks: [block(b)] }), rcinfo(at, ['10.2.0.1', 30000 + 2 * k], ['10.2.0.2', 40000 + 2 * k])),
    HEPjs.encapsulate(JSON.stringify({ ssrc: b, type: 201, report_count: 1, report_blocks: [block(a)] }), rcinfo(at + 40, ['10.2.0.2', 40000 + 2 * k], ['10.2.0.1', 30000 + 2 * k]))
  ]
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

test('a stream spanning --stream-segment continues in a new document: each segment bounded, every report stored once, each segment\'s loss and worst window its own', { timeout: 120000 }, async (t) => {
  const { collector, db, port } = await startTestCollector(t, hep, ['--stream-segment', '22s', '--stream-timeout', '10m'])
  const socket = dgram.createSocket('udp4')
  t.after(() => socket.close())
  const streams = db.collection('streams')
  const pair = pairKey(String(A), String(B))
  let sent = 0
  let lost = 0
  for (let phase = 0, r = 0; phase < PHASES; phase++) {
    for (let i = 0; i < ROUNDS_PER_PHASE; i++, r++) {
      if (r > 0) lost += LOST_PER_ROUND[phase] // the interval ending at round r is this phase's
      for (const packet of round(r, lost)) await new Promise((resolve, reject) => socket.send(packet, port, '127.0.0.1', (err) => err ? reject(err) : resolve()))
      sent += 2
    }
    await waitFor(() => collector.summary().processed === sent, { what: `phase ${phase}'s reports processed` })
    if (phase < PHASES - 1) {
      await waitFor(async () => await streams.countDocuments({ pairKey: pair, endReason: 'segment' }) === phase + 1, { what: `segment ${phase} closed by the sweeper`, timeout: 30000 })
    }
  }
  const docs = (await streams.find({ pairKey: pair }).toArray()).sort((a, b) => a.startTime - b.startTime)
  assert.equal(docs.length, PHASES, `one document per segment, not one growing: ${docs.map((d) => `${d.startTime.toISOString()}..${d.endTime.toISOString()}`)}`)
  assert.deepEqual(docs.map((d) => [d.active, d.endReason]), [[false, 'segment'], [false, 'segment'], [true, undefined]])
  assert.deepEqual(docs.map((d) => d.stream_ended), [{ from: false, to: false }, { from: false, to: false }, { from: false, to: false }], 'a segment is not the call\'s end')
  for (const [i, doc] of docs.entries()) {
    assert.equal(doc.endTime - doc.startTime, 5000 * (ROUNDS_PER_PHASE - 1) + 40, `segment ${i} spans its own phase only`)
    assert.ok(BSON.calculateObjectSize(doc) < 12000, `segment ${i} holds its own minutes and windows only: ${BSON.calculateObjectSize(doc)} B`)
  }
  // Every report stored once, in exactly one segment, over the 2 workers.
  assert.equal(docs.reduce((n, d) => n + d.metadata.packets, 0), sent)
  assert.deepEqual(docs.map((d) => [d.from.packets, d.to.packets]), docs.map(() => [ROUNDS_PER_PHASE, ROUNDS_PER_PHASE]))
  // Each segment's figures are its own: its loss (first to last report within it) and its worst window.
  for (const [i, doc] of docs.entries()) {
    const analytics = i < PHASES - 1 ? doc.analytics : callAnalytics(doc)
    assert.equal(analytics.reports, 2 * ROUNDS_PER_PHASE)
    for (const side of ['from', 'to']) {
      const q = analytics[side]
      assert.equal(q.lossBasis, 'first-last')
      assert.ok(Math.abs(q.lossRate - LOST_PER_ROUND[i] / 250) < 1e-12, `segment ${i} ${side}: loss ${q.lossRate}, sent ${LOST_PER_ROUND[i] / 250}`)
      assert.ok(Math.abs(q.worstWindow.loss - LOST_PER_ROUND[i] / 250) < 1e-9, `segment ${i} ${side}: worst window ${JSON.stringify(q.worstWindow)}`)
    }
  }
  assert.equal(docs[1].analytics.band, 'poor', 'the poor phase is its segment\'s verdict')
  assert.equal(docs[0].analytics.band, 'good')
  // The calls per minute count the pair once a minute, also in the minute
  // two of its segments share (00:00 holds segments 0 and 1).
  const minutes = await callsByMinute(streams, { since: T0, until: T0 + 120000 })
  const total = (m) => m.good + m.fair + m.poor + m.unknown
  assert.deepEqual(minutes.map((m) => [m.minute, total(m)]), [[minuteKey(T0), 1], [minuteKey(T0 + 60000), 1]], JSON.stringify(minutes))
  // `collector calls` ranks the segments with their own verdicts: the poor one first.
  const { shown } = await worstCalls(streams, { since: T0, worst: 3 })
  assert.equal(shown.length, PHASES, 'each segment is a row')
  assert.deepEqual([String(shown[0].doc._id), shown[0].analytics.band], [String(docs[1]._id), 'poor'])
})

test('segments under worker kills: every report of 20 always-on pairs stored once, in exactly one segment', { timeout: 180000 }, async (t) => {
  const PAIRS = 20
  const { collector, db, port } = await startTestCollector(t, hep, ['--stream-segment', '22s', '--stream-timeout', '10m'])
  const socket = dgram.createSocket('udp4')
  t.after(() => socket.close())
  const streams = db.collection('streams')
  const kills = killLoop(collector, 300)
  t.after(() => kills.stop())
  let sent = 0
  for (let phase = 0, r = 0; phase < PHASES; phase++) {
    for (let i = 0; i < ROUNDS_PER_PHASE; i++, r++) {
      for (let k = 0; k < PAIRS; k++) {
        for (const packet of round(r, 0, k)) await new Promise((resolve, reject) => socket.send(packet, port, '127.0.0.1', (err) => err ? reject(err) : resolve()))
        sent += 2
        await sleep(5)
      }
    }
    await waitFor(() => collector.summary().processed === sent, { what: `phase ${phase}'s reports processed`, timeout: 60000 })
    if (phase < PHASES - 1) {
      await waitFor(async () => await streams.countDocuments({ endReason: 'segment' }) === PAIRS * (phase + 1), { what: `segment ${phase} of each pair closed`, timeout: 60000 })
    }
  }
  const killed = await kills.stop(2)
  await waitFor(() => collector.summary().processed === sent, { what: 'every report processed' })
  const docs = await streams.find({}).toArray()
  assert.ok(killed >= 2, `${killed} workers killed`)
  assert.equal(docs.length, PAIRS * PHASES, 'one document per pair and segment')
  assert.equal(docs.reduce((n, d) => n + d.metadata.packets, 0), sent, 'every report stored once')
  for (const doc of docs) assert.deepEqual([doc.from.packets, doc.to.packets], [ROUNDS_PER_PHASE, ROUNDS_PER_PHASE], `${doc.pairKey} from ${doc.startTime.toISOString()}`)
})
