'use strict'

// Call quality of real calls with RTCP as phones send it (every ~5 s).
// A burst of loss in a G.711 call: the 10 s windows of media hold what the
// wire lost in them (tshark), within what reports ~5 s apart can tell.
// GStreamer Opus endpoints (test/fixtures/gst-call.py --codec opus) with
// netsim delay jitter. The jitter stored must read at the stream's real
// clock from its first report on: checked against every report block the
// receiver sent as tshark dissects it, divided by the clock rate GStreamer
// itself reports, and against the last block GStreamer says it sent. Over
// HEP, rtpengine relays the call and its SDP (the bodies a proxy would copy
// in the call's SIP) names the clock: `sdp`, not inferred.

const test = require('node:test')
const assert = require('node:assert/strict')
const dgram = require('node:dgram')
const { once } = require('node:events')
const HEPjs = require('hep-js')
const rtcp = require('../../collectors/rtcp')
const hep = require('../../collectors/hep')
const { startTestCollector } = require('../helpers/collector')
const { runGstCall, requireGstCall, callsIntoCollector, tsharkRtpSequences, tsharkRtpStreams, tsharkReportBlocks, wireLost } = require('../helpers/gst-call')
const { oracleRatings } = require('../helpers/emodel-oracle')
const { CODECS } = require('../../collectors/rtcp/codecs')
const { startRtpengine } = require('../helpers/rtpengine')
const { freePortPair } = require('../helpers/ports')
const { run, requireGstElements } = require('../helpers/rtp-peers')
const { waitFor, streamDocs } = require('../helpers/streams')
const { sideQuality, callAnalytics } = require('../../collectors/rtcp/quality-analytics')

const CALL = { durationMs: 20000, rtcpIntervalMs: 5000, delayMs: 20, delayJitterMs: 30, probation: 0, codec: 'opus' }

async function requireOpus () {
  await requireGstCall()
  await requireGstElements(['opusenc'], 'gstreamer1.0-plugins-base')
  await requireGstElements(['rtpopuspay'], 'gstreamer1.0-plugins-good')
}

/**
 * Each report block's term of a round trip as the capture saw it at the collector's port: the block's
 * arrival less the arrival of the SR its LSR names, less DLSR (RFC 3550 §6.4.1), in ms, by
 * `reporter>reported` SSRC, in capture order. What the collector computes from its own arrival times.
 */
async function tsharkTerms (pcapFile, collectorPort) {
  const { code, stdout, stderr } = await run('tshark', ['-n', '-r', pcapFile, '-d', `udp.port==${collectorPort},rtcp`, '-Y', `udp.dstport==${collectorPort} && rtcp`,
    '-T', 'fields', '-e', 'frame.time_epoch', '-e', 'rtcp.senderssrc', '-e', 'rtcp.timestamp.ntp.msw', '-e', 'rtcp.timestamp.ntp.lsw',
    '-e', 'rtcp.ssrc.identifier', '-e', 'rtcp.ssrc.lsr', '-e', 'rtcp.ssrc.dlsr'])
  if (code !== 0) throw new Error(`tshark on ${pcapFile} failed (${code}): ${stderr}`)
  const srAt = new Map() // `${ssrc}:${middle 32 bits of its NTP time}` → capture time (ms)
  const terms = new Map()
  for (const line of stdout.split('\n')) {
    const [time, sender, msw, lsw, identifiers, lsr, dlsr] = line.trim().split('\t')
    if (!time || !sender) continue
    const at = Number(time) * 1000
    const from = parseInt(sender.split(',')[0], 16)
    if (msw) srAt.set(`${from}:${(((Number(msw) & 0xffff) << 16) | (Number(lsw) >>> 16)) >>> 0}`, at)
    if (!lsr || lsr.split(',')[0] === '0') continue
    const reported = parseInt(identifiers.split(',')[0], 16)
    const sr = srAt.get(`${reported}:${Number(lsr.split(',')[0])}`)
    if (sr === undefined) continue
    const key = `${from}>${reported}`
    if (!terms.has(key)) terms.set(key, [])
    terms.get(key).push(at - sr - Number(dlsr.split(',')[0]) / 65536 * 1000)
  }
  return terms
}

