'use strict'

// A real HEP agent: rtpengine (Debian's rtpengine-daemon, userspace
// forwarding) relays a real GStreamer call with netsim loss, set up over its
// ng control protocol, and sends the RTCP it relays to the HEP collector
// (--homer, UDP and TCP) with the call's Call-ID. What the collector stores
// is checked against GStreamer's own statistics (the last report block each
// end sent), against rtpengine's own per-call statistics (its query reply),
// and the call's stream carries the Call-ID rtpengine knows it by.

const test = require('node:test')
const assert = require('node:assert/strict')
const dgram = require('node:dgram')
const { once } = require('node:events')
const hep = require('../../collectors/hep')
const { startTestCollector } = require('../helpers/collector')
const { startRtpengine } = require('../helpers/rtpengine')
const { freePortPair } = require('../helpers/ports')
const { runGstCall, requireGstCall } = require('../helpers/gst-call')
const { waitFor } = require('../helpers/streams')
const { sideQuality } = require('../../collectors/rtcp/quality-analytics')

const DROP = 0.05

/** A UDP port nobody reads: where the fixture's own copy of its RTCP goes (the collector hears rtpengine's HEP). */
async function sinkPort (t) {
  const socket = dgram.createSocket('udp4')
  socket.on('message', () => {})
  socket.bind(0, '127.0.0.1')
  await once(socket, 'listening')
  t.after(() => socket.close())
  return socket.address().port
}

async function relayedCall (t, protocol) {
  await requireGstCall()
  const { collector, db, port } = await startTestCollector(t, hep, ['--protocol', protocol === 'tcp' ? 'tcp_server' : 'udp'])
  const rtpengine = await startRtpengine(t, { hepPort: port, hepProtocol: protocol })
  const callId = `gst-${protocol}-${Date.now()}@rtpengine.test`
  const aPort = await freePortPair()
  const bPort = await freePortPair()
  const { aSendsTo, bSendsTo } = await rtpengine.relay(callId, aPort, bPort)
  const truth = await runGstCall({
    collectorPort: await sinkPort(t), drop: DROP, durationMs: 6000, probation: 0, relay: { aPort, bPort, aSendsTo, bSendsTo }, t
  })
  const engine = await rtpengine.query(callId)
  // Every RTCP datagram the endpoints sent went through rtpengine: it sends one HEP packet for each.
  const sent = truth.rtcpSent.A.datagrams + truth.rtcpSent.B.datagrams
  await waitFor(() => collector.summary().processed >= sent, { what: `${sent} HEP RTCP packets processed (rtpengine's log:\n${rtpengine.log().slice(-2000)})`, timeout: 20000 })
  await collector.stop()
  const docs = await db.collection('streams').find({ openKey: { $exists: true } }).toArray()
  return { truth, engine, docs, callId, summary: collector.summary() }
}

function checkAgainstPeers ({ truth, engine, docs, callId, summary }) {
  assert.equal(summary.dropped.total, 0, JSON.stringify(summary.dropped))
  assert.equal(docs.length, 1, 'one stream for the call')
  const [doc] = docs
  assert.deepEqual([doc.from.callId, doc.to.callId], [callId, callId], 'tagged with the Call-ID rtpengine sent')
  for (const receiver of truth.receivers) {
    const side = doc.from.ID === String(receiver.receiverSsrc) ? doc.from : doc.to
    const what = `${receiver.receiver} about ${receiver.sender}`
    assert.equal(side.ID, String(receiver.receiverSsrc), what)
    // GStreamer's own: the last report block this end sent, as rtpengine relayed it.
    assert.equal(side.highestPacketNum, receiver['sent-rb-exthighestseq'], `${what}: highest sequence`)
    assert.equal(side.cumulativeLost, receiver['sent-rb-packetslost'], `${what}: cumulative lost`)
    assert.equal(side.jitter, receiver['sent-rb-jitter'], `${what}: jitter`)
    const q = sideQuality(side)
    assert.ok(Math.abs(q.lossRate - DROP) < 0.05, `${what}: loss ${q.lossRate} near netsim's ${DROP}`)
    // rtpengine's own: the RTP it received from the sender (its tag's RTP
    // stream), and per reporting SSRC the loss it read and the round-trip
    // time it measured.
    const engineSide = engineSsrc(engine, receiver.receiverSsrc)
    assert.ok(engineSide, `${what}: rtpengine knows SSRC ${receiver.receiverSsrc} (${Object.keys(engine.SSRC || {})})`)
    assert.equal(rtpReceivedFrom(engine, receiver.sender === 'A' ? 'tag-a' : 'tag-b'), receiver['packets-received'], `${what}: rtpengine relayed what GStreamer received`)
    assert.equal(side.cumulativeLost, engineSide['cumulative loss'], `${what}: cumulative lost, rtpengine's`)
    const engineRttMs = engineSide['average MOS']['round-trip time'] / 1000
    assert.ok(Math.abs(q.rttMs.avg - engineRttMs) < 2, `${what}: RTT ${q.rttMs.avg} ms, rtpengine's average ${engineRttMs} ms`)
  }
}

// rtpengine's query reply keys its per-SSRC statistics by the decimal SSRC
// of the reporter (the cumulative loss it reported; the round-trip time
// rtpengine measured for it, in µs).
function engineSsrc (engine, ssrc) {
  return (engine.SSRC && engine.SSRC[String(ssrc)]) || null
}

// The RTP packets rtpengine received on the call leg of `tag` (its RTP stream's stats).
function rtpReceivedFrom (engine, tag) {
  const streams = engine.tags[tag].medias.flatMap((media) => media.streams)
  return streams.filter((stream) => stream.flags.includes('RTP')).reduce((sum, stream) => sum + stream.stats.packets, 0)
}

test('rtpengine relays a real call and sends its RTCP over HEP/UDP: the stored figures are GStreamer\'s and rtpengine\'s', { timeout: 120000 }, async (t) => {
  checkAgainstPeers(await relayedCall(t, 'udp'))
})

test('the same over HEP/TCP (--homer-protocol=tcp): each packet framed by its own length', { timeout: 120000 }, async (t) => {
  checkAgainstPeers(await relayedCall(t, 'tcp'))
})
