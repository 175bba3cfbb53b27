'use strict'

// The HEP3 decoder against an independent encoder (hep-js, a dev
// dependency), and the payloads a HEP collector reads: RTCP as the agents'
// JSON or as raw bytes (checked against our RTCP encoder's packets), SIP.

const { test } = require('node:test')
const assert = require('node:assert/strict')
const zlib = require('node:zlib')
const HEPjs = require('hep-js')
const { decodeHep, payloadOf, captureTime, HEP_REASONS } = require('../../collectors/hep/hep-decoder')
const { rtcpOfHep } = require('../../collectors/hep/rtcp-json')
const { parseSip } = require('../../collectors/hep/sip')
const { encodeReport } = require('../../collectors/rtcp/encoder')
const { decodeRtcp, DECODE_REASONS } = require('../../collectors/rtcp/decoder')

const RCINFO = {
  protocolFamily: 2,
  protocol: 17,
  srcIp: '10.1.2.3',
  dstIp: '10.9.8.7',
  srcPort: 30000,
  dstPort: 40002,
  timeSeconds: 1795590000,
  timeUseconds: 123456,
  payloadType: 5,
  captureId: 2001,
  hepNodeName: 'rtpengine-1',
  capturePass: 'secret',
  correlation_id: 'a84b4c76e66710@pc33.example.com'
}

test('HEP3 packets from an independent encoder decode field for field', () => {
  const payload = '{"ssrc":1}'
  const packet = decodeHep(HEPjs.encapsulate(payload, RCINFO))
  assert.equal(packet instanceof Error, false, String(packet))
  assert.deepEqual({
    family: packet.family,
    ipProtocol: packet.ipProtocol,
    srcIp: packet.srcIp,
    dstIp: packet.dstIp,
    srcPort: packet.srcPort,
    dstPort: packet.dstPort,
    timeSec: packet.timeSec,
    timeUsec: packet.timeUsec,
    protocolType: packet.protocolType,
    captureId: packet.captureId,
    nodeName: packet.nodeName,
    authKey: packet.authKey,
    correlationId: packet.correlationId,
    payload: packet.payload.toString()
  }, {
    family: 2,
    ipProtocol: 17,
    srcIp: '10.1.2.3',
    dstIp: '10.9.8.7',
    srcPort: 30000,
    dstPort: 40002,
    timeSec: 1795590000,
    timeUsec: 123456,
    protocolType: 5,
    captureId: 2001,
    nodeName: 'rtpengine-1',
    authKey: 'secret',
    correlationId: 'a84b4c76e66710@pc33.example.com',
    payload
  })
  assert.equal(captureTime(packet), 1795590000123)
  // The independent decoder agrees on what it reads of ours: the same bytes.
  assert.equal(HEPjs.decapsulate(HEPjs.encapsulate(payload, RCINFO)).rcinfo.correlation_id, packet.correlationId)
})

test('IPv6 inner addresses, unknown chunks skipped by length, a compressed payload inflated', () => {
  const chunk = (vendor, type, body) => {
    const head = Buffer.alloc(6)
    head.writeUInt16BE(vendor, 0)
    head.writeUInt16BE(type, 2)
    head.writeUInt16BE(6 + body.length, 4)
    return Buffer.concat([head, body])
  }
  const u8 = (n) => Buffer.from([n])
  const ip6 = (text) => Buffer.from(text.split(':').map((g) => g.padStart(4, '0')).join(''), 'hex')
  const sip = 'OPTIONS sip:x@y SIP/2.0\r\nCall-ID: c1\r\nFrom: <sip:a@b>;tag=1\r\nTo: <sip:x@y>\r\nCSeq: 1 OPTIONS\r\n\r\n'
  const body = Buffer.concat([
    chunk(0, 0x01, u8(10)),
    chunk(0, 0x05, ip6('2001:db8:0:0:0:0:0:1')),
    chunk(0, 0x06, ip6('fe80:0:0:1:0:0:0:0')),
    chunk(0x0008, 0x0080, Buffer.from('vendor chunk')),
    chunk(0, 0x0b, u8(1)),
    chunk(0, 0x77, Buffer.from('a future generic chunk')),
    chunk(0, 0x10, zlib.gzipSync(sip))
  ])
  const head = Buffer.from('HEP3\0\0', 'latin1')
  head.writeUInt16BE(6 + body.length, 4)
  const packet = decodeHep(Buffer.concat([head, body]))
  assert.equal(packet.srcIp, '2001:db8::1')
  assert.equal(packet.dstIp, 'fe80:0:0:1::')
  assert.equal(packet.skippedChunks, 2)
  assert.equal(packet.payload, undefined, 'decoding inflates nothing')
  assert.equal(payloadOf(packet).toString(), sip)
  assert.equal(packet.protocolType, 1)
})

