'use strict'

// A HEP packet whose TCP segment holds SIP messages of two calls (heplify
// without -tcpassembly on a trunk) is split by the master into a packet per
// call (collectors/hep/call-parts.js), so that each call's messages meet
// its memory in the worker its Call-ID hashes to: a copy of one is known
// as a copy, the per-call cap counts it, and its BYE ends its streams. Kept
// whole, the segment went to its first message's worker, where none of
// that held: a copy was stored twice, the cap let a message past, and the
// call's streams ended by timeout only.

const test = require('node:test')
const assert = require('node:assert/strict')
const dgram = require('node:dgram')
const HEPjs = require('hep-js')
const hep = require('../../collectors/hep')
const { callKeyOf } = require('../../collectors/hep/call-key')
const { keyHash } = require('../../lib/master/distribution')
const { startTestCollector } = require('../helpers/collector')
const { waitFor } = require('../helpers/streams')

const HOST = '127.0.0.1'
const T0 = Math.floor(Date.now() / 1000) * 1000 - 600000
const CALLER = ['10.0.0.1', 5060]
const CALLEE = ['10.0.0.2', 5060]

function rcinfo (type, at, [src, dst] = [CALLER, CALLEE], extra = {}) {
  return { protocolFamily: 2, protocol: type === 1 ? 6 : 17, srcIp: src[0], srcPort: src[1], dstIp: dst[0], dstPort: dst[1], timeSeconds: Math.floor(at / 1000), timeUseconds: (at % 1000) * 1000, payloadType: type, captureId: 7, ...extra }
}

function sip (first, callId, cseq, answered = false) {
  return [first, 'Via: SIP/2.0/TCP 10.0.0.1:5060;branch=z9hG4bK1', 'From: <sip:alice@a.example>;tag=a1', `To: <sip:bob@b.example>${answered ? ';tag=b1' : ''}`, `Call-ID: ${callId}`, `CSeq: ${cseq}`, 'Content-Length: 0', '', ''].join('\r\n')
}

const packet = (texts, at, dir) => HEPjs.encapsulate(texts.join(''), rcinfo(1, at, dir))
const slotOf = (callId) => keyHash(callKeyOf(packet([sip('BYE sip:x SIP/2.0', callId, '1 BYE')], T0), 0, packet([sip('BYE sip:x SIP/2.0', callId, '1 BYE')], T0).length)) % 2

// Two Call-IDs whose calls live in different workers of two.
function callsInTwoWorkers () {
  const a = 'a@parts.example'
  for (let i = 0; ; i++) if (slotOf(`b${i}@parts.example`) !== slotOf(a)) return [a, `b${i}@parts.example`]
}

function rtcp (ssrc, source, seq, at, callId, dir) {
  const report = { ssrc, type: 201, report_count: 1, report_blocks: [{ source_ssrc: source, highest_seq_no: seq, fraction_lost: 0, ia_jitter: 40, packets_lost: 0, lsr: 0, dlsr: 0 }] }
  return HEPjs.encapsulate(JSON.stringify(report), rcinfo(5, at, dir, { correlation_id: callId }))
}

test('a TCP segment of two calls\' SIP messages: each call\'s messages meet it in its own worker (copies, the per-call cap, the BYE ending its streams)', { timeout: 120000 }, async (t) => {
  const { collector, db, port } = await startTestCollector(t, hep, ['--hep-messages-per-call', '3', '--bye-grace', '0', '--stream-timeout', '1d'])
  const [a, b] = callsInTwoWorkers()
  const back = [CALLEE, CALLER]
  const media = [['10.0.0.1', 30001], ['10.0.0.2', 40001]]
  const okB = sip('SIP/2.0 200 OK', b, '1 INVITE', true)
  const packets = [
    packet([sip('INVITE sip:bob@b.example SIP/2.0', b, '1 INVITE')], T0),
    rtcp(211, 212, 1000, T0 + 1000, b, media),
    rtcp(212, 211, 1000, T0 + 1100, b, [media[1], media[0]]),
    // One segment of the trunk: A's INVITE, B's answer, A's 100.
    packet([sip('INVITE sip:bob@b.example SIP/2.0', a, '1 INVITE'), okB, sip('SIP/2.0 100 Trying', a, '1 INVITE')], T0 + 3000, back),
    // A second agent's copy of B's answer, alone, 50 ms later.
    packet([okB], T0 + 3050, back),
    rtcp(211, 212, 1250, T0 + 8000, b, media),
    // Another segment: A's 180 and B's BYE.
    packet([sip('SIP/2.0 180 Ringing', a, '1 INVITE'), sip('BYE sip:alice@10.0.0.1 SIP/2.0', b, '2 BYE', true)], T0 + 20000, back),
    // B's fourth message: past its cap of 3.
    packet([sip('SIP/2.0 200 OK', b, '2 BYE', true)], T0 + 20010)
  ]
  const socket = dgram.createSocket('udp4')
  t.after(() => socket.close())
  for (const p of packets) await new Promise((resolve, reject) => socket.send(p, port, HOST, (err) => err ? reject(err) : resolve()))
  // The two segments are five messages: each run of one call's messages counts as one.
  await waitFor(() => collector.summary().processed === packets.length + 3, { what: `${packets.length + 3} messages processed (${JSON.stringify(collector.summary())})` })
  const stream = await waitFor(() => db.collection('streams').findOne({ 'from.callId': b, active: false }), { what: 'call B\'s stream closed', timeout: 10000 }).catch(() => null)
  const stats = await collector.stats()
  const sum = (of) => stats.workers.reduce((n, w) => n + of(w.custom), 0)
  const messages = await db.collection('sip_messages').find().sort({ at: 1 }).toArray()
  const lines = (callId) => messages.filter((m) => m.callId === callId).map((m) => m.firstLine)
  assert.deepEqual(lines(a), ['INVITE sip:bob@b.example SIP/2.0', 'SIP/2.0 100 Trying', 'SIP/2.0 180 Ringing'])
  assert.deepEqual(lines(b), ['INVITE sip:bob@b.example SIP/2.0', 'SIP/2.0 200 OK', 'BYE sip:alice@10.0.0.1 SIP/2.0'], 'B\'s answer once (its copy known), its fourth message past the cap')
  assert.equal(sum((c) => c.duplicates.sip), 1, 'the copy counted')
  assert.equal(sum((c) => c.overCap), 1, 'B\'s fourth message counted past its cap')
  assert.ok(stream, 'B\'s BYE, in a segment whose first message was A\'s, ended B\'s stream')
  assert.equal(stream.endReason, 'bye')
  assert.equal(+stream.endedAt, T0 + 20000)
})
