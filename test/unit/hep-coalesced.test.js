'use strict'

// A HEP SIP payload holding several SIP messages (an agent that copies TCP
// segments whole: heplify without -tcpassembly): a record per message,
// each with its own bytes; anything that is not a whole message after one
// stays with it, as sent.

const { test } = require('node:test')
const assert = require('node:assert/strict')
const HEPjs = require('hep-js')
const { hepRecordOf } = require('../../collectors/hep/hep-records')

const RCINFO = { type: 'HEP', version: 3, payload_type: 1, payloadType: 1, captureId: 2001, capturePass: undefined, ip_family: 2, protocolFamily: 2, protocol: 6, srcIp: '10.0.0.1', dstIp: '10.0.0.2', srcPort: 5060, dstPort: 5060, timeSeconds: 1700000000, timeUseconds: 5000 }
const SETTINGS = { hepCorrelationHeaders: [] }

function message (first, callId, cseq, body = '', headers = []) {
  return [first, 'Via: SIP/2.0/TCP 10.0.0.1:5060;branch=z9hG4bK1', 'From: <sip:alice@a.example>;tag=a1', `To: <sip:bob@b.example>${first.startsWith('SIP/') ? ';tag=b1' : ''}`, `Call-ID: ${callId}`, `CSeq: ${cseq}`, ...headers, `Content-Length: ${Buffer.byteLength(body)}`, '', body].join('\r\n')
}

const SDP = ['v=0', 'o=- 1 1 IN IP4 10.0.0.1', 's=-', 'c=IN IP4 10.0.0.1', 't=0 0', 'm=audio 4000 RTP/AVP 8', 'a=rtpmap:8 PCMA/8000', ''].join('\r\n')
const recordOf = (payload) => hepRecordOf(HEPjs.encapsulate(payload, RCINFO), SETTINGS, new Date())

test('several SIP messages in one payload: a record each, its own bytes, copy key and SDP, in order; CRLF keepalives between them skipped', () => {
  const parts = [message('INVITE sip:bob@b.example SIP/2.0', 'one@x', '1 INVITE', SDP, ['Content-Type: application/sdp']), message('SIP/2.0 180 Ringing', 'two@x', '1 INVITE'), message('BYE sip:bob@b.example SIP/2.0', 'one@x', '2 BYE')]
  const records = recordOf(parts[0] + '\r\n\r\n' + parts[1] + parts[2])
  assert.ok(Array.isArray(records), JSON.stringify(records).slice(0, 300))
  assert.deepEqual(records.map((r) => [r.type, r.call.callId, r.message.cseq, r.message.raw.toString('latin1'), r.coalesced]), [
    ['sip', 'one@x', '1 INVITE', parts[0], true], ['sip', 'two@x', '1 INVITE', parts[1], true], ['sip', 'one@x', '2 BYE', parts[2], true]])
  // Each as if it had come alone: a copy of one sent on its own is known as one.
  assert.deepEqual(records.map((r) => r.copy), parts.map((part) => recordOf(part).copy))
  assert.deepEqual(records.map((r) => r.message.bytes), parts.map((part) => Buffer.byteLength(part)))
  assert.ok(records[0].sdp && records[0].sdp.media.length === 1, 'the INVITE\'s SDP, its body only')
  assert.equal(records[1].sdp, undefined)
})

test('one message, alone or with what is not one whole after it, stays one record of the payload as sent', () => {
  const invite = message('INVITE sip:bob@b.example SIP/2.0', 'one@x', '1 INVITE')
  const cases = {
    'alone, a keepalive after it': invite + '\r\n\r\n',
    'a segment\'s start of the next message (its headers cut)': invite + 'SIP/2.0 200 OK\r\nVia: SIP/2.0/TCP 10.0.0.1;bra',
    'body bytes past its Content-Length': invite + 'garbage',
    'no Content-Length (a datagram\'s body runs to its end)': invite.replace('Content-Length: 0\r\n', '') + message('SIP/2.0 200 OK', 'one@x', '1 INVITE'),
    'a Content-Length past the payload': invite.replace('Content-Length: 0', 'Content-Length: 900') + message('SIP/2.0 200 OK', 'one@x', '1 INVITE')
  }
  for (const [name, payload] of Object.entries(cases)) {
    const record = recordOf(payload)
    assert.ok(!Array.isArray(record) && record.type === 'sip', name)
    assert.equal(record.message.raw.toString('latin1'), payload, name)
    assert.equal(record.coalesced, undefined, name)
  }
})