test('broken HEP3 packets are refused by reason, never thrown', () => {
  const good = HEPjs.encapsulate('{"ssrc":1}', RCINFO)
  const reasonOf = (buf) => {
    const packet = decodeHep(buf)
    const result = packet instanceof Error ? packet : payloadOf(packet)
    return result instanceof Error ? result.reason : 'decoded'
  }
  assert.equal(reasonOf(Buffer.from('HEP2........')), 'hep-bad-magic')
  assert.equal(reasonOf(good.subarray(0, good.length - 1)), 'hep-bad-length')
  const shortChunk = Buffer.from(good)
  shortChunk.writeUInt16BE(3, 10) // the first chunk's length below its own header
  assert.equal(reasonOf(shortChunk), 'hep-truncated-chunk')
  const longChunk = Buffer.from(good)
  longChunk.writeUInt16BE(good.length, 10)
  assert.equal(reasonOf(longChunk), 'hep-truncated-chunk')
  const badPort = Buffer.from(good)
  // The src port chunk (type 7) declared 3 bytes of payload is the wrong size.
  const at = badPort.indexOf(Buffer.from([0, 0, 0, 7, 0, 8]))
  badPort.writeUInt16BE(9, at + 4)
  assert.equal(reasonOf(badPort), 'hep-bad-chunk', 'a port chunk of 3 bytes is the wrong size for a port')
  // Random bytes after a good header: never a throw.
  for (let i = 0; i < 2000; i++) {
    const noise = Buffer.from(good)
    for (let k = 0; k < 4; k++) noise[6 + Math.floor(Math.random() * (noise.length - 6))] = Math.floor(Math.random() * 256)
    const reason = reasonOf(noise)
    assert.ok(reason === 'decoded' || HEP_REASONS.includes(reason), reason)
  }
  const bomb = Buffer.concat([Buffer.from('HEP3\0\0'), Buffer.from([0, 0, 0, 0x10, 0, 0]), zlib.gzipSync(Buffer.alloc(2 * 1024 * 1024))])
  bomb.writeUInt16BE(bomb.length, 4)
  bomb.writeUInt16BE(bomb.length - 6, 10)
  assert.equal(reasonOf(bomb), 'hep-bad-gzip', 'a payload that inflates past 65,535 bytes is refused')
  const fits = Buffer.concat([Buffer.from('HEP3\0\0'), Buffer.from([0, 0, 0, 0x10, 0, 0]), zlib.gzipSync(Buffer.alloc(65535))])
  fits.writeUInt16BE(fits.length, 4)
  fits.writeUInt16BE(fits.length - 6, 10)
  assert.equal(reasonOf(fits), 'decoded', 'what an uncompressed packet could carry inflates')
})

test('RTCP as rtpengine sends it in JSON (SR with report blocks and SDES) becomes the RTCP decoder\'s packets', () => {
  const raw = encodeReport({
    ssrc: 0xdeadbeef,
    sender: { ntpSec: 3972000000, ntpFrac: 0x80000000, rtpTimestamp: 160000, packetCount: 500, octetCount: 80000 },
    reports: [{ ssrc: 0x1234, fractionLost: 12, cumulativeLost: -3, highestSeq: 70001, jitter: 44, lsr: 0xabcd1234, dlsr: 65536 }],
    cname: 'alice@host'
  })
  const [sr, sdes] = decodeRtcp(raw).packets
  // The JSON rtpengine writes for that compound: numbers as %u (the lost count as its unsigned 24 bits).
  const json = `{ "sender_information":{"ntp_timestamp_sec":${sr.ntpSec},"ntp_timestamp_usec":${sr.ntpFrac},"octets":${sr.octetCount},"rtp_timestamp":${sr.rtpTimestamp}, "packets":${sr.packetCount}},` +
    `"ssrc":${sr.ssrc},"type":200,"report_count":1,"report_blocks":[{"source_ssrc":${sr.reports[0].ssrc},"highest_seq_no":70001,"fraction_lost":12,"ia_jitter":44,"packets_lost":${0x1000000 - 3},"lsr":${0xabcd1234},"dlsr":65536}],` +
    `"sdes_report_count":1,"sdes_information": [ {"sdes_chunk_ssrc":${sdes.chunks[0].ssrc},"type":1,"text":"alice@host"}], }`.replace(/,\s*}$/, ' }')
  const { packets, reason } = rtcpOfHep(Buffer.from(json))
  assert.equal(reason, undefined)
  const { extension, ...srFields } = sr
  assert.deepEqual(packets[0], srFields)
  assert.deepEqual(packets[1], { type: 'SDES', chunks: [{ ssrc: 0xdeadbeef, items: { cname: 'alice@host' } }] })
})