test('a real G.711 call with RTCP every ~5 s and a 3 s burst: each 10 s window holds its own packets and what the wire lost in them, within what the reports tell', { timeout: 90000 }, async (t) => {
  await requireGstCall()
  const call = { name: 'burst', durationMs: 30000, rtcpIntervalMs: 5000, delayMs: 20, probation: 0, seqnumOffset: 0, burst: { atMs: 12000, durationMs: 3000, drop: 0.6 } }
  const { collector, db, port, truths: [truth], pcapOf } = await callsIntoCollector(t, rtcp, [call])
  const pcap = pcapOf(call)
  await collector.stop()
  const [doc] = await streamDocs(db)
  const receiver = truth.receivers.find((r) => r.receiver === 'B')
  const side = doc.from.ID === String(receiver.receiverSsrc) ? doc.from : doc.to
  const { first, last } = side.quality.loss
  // Windows of 500 packets: GStreamer's SRs show its 20 ms packets.
  assert.deepEqual(Object.keys(side.quality.spans), ['500'], JSON.stringify(side.quality.packet))
  assert.deepEqual([side.quality.packet.ms, side.quality.packet.source], [20, 'sender-reports'])
  const windows = Object.entries(side.quality.spans['500']).map(([index, w]) => ({ index: Number(index), ...w }))
  // Each window holds the measured packets of its own 500 sequence numbers, and together every one once.
  for (const w of windows) {
    const own = Math.min(last.seq, w.index * 500 + 499) - Math.max(first.seq + 1, w.index * 500) + 1
    assert.equal(w.expected, own, `window ${w.index}: ${w.expected} packets expected`)
  }
  assert.equal(windows.reduce((n, w) => n + w.expected, 0), last.seq - first.seq)
  assert.ok(Math.abs(windows.reduce((n, w) => n + w.lost, 0) - (last.lost - first.lost)) < 1e-9, 'the intervals\' loss apportioned, none lost or doubled')
  // Against the wire: a window's loss differs from tshark's count in its
  // packets only by how the loss of the reports straddling its edges fell
  // within them (a report says how many, not which).
  const sequences = (await tsharkRtpSequences(pcap)).get(receiver.senderSsrc)
  const blocks = (await tsharkReportBlocks(pcap, port)).get(`${receiver.receiverSsrc}>${receiver.senderSsrc}`)
  const straddling = (edge) => blocks.reduce((sum, b, i) => i > 0 && blocks[i - 1].seq < edge && b.seq >= edge ? sum + (b.lost - blocks[i - 1].lost) : sum, 0)
  const rows = []
  for (const w of windows) {
    const from = Math.max(first.seq, w.index * 500 - 1)
    const to = Math.min(last.seq, w.index * 500 + 499)
    const wire = wireLost(sequences, from, to, 65536) // GStreamer's extended numbers start a cycle up
    const slack = straddling(w.index * 500) + straddling(w.index * 500 + 500)
    rows.push(`${w.index}: ${w.lost.toFixed(2)} lost of ${w.expected} (wire ${wire}, edges' reports ${slack})`)
    assert.ok(Math.abs(w.lost - wire) <= slack + 1e-9, `window ${w.index}: ${w.lost} lost, the wire ${wire}, ± ${slack}`)
  }
  t.diagnostic(`B's windows: ${rows.join('; ')}; reports at ${blocks.map((b) => b.seq).join(', ')}`)
  // The worst window's MOS is the independent E-model's at its loss and delay.
  const q = sideQuality(side)
  const g711 = CODECS['G.711']
  const w = q.worstWindow
  const [oracle] = oracleRatings([{ Ie: g711.Ie, Bpl: g711.Bpl, Ppl: w.loss * 100, T: w.delayMs, Ta: w.delayMs, Tr: 2 * w.delayMs }])
  assert.ok(Math.abs(w.mos - oracle.MOS) < 1e-9, `worst window ${w.mos} vs the E-model ${oracle.MOS}`)
  assert.equal(w.delayBasis, 'measured')
  t.diagnostic(`worst window ${w.window} (${w.windows} merged): ${w.lost.toFixed(2)}/${w.expected}, MOS ${w.mos.toFixed(3)}; verdict ${q.verdict.mos.toFixed(3)}`)
})

