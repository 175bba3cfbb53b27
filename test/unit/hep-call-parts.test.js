'use strict'

// The master's split of a HEP packet whose TCP segment holds several
// calls' SIP messages (collectors/hep/call-parts.js): one HEP packet per
// run of one call's messages, each read by the worker as that run alone
// would be, keyed by its own call.

const { test } = require('node:test')
const assert = require('node:assert/strict')
const { execFileSync } = require('node:child_process')
const HEPjs = require('hep-js')
const { callPartsOf } = require('../../collectors/hep/call-parts')
const { callKeyOf } = require('../../collectors/hep/call-key')
const { hepRecordOf } = require('../../collectors/hep/hep-records')
const { decodeHep } = require('../../collectors/hep/hep-decoder')

const RCINFO = { type: 'HEP', version: 3, payload_type: 1, payloadType: 1, captureId: 2001, ip_family: 2, protocolFamily: 2, protocol: 6, srcIp: '10.0.0.1', dstIp: '10.0.0.2', srcPort: 5060, dstPort: 5060, timeSeconds: 1700000000, timeUseconds: 5000 }
const SETTINGS = { hepCorrelationHeaders: [] }

function message (first, callId, cseq, body = '') {
  return [first, 'Via: SIP/2.0/TCP 10.0.0.1:5060;branch=z9hG4bK1', 'From: <sip:alice@a.example>;tag=a1', `To: <sip:bob@b.example>${first.startsWith('SIP/') ? ';tag=b1' : ''}`, `Call-ID: ${callId}`, `CSeq: ${cseq}`, `Content-Length: ${Buffer.byteLength(body)}`, '', body].join('\r\n')
}

const SDP = ['v=0', 'o=- 1 1 IN IP4 10.0.0.1', 's=-', 'c=IN IP4 10.0.0.1', 't=0 0', 'm=audio 4000 RTP/AVP 8', 'a=rtpmap:8 PCMA/8000', ''].join('\r\n')
const packetOf = (payload, info = {}) => HEPjs.encapsulate(payload, { ...RCINFO, ...info })
const partsOf = (packet) => callPartsOf(packet, 0, packet.length)
const recordsOf = (packet) => [hepRecordOf(packet, SETTINGS, new Date())].flat()

test('a segment of three calls\' messages: a packet per run of one call, each read as its messages alone, keyed by its own call', () => {
  const msgs = [message('INVITE sip:bob@b.example SIP/2.0', 'one@x', '1 INVITE', SDP), message('SIP/2.0 100 Trying', 'one@x', '1 INVITE'),
    message('SIP/2.0 180 Ringing', 'two@x', '1 INVITE'), message('BYE sip:bob@b.example SIP/2.0', 'three@x', '2 BYE'), message('SIP/2.0 200 OK', 'one@x', '1 INVITE')]
  const whole = packetOf(msgs[0] + msgs[1] + '\r\n\r\n' + msgs[2] + msgs[3] + msgs[4], { correlation_id: 'leg@b2bua' })
  const parts = partsOf(whole)
  assert.equal(parts.length, 4)
  const expected = [[msgs[0], msgs[1]], [msgs[2]], [msgs[3]], [msgs[4]]]
  parts.forEach((part, i) => {
    const alone = recordsOf(packetOf(expected[i].join('')))
    const records = recordsOf(part)
    assert.deepEqual(records.map((r) => [r.call.callId, r.message.cseq, r.message.raw.toString('latin1'), r.copy]), alone.map((r) => [r.call.callId, r.message.cseq, r.message.raw.toString('latin1'), r.copy]), `part ${i}`)
    assert.equal(callKeyOf(part, 0, part.length), callKeyOf(packetOf(expected[i][0]), 0, packetOf(expected[i][0]).length), `part ${i} goes where its call does`)
    const decoded = decodeHep(part)
    assert.deepEqual([decoded.captureId, decoded.srcIp, decoded.dstPort, decoded.timeSec, decoded.timeUsec, decoded.ipProtocol], [2001, '10.0.0.1', 5060, 1700000000, 5000, 6], 'the whole\'s other chunks')
    // The correlation id is the first message's call's (hep-records.js): kept with its runs only.
    assert.equal(decoded.correlationId, i === 0 || i === 3 ? 'leg@b2bua' : undefined, `part ${i}`)
  })
  // Every message of the whole once, in order, across the parts.
  assert.deepEqual(parts.flatMap((p) => recordsOf(p).map((r) => r.message.raw.toString('latin1'))), msgs)
})

