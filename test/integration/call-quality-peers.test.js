'use strict'

// Call quality from real RTP peers: GStreamer endpoints (rtpbin) in two-way
// G.711 calls, GStreamer's netsim dropping 0 %, 2 % and 10 % of the media and
// delaying it 50 ms each way, every RTCP datagram also sent to the RTCP
// collector (test/helpers/gst-call.js). What the collector stores is checked
// against oracles that are not ours: the RTP on the wire as tshark dissects
// it (loss over the same sequence window), GStreamer's own statistics
// (jitter it reported, the RTT it measured), and the independent E-model.

const test = require('node:test')
const assert = require('node:assert/strict')
const rtcp = require('../../collectors/rtcp')
const { requireGstCall, callsIntoCollector, tsharkRtpSequences, tsharkRtpStreams, tsharkReportBlocks, wireLost } = require('../helpers/gst-call')
const { getTestMongo } = require('../helpers/mongo')
const { runCli } = require('../helpers/cli')
const { sideQuality } = require('../../collectors/rtcp/quality-analytics')
const { oracleRatings } = require('../helpers/emodel-oracle')
const { waitFor, streamDocs } = require('../helpers/streams')
const { CODECS } = require('../../collectors/rtcp/codecs')
const { JITTER_BUFFER_MS } = require('../../collectors/rtcp/constants')

const DELAY_MS = 50
const CALLS = [{ drop: 0, ssrcA: 0x11110001, ssrcB: 0x11110002 }, { drop: 0.02, ssrcA: 0x22220001, ssrcB: 0x22220002 }, { drop: 0.1, ssrcA: 0x33330001, ssrcB: 0x33330002 }]

test('real GStreamer calls through netsim: stored loss, jitter, RTT and MOS agree with tshark, GStreamer and the E-model', { timeout: 120000 }, async (t) => {
  await requireGstCall()
  const calls = CALLS.map((call, i) => ({ name: `call${i}`, drop: call.drop, delayMs: DELAY_MS, durationMs: 6000, probation: 0, ssrcA: call.ssrcA, ssrcB: call.ssrcB }))
  const { collector, db, truths, pcapOf } = await callsIntoCollector(t, rtcp, calls)
  await collector.stop()
  const docs = await streamDocs(db)
  assert.equal(docs.length, CALLS.length, 'one stream per call')

  const checked = []
  for (const [i, truth] of truths.entries()) {
    const sequences = await tsharkRtpSequences(pcapOf(calls[i]))
    const streams = await tsharkRtpStreams(pcapOf(calls[i]))
    for (const receiver of truth.receivers) {
      const doc = docs.find((d) => [d.from.ID, d.to.ID].includes(String(receiver.receiverSsrc)))
      const side = doc.from.ID === String(receiver.receiverSsrc) ? doc.from : doc.to
      const q = sideQuality(side)
      const what = `call ${i} (drop ${CALLS[i].drop}), ${receiver.receiver} about ${receiver.sender}`
      // Loss: the window of the reports the collector stored, on the wire.
      const { first, last } = side.quality.loss
      const lost = wireLost(sequences.get(receiver.senderSsrc), first.seq, last.seq)
      assert.ok(Math.abs((last.lost - first.lost) - lost) <= 1, `${what}: ${last.lost - first.lost} lost in the reports' window, ${lost} on the wire`)
      assert.ok(Math.abs(q.lossRate - lost / (last.seq - first.seq)) <= 1 / (last.seq - first.seq), `${what}: loss ${q.lossRate}`)
      assert.ok(Math.abs(q.lossRate - CALLS[i].drop) < 0.05, `${what}: loss ${q.lossRate} near netsim's ${CALLS[i].drop}`)
      assert.equal(last.seq, receiver['sent-rb-exthighestseq'], `${what}: the last report stored is the last sent`)
      // Jitter: GStreamer's own, in ms by the clock rate the SRs tell.
      assert.equal(side.clockRate, 8000)
      assert.equal(side.clockRateSource, 'sender-reports')
      assert.equal(side.jitter, receiver['sent-rb-jitter'])
      assert.equal(side.jitterMs, receiver['sent-rb-jitter'] / 8)
      const wire = streams.find((row) => row.ssrc === receiver.senderSsrc)
      assert.ok(Math.abs(q.jitterMs.avg - wire.meanJitterMs) < 5, `${what}: jitter ${q.jitterMs.avg} ms, tshark's mean ${wire.meanJitterMs} ms`)
      // RTT: the delay both ways, and what GStreamer measured itself.
      assert.ok(Math.abs(q.rttMs.avg - 2 * DELAY_MS) < 20, `${what}: RTT ${q.rttMs.avg} ms ≈ ${2 * DELAY_MS}`)
      const own = truth.rtt.find((r) => r.measuredBy === receiver.sender)
      if (own) assert.ok(Math.abs(q.rttMs.avg - own.roundTripMs) < 20, `${what}: RTT ${q.rttMs.avg} ms, GStreamer's ${own.roundTripMs} ms`)
      assert.deepEqual(side.quality.invalid || {}, {})
      checked.push(q)
    }
  }
  assert.equal(checked.length, 6, 'both directions of three calls')
  const g711 = CODECS['G.711']
  // The delay the worst report was scored with: half the last round trip the call measured both ways (that
  // report's own, or the other direction's last: CI preview, 0.0004 of MOS apart when rebuilt from the report's
  // own rttMs) plus the jitter buffer and G.711's delay: half of a round trip the calls measured, then given to the oracle.
  const lowest = Math.min(...checked.map((q) => q.rttMs.min))
  const highest = Math.max(...checked.map((q) => q.rttMs.max))
  for (const { worst } of checked) {
    const roundTrip = 2 * (worst.delayMs - JITTER_BUFFER_MS - g711.delayMs)
    assert.ok(roundTrip >= lowest - 1e-6 && roundTrip <= highest + 1e-6, `worst report's delay ${worst.delayMs} ms: a round trip of ${roundTrip} ms, the calls measured ${lowest} to ${highest}`)
  }
  const oracle = oracleRatings(checked.map(({ worst }) => {
    const T = worst.delayMs
    return { Ie: g711.Ie, Bpl: g711.Bpl, Ppl: worst.loss * 100, T, Ta: T, Tr: 2 * T }
  }))
  checked.forEach((q, i) => assert.ok(Math.abs(q.worst.mos - oracle[i].MOS) < 1e-6, `MOS ${q.worst.mos} = oracle ${oracle[i].MOS}`))
  const clean = docs.find((d) => d.from.ID.startsWith(String(CALLS[0].ssrcA).slice(0, 4)) || d.pairKey.includes(String(CALLS[0].ssrcA)))
  assert.equal(sideQuality(clean.from).lossRate, 0, 'no drop, no loss')
})

