'use strict'

// What the hostile-input probe sent the HEP collector (issue 36), as
// reproductions: work a sender chooses is done only after its key passes,
// and one packet cannot fan out past what the protocol itself carries.

const { test } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const zlib = require('node:zlib')
const { execFileSync } = require('node:child_process')
const { hepRecordOf } = require('../../collectors/hep/hep-records')
const { authKeyCheck } = require('../../collectors/hep/auth-key')
const { rtcpOfHep } = require('../../collectors/hep/rtcp-json')
const { parseSip, TOO_LONG, NOT_TEXT } = require('../../collectors/hep/sip')
const { encodeReport, encodeRtcp } = require('../../collectors/rtcp/encoder')
const { tryDecodeRtcp } = require('../../collectors/rtcp/decoder')
const { removeDir } = require('../helpers/temp-dir')

const RECEIVED = new Date('2026-11-27T00:00:00Z')

function chunk (type, body) {
  const head = Buffer.alloc(6)
  head.writeUInt16BE(0, 0)
  head.writeUInt16BE(type, 2)
  head.writeUInt16BE(6 + body.length, 4)
  return Buffer.concat([head, body])
}

// A HEP3 packet of protocol type `type`, its payload gzipped (chunk 0x10)
// or plain (0x0f), with the auth key chunk when `key` is given.
function hepPacket ({ type, payload, gzip = false, key }) {
  const chunks = [chunk(0x0b, Buffer.from([type]))]
  if (key !== undefined) chunks.push(chunk(0x0e, Buffer.from(key)))
  chunks.push(gzip ? chunk(0x10, payload) : chunk(0x0f, Buffer.from(payload)))
  const body = Buffer.concat(chunks)
  const head = Buffer.from('HEP3\0\0', 'latin1')
  head.writeUInt16BE(6 + body.length, 4)
  return Buffer.concat([head, body])
}

function settingsWithKey (t, key) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hep-key-'))
  t.after(() => removeDir(dir))
  const file = path.join(dir, 'key')
  fs.writeFileSync(file, `${key}\n`)
  return { hepPasswordFile: file }
}

const reasonOf = (record) => record instanceof Error ? record.reason : 'accepted'

test('a gzip bomb without the auth key is refused as hep-auth: nothing is inflated before the key passes', (t) => {
  const settings = settingsWithKey(t, 'right-key')
  // 8 MiB of zeros gzip to about 8 KB; inflating it was the cost the probe measured.
  const bomb = zlib.gzipSync(Buffer.alloc(8 * 1024 * 1024))
  let inflated = 0
  for (const name of ['gunzipSync', 'inflateSync']) {
    const inflate = zlib[name]
    t.mock.method(zlib, name, (...args) => { inflated++; return inflate(...args) })
  }
  assert.equal(reasonOf(hepRecordOf(hepPacket({ type: 1, payload: bomb, gzip: true }), settings, RECEIVED)), 'hep-auth')
  assert.equal(reasonOf(hepRecordOf(hepPacket({ type: 1, payload: bomb, gzip: true, key: 'wrong-key' }), settings, RECEIVED)), 'hep-auth')
  // Garbage that would not inflate at all: still the key's refusal first.
  assert.equal(reasonOf(hepRecordOf(hepPacket({ type: 5, payload: Buffer.from('not gzip'), gzip: true, key: 'wrong' }), settings, RECEIVED)), 'hep-auth')
  // A protocol type we do not store is refused before its payload is read.
  assert.equal(reasonOf(hepRecordOf(hepPacket({ type: 4, payload: bomb, gzip: true, key: 'right-key' }), settings, RECEIVED)), 'hep-type-4')
  // Unkeyed JSON of 9,000 report blocks: refused by its key, not parsed.
  const blocks = JSON.stringify({ ssrc: 1, report_blocks: Array.from({ length: 9000 }, (_, i) => ({ source_ssrc: i, highest_seq_no: 1, fraction_lost: 0, ia_jitter: 0, packets_lost: 0, lsr: 0, dlsr: 0 })) })
  assert.equal(reasonOf(hepRecordOf(hepPacket({ type: 5, payload: zlib.gzipSync(blocks), gzip: true }), settings, RECEIVED)), 'hep-auth')
  assert.equal(inflated, 0, 'no unauthenticated payload was inflated')
  // With the key, the bomb is inflated (up to 1 MiB) and refused by what it is.
  assert.equal(reasonOf(hepRecordOf(hepPacket({ type: 1, payload: bomb, gzip: true, key: 'right-key' }), settings, RECEIVED)), 'hep-bad-gzip')
  assert.equal(inflated, 1)
})

