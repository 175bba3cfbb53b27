'use strict'

// The clock and codec of each media stream from what the network says: the
// SDP of a call's SIP over HEP (collectors/hep/sdp.js), bound to its RTCP by
// the addresses the SDP names, else two SRs of the sender, else the
// collector's default, each said with where it came from; jitter stored in
// RTP timestamp units and read at the best clock known.

const { test } = require('node:test')
const assert = require('node:assert/strict')
const HEPjs = require('hep-js')
const { parseSdp } = require('../../collectors/hep/sdp')
const hep = require('../../collectors/hep')
const { CallQuality } = require('../../collectors/rtcp/call-quality')
const { sideQuality, minuteJitterMs } = require('../../collectors/rtcp/quality-analytics')

const CALL_ID = 'c0ffee@a.example.com'
const A = { ip: '192.0.2.10', rtp: 49170, rtcp: 49300 } // a=rtcp names another port than RTP + 1
const B = { ip: '198.51.100.7', rtp: 30000, rtcp: 30001 }

function sdp (end, formats, extra = []) {
  return ['v=0', `o=- 1 1 IN IP4 ${end.ip}`, 's=-', `c=IN IP4 ${end.ip}`, 't=0 0', `m=audio ${end.rtp} RTP/AVP ${formats}`, ...extra, ''].join('\r\n')
}

function sip (startLine, cseq, body) {
  return [startLine, `Call-ID: ${CALL_ID}`, 'From: <sip:alice@a.example.com>;tag=1', `To: <sip:bob@b.example.com>${startLine.startsWith('SIP') ? ';tag=2' : ''}`, `CSeq: ${cseq}`, 'Content-Type: application/sdp', `Content-Length: ${Buffer.byteLength(body)}`, '', body].join('\r\n')
}

function hepPacket (payload, type, from, to, correlation) {
  return HEPjs.encapsulate(payload, {
    protocolFamily: 2, protocol: 17, srcIp: from.ip, dstIp: to.ip, srcPort: from.port, dstPort: to.port,
    timeSeconds: 1795590000, timeUseconds: 0, payloadType: type, captureId: 1, ...(correlation ? { correlation_id: correlation } : {})
  })
}

// The HEP definition's decode and enrich, as a worker runs them.
function worker () {
  const settings = {}
  const state = hep.definition.state({ codec: 'G.711', jitterBuffer: 50, maxSources: 1000 })
  return (data, at) => hep.definition.enrich(hep.definition.decode({ data }, settings, { receivedAt: new Date(at) }), state, {})
}

test('SDP: the first speech format of each m= line with its clock, the RTCP port (a=rtcp, rtcp-mux, else RTP + 1); not SDP, null', () => {
  const media = parseSdp(sdp(A, '101 111 0', ['a=rtpmap:111 opus/48000/2', 'a=rtpmap:101 telephone-event/48000', `a=rtcp:${A.rtcp}`, 'a=ptime:20']) +
    'm=video 0 RTP/AVP 96\r\na=rtpmap:96 VP8/90000\r\nm=audio 5000 RTP/AVP 9\r\nc=IN IP4 203.0.113.5\r\na=rtcp-mux\r\n')
  assert.deepEqual(media.map((m) => [m.kind, m.ip, m.rtpPort, m.rtcpPort, m.format && `${m.format.payloadType} ${m.format.encoding}/${m.format.clockRate}`]), [
    ['audio', A.ip, A.rtp, A.rtcp, '111 opus/48000'],
    ['video', A.ip, 0, 0, '96 VP8/90000'],
    ['audio', '203.0.113.5', 5000, 5000, '9 G722/8000'] // a static type: RFC 3551's clock, 8000 for G.722
  ])
  assert.equal(media[0].format.ptimeMs, 20)
  assert.equal(parseSdp(sdp(B, '8')).at(0).rtcpPort, B.rtp + 1)
  assert.equal(parseSdp('hello'), null)
  assert.equal(parseSdp(sdp(B, '101', ['a=rtpmap:101 telephone-event/8000'])).at(0).format, null, 'no speech format')
  // An SDP that writes G.722's sampling rate as its clock: the RTP clock is still 8000 (RFC 3551 §4.5.2).
  assert.equal(parseSdp(sdp(B, '9', ['a=rtpmap:9 G722/16000'])).at(0).format.clockRate, 8000)
  assert.equal(parseSdp('v=0\r\n' + 'm=audio 1 RTP/AVP 0\r\n'.repeat(1000)).length, 16, 'm= lines kept are bounded')
})