test('RTCP JSON quirks: type 202 with sender information is an SR; Unix-time timevals (Asterisk); numbers as strings; an empty sender block is an RR', () => {
  const asterisk = rtcpOfHep(Buffer.from(JSON.stringify({ ssrc: 7, type: 202, report_count: 0, report_blocks: [], sender_information: { ntp_timestamp_sec: 1795590000, ntp_timestamp_usec: 500000, rtp_timestamp: 8000, packets: 50, octets: 8000 } })))
  assert.equal(asterisk.packets[0].type, 'SR')
  assert.equal(asterisk.packets[0].ntpSec, 1795590000 + 2208988800)
  assert.equal(asterisk.packets[0].ntpFrac, 0x80000000)
  const strings = rtcpOfHep(Buffer.from(JSON.stringify({ ssrc: '7', report_blocks: [{ source_ssrc: '9', highest_seq_no: '100', fraction_lost: '0', ia_jitter: '3', packets_lost: '0', lsr: '0', dlsr: '0' }], sender_information: { ntp_timestamp_sec: 0, ntp_timestamp_usec: 0, rtp_timestamp: 0, packets: 0, octets: 0 } })))
  assert.deepEqual(strings.packets, [{ type: 'RR', ssrc: 7, reports: [{ ssrc: 9, fractionLost: 0, cumulativeLost: 0, highestSeq: 100, jitter: 3, lsr: 0, dlsr: 0 }] }])
  assert.equal(rtcpOfHep(Buffer.from('{"ssrc": 1, "report_blocks": [{"source_ssrc": 2, "fraction_lost": 300}]}')).reason, 'hep-rtcp-field')
  assert.equal(rtcpOfHep(Buffer.from('{"type": 201}')).reason, 'hep-rtcp-json')
  assert.equal(rtcpOfHep(Buffer.from('{not json')).reason, 'hep-rtcp-json')
})

test('raw binary RTCP on type 5 is told apart from JSON and decoded by the RTCP decoder', () => {
  const raw = encodeReport({ ssrc: 5, reports: [{ ssrc: 6, fractionLost: 0, cumulativeLost: 0, highestSeq: 10, jitter: 1, lsr: 0, dlsr: 0 }], cname: 'b@c' })
  assert.deepEqual(rtcpOfHep(raw).packets.map((p) => p.type), ['RR', 'SDES'])
  assert.ok(DECODE_REASONS.includes(rtcpOfHep(raw.subarray(0, 10)).reason), 'a cut packet: the RTCP decoder\'s reason')
})

