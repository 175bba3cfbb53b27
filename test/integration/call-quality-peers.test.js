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
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const rtcp = require('../../collectors/rtcp')
const { startTestCollector } = require('../helpers/collector')
const { runGstCall, requireGstCall, tsharkRtpSequences, tsharkRtpStreams } = require('../helpers/gst-call')
const { sideQuality } = require('../../collectors/rtcp/quality-analytics')
const { oracleRatings } = require('../helpers/emodel-oracle')
const { waitFor, streamDocs } = require('../helpers/streams')
const { CODECS } = require('../../collectors/rtcp/codecs')
const { JITTER_BUFFER_MS } = require('../../collectors/rtcp/constants')

const DELAY_MS = 50
const CALLS = [{ drop: 0, ssrcA: 0x11110001, ssrcB: 0x11110002 }, { drop: 0.02, ssrcA: 0x22220001, ssrcB: 0x22220002 }, { drop: 0.1, ssrcA: 0x33330001, ssrcB: 0x33330002 }]

/** Packets the wire lost between two extended sequence numbers: (last − first) − those delivered in (first, last]. */
function wireLost (sequences, first, last) {
  let cycles = 0
  let previous = null
  let delivered = 0
  for (const seq of sequences) {
    if (previous !== null && seq < previous && previous - seq > 32768) cycles++
    previous = seq
    const ext = cycles * 65536 + seq
    if (ext > first && ext <= last) delivered++
  }
  return (last - first) - delivered
}

test('real GStreamer calls through netsim: stored loss, jitter, RTT and MOS agree with tshark, GStreamer and the E-model', { timeout: 120000 }, async (t) => {
  await requireGstCall()
  const { collector, db, port } = await startTestCollector(t, rtcp)
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gst-calls-'))
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }))
  const truths = await Promise.all(CALLS.map((call, i) => runGstCall({
    collectorPort: port, drop: call.drop, delayMs: DELAY_MS, durationMs: 6000, probation: 0, ssrcA: call.ssrcA, ssrcB: call.ssrcB, pcap: path.join(dir, `call${i}.pcap`), t
  })))
  const sent = truths.reduce((sum, truth) => sum + truth.rtcpSent.A.datagrams + truth.rtcpSent.B.datagrams, 0)
  await waitFor(() => collector.summary().processed === sent, { what: `${sent} RTCP datagrams processed` })
  await collector.stop()
  const docs = await streamDocs(db)
  assert.equal(docs.length, CALLS.length, 'one stream per call')

  const checked = []
  for (const [i, truth] of truths.entries()) {
    const sequences = await tsharkRtpSequences(path.join(dir, `call${i}.pcap`))
    const streams = await tsharkRtpStreams(path.join(dir, `call${i}.pcap`))
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
  const oracle = oracleRatings(checked.map(({ worst }) => {
    const T = worst.rttMs / 2 + JITTER_BUFFER_MS + g711.delayMs
    return { Ie: g711.Ie, Bpl: g711.Bpl, Ppl: worst.loss * 100, T, Ta: T, Tr: 2 * T }
  }))
  checked.forEach((q, i) => assert.ok(Math.abs(q.worst.mos - oracle[i].MOS) < 1e-6, `MOS ${q.worst.mos} = oracle ${oracle[i].MOS}`))
  const clean = docs.find((d) => d.from.ID.startsWith(String(CALLS[0].ssrcA).slice(0, 4)) || d.pairKey.includes(String(CALLS[0].ssrcA)))
  assert.equal(sideQuality(clean.from).lossRate, 0, 'no drop, no loss')
})