test('kept whole (null): one call\'s messages, one message, UDP, compressed or no payload, not HEP, too many runs', () => {
  const invite = message('INVITE sip:bob@b.example SIP/2.0', 'one@x', '1 INVITE', SDP)
  const ringing = message('SIP/2.0 180 Ringing', 'two@x', '1 INVITE')
  assert.equal(partsOf(packetOf(invite + message('SIP/2.0 100 Trying', 'one@x', '1 INVITE'))), null, 'one call')
  assert.equal(partsOf(packetOf(invite)), null, 'one message')
  assert.equal(partsOf(packetOf(invite + '\r\n\r\n')), null, 'one message and a keepalive')
  assert.equal(partsOf(packetOf(invite + ringing, { protocol: 17 })), null, 'UDP: a datagram is one message (RFC 3261 §18.3)')
  assert.equal(partsOf(packetOf(invite + ringing, { payload_type: 5, payloadType: 5 })), null, 'not SIP')
  assert.equal(partsOf(Buffer.from('not a HEP packet at all')), null)
  const truncated = packetOf(invite + ringing)
  assert.equal(callPartsOf(truncated, 0, truncated.length - 3), null, 'a packet whose chunks overrun it')
  // Past 256 runs the whole goes as one packet (the worker's maxRecords bounds it): no fan-out in the master.
  const tiny = (i) => `OPTIONS sip:a SIP/2.0\r\ni:${i % 2}\r\nl:0\r\n\r\n`
  const many = packetOf(Array.from({ length: 300 }, (_, i) => tiny(i)).join(''))
  assert.equal(partsOf(many), null)
  assert.equal(partsOf(packetOf(Array.from({ length: 256 }, (_, i) => tiny(i)).join(''))).length, 256)
})

test('a segment that begins inside a message: the runs start at the first whole message, as the worker reads it', () => {
  const invite = message('INVITE sip:bob@b.example SIP/2.0', 'one@x', '1 INVITE', SDP)
  const tail = invite.slice(invite.indexOf('From:'))
  const msgs = [message('SIP/2.0 180 Ringing', 'two@x', '1 INVITE'), message('SIP/2.0 200 OK', 'three@x', '1 INVITE')]
  const parts = partsOf(packetOf(tail + msgs.join('')))
  assert.deepEqual(parts.map((p) => recordsOf(p).map((r) => r.message.raw.toString('latin1'))), [[msgs[0]], [msgs[1]]])
  // What follows a message and is not a message of a call stays with it, as sent.
  const junk = 'SIP/2.0 200 OK\r\nX: no call here\r\n\r\n'
  const kept = partsOf(packetOf(msgs[0] + msgs[1] + junk))
  assert.deepEqual(kept.map((p) => decodeHep(p).payload.toString('latin1')), [msgs[0], msgs[1] + junk])
})

// In a child under a hang guard, not a measurement (a test's timeout cannot
// stop synchronous code): 64 KB of short lines that end as a start line
// does, and of messages that each begin one, are read on their bytes.
test('a sender\'s 64 KB of start-line-like lines costs the master what its bytes do', () => {
  const script = `
    const { callPartsOf } = require(${JSON.stringify(require.resolve('../../collectors/hep/call-parts'))})
    const packets = process.argv.slice(1).map((b) => Buffer.from(b, 'base64'))
    const out = []
    for (const packet of packets) { let parts; for (let i = 0; i < 200; i++) parts = callPartsOf(packet, 0, packet.length); out.push(parts === null ? null : parts.length) }
    process.stdout.write(JSON.stringify(out))`
  const lines = 'x' + '\r\n\r\n' + 'a b SIP/2.0 c SIP/2.0\r\n'.repeat(2600)
  const starts = Array.from({ length: 2000 }, (_, i) => `A a SIP/2.0\r\ni:${i}\r\n\r\n`).join('')
  const packets = [packetOf(lines), packetOf(starts)]
  for (const p of packets) assert.ok(p.length <= 65535, `${p.length} bytes`)
  const out = JSON.parse(execFileSync(process.execPath, ['-e', script, ...packets.map((p) => p.toString('base64'))], { timeout: 10000, encoding: 'utf8' }))
  assert.deepEqual(out, [null, null])
})