test('the packet\'s correlation id names the bridged leg of its first message\'s call only, not of another call in the segment', () => {
  const payload = message('INVITE sip:bob@b.example SIP/2.0', 'one@x', '1 INVITE') + message('INVITE sip:bob@b.example SIP/2.0', 'two@x', '1 INVITE') + message('SIP/2.0 100 Trying', 'one@x', '1 INVITE')
  const records = hepRecordOf(HEPjs.encapsulate(payload, { ...RCINFO, correlation_id: 'leg@b2bua' }), SETTINGS, new Date())
  assert.deepEqual(records.map((r) => [r.call.callId, r.call.set.linkedId]), [['one@x', 'leg@b2bua'], ['two@x', undefined], ['one@x', undefined]], 'a response names none (calls.js)')
})

test('the HEP definition takes a payload\'s messages as a message\'s records: an item each, each message a document of its own, counted', () => {
  const { definition } = require('../../collectors/hep')
  const settings = { ...SETTINGS, hepCopyWindow: 200, hepMessagesPerCall: 1000, sipMessagesCollection: 'sip_messages' }
  const state = definition.state(settings)
  const records = recordOf(message('SIP/2.0 100 Trying', 'one@x', '1 INVITE') + message('SIP/2.0 200 OK', 'one@x', '1 INVITE'))
  const items = definition.enrich(records, state, { key: () => Buffer.alloc(12) })
  assert.equal(items.length, 2)
  assert.deepEqual(items.map((item) => item.message.status), [100, 200])
  assert.ok(items[1].call.min.answeredAt instanceof Date, 'the 200 answers its call')
  assert.equal(definition.stats(state).coalesced, 2)
  assert.deepEqual(records.map((record) => definition.cardinality(record)), ['one@x', 'one@x'])
})

test('a TCP segment that begins inside a message (the segment before began it) gives the whole messages after that tail; a UDP datagram that is no message is still refused', () => {
  const ok = (callId) => message('SIP/2.0 200 OK', callId, '1 INVITE', SDP, ['Content-Type: application/sdp'])
  const [five, six] = ['five@x', 'six@x'].map((callId) => message('BYE sip:bob@b.example SIP/2.0', callId, '2 BYE'))
  // A proxy's back-to-back writes cut by TCP: the second segment starts in the body of four@x's 200.
  const stream = ['one@x', 'two@x', 'three@x', 'four@x'].map(ok).join('') + five + six
  const second = stream.slice(stream.indexOf('m=audio', stream.indexOf('Call-ID: four@x')))
  const records = recordOf(second)
  assert.deepEqual(records.map((r) => [r.call.callId, r.message.raw.toString('latin1')]), [['five@x', five], ['six@x', six]])
  assert.deepEqual(records.map((r) => r.copy), [recordOf(five).copy, recordOf(six).copy], 'each known as its copy sent alone')
  // A tail before one message: that message, its bytes alone.
  const one = recordOf('a=sendrecv\r\n' + five)
  assert.deepEqual([one.call.callId, one.message.raw.toString('latin1'), one.coalesced], ['five@x', five, undefined])
  // A tail and no whole message after it; over UDP a datagram is one message or none.
  assert.equal(recordOf('a=sendrecv\r\n\r\nSIP/2.0 200 OK\r\nVia: SIP/2.0/TCP 10.0.0.1;bra').reason, 'hep-sip')
  assert.equal(hepRecordOf(HEPjs.encapsulate(second, { ...RCINFO, protocol: 17 }), SETTINGS, new Date()).reason, 'hep-sip')
})

test('a UDP datagram is one SIP message: bytes past its Content-Length that read as another (a BYE after a re-INVITE) are not one, as its receiver discards them (RFC 3261 §18.3)', () => {
  const payload = message('INVITE sip:bob@b.example SIP/2.0', 'one@x', '2 INVITE') + message('BYE sip:bob@b.example SIP/2.0', 'one@x', '3 BYE')
  const record = hepRecordOf(HEPjs.encapsulate(payload, { ...RCINFO, protocol: 17 }), SETTINGS, new Date())
  assert.ok(!Array.isArray(record))
  assert.deepEqual([record.message.cseq, record.message.raw.toString('latin1'), record.call.bye], ['2 INVITE', payload, undefined])
  assert.equal(recordOf(payload).length, 2, 'over TCP, two messages')
})