// Reports that expected no packet since the previous one (hold, the end): tshark's view.
const noMediaReports = (blocks) => blocks.filter((b, i) => i > 0 && b.seq === blocks[i - 1].seq).length

test('real GStreamer calls: a 2 s burst in a long clean call leaves it good with a poor worst window; a hold scores no MOS; a one-way call is listed from its sender', { timeout: 180000 }, async (t) => {
  await requireGstCall()
  const common = { delayMs: 20, probation: 0 }
  // GStreamer's extended sequence numbers start at 65536 + the first one: with
  // 0 the 10 s windows (500 packets) start at packets 464, 964, …; the burst
  // (packets ~600–700) falls inside one.
  const runs = [
    { name: 'burst', durationMs: 40000, seqnumOffset: 0, burst: { atMs: 12000, durationMs: 2000, drop: 0.5 }, ssrcA: 0x44440001, ssrcB: 0x44440002 },
    { name: 'hold', durationMs: 16000, hold: { atMs: 6000, durationMs: 4000 }, ssrcA: 0x55550001, ssrcB: 0x55550002 },
    { name: 'one-way', durationMs: 12000, bidirectional: false, drop: 0.02, ssrcA: 0x66660001, ssrcB: 0x66660002 }
  ]
  const { db, port, truths, pcapOf } = await callsIntoCollector(t, rtcp, runs.map((r) => ({ ...common, ...r })))
  await waitFor(async () => (await streamDocs(db, { active: false })).length === runs.length, { what: 'the sweeper closing the calls' })
  const docs = await streamDocs(db)
  assert.equal(docs.length, runs.length, 'one stream per call')
  const docOf = (truth) => docs.find((d) => [d.from.ID, d.to.ID].includes(String(truth.ssrc.A)))
  const sideOf = (doc, ssrc) => doc.from.ID === String(ssrc) ? doc.from : doc.to
  const g711 = CODECS['G.711']
  const rated = []
  const rate = (loss, delayMs) => { rated.push({ Ie: g711.Ie, Bpl: g711.Bpl, Ppl: loss * 100, T: delayMs, Ta: delayMs, Tr: 2 * delayMs }); return rated.length - 1 }
  const checks = []

  for (const [i, truth] of truths.entries()) {
    const pcap = pcapOf(runs[i])
    const doc = docOf(truth)
    const sequences = await tsharkRtpSequences(pcap)
    const blocks = await tsharkReportBlocks(pcap, port)
    for (const receiver of truth.receivers) {
      const side = sideOf(doc, receiver.receiverSsrc)
      const q = sideQuality(side)
      const what = `${runs[i].name}: ${receiver.receiver} about ${receiver.sender}`
      const { first, last } = side.quality.loss
      // GStreamer starts its extended numbers a cycle up (65536 + the first).
      const cycles = Math.floor(first.seq / 65536) * 65536
      const lost = wireLost(sequences.get(receiver.senderSsrc), first.seq - cycles, last.seq - cycles)
      assert.ok(Math.abs((last.lost - first.lost) - lost) <= 1, `${what}: ${last.lost - first.lost} lost in the reports' window, ${lost} on the wire (tshark)`)
      assert.equal(side.jitter, receiver['sent-rb-jitter'], `${what}: the last jitter is GStreamer's`)
      // Every block is scored, or not scored for a counted reason; tshark tells which carried no media.
      const sentBlocks = blocks.get(`${receiver.receiverSsrc}>${receiver.senderSsrc}`)
      assert.equal(q.reports, sentBlocks.length, `${what}: every block sent was stored`)
      assert.equal(q.unscored['no-media'] || 0, noMediaReports(sentBlocks), `${what}: reports without media, as tshark shows them`)
      assert.equal((q.mos ? q.mos.count : 0) + (q.mosEndpoints ? q.mosEndpoints.count : 0) + (q.unscored['no-media'] || 0), q.reports, `${what}: ${JSON.stringify(q.unscored)}`)
      assert.equal(q.loss.count + (q.unscored['no-media'] || 0), q.reports, `${what}: no loss sample from an interval without media`)
      checks.push({ what, q, verdict: rate(q.verdict.loss, q.verdict.delayMs), window: q.worstWindow && rate(q.worstWindow.loss, q.worstWindow.delayMs) })
    }
  }
  const oracle = oracleRatings(rated)
  for (const { what, q, verdict, window } of checks) {
    assert.ok(Math.abs(q.verdict.mos - oracle[verdict].MOS) < 1e-9, `${what}: verdict ${q.verdict.mos} = E-model ${oracle[verdict].MOS}`)
    if (window !== null) assert.ok(Math.abs(q.worstWindow.mos - oracle[window].MOS) < 1e-9, `${what}: worst window = E-model`)
  }

  // The burst: good over the call, poor in its worst 10 s, which holds the burst.
  const burst = docOf(truths[0])
  assert.equal(burst.analytics.band, 'good', `burst call verdict ${burst.analytics.mos}`)
  assert.ok(burst.analytics.worstWindow.mos < 3.6, `its worst window ${burst.analytics.worstWindow.mos} is poor`)
  assert.equal(burst.analytics.worstWindow.side, sideOf(burst, truths[0].ssrc.B) === burst.from ? 'from' : 'to', 'on the side that received the burst')
  assert.ok(burst.analytics.mosMin < burst.analytics.worstWindow.mos, 'the single worst report is worse still')
  const { mos, worstWindow: w, mosMin } = burst.analytics
  t.diagnostic(`burst call: verdict ${mos.toFixed(3)} (loss ${(100 * w.loss).toFixed(1)} % in the worst window, ${w.lost}/${w.expected}, MOS ${w.mos.toFixed(3)}), worst report ${mosMin.toFixed(3)}`)
  // The hold: no MOS and no loss from its reports (checked above), and nothing lost.
  const hold = docOf(truths[1])
  assert.ok(hold.analytics.from.unscored['no-media'] >= 4, `the hold's reports: ${JSON.stringify(hold.analytics.from.unscored)}`)
  assert.equal(hold.analytics.band, 'good')
  t.diagnostic(`hold call: no-media reports ${hold.analytics.from.unscored['no-media']} and ${hold.analytics.to.unscored['no-media']}, verdict ${hold.analytics.mos.toFixed(3)}`)
  // One way: B reports on A alone; its RTT is twice one direction, an estimate next to GStreamer's own.
  const oneWay = docOf(truths[2])
  const bSide = sideQuality(sideOf(oneWay, truths[2].ssrc.B))
  assert.equal(bSide.rttMs, null, 'no measured RTT: A reports on nobody')
  const own = truths[2].rtt.find((r) => r.measuredBy === 'A')
  assert.ok(Math.abs(bSide.rttEstimatedMs.avg - own.roundTripMs) < 20, `estimate ${bSide.rttEstimatedMs.avg} ms, GStreamer's ${own.roundTripMs} ms`)
  // The estimate scores nothing: the verdict holds what the ends add (buffer, codec), no network term, and says so.
  assert.equal(bSide.mos, null, 'no MOS with a network delay')
  assert.deepEqual([bSide.verdict.delayBasis, bSide.verdict.delayMs, oneWay.analytics.delayBasis], ['endpoints', JITTER_BUFFER_MS + g711.delayMs, 'endpoints'])
  const { uri } = await getTestMongo()
  const table = await runCli({ ...process.env, MONGODB_URI: uri }, 'calls', '--database', db.databaseName, '--worst', '10')
  assert.equal(table.code, 0, table.stderr)
  const row = table.stdout.split('\n').find((line) => line.includes(String(truths[2].ssrc.B)))
  assert.match(row, new RegExp(`^${truths[2].ssrc.A} `), `FROM is the sender A: ${row}`)
  assert.match(row, /~\d+\.\d/, 'the RTT shown as an estimate')
  assert.match(row, /≤\d\.\d\d/, 'the MOS shown as at most that: no network delay in it')
  const json = await runCli({ ...process.env, MONGODB_URI: uri }, 'calls', '--database', db.databaseName, '--worst', '10', '--json')
  const line = json.stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l)).find((c) => [c.from && c.from.ID, c.to && c.to.ID].includes(String(truths[2].ssrc.B)))
  assert.deepEqual([line.analytics.delayBasis, line.analytics.mos], ['endpoints', oneWay.analytics.mos], '--json says what the MOS holds')
})