// The worker refuses a packet whose header's length is not its own
// (hep-bad-length) or that ends inside a chunk header: the master must not
// make well-formed packets, each stored, out of one.
test('a packet the worker refuses as not well-formed is not split into packets it accepts', () => {
  const msgs = [message('SIP/2.0 180 Ringing', 'two@x', '1 INVITE'), message('SIP/2.0 200 OK', 'three@x', '1 INVITE')]
  const whole = packetOf(msgs.join(''))
  const longer = Buffer.concat([whole, Buffer.from('abc')])
  assert.equal(recordsOf(longer)[0].reason, 'hep-bad-length')
  assert.equal(partsOf(longer), null, 'bytes past its length')
  const misstated = Buffer.from(whole)
  misstated.writeUInt16BE(whole.length - 1, 4)
  assert.equal(recordsOf(misstated)[0].reason, 'hep-bad-length')
  assert.equal(partsOf(misstated), null, 'a length that is not its own')
})

// The first message's start line is read as the worker's parseSip reads it
// (UTF-8, the whole line): read as latin1 and cut at 1024 bytes, a request
// line longer than that, or with a UTF-8 character holding byte 0xA0
// (à: C3 A0, read as Ã and a no-break space, which \s matches), was taken
// for a segment's leading tail and passed over: the runs began at the
// second message, and the first, which the worker stores from the whole,
// was in no part (lost).
test('a first message with a long or UTF-8 request line is in a part, as the worker reads it from the whole', () => {
  const others = [message('SIP/2.0 180 Ringing', 'two@x', '1 INVITE'), message('SIP/2.0 200 OK', 'three@x', '1 INVITE')]
  // hep-js writes a string's UTF-8 in its length in characters: the à's two bytes are written into the packet made with 'XX'.
  const utf8PacketOf = (text) => {
    const packet = packetOf(text.replace('à', 'XX'))
    if (text.includes('à')) Buffer.from('à').copy(packet, packet.indexOf('voilXX') + 4)
    return packet
  }
  for (const first of ['INVITE sip:' + 'x'.repeat(1100) + '@b.example SIP/2.0', 'INVITE sip:voilà@b.example SIP/2.0']) {
    const msgs = [message(first, 'one@x', '1 INVITE'), ...others]
    const whole = utf8PacketOf(msgs.join(''))
    const stored = recordsOf(whole).map((r) => r.message.raw.toString('latin1'))
    assert.deepEqual(stored, msgs.map((m) => Buffer.from(m).toString('latin1')), 'the worker stores all three from the whole')
    const parts = partsOf(whole)
    assert.deepEqual(parts.flatMap((p) => recordsOf(p).map((r) => r.message.raw.toString('latin1'))), stored, first.slice(0, 30))
  }
})

// A part repeats the whole's other chunks: a sender's 60 KB of them (9,000
// six-byte vendor chunks, or one of 50 KB) in a packet of 256 runs made
// 256 copies, 13 MB of parts from one datagram and, chunk by chunk, 0.4 s
// of the master's time: what the parts repeat is bounded, past it the whole
// stays one packet.
test('a packet whose other chunks the parts would repeat past a bound stays whole', () => {
  const tiny = (i) => `OPTIONS sip:a SIP/2.0\r\ni:${i % 2}\r\nl:0\r\n\r\n`
  const base = packetOf(Array.from({ length: 256 }, (_, i) => tiny(i)).join(''))
  const withVendorChunks = (count, size) => {
    const extra = Buffer.alloc(count * size)
    for (let i = 0; i < count; i++) {
      extra.writeUInt16BE(1, i * size) // vendor 1: the worker skips it
      extra.writeUInt16BE(1, i * size + 2)
      extra.writeUInt16BE(size, i * size + 4)
    }
    const packet = Buffer.concat([base.subarray(0, 6), extra, base.subarray(6)])
    packet.writeUInt16BE(packet.length, 4)
    return packet
  }
  assert.equal(partsOf(withVendorChunks(9000, 6)), null, 'many small chunks')
  assert.equal(partsOf(withVendorChunks(1, 50000)), null, 'one large chunk')
  // An agent's chunks (a hundred bytes or so) in a packet of 256 runs: split.
  assert.equal(partsOf(withVendorChunks(1, 64)).length, 256)
})