test('SDP bodies a sender makes up never throw and keep their bounds', () => {
  let seed = 7
  const random = () => { seed = (seed * 1103515245 + 12345) & 0x7fffffff; return seed / 0x7fffffff }
  const pieces = ['m=audio ', 'm=audio 65535 RTP/AVP 0', 'm=video 0 ', 'RTP/AVP ', 'a=rtpmap:', 'a=rtcp:', 'c=IN IP4 ', '/', ' ', '\r\n', '\n', '99999', '-1', '111', 'opus', 'x'.repeat(300), '0', '8', '=', ':']
  for (let i = 0; i < 2000; i++) {
    let body = 'v=0\r\n'
    for (let j = random() * 60; j > 0; j--) body += pieces[Math.floor(random() * pieces.length)]
    const media = parseSdp(body)
    if (media === null) continue
    assert.ok(media.length <= 16)
    for (const m of media) {
      assert.ok(m.rtpPort >= 0 && m.rtpPort <= 65535 && m.rtcpPort >= 0 && m.rtcpPort <= 65535, JSON.stringify(m))
      if (m.format) assert.ok(Number.isInteger(m.format.clockRate) && m.format.payloadType >= 0 && m.format.payloadType <= 127)
    }
  }
})

test('over HEP, a call\'s SDP gives its RTCP the clock and codec: jitter of an Opus stream at 48 kHz from the first report, said as sdp', () => {
  const run = worker()
  const at = Date.UTC(2026, 10, 27, 5, 0, 0)
  run(hepPacket(sip('INVITE sip:bob@b.example.com SIP/2.0', '1 INVITE', sdp(A, '111 8 101', ['a=rtpmap:111 opus/48000/2', 'a=rtpmap:8 PCMA/8000', `a=rtcp:${A.rtcp}`])), 1, { ip: A.ip, port: 5060 }, { ip: B.ip, port: 5060 }), at)
  run(hepPacket(sip('SIP/2.0 200 OK', '1 INVITE', sdp(B, '111 101', ['a=rtpmap:111 opus/48000/2', 'a=rtpmap:101 telephone-event/48000'])), 1, { ip: B.ip, port: 5060 }, { ip: A.ip, port: 5060 }), at + 10)
  // B's receiver report on A's stream, 480 ticks of jitter: 10 ms at 48 kHz (60 ms at the default 8 kHz).
  const rr = JSON.stringify({ ssrc: 22, type: 201, report_count: 1, report_blocks: [{ source_ssrc: 11, highest_seq_no: 1000, fraction_lost: 0, ia_jitter: 480, packets_lost: 0, lsr: 0, dlsr: 0 }] })
  const [item] = run(hepPacket(rr, 5, { ip: B.ip, port: B.rtcp }, { ip: A.ip, port: A.rtcp }, CALL_ID), at + 5000)
  assert.deepEqual([item.fields.clockRate, item.fields.clockRateSource, item.fields.format, item.fields.jitterMs], [48000, 'sdp', 'opus/48000', 10])
  assert.equal(item.fields.callId, CALL_ID)
  const update = {}
  item.stats.addTo(update, 'to')
  assert.deepEqual(update.$max['to.quality.clock'], { rank: 3, rate: 48000, source: 'sdp' })
  assert.equal(update.$max['to.quality.codec'].source, 'default', 'Opus has no narrowband planning values: scored as --codec, and said so')
  // A PCMA call: its codec is the SDP's, with its planning values.
  const other = new CallQuality({ codec: 'G.729A' })
  other.clocks.announce('x', parseSdp(sdp(A, '8')), 'offer', at)
  assert.equal(other.clocks.bindCall('x', { ip: '10.0.0.1', port: 1 }, { ip: '10.0.0.2', port: 2 }, [5], at), true, 'the call\'s only audio stream, whatever the relay\'s addresses')
  const r = other.report(6, { ssrc: 5, fractionLost: 0, cumulativeLost: 0, highestSeq: 1, jitter: 8, lsr: 0, dlsr: 0 }, at)
  assert.deepEqual([r.fields.codec, r.fields.codecSource, r.fields.clockRateSource], ['G.711', 'sdp', 'sdp'])
  assert.equal(other.clocks.bindCall('unknown-call', { ip: A.ip, port: A.rtcp }, null, [7], at), false)
  // Audio and video behind a relay's addresses: neither is guessed; the addresses the SDP names pick one.
  const av = parseSdp(sdp(A, '0') + 'm=video 49180 RTP/AVP 96\r\na=rtpmap:96 VP8/90000\r\n')
  other.clocks.announce('av', av, 'offer', at)
  assert.equal(other.clocks.bindCall('av', { ip: '10.0.0.1', port: 1 }, { ip: '10.0.0.2', port: 2 }, [8], at), false)
  assert.equal(other.clocks.bindCall('av', { ip: '10.0.0.1', port: 1 }, { ip: A.ip, port: 49181 }, [8], at), true)
  const video = other.report(6, { ssrc: 8, fractionLost: 0, cumulativeLost: 0, highestSeq: 1, jitter: 90, lsr: 0, dlsr: 0 }, at).fields
  assert.deepEqual([video.clockRate, video.clockRateSource], [90000, 'sdp'])
  assert.deepEqual(other.stats().sdp, { bodies: 2, bound: 2, unbound: 1 }, 'the SDP read and the RTCP bound or not, counted')
})