test('SIP: requests and responses, compact headers, name-addresses with tags', () => {
  const invite = parseSip(Buffer.from([
    'INVITE sip:+4930123@b.example.com;user=phone SIP/2.0',
    'Via: SIP/2.0/UDP pc33.example.com;branch=z9hG4bK776asdhds',
    'f: "Alice" <sip:alice@A.example.com>;tag=1928301774',
    't: <sip:+4930123@b.example.com;user=phone>',
    'i: a84b4c76e66710@pc33.example.com',
    'CSeq: 314159 INVITE',
    'Content-Length: 0', '', ''].join('\r\n')))
  assert.deepEqual(invite, {
    method: 'INVITE',
    uri: 'sip:+4930123@b.example.com;user=phone',
    callId: 'a84b4c76e66710@pc33.example.com',
    from: { user: 'alice', host: 'a.example.com', tag: '1928301774' },
    to: { user: '+4930123', host: 'b.example.com', tag: null },
    cseq: { seq: 314159, method: 'INVITE' },
    length: 288 // its bytes: headers and its Content-Length's body
  })
  const ok = parseSip(Buffer.from('SIP/2.0 200 OK\r\nCall-ID: x1\r\nFrom: sip:a@h;tag=9\r\nTo: <tel:+15551234>;tag=8\r\nCSeq: 2 INVITE\r\n\r\nv=0\r\n'))
  assert.deepEqual([ok.status, ok.reason, ok.to.user, ok.to.tag, ok.from.tag], [200, 'OK', '+15551234', '8', '9'])
  // A quoted display name holding < > ; @ and an escaped quote; a user with
  // RFC 4694 parameters (the number kept without them); a URI outside
  // brackets, whose ; begins the header's parameters.
  const odd = parseSip(Buffer.from(['INVITE sip:b@h SIP/2.0', 'Call-ID: odd1',
    'From: "Doe <Jr>; \\"x@y\\"" <sip:+4930777@a.example:5060>;tag=f1',
    'To: Bob <sip:+4930123;npdi;rn=+4930999@b.example;user=phone>;tag=t1',
    'CSeq: 1 INVITE', '', ''].join('\r\n')))
  assert.deepEqual(odd.from, { user: '+4930777', host: 'a.example', tag: 'f1' })
  assert.deepEqual(odd.to, { user: '+4930123', host: 'b.example', tag: 't1' })
  const bare = parseSip(Buffer.from('BYE sip:b@h SIP/2.0\r\nCall-ID: odd2\r\nFrom: sip:alice@a.example;tag=9\r\nTo: "B" <sips:%2B1555@b.example>\r\nCSeq: 3 BYE\r\n\r\n'))
  assert.deepEqual(bare.from, { user: 'alice', host: 'a.example', tag: '9' })
  assert.deepEqual(bare.to, { user: '+1555', host: 'b.example', tag: null })
  assert.equal(parseSip(Buffer.from('HTTP/1.1 200 OK\r\n\r\n')), null)
  assert.equal(parseSip(Buffer.from('BYE sip:a@b SIP/2.0\r\nFrom: <sip:a@b>\r\n\r\n')), null, 'no Call-ID, To or CSeq')
})

// A folded header (RFC 3261 §7.3.1) was read line by line: a callee's
// re-INVITE whose To tag sat on a continuation line passed for an initial
// INVITE (caller overwritten), and ' to: …' continuing a Subject for To.
test('SIP: folded headers are joined, a continuation is no header of its own; the version in any case', () => {
  const reinvite = parseSip(Buffer.from('INVITE sip:alice@10.0.0.1 SIP/2.0\r\nFrom: <sip:bob@b.example>;tag=B1\r\nTo: "Alice"\r\n <sip:alice@a.example>;tag=A\r\nCall-ID: c1\r\nCSeq: 7 INVITE\r\n\r\n'))
  assert.deepEqual(reinvite.to, { user: 'alice', host: 'a.example', tag: 'A' })
  const folded = parseSip(Buffer.from('BYE sip:a@b SIP/2.0\r\nFrom: <sip:a@b>;tag=1\r\nTo: <sip:c@d>;tag=2\r\nCall-ID:\r\n\tc1@host\r\nCSeq: 2 BYE\r\n\r\n'))
  assert.equal(folded.callId, 'c1@host')
  const subject = parseSip(Buffer.from('INVITE sip:b@b SIP/2.0\r\nFrom: <sip:a@a>;tag=1\r\nSubject: hi\r\n to: <sip:evil@x>\r\nTo: <sip:bob@b>\r\nCall-ID: c3\r\nCSeq: 1 INVITE\r\n\r\n'))
  assert.deepEqual(subject.to, { user: 'bob', host: 'b', tag: null })
  assert.equal(parseSip(Buffer.from('sip/2.0 200 OK\r\nFrom: <sip:a@a>;tag=1\r\nTo: <sip:b@b>;tag=2\r\nCall-ID: c4\r\nCSeq: 1 INVITE\r\n\r\n')).status, 200)
  assert.equal(parseSip(Buffer.from('bye sip:a@b Sip/2.0\r\nFrom: <sip:a@a>;tag=1\r\nTo: <sip:b@b>;tag=2\r\nCall-ID: c5\r\nCSeq: 2 BYE\r\n\r\n')).method, 'BYE')
})