test('a real Opus call with RTCP every ~5 s: jitter reads at 48 kHz from the first report, as tshark and GStreamer say', { timeout: 90000 }, async (t) => {
  await requireOpus()
  const call = { ...CALL, name: 'opus' }
  const { collector, db, port, truths: [truth], pcapOf } = await callsIntoCollector(t, rtcp, [call])
  const pcap = pcapOf(call)
  await collector.stop()
  const [doc] = await streamDocs(db)
  const blocks = await tsharkReportBlocks(pcap, port)
  for (const receiver of truth.receivers) {
    const side = doc.from.ID === String(receiver.receiverSsrc) ? doc.from : doc.to
    const q = sideQuality(side)
    const what = `${receiver.receiver} about ${receiver.sender}`
    assert.equal(receiver['clock-rate'], 48000, 'GStreamer\'s own clock rate of the stream')
    assert.deepEqual([q.clockRate, q.clockRateSource], [48000, 'sender-reports'], what)
    // A block sent after the media stopped (its sequence where the last left it) is not scored: no media to judge.
    const sentBlocks = blocks.get(`${receiver.receiverSsrc}>${receiver.senderSsrc}`) || []
    const sentJitters = sentBlocks.filter((b, i) => i === 0 || b.seq !== sentBlocks[i - 1].seq).map((b) => b.jitter)
    assert.ok(sentJitters && sentJitters.length >= 3, `${what}: ${sentJitters} blocks (RTCP every ~5 s)`)
    const toMs = (ticks) => ticks / receiver['clock-rate'] * 1000
    // Every block counts, the first ones too (sent before two SRs told the clock).
    assert.ok(Math.abs(q.jitterMs.max - toMs(Math.max(...sentJitters))) < 1e-9, `${what}: max ${q.jitterMs.max} ms, tshark's blocks ${sentJitters} ticks`)
    assert.ok(Math.abs(q.jitterMs.min - toMs(Math.min(...sentJitters))) < 1e-9, `${what}: min ${q.jitterMs.min} ms`)
    assert.ok(Math.abs(q.jitterMs.avg - toMs(sentJitters.reduce((a, b) => a + b, 0) / sentJitters.length)) < 1e-9, `${what}: average ${q.jitterMs.avg} ms, tshark's blocks ${sentJitters} ticks`)
    assert.equal(side.jitter, receiver['sent-rb-jitter'], `${what}: the last block is GStreamer's`)
    assert.ok(Math.abs(side.jitterMs - toMs(receiver['sent-rb-jitter'])) < 1e-9)
    t.diagnostic(`${what}: jitter ${sentJitters.map((j) => toMs(j).toFixed(2)).join(', ')} ms; the first read at the default 8 kHz would be ${(sentJitters[0] / 8).toFixed(2)} ms`)
  }
})

// A SIP message as a proxy between A and B copies it over HEP (protocol type 1).
function sipOverHep (startLine, callId, cseq, body, from, to) {
  const text = [startLine, 'Via: SIP/2.0/UDP 127.0.0.1;branch=z9hG4bK-1', `Call-ID: ${callId}`, 'From: <sip:a@127.0.0.1>;tag=tag-a',
    `To: <sip:b@127.0.0.1>${startLine.startsWith('SIP') ? ';tag=tag-b' : ''}`, `CSeq: ${cseq}`, 'Content-Type: application/sdp',
    `Content-Length: ${Buffer.byteLength(body)}`, '', body].join('\r\n')
  const now = Date.now()
  return HEPjs.encapsulate(text, {
    protocolFamily: 2, protocol: 17, srcIp: '127.0.0.1', dstIp: '127.0.0.1', srcPort: from, dstPort: to,
    timeSeconds: Math.floor(now / 1000), timeUseconds: (now % 1000) * 1000, payloadType: 1, captureId: 2002
  })
}

test('over HEP: rtpengine relays a real Opus call; the call\'s SDP names its clock and codec, said as sdp', { timeout: 90000 }, async (t) => {
  await requireOpus()
  const { doc, truth } = await hepRelayedCall(t, 'opus')
  for (const receiver of truth.receivers) {
    const side = doc.from.ID === String(receiver.receiverSsrc) ? doc.from : doc.to
    const q = sideQuality(side)
    const what = `${receiver.receiver} about ${receiver.sender}`
    assert.deepEqual([q.clockRate, q.clockRateSource, q.format], [receiver['clock-rate'], 'sdp', 'opus/48000'], `${what}: the SDP's clock, GStreamer's too`)
    assert.deepEqual([side.clockRateSource, side.format], ['sdp', 'opus/48000'], `${what}: the last report's too`)
    assert.equal(side.jitter, receiver['sent-rb-jitter'], `${what}: GStreamer's last block, as rtpengine relayed it`)
    assert.ok(Math.abs(side.jitterMs - receiver['sent-rb-jitter'] / receiver['clock-rate'] * 1000) < 1e-9, `${what}: its jitter in ms at GStreamer's clock`)
    assert.equal(q.codecSource, 'default', 'Opus has no narrowband planning values: scored with --codec, and said so')
  }
})

