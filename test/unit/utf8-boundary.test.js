'use strict'

// Bytes cut to a bound on a character boundary: what a HEP log line or a SIP
// first line keeps reads back as the sender's text, never ending in U+FFFD.
const test = require('node:test')
const assert = require('node:assert/strict')
const { utf8Boundary } = require('../../lib/shared/utf8-boundary')
const { callLogOf } = require('../../collectors/hep/call-logs')
const { sipMessageOf } = require('../../collectors/hep/sip-messages')

test('a cut inside a 2-, 3- or 4-byte character moves back to its start; ASCII, the end and bytes that are not UTF-8 are cut where asked', () => {
  for (const ch of ['é', '€', '😀']) {
    const buf = Buffer.from(`ab${ch}cd`)
    const size = Buffer.byteLength(ch)
    for (let cut = 3; cut < 2 + size; cut++) assert.equal(utf8Boundary(buf, cut), 2, `${ch} cut at ${cut}`)
    assert.equal(utf8Boundary(buf, 2 + size), 2 + size)
  }
  assert.equal(utf8Boundary(Buffer.from('abcdef'), 3), 3)
  assert.equal(utf8Boundary(Buffer.from('abc'), 10), 3)
  assert.equal(utf8Boundary(Buffer.from([0x61, 0x80, 0x80, 0x80, 0x80, 0x80]), 5), 5, 'continuation bytes with no lead: not UTF-8, cut as asked')
  assert.equal(utf8Boundary(Buffer.from([0x41, 0x80, 0x80]), 1), 1, 'a stray continuation byte after the cut: nothing before it dropped')
  assert.equal(utf8Boundary(Buffer.from([0xc3, 0xa9, 0x80]), 2), 2, 'é ends at the cut; the stray byte after it is not its')
})

test('a HEP log line over 8,192 bytes is kept whole characters, and a SIP first line over 1,024 bytes too', () => {
  const payload = Buffer.from(`${'a'.repeat(8191)}€ tail`)
  const { log } = callLogOf({ protocolType: 100, correlationId: 'call-1' }, payload, Date.now(), () => null)
  assert.equal(log.truncated, true)
  assert.equal(log.text, 'a'.repeat(8191))
  assert.ok(!log.text.includes('\uFFFD'))
  const sip = Buffer.from(`INVITE sip:${'é'.repeat(600)}@x SIP/2.0\r\nCall-ID: c\r\n\r\n`)
  const doc = sipMessageOf({}, { callId: 'c', method: 'INVITE', cseq: { seq: 1, method: 'INVITE' } }, sip, Date.now())
  assert.ok(!doc.firstLine.includes('\uFFFD'), doc.firstLine.slice(-10))
  assert.ok(Buffer.byteLength(doc.firstLine) <= 1024 && Buffer.byteLength(doc.firstLine) >= 1022)
})