test('the master\'s call key: a call\'s SIP (Call-ID header, long or compact) and RTCP (correlation chunk) hash alike; no call, -1', () => {
  const { callKeyOf } = require('../../collectors/hep/call-key')
  const key = (buf) => callKeyOf(buf, 0, buf.length)
  const callId = 'a84b4c76e66710@pc33.example.com'
  const sip = (header) => HEPjs.encapsulate(`INVITE sip:x@y SIP/2.0\r\nVia: SIP/2.0/UDP h\r\n${header}\r\nFrom: <sip:a@b>;tag=1\r\nTo: <sip:x@y>\r\nCSeq: 1 INVITE\r\n\r\n`, { ...RCINFO, payloadType: 1, correlation_id: undefined })
  const rtcp = HEPjs.encapsulate('{"ssrc":1}', RCINFO)
  const keys = [key(rtcp), key(sip(`Call-ID: ${callId}`)), key(sip(`call-id:${callId}  `)), key(sip(`i: ${callId}`))]
  assert.ok(keys[0] >= 0)
  assert.deepEqual(new Set(keys).size, 1, String(keys))
  assert.notEqual(key(sip('Call-ID: another@host')), keys[0])
  assert.equal(key(HEPjs.encapsulate('{"ssrc":1}', { ...RCINFO, correlation_id: undefined })), -1)
  assert.equal(key(Buffer.from('not a HEP packet at all')), -1)
  assert.equal(key(sip('X-Call-ID-Like: no')), -1, 'only a real Call-ID header')
  // SIP is keyed by its Call-ID whatever correlation id an agent puts on it (Kamailio's sip_trace(uri, "$ci-abc")).
  const tagged = HEPjs.encapsulate(`BYE sip:x@y SIP/2.0\r\nCall-ID: ${callId}\r\nFrom: <sip:a@b>;tag=1\r\nTo: <sip:x@y>;tag=2\r\nCSeq: 2 BYE\r\n\r\n`, { ...RCINFO, payloadType: 1, correlation_id: `${callId}-abc` })
  assert.equal(key(tagged), keys[0])
  assert.equal(key(HEPjs.encapsulate('{"ssrc":1}', { ...RCINFO, correlation_id: `${callId}\0\0` })), keys[0], 'trailing NULs, which the worker strips')
  assert.equal(key(sip(`Call-ID:\r\n ${callId}`)), keys[0], 'a folded Call-ID, as the worker joins it')
})

test('a stored SIP message\'s copy key is the one its copies carry (IPv4 and IPv6); one whose raw text was cut has none', () => {
  const { hepRecordOf, storedCopyKey } = require('../../collectors/hep/hep-records')
  const { BSON } = require('mongodb')
  const text = ['INVITE sip:bob@b.example SIP/2.0', 'Via: SIP/2.0/UDP 10.0.0.1:5060;branch=z9hG4bK1', 'From: <sip:alice@a.example>;tag=a1', 'To: <sip:bob@b.example>', 'Call-ID: warm@x', 'CSeq: 1 INVITE', 'Content-Length: 0', '', ''].join('\r\n')
  const settings = { hepCorrelationHeaders: [] }
  for (const [family, srcIp, dstIp] of [[2, '10.0.0.1', '10.0.0.2'], [10, '2001:db8::1', '2001:db8::2']]) {
    const record = hepRecordOf(HEPjs.encapsulate(text, { ...RCINFO, protocolFamily: family, srcIp, dstIp, payloadType: 1, capturePass: undefined }), settings, new Date())
    assert.equal(record.type, 'sip', JSON.stringify(record))
    // As the database gives it back: raw a BSON Binary.
    const stored = BSON.deserialize(BSON.serialize({ ...record.message, _id: 1 }))
    assert.equal(storedCopyKey(stored), record.copy)
    assert.equal(storedCopyKey({ ...stored, truncated: true }), null)
  }
})

test('what a HEP worker read back as it started: a copy of a stored message within the window is a copy; that message itself delivered again is not; past its reach nothing is', () => {
  const { StoredCopies } = require('../../collectors/hep/call-memory')
  const stored = new StoredCopies()
  stored.add('k', 1000, 'aa')
  stored.until = 5000
  assert.equal(stored.isCopy('k', 1150, 200, () => 'bb', 2000), true, 'another message, 150 ms apart')
  assert.equal(stored.isCopy('k', 1150, 200, () => 'aa', 2000), false, 'the stored message itself, delivered again')
  assert.equal(stored.isCopy('k', 1300, 200, () => 'bb', 2000), false, 'past the window: a retransmission')
  assert.equal(stored.isCopy('other', 1000, 200, () => 'bb', 2000), false)
  assert.equal(stored.isCopy('k', 1000, 200, () => 'bb', 5001), false, 'past its reach')
  assert.equal(stored.size, 0, 'and forgotten')
})