test('over HEP: rtpengine relays a real G.722 call offered as the static payload type 9: its RTP clock is 8000 (RFC 3551), from the SDP, as GStreamer\'s', { timeout: 90000 }, async (t) => {
  await requireGstElements(['avenc_g722'], 'gstreamer1.0-libav')
  const { doc, truth } = await hepRelayedCall(t, 'g722')
  for (const receiver of truth.receivers) {
    const side = doc.from.ID === String(receiver.receiverSsrc) ? doc.from : doc.to
    const q = sideQuality(side)
    const what = `${receiver.receiver} about ${receiver.sender}`
    assert.equal(receiver['clock-rate'], 8000, 'GStreamer\'s clock rate of a PT 9 stream')
    assert.deepEqual([q.clockRate, q.clockRateSource, q.format, q.codecSource], [8000, 'sdp', 'G722/8000', 'default'], what)
    assert.equal(side.jitter, receiver['sent-rb-jitter'], `${what}: GStreamer's last block, as rtpengine relayed it`)
    assert.ok(Math.abs(side.jitterMs - receiver['sent-rb-jitter'] / 8000 * 1000) < 1e-9, `${what}: ${side.jitterMs} ms, GStreamer's ${receiver['sent-rb-jitter']} units at 8000`)
    t.diagnostic(`${what}: jitter ${receiver['sent-rb-jitter']} units = ${side.jitterMs.toFixed(3)} ms (${(receiver['sent-rb-jitter'] / 16).toFixed(3)} ms if read at 16 kHz)`)
  }
})

// A real call of `codec` relayed by rtpengine, its SIP (with the SDP) and rtpengine's HEP RTCP sent to a hep collector.
async function hepRelayedCall (t, codec) {
  await requireGstCall()
  const { collector, db, port } = await startTestCollector(t, hep)
  const rtpengine = await startRtpengine(t, { hepPort: port, hepProtocol: 'udp' })
  const callId = `${codec}-${Date.now()}@rtpengine.test`
  const aPort = await freePortPair()
  const bPort = await freePortPair()
  const { aSendsTo, bSendsTo, sdps } = await rtpengine.relay(callId, aPort, bPort, { codec })
  const socket = dgram.createSocket('udp4')
  t.after(() => socket.close())
  const messages = [
    sipOverHep('INVITE sip:b@127.0.0.1 SIP/2.0', callId, '1 INVITE', sdps.offerA, 5061, 5060),
    sipOverHep('INVITE sip:b@127.0.0.1 SIP/2.0', callId, '1 INVITE', sdps.offerToB, 5060, 5062),
    sipOverHep('SIP/2.0 200 OK', callId, '1 INVITE', sdps.answerB, 5062, 5060),
    sipOverHep('SIP/2.0 200 OK', callId, '1 INVITE', sdps.answerToA, 5060, 5061)
  ]
  for (const message of messages) socket.send(message, port, '127.0.0.1')
  await waitFor(() => collector.summary().processed >= messages.length, { what: 'the call\'s SIP processed' })
  const sink = dgram.createSocket('udp4').on('message', () => {})
  sink.bind(0, '127.0.0.1')
  await once(sink, 'listening')
  t.after(() => sink.close())
  const truth = await runGstCall({ ...CALL, codec, durationMs: 12000, collectorPort: sink.address().port, relay: { aPort, bPort, aSendsTo, bSendsTo }, t })
  const sent = truth.rtcpSent.A.datagrams + truth.rtcpSent.B.datagrams
  await waitFor(() => collector.summary().processed >= messages.length + sent, { what: `${sent} HEP RTCP packets processed`, timeout: 20000 })
  await collector.stop()
  const [doc] = await db.collection('streams').find({ openKey: { $exists: true } }).toArray()
  assert.ok(doc, 'the call\'s stream')
  return { doc, truth }
}