test('the auth key comparison takes the key, refuses others, a missing one, a prefix and a longer one', () => {
  const check = authKeyCheck('s3cret')
  assert.equal(check('s3cret'), true)
  for (const other of [undefined, '', 's3cre', 's3cret!', 'S3CRET', 'x'.repeat(10000)]) assert.equal(check(other), false, String(other))
  assert.equal(authKeyCheck(null)(undefined), true, 'no key configured: every packet passes')
})

test('RTCP JSON fans out no further than one RTCP packet: 32 report blocks or SDES chunks are refused by name', () => {
  const block = (i) => ({ source_ssrc: i, highest_seq_no: 100, fraction_lost: 0, ia_jitter: 3, packets_lost: 0, lsr: 0, dlsr: 0 })
  const report = (blocks, sdes = 0) => rtcpOfHep(Buffer.from(JSON.stringify({
    ssrc: 7,
    report_blocks: Array.from({ length: blocks }, (_, i) => block(i)),
    sdes_information: Array.from({ length: sdes }, (_, i) => ({ sdes_chunk_ssrc: i, type: 1, text: `cname-${i}` }))
  })))
  assert.equal(report(31).packets[0].reports.length, 31, '31 blocks: what one packet carries')
  assert.equal(report(32).reason, 'too-many-sources')
  assert.equal(report(9000).reason, 'too-many-sources')
  assert.equal(report(1, 31).packets[1].chunks.length, 31)
  assert.equal(report(1, 32).reason, 'too-many-sources')
  const longCname = rtcpOfHep(Buffer.from(JSON.stringify({ ssrc: 7, sdes_information: [{ sdes_chunk_ssrc: 7, type: 1, text: 'x'.repeat(256) }] })))
  assert.equal(longCname.reason, 'hep-rtcp-field', 'a CNAME longer than an SDES item can carry')
  for (const text of ['1e400', '-1e400', '-1', '4294967296', '1.5', '"1e3"', '"NaN"', 'null', 'true', '[]']) {
    const json = `{"ssrc":7,"report_blocks":[{"source_ssrc":1,"highest_seq_no":100,"fraction_lost":0,"ia_jitter":${text},"packets_lost":0,"lsr":0,"dlsr":0}]}`
    assert.equal(rtcpOfHep(Buffer.from(json)).reason, 'hep-rtcp-field', `jitter ${text}`)
  }
})

test('raw RTCP: a compound stacking more than 31 sources in one role is refused (too-many-sources); 31 pass', () => {
  const blocks = (n) => Array.from({ length: n }, (_, i) => ({ ssrc: 1000 + i, fractionLost: 0, cumulativeLost: 0, highestSeq: 10, jitter: 1, lsr: 0, dlsr: 0 }))
  assert.equal(tryDecodeRtcp(encodeReport({ ssrc: 5, reports: blocks(31) })).packets[0].reports.length, 31)
  const stacked = tryDecodeRtcp(encodeReport({ ssrc: 5, reports: blocks(62) }))
  assert.equal(stacked.reason, 'too-many-sources', 'two RRs of 31 blocks each')
  assert.equal(rtcpOfHep(encodeReport({ ssrc: 5, reports: blocks(62) })).reason, 'too-many-sources', 'and so over HEP')
  const byes = encodeRtcp([{ type: 'RR', ssrc: 5, reports: [] }, { type: 'BYE', sources: blocks(31).map((b) => b.ssrc) }, { type: 'BYE', sources: [1, 2] }])
  assert.equal(tryDecodeRtcp(byes).reason, 'too-many-sources', '33 BYE sources')
})