test('a copy writes its call\'s fields as its original does; the original delivered again after another worker stored it is a message, not a copy, though its copy came first', () => {
  const hep = require('../../collectors/hep')
  const { hepRecordOf } = require('../../collectors/hep/hep-records')
  const { definition } = hep
  const settings = { hepCopyWindow: 200, hepMessagesPerCall: 1000, hepCorrelationHeaders: [], sipMessagesCollection: 'sip_messages' }
  const state = definition.state(settings)
  const calls = definition.sinks.find((sink) => sink.collection === 'calls')
  const text = ['INVITE sip:bob@b.example SIP/2.0', 'Via: SIP/2.0/UDP 10.0.0.1:5060;branch=z9hG4bK1', 'From: <sip:alice@a.example>;tag=a1', 'To: <sip:bob@b.example>', 'Call-ID: first@copy', 'CSeq: 1 INVITE', 'Content-Length: 0', '', ''].join('\r\n')
  const copyOf = (usec) => hepRecordOf(HEPjs.encapsulate(text, { ...RCINFO, payloadType: 1, capturePass: undefined, timeUseconds: usec }), settings, new Date())
  // The original M, stored by a worker that died before acknowledging it; its copy M' arrives first here.
  const original = copyOf(123000)
  state.stored.add(original.copy, original.at, 'aa')
  state.stored.until = Date.now() + 10000
  const items = [definition.enrich(copyOf(123400), state, { key: () => Buffer.from('bb', 'hex') }), definition.enrich(original, state, { key: () => Buffer.from('aa', 'hex') })]
  assert.deepEqual(items.map((item) => item.duplicate), [true, undefined], 'M\' a copy of M stored; M itself again a message (its writes land once), though M\' came first')
  assert.ok(items[1].message, 'M keeps its message document (stored once by its key)')
  assert.equal(state.counts.duplicates.sip, 1, 'one copy counted')
  const [copy, again] = items.map((item) => calls.of(item, { receivedAt: new Date() }))
  assert.equal(copy.inc.duplicates, 1)
  assert.equal(again.inc, undefined, 'M counts no duplicate')
  for (const update of [copy, again]) {
    assert.deepEqual(update.set.caller, { user: 'alice', host: 'a.example' }, 'the call\'s fields, with the count or not')
    assert.ok(update.min.invitedAt instanceof Date)
  }
})

test('RTCP: a copy of a report the worker before stored counts once; that report itself delivered again, after its copy, makes its stream items (written once by their guards); a copy still names the call\'s SSRCs', () => {
  const hep = require('../../collectors/hep')
  const { hepRecordOf } = require('../../collectors/hep/hep-records')
  const { definition } = hep
  const settings = { hepCopyWindow: 200, hepMessagesPerCall: 1000, hepCorrelationHeaders: [], sipMessagesCollection: 'sip_messages' }
  const state = definition.state(settings)
  const json = JSON.stringify({ ssrc: 11, type: 201, report_count: 1, report_blocks: [{ source_ssrc: 12, highest_seq_no: 900, fraction_lost: 0, ia_jitter: 40, packets_lost: 1, lsr: 0, dlsr: 0 }] })
  const reportOf = (usec) => hepRecordOf(HEPjs.encapsulate(json, { ...RCINFO, capturePass: undefined, correlation_id: 'call-r@x', timeUseconds: usec }), settings, new Date())
  const original = reportOf(123000)
  state.stored.add(original.copy, original.at, 'aa')
  state.stored.until = Date.now() + 10000
  const copyItems = definition.enrich(reportOf(123400), state, { key: () => Buffer.from('bb', 'hex') })
  assert.deepEqual([copyItems, state.counts.duplicates.rtcp], [[], 1], 'the copy: no items, counted')
  assert.deepEqual(state.ledger.ssrcsOf('call-r@x'), ['11'], 'its call\'s SSRC known from the copy: a BYE ends the stream')
  const items = definition.enrich(original, state, { key: () => Buffer.from('aa', 'hex') })
  assert.equal(items.filter((item) => item.fromID === '11').length, 1, 'the report itself: its stream item')
  assert.deepEqual(items.find((item) => item.fromID === '11').fields.recentCaptures, [{ key: original.copy, at: new Date(original.at), message: 'aa' }], 'with what a copy of it shares')
  assert.equal(state.counts.duplicates.rtcp, 1)
  assert.deepEqual(definition.enrich(reportOf(123100), state, { key: () => Buffer.from('cc', 'hex') }), [], 'another copy: still one')
})