// A delayed offer (RFC 3261 §13.2.1): the INVITE has no SDP, the 200 OK
// offers, the ACK answers. Every request's SDP was taken for the offer and
// every response's for the answer: the 200's first codec (Opus at 48 kHz)
// bound the call agreed on PCMA at 8 kHz, and its jitter read 6× low.
test('over HEP, a delayed offer\'s call takes the codec its ACK answered, whichever of the 200 and the ACK is captured first', () => {
  const at = Date.UTC(2026, 10, 27, 5, 0, 0)
  const offer = sdp(B, '111 8', ['a=rtpmap:111 opus/48000/2', 'a=rtpmap:8 PCMA/8000'])
  for (const order of [['ok', 'ack'], ['ack', 'ok']]) {
    const run = worker()
    run(hepPacket(sip('INVITE sip:bob@b.example.com SIP/2.0', '1 INVITE', ''), 1, { ip: A.ip, port: 5060 }, { ip: B.ip, port: 5060 }), at)
    const messages = {
      ok: hepPacket(sip('SIP/2.0 200 OK', '1 INVITE', offer), 1, { ip: B.ip, port: 5060 }, { ip: A.ip, port: 5060 }),
      ack: hepPacket(sip('ACK sip:bob@b.example.com SIP/2.0', '1 ACK', sdp(A, '8')), 1, { ip: A.ip, port: 5060 }, { ip: B.ip, port: 5060 })
    }
    order.forEach((name, i) => run(messages[name], at + 10 + i))
    // 80 ticks of jitter: 10 ms at PCMA's 8 kHz (1.7 ms at Opus's 48 kHz).
    const rr = JSON.stringify({ ssrc: 22, type: 201, report_count: 1, report_blocks: [{ source_ssrc: 11, highest_seq_no: 1000, fraction_lost: 0, ia_jitter: 80, packets_lost: 0, lsr: 0, dlsr: 0 }] })
    const [item] = run(hepPacket(rr, 5, { ip: B.ip, port: B.rtcp }, { ip: A.ip, port: A.rtcp }, CALL_ID), at + 5000)
    assert.deepEqual([item.fields.format, item.fields.clockRate, item.fields.jitterMs], ['PCMA/8000', 8000, 10], order.join(' then '))
    // A re-INVITE offering Opus, answered Opus: the codec now, not the old ACK's.
    run(hepPacket(sip('INVITE sip:bob@b.example.com SIP/2.0', '2 INVITE', sdp(A, '111', ['a=rtpmap:111 opus/48000/2'])), 1, { ip: A.ip, port: 5060 }, { ip: B.ip, port: 5060 }), at + 60000)
    run(hepPacket(sip('SIP/2.0 200 OK', '2 INVITE', sdp(B, '111', ['a=rtpmap:111 opus/48000/2'])), 1, { ip: B.ip, port: 5060 }, { ip: A.ip, port: 5060 }), at + 60010)
    const rr2 = JSON.stringify({ ssrc: 22, type: 201, report_count: 1, report_blocks: [{ source_ssrc: 33, highest_seq_no: 1000, fraction_lost: 0, ia_jitter: 480, packets_lost: 0, lsr: 0, dlsr: 0 }] })
    const [later] = run(hepPacket(rr2, 5, { ip: B.ip, port: B.rtcp }, { ip: A.ip, port: A.rtcp }, CALL_ID), at + 65000)
    assert.deepEqual([later.fields.format, later.fields.jitterMs], ['opus/48000', 10], `${order.join(' then ')}, re-INVITE`)
  }
})