test('raw RTCP over HEP: an RFC 5506 reduced-size datagram (a lone NACK) is read, as the RTCP collector reads it; RTP is still refused', () => {
  const nack = Buffer.from('81cd0003' + '00000002' + '00000001' + '00050003', 'hex')
  assert.deepEqual(rtcpOfHep(nack), { packets: [] })
  const sdes = Buffer.from('81ca0002' + '00000002' + '01016100', 'hex')
  assert.equal(rtcpOfHep(sdes).packets[0].chunks[0].items.cname, 'a')
  assert.equal(rtcpOfHep(Buffer.from('80080001' + '00000002', 'hex')).reason, 'first-not-sr-rr')
})

test('SIP values too long to keep are refused by name; the header block is read to 16 KB only', () => {
  const message = ({ callId = 'c1@x', user = 'alice', tag = '1' } = {}) => Buffer.from([
    'INVITE sip:bob@b.example SIP/2.0', `Call-ID: ${callId}`, `From: <sip:${user}@a.example>;tag=${tag}`, 'To: <sip:bob@b.example>', 'CSeq: 1 INVITE', '', ''].join('\r\n'))
  assert.equal(parseSip(message()).callId, 'c1@x')
  assert.equal(parseSip(message({ callId: 'x'.repeat(1024) })).callId.length, 1024)
  assert.equal(parseSip(message({ callId: 'x'.repeat(1025) })), TOO_LONG)
  assert.equal(parseSip(message({ user: 'u'.repeat(257) })), TOO_LONG)
  assert.equal(parseSip(message({ tag: 't'.repeat(257) })), TOO_LONG)
  // The bounds are bytes, not characters: 342 € are 1,026 bytes.
  assert.equal(parseSip(message({ callId: '€'.repeat(341) })).callId.length, 341, '1,023 bytes')
  assert.equal(parseSip(message({ callId: '€'.repeat(342) })), TOO_LONG)
  assert.equal(parseSip(message({ user: 'ü'.repeat(129) })), TOO_LONG, '258 bytes')
  // 60 KB of headers before the Call-ID: it lies past what is read, so the message is not a call.
  const padded = Buffer.from(['INVITE sip:bob@b SIP/2.0', ...Array.from({ length: 1000 }, (_, i) => `X-Pad-${i}: ${'p'.repeat(50)}`), 'Call-ID: late@x', 'From: <sip:a@b>;tag=1', 'To: <sip:b@c>', 'CSeq: 1 INVITE', '', ''].join('\r\n'))
  assert.equal(parseSip(padded), null)
  const settings = {}
  assert.equal(reasonOf(hepRecordOf(hepPacket({ type: 1, payload: message({ callId: 'y'.repeat(100000) }).subarray(0, 60000) }), settings, RECEIVED)), 'hep-sip')
  const long = message({ callId: 'y'.repeat(5000) })
  assert.equal(reasonOf(hepRecordOf(hepPacket({ type: 1, payload: long }), settings, RECEIVED)), 'hep-sip-too-long')
})