test('a capture time over 2 s ahead of the arrival is an agent\'s clock set wrong: stamped with the arrival, counted; a copy from that agent is still a copy of another agent\'s capture', () => {
  const hep = require('../../collectors/hep')
  const { hepRecordOf, CLOCK_AHEAD_MS } = require('../../collectors/hep/hep-records')
  const { definition } = hep
  const settings = { hepCopyWindow: 200, hepMessagesPerCall: 1000, hepCorrelationHeaders: [], sipMessagesCollection: 'sip_messages' }
  const state = definition.state(settings)
  const arrival = new Date(Date.UTC(2026, 11, 1, 9, 0, 0, 250))
  const text = ['INVITE sip:bob@b.example SIP/2.0', 'Via: SIP/2.0/UDP 10.0.0.1:5060;branch=z9hG4bK1', 'From: <sip:alice@a.example>;tag=a1', 'To: <sip:bob@b.example>', 'Call-ID: ahead@clock', 'CSeq: 1 INVITE', 'Content-Length: 0', '', ''].join('\r\n')
  const sipAt = (ms) => hepRecordOf(HEPjs.encapsulate(text, { ...RCINFO, payloadType: 1, capturePass: undefined, timeSeconds: Math.floor(ms / 1000), timeUseconds: (ms % 1000) * 1000 }), settings, arrival)
  const json = JSON.stringify({ ssrc: 11, type: 200, report_count: 0, report_blocks: [], sender_information: { ntp_timestamp_sec: 1, ntp_timestamp_usec: 0, rtp_timestamp: 1, packets: 1, octets: 1 } })
  const rtcpAt = (ms) => hepRecordOf(HEPjs.encapsulate(json, { ...RCINFO, capturePass: undefined, timeSeconds: Math.floor(ms / 1000), timeUseconds: (ms % 1000) * 1000 }), settings, arrival)
  const hourAhead = sipAt(arrival.getTime() + 3600 * 1000)
  assert.equal(hourAhead.at, arrival.getTime(), 'an hour ahead: the arrival')
  assert.equal(hourAhead.clockAhead, true)
  assert.equal(hourAhead.message.at.getTime(), arrival.getTime(), 'its stored message too')
  assert.equal(hourAhead.call.min.invitedAt.getTime(), arrival.getTime(), 'and its call')
  const slightly = sipAt(arrival.getTime() + CLOCK_AHEAD_MS - 500)
  assert.deepEqual([slightly.at, slightly.clockAhead], [arrival.getTime() + CLOCK_AHEAD_MS - 500, undefined], 'within the margin: as captured')
  const replayed = sipAt(Date.UTC(2025, 0, 1))
  assert.deepEqual([replayed.at, replayed.clockAhead], [Date.UTC(2025, 0, 1), undefined], 'a replay\'s old capture: as captured')
  const report = rtcpAt(arrival.getTime() + 86400 * 1000)
  assert.deepEqual([report.at, report.clockAhead], [arrival.getTime(), true], 'RTCP alike')
  // Two agents capture one INVITE: one at 09:00:00.200 by a right clock, one an hour ahead.
  const message = (hex) => ({ key: () => Buffer.from(hex, 'hex'), receivedAt: arrival })
  const first = definition.enrich(sipAt(arrival.getTime() - 50), state, message('aa'))
  const second = definition.enrich(hourAhead, state, message('bb'))
  assert.deepEqual([first.duplicate, second.duplicate], [undefined, true], 'the skewed agent\'s capture is a copy of the other\'s')
  definition.enrich(report, state, message('cc'))
  assert.deepEqual([state.counts.clockAhead, definition.stats(state).clockAhead], [2, 2], 'each counted, in the workers\' stats')
})