test('until the clock is known jitter is kept in timestamp units; once two SRs tell it, every stored figure reads at it', () => {
  const q = new CallQuality()
  const at = Date.UTC(2026, 10, 27, 5, 0, 0)
  const report = (seq, jitter, t) => q.report(1, { ssrc: 2, fractionLost: 0, cumulativeLost: 0, highestSeq: seq, jitter, lsr: 0, dlsr: 0 }, t)
  const early = [report(1000, 2400, at), report(1250, 1200, at + 5000)] // at the default 8 kHz: 300 and 150 ms
  assert.deepEqual([early[0].fields.clockRateSource, early[0].fields.jitterMs], ['default', 300], 'the last value says its clock is the default')
  q.clocks.reference(2, 1000, 0, 0, at + 6000)
  q.clocks.reference(2, 1005, 0, 240000, at + 11000) // 240,000 ticks in 5 s: 48 kHz
  const late = [report(1500, 480, at + 12000)]
  assert.deepEqual([late[0].fields.clockRateSource, late[0].fields.jitterMs], ['sender-reports', 10])
  const side = { packets: 3, ...late[0].fields, quality: {} }
  // The stored side as the upserts leave it, in any order: $max of the clock keeps the best known.
  for (const r of [late[0], ...early]) {
    const update = {}
    r.stats.addTo(update, 's')
    for (const [path, value] of Object.entries(update.$max)) if (path === 's.quality.clock' && !(side.quality.clock && side.quality.clock.rank >= value.rank)) side.quality.clock = value
    for (const [path, value] of Object.entries({ ...update.$inc, ...update.$min, ...update.$max })) {
      if (!path.startsWith('s.quality.jitter.') && !path.startsWith('s.quality.minutes.')) continue
      const parts = path.split('.').slice(2)
      let node = side.quality
      for (const part of parts.slice(0, -1)) node = node[part] || (node[part] = {})
      const key = parts[parts.length - 1]
      node[key] = key === 'sum' || key === 'count' ? (node[key] || 0) + value : key === 'min' ? Math.min(node[key] ?? Infinity, value) : Math.max(node[key] ?? -Infinity, value)
    }
  }
  const read = sideQuality(side)
  assert.deepEqual([read.clockRate, read.clockRateSource], [48000, 'sender-reports'])
  assert.deepEqual([read.jitterMs.max, read.jitterMs.min], [50, 10], 'the early 2400 ticks read 50 ms at 48 kHz, not 300')
  assert.ok(Math.abs(read.jitterMs.avg - (2400 + 1200 + 480) / 3 / 48) < 1e-9)
  const [bucket] = Object.values(side.quality.minutes)
  assert.equal(minuteJitterMs(side, bucket), 50, 'the minute\'s highest jitter too')
})

test('reordering and duplicates: more received than expected is counted per side, the loss unchanged', () => {
  const q = new CallQuality()
  const block = (seq, lost) => ({ ssrc: 2, fractionLost: 0, cumulativeLost: lost, highestSeq: seq, jitter: 8, lsr: 0, dlsr: 0 })
  const first = q.report(1, block(1000, -2), 0) // two duplicates before the first report: a negative cumulative lost
  const lossy = q.report(1, block(1100, 8), 5000) // 10 lost of 100
  const dup = q.report(1, block(1200, 5), 10000) // 3 more received than expected
  assert.deepEqual([first.stats.excessReceived, lossy.stats.excessReceived, dup.stats.excessReceived], [2, 0, 3])
  assert.deepEqual([lossy.fields.lossRate, dup.fields.lossRate], [0.1, 0], 'an interval with duplicates has no loss, not a negative one')
  const update = {}
  dup.stats.merge(first.stats).addTo(update, 's')
  assert.equal(update.$inc['s.quality.loss.excessReceived'], 5)
  assert.equal(sideQuality({ quality: { loss: { excessReceived: 5, first: { seq: 1000, lost: -2 }, last: { seq: 1200, lost: 5 } } } }).excessReceived, 5)
})