// Parsed in a child under a hang guard, not a measurement (a test's timeout
// cannot stop synchronous code): quadratic, these 30 packets took 23 s on a
// 2-core machine (four messages with 12 KB of spaces inside a header's name
// each); linear, 15 ms and the child's start. The guard is 10 s.
test('a TCP segment of four messages, each with 12 KB of spaces inside a header\'s name, costs what its bytes do: four records', () => {
  const script = `
    const { hepRecordOf } = require(${JSON.stringify(require.resolve('../../collectors/hep/hep-records'))})
    const packet = Buffer.from(process.argv[1], 'base64')
    let ids
    for (let i = 0; i < 30; i++) ids = hepRecordOf(packet, {}, new Date()).map((record) => record.call.callId)
    process.stdout.write(JSON.stringify(ids))`
  const payload = [0, 1, 2, 3].map((i) => `INVITE sip:a SIP/2.0\r\ni:${i}\r\nf:<sip:a>\r\nt:<sip:a>\r\nCSeq:1 A\r\nX${' '.repeat(12000)}y: v\r\nSubject: a${' \t'.repeat(1000)}b\r\nl:0\r\n\r\n`).join('')
  const packet = hepPacket({ type: 1, payload })
  assert.ok(packet.length <= 65535, `${packet.length} bytes`)
  const out = JSON.parse(execFileSync(process.execPath, ['-e', script, packet.toString('base64')], { timeout: 10000, encoding: 'utf8' }))
  assert.deepEqual(out, ['0', '1', '2', '3'])
})

test('a Call-ID whose bytes are not UTF-8 is refused (hep-sip-call-id): read as text, bad-\\xff and bad-\\xfe were one call (QA)', () => {
  const invite = (callId) => Buffer.concat([Buffer.from('INVITE sip:bob@b SIP/2.0\r\nCall-ID: '), callId, Buffer.from('\r\nFrom: <sip:a@b>;tag=1\r\nTo: <sip:b@c>\r\nCSeq: 1 INVITE\r\n\r\n')])
  assert.equal(parseSip(invite(Buffer.from([0x62, 0xff, 0x40, 0x71]))), NOT_TEXT)
  assert.equal(parseSip(invite(Buffer.from([0x62, 0xc3]))), NOT_TEXT, 'a sequence cut short')
  assert.equal(parseSip(invite(Buffer.from([0x78, 0xa0]))), NOT_TEXT, 'a lone 0xA0 at the end (a latin1 reading\'s no-break space, not trimmed away)')
  assert.equal(reasonOf(hepRecordOf(hepPacket({ type: 1, payload: invite(Buffer.from([0x62, 0xfe, 0x40, 0x71])) }), {}, RECEIVED)), 'hep-sip-call-id')
  // UTF-8 text is a Call-ID, U+FFFD itself included; bad bytes elsewhere in the headers do not matter.
  assert.equal(parseSip(invite(Buffer.from('b\uFFFD€@q'))).callId, 'b\uFFFD€@q')
  const elsewhere = Buffer.concat([Buffer.from('INVITE sip:bob@b SIP/2.0\r\nX-Junk: '), Buffer.from([0xff]), Buffer.from('\r\nCall-ID: ok\uFFFD@q\r\nFrom: <sip:a@b>;tag=1\r\nTo: <sip:b@c>\r\nCSeq: 1 INVITE\r\n\r\n')])
  assert.equal(parseSip(elsewhere).callId, 'ok\uFFFD@q')
})

// A payload with no protocol type chunk was counted as a keepalive: a
// broken agent's every packet then read as pings.
test('a payload without the protocol type chunk is refused as hep-missing-type, not counted a keepalive; a bare packet is a keepalive', () => {
  const packet = (chunks) => {
    const body = Buffer.concat(chunks)
    const head = Buffer.from('HEP3\0\0', 'latin1')
    head.writeUInt16BE(6 + body.length, 4)
    return Buffer.concat([head, body])
  }
  const sip = Buffer.from('BYE sip:b@h SIP/2.0\r\nCall-ID: x@y\r\nFrom: <sip:a@h>;tag=1\r\nTo: <sip:b@h>;tag=2\r\nCSeq: 2 BYE\r\n\r\n')
  assert.equal(reasonOf(hepRecordOf(packet([chunk(0x0f, sip)]), {}, RECEIVED)), 'hep-missing-type')
  assert.equal(reasonOf(hepRecordOf(packet([chunk(0x10, zlib.gzipSync(sip))]), {}, RECEIVED)), 'hep-missing-type')
  assert.equal(reasonOf(hepRecordOf(packet([chunk(0x0c, Buffer.from([0, 0, 0, 1]))]), {}, RECEIVED)), 'hep-keepalive')
})
