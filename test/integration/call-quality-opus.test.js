'use strict'

// Call quality of real 48 kHz calls with RTCP as phones send it (every ~5 s):
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
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { once } = require('node:events')
const HEPjs = require('hep-js')
const rtcp = require('../../collectors/rtcp')
const hep = require('../../collectors/hep')
const { startTestCollector } = require('../helpers/collector')
const { runGstCall, requireGstCall } = require('../helpers/gst-call')
const { startRtpengine } = require('../helpers/rtpengine')
const { freePortPair } = require('../helpers/ports')
const { run, requireGstElements } = require('../helpers/rtp-peers')
const { waitFor, streamDocs } = require('../helpers/streams')
const { sideQuality } = require('../../collectors/rtcp/quality-analytics')

const CALL = { durationMs: 20000, rtcpIntervalMs: 5000, delayMs: 20, delayJitterMs: 30, probation: 0, codec: 'opus' }

async function requireOpus () {
  await requireGstCall()
  await requireGstElements(['opusenc'], 'gstreamer1.0-plugins-base')
  await requireGstElements(['rtpopuspay'], 'gstreamer1.0-plugins-good')
}

/** The jitter (RTP units) of every report block sent to the collector, by `reporter>reported` SSRC: tshark's dissection. */
async function tsharkJitters (pcapFile, collectorPort) {
  const { code, stdout, stderr } = await run('tshark', ['-n', '-r', pcapFile, '-d', `udp.port==${collectorPort},rtcp`, '-Y', `udp.dstport==${collectorPort} && rtcp`,
    '-T', 'fields', '-e', 'rtcp.senderssrc', '-e', 'rtcp.ssrc.identifier', '-e', 'rtcp.ssrc.jitter'])
  if (code !== 0) throw new Error(`tshark on ${pcapFile} failed (${code}): ${stderr}`)
  const jitters = new Map()
  for (const line of stdout.split('\n')) {
    const [reporter, identifiers, jitter] = line.trim().split('\t')
    if (!jitter) continue
    const key = `${parseInt(reporter.split(',')[0], 16)}>${parseInt(identifiers.split(',')[0], 16)}`
    if (!jitters.has(key)) jitters.set(key, [])
    jitters.get(key).push(Number(jitter.split(',')[0]))
  }
  return jitters
}

test('a real Opus call with RTCP every ~5 s: jitter reads at 48 kHz from the first report, as tshark and GStreamer say', { timeout: 90000 }, async (t) => {
  await requireOpus()
  const { collector, db, port } = await startTestCollector(t, rtcp)
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gst-opus-'))
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }))
  const pcap = path.join(dir, 'opus.pcap')
  const truth = await runGstCall({ ...CALL, collectorPort: port, pcap, t })
  const sent = truth.rtcpSent.A.datagrams + truth.rtcpSent.B.datagrams
  await waitFor(() => collector.summary().processed === sent, { what: `${sent} RTCP datagrams processed` })
  await collector.stop()
  const [doc] = await streamDocs(db)
  const jitters = await tsharkJitters(pcap, port)
  for (const receiver of truth.receivers) {
    const side = doc.from.ID === String(receiver.receiverSsrc) ? doc.from : doc.to
    const q = sideQuality(side)
    const what = `${receiver.receiver} about ${receiver.sender}`
    assert.equal(receiver['clock-rate'], 48000, 'GStreamer\'s own clock rate of the stream')
    assert.deepEqual([q.clockRate, q.clockRateSource], [48000, 'sender-reports'], what)
    const sentJitters = jitters.get(`${receiver.receiverSsrc}>${receiver.senderSsrc}`)
    assert.ok(sentJitters && sentJitters.length >= 3, `${what}: ${sentJitters} blocks (RTCP every ~5 s)`)
    const toMs = (ticks) => ticks / receiver['clock-rate'] * 1000
    // Every block counts, the first ones too (sent before two SRs told the clock).
    assert.ok(Math.abs(q.jitterMs.max - toMs(Math.max(...sentJitters))) < 1e-9, `${what}: max ${q.jitterMs.max} ms, tshark's blocks ${sentJitters} ticks`)
    assert.ok(Math.abs(q.jitterMs.min - toMs(Math.min(...sentJitters))) < 1e-9, `${what}: min ${q.jitterMs.min} ms`)
    assert.ok(Math.abs(q.jitterMs.avg - toMs(sentJitters.reduce((a, b) => a + b, 0) / sentJitters.length)) < 1e-9, `${what}: average`)
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
  const { collector, db, port } = await startTestCollector(t, hep)
  const rtpengine = await startRtpengine(t, { hepPort: port, hepProtocol: 'udp' })
  const callId = `opus-${Date.now()}@rtpengine.test`
  const aPort = await freePortPair()
  const bPort = await freePortPair()
  const { aSendsTo, bSendsTo, sdps } = await rtpengine.relay(callId, aPort, bPort, { codec: 'opus' })
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
  const truth = await runGstCall({ ...CALL, durationMs: 12000, collectorPort: sink.address().port, relay: { aPort, bPort, aSendsTo, bSendsTo }, t })
  const sent = truth.rtcpSent.A.datagrams + truth.rtcpSent.B.datagrams
  await waitFor(() => collector.summary().processed >= messages.length + sent, { what: `${sent} HEP RTCP packets processed`, timeout: 20000 })
  await collector.stop()
  const [doc] = await db.collection('streams').find({ openKey: { $exists: true } }).toArray()
  assert.ok(doc, 'the call\'s stream')
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