test('a real G.722 call on a 20/200 ms path, RTCP every ~5 s: jitter at the RTP clock of 8000 (PT 9), the round trip and each direction\'s part as tshark and GStreamer measured them, the MOS the independent E-model\'s', { timeout: 120000 }, async (t) => {
  await requireGstCall()
  await requireGstElements(['avenc_g722'], 'gstreamer1.0-libav')
  await requireGstElements(['rtpg722pay'], 'gstreamer1.0-plugins-good')
  const delays = { A: 200, B: 20 } // the delay of the media each end receives: A→B 20 ms, B→A 200 ms
  const call = { name: 'g722', codec: 'g722', durationMs: 20000, rtcpIntervalMs: 5000, delayAtoBMs: delays.B, delayBtoAMs: delays.A, probation: 0 }
  const { collector, db, port, truths: [truth], pcapOf } = await callsIntoCollector(t, rtcp, [call])
  const pcap = pcapOf(call)
  await collector.stop()
  const [doc] = await streamDocs(db)
  const blocks = await tsharkReportBlocks(pcap, port)
  const streams = await tsharkRtpStreams(pcap)
  const terms = await tsharkTerms(pcap, port)
  const analytics = callAnalytics(doc)
  const g711 = CODECS['G.711'] // RTCP does not say the codec: the collector's --codec (G.711) scores it, said as default
  const rtts = truth.rtt.map((r) => r.roundTripMs)
  for (const receiver of truth.receivers) {
    const side = doc.from.ID === String(receiver.receiverSsrc) ? doc.from : doc.to
    const q = sideQuality(side)
    const what = `${receiver.receiver} about ${receiver.sender}`
    // The wire says G.722 at payload type 9, and GStreamer's RTP clock for it is 8000, not its 16 kHz sampling.
    const wire = streams.find((s) => s.ssrc === receiver.senderSsrc)
    assert.ok(wire && /722/.test(wire.payload), `${what}: tshark reads ${wire && wire.payload}`)
    assert.equal(receiver['clock-rate'], 8000, 'GStreamer\'s clock rate of a PT 9 stream')
    assert.deepEqual([q.clockRate, q.clockRateSource, q.codecSource], [8000, 'sender-reports', 'default'], what)
    // A block after the media stopped (its sequence where the last left it) carries no media to judge: not scored.
    const sentBlocks = blocks.get(`${receiver.receiverSsrc}>${receiver.senderSsrc}`) || []
    const ticks = sentBlocks.filter((b, i) => i === 0 || b.seq !== sentBlocks[i - 1].seq).map((b) => b.jitter)
    assert.ok(ticks.length >= 3, `${what}: ${ticks.length} blocks with media (RTCP every ~5 s)`)
    const toMs = (units) => units / 8000 * 1000
    assert.ok(Math.abs(q.jitterMs.max - toMs(Math.max(...ticks))) < 1e-9, `${what}: max ${q.jitterMs.max} ms, tshark's blocks ${ticks} units`)
    assert.ok(Math.abs(q.jitterMs.avg - toMs(ticks.reduce((a, b) => a + b, 0) / ticks.length)) < 1e-9, `${what}: average ${q.jitterMs.avg} ms of ${q.jitterMs.count}, blocks ${ticks}; unscored ${JSON.stringify(q.unscored)} invalid ${JSON.stringify(q.invalid)}`)
    assert.equal(side.jitter, receiver['sent-rb-jitter'], `${what}: the last block is GStreamer's`)
    // This direction's terms as the capture saw them, and the other's: the stored ones are the same pairs
    // read at the master's arrival times (off the capture's by its event loop's lag, a few ms on this
    // shared machine), those of the reports that found the other direction's term (not the first ones).
    // netsim's own timer moves the wire's delay too under load (36 ms for 20 once): the capture is the truth.
    const mine = terms.get(`${receiver.receiverSsrc}>${receiver.senderSsrc}`) || []
    const theirs = terms.get(`${receiver.senderSsrc}>${receiver.receiverSsrc}`) || []
    assert.ok(mine.length >= 3 && theirs.length >= 3, `${what}: terms in the capture ${mine} / ${theirs}`)
    const LAG = 10
    const within = (x, lo, hi) => x > lo - LAG && x < hi + LAG
    t.diagnostic(`${what}: capture terms ${mine.map((x) => x.toFixed(1)).join(', ')} ms, stored ${q.pathMs.min.toFixed(1)}–${q.pathMs.avg.toFixed(1)}–${q.pathMs.max.toFixed(1)}; RTT stored ${q.rttMs.min.toFixed(1)}–${q.rttMs.avg.toFixed(1)}–${q.rttMs.max.toFixed(1)}, GStreamer ${rtts.map((r) => r.toFixed(1)).join(', ')}`)
    for (const x of [q.pathMs.min, q.pathMs.max]) assert.ok(within(x, Math.min(...mine), Math.max(...mine)), `${what}: path ${x} ms, the capture's ${mine}`)
    // The round trip measured both ways: a term of each direction, as the capture has them; GStreamer's
    // last RTT of each end lies among the stored ones, one at least: each is one sample, and its own
    // netsim passes (a report's trip back to the sender) are not the collector's (294 ms once for 221).
    const [lo, hi] = [Math.min(...mine) + Math.min(...theirs), Math.max(...mine) + Math.max(...theirs)]
    for (const x of [q.rttMs.min, q.rttMs.max]) assert.ok(within(x, lo, hi), `${what}: RTT ${x} ms, the capture's terms sum to ${lo}–${hi}`)
    assert.ok(rtts.some((r) => r > q.rttMs.min - 5 && r < q.rttMs.max + 5), `${what}: RTT ${q.rttMs.min}–${q.rttMs.max} ms, GStreamer's ${rtts}`)
    // Reports before the other end's echoed an SR give twice this direction: kept apart, never scored.
    if (q.rttEstimatedMs) assert.ok(within(q.rttEstimatedMs.avg, 2 * Math.min(...mine), 2 * Math.max(...mine)), `${what}: estimate ${q.rttEstimatedMs.avg} ms, the capture's terms ${mine}`)
    assert.equal(q.verdict.delayBasis, 'measured')
    // The collector's copies leave each end undelayed, so this direction's term is its netsim delay (nominal).
    assert.ok(Math.abs(q.pathMs.avg - delays[receiver.receiver]) < 15, `${what}: path ${q.pathMs.avg} ms, netsim ${delays[receiver.receiver]} ms`)
    // The worst report's MOS and the verdict are the independent E-model's at their loss and delay (half
    // the round trip plus the endpoints' part); a last report sent after the media stopped has none.
    const { worst } = q
    const half = worst.delayMs - q.endpointsMs.max
    assert.ok(half >= q.rttMs.min / 2 - 1e-9 && half <= q.rttMs.max / 2 + 1e-9, `${what}: delay ${worst.delayMs} = a measured RTT / 2 + ${q.endpointsMs.max}`)
    const [last, verdict] = oracleRatings([[worst.loss, worst.delayMs], [q.verdict.loss, q.verdict.delayMs]].map(([loss, T]) => ({ Ie: g711.Ie, Bpl: g711.Bpl, Ppl: loss * 100, T, Ta: T, Tr: 2 * T })))
    assert.ok(Math.abs(worst.mos - last.MOS) < 1e-9, `${what}: worst MOS ${worst.mos}, the E-model ${last.MOS}`)
    assert.ok(Math.abs(q.verdict.mos - verdict.MOS) < 1e-9, `${what}: verdict ${q.verdict.mos}, the E-model ${verdict.MOS}`)
    assert.equal(side.model, 'G.107')
    t.diagnostic(`${what}: jitter ${ticks.map((j) => toMs(j).toFixed(3)).join(', ')} ms (at 16 kHz it would read half); RTT ${q.rttMs.min.toFixed(1)}–${q.rttMs.max.toFixed(1)} ms (GStreamer ${rtts.map((r) => r.toFixed(1)).join(', ')}; one-direction estimates ${q.rttEstimatedMs ? q.rttEstimatedMs.avg.toFixed(1) : 'none'}); path ${q.pathMs.avg.toFixed(1)} ms; worst MOS ${worst.mos.toFixed(3)} (E-model ${last.MOS.toFixed(3)}), verdict ${q.verdict.mos.toFixed(3)} (E-model ${verdict.MOS.toFixed(3)})`)
  }
  // Which direction carries the delay: B→A, received by A.
  const byDirection = analytics.delayByDirection
  const sideOf = (name) => doc.from.ID === String(truth.ssrc[name]) ? 'from' : 'to'
  assert.equal(byDirection.split, 'collector-relative')
  assert.equal(byDirection.longer, sideOf('A'))
  // Each direction's part is its reports' average, and the two sides'
  // reports are different samples of a path whose delay moved by a few ms
  // (netsim): their sum is a round trip the call measured, not the average
  // of all of them (1.3 ms apart once, with round trips 217.0 to 222.2 ms).
  const paths = byDirection.directions.reduce((sum, d) => sum + d.pathMs, 0)
  const measured = [doc.from, doc.to].map((side) => sideQuality(side).rttMs)
  const [lo, hi] = [Math.min(...measured.map((r) => r.min)), Math.max(...measured.map((r) => r.max))]
  assert.ok(paths >= lo - 1 && paths <= hi + 1, `the directions' parts (${paths} ms) make a round trip the call measured (${lo}–${hi} ms, on average ${byDirection.roundTripMs})`)
})