// A segment cut inside its last message's headers (an agent that copies
// segments as sent): the worker reads what is there as a message only when
// it parses as one, else it stays with the message before. A start line
// and a Call-ID made it a part of its own: refused (hep-sip, counted
// failed on ordinary traffic), and the message before stored without it.
test('a last message cut inside its headers stays with the message before, as the worker reads the whole', () => {
  const ringing = message('SIP/2.0 180 Ringing', 'two@x', '1 INVITE')
  const cut = ringing.slice(0, ringing.indexOf('CSeq'))
  const msgs = [message('INVITE sip:bob@b.example SIP/2.0', 'one@x', '1 INVITE', SDP), message('SIP/2.0 200 OK', 'three@x', '1 INVITE')]
  const whole = packetOf(msgs.join('') + cut)
  const stored = recordsOf(whole).map((r) => r.message.raw.toString('latin1'))
  assert.deepEqual(stored, [msgs[0], msgs[1] + cut])
  const parts = partsOf(whole)
  assert.deepEqual(parts.map((p) => recordsOf(p).map((r) => r.message.raw.toString('latin1'))), [[msgs[0]], [msgs[1] + cut]])
  // Cut after all it needs, it is a message of its own, as in the worker.
  const longer = ringing.slice(0, ringing.indexOf('Content-Length'))
  const kept = partsOf(packetOf(msgs.join('') + longer))
  assert.deepEqual(kept.map((p) => recordsOf(p).map((r) => r.message.raw.toString('latin1'))), [[msgs[0]], [msgs[1]], [longer]])
})

// A Content-Length folded onto the next line (RFC 3261 §7.3.1) is the
// worker's length of the message (sip.js unfolds it): read from its line
// alone it was none, and the messages after it went with its call.
test('a folded Content-Length ends its message as the worker reads it', () => {
  const folded = message('INVITE sip:bob@b.example SIP/2.0', 'one@x', '1 INVITE').replace('Content-Length: 0', 'Content-Length:\r\n 0')
  const msgs = [folded, message('SIP/2.0 180 Ringing', 'two@x', '1 INVITE'), message('SIP/2.0 200 OK', 'three@x', '1 INVITE')]
  const whole = packetOf(msgs.join(''))
  assert.deepEqual(recordsOf(whole).map((r) => r.message.raw.toString('latin1')), msgs)
  const parts = partsOf(whole)
  assert.deepEqual(parts.map((p) => recordsOf(p).map((r) => r.message.raw.toString('latin1'))), [[msgs[0]], [msgs[1]], [msgs[2]]])
  // Folded with a second value, it is no number to the worker either: the rest stays with it.
  const twice = message('INVITE sip:bob@b.example SIP/2.0', 'one@x', '1 INVITE').replace('Content-Length: 0', 'Content-Length: 0\r\n 1')
  assert.equal(partsOf(packetOf([twice, ...msgs.slice(1)].join(''))), null)
  assert.equal(recordsOf(packetOf([twice, ...msgs.slice(1)].join(''))).length, 1)
})

// A Call-ID whose value runs on onto continuation lines is the worker's
// value joined (sip.js unfold: 'a@x' + ' ' + 'b'): keyed by its first line
// alone, the message went to another worker than its call's.
test('a Call-ID folded across lines is keyed by the value the worker reads', () => {
  const plain = message('SIP/2.0 180 Ringing', 'one@x more', '1 INVITE')
  const folded = message('SIP/2.0 200 OK', 'one@x', '1 INVITE').replace('Call-ID: one@x', 'Call-ID: one@x\r\n\tmore')
  const onNext = message('SIP/2.0 183 Progress', 'one@x', '1 INVITE').replace('Call-ID: one@x', 'Call-ID:\r\n one@x\r\n  more  ')
  const other = message('SIP/2.0 100 Trying', 'two@x', '1 INVITE')
  const parts = partsOf(packetOf(other + folded + other + onNext))
  assert.equal(parts.length, 4)
  const keyOf = (p) => callKeyOf(p, 0, p.length)
  const plainKey = keyOf(packetOf(plain))
  assert.deepEqual(recordsOf(parts[1]).map((r) => r.call.callId), ['one@x more'])
  assert.equal(keyOf(parts[1]), plainKey, 'value on two lines')
  assert.deepEqual(recordsOf(parts[3]).map((r) => r.call.callId), ['one@x more'])
  assert.equal(keyOf(parts[3]), plainKey, 'value on the next lines')
})
