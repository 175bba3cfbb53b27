'use strict'

const test = require('node:test')
const assert = require('node:assert/strict')
const { decodeRtcp, tryDecodeRtcp, DECODE_REASONS, TOLERABLE_REASONS } = require('../../collectors/rtcp/decoder')
const { encodeRtcp, encodeReport } = require('../../collectors/rtcp/encoder')
const { toStreamUpdates } = require('../../collectors/rtcp/to-stream-updates')
const DecodeError = require('../../exceptions/decode-error')
const InvalidOptionError = require('../../exceptions/invalid-option-error')
const { prng } = require('../helpers/prng')

const block = (ssrc, extra = {}) => ({
  ssrc, fractionLost: 26, cumulativeLost: 3, highestSeq: 0x0001fffe, jitter: 120, lsr: 0x12345678, dlsr: 65536, ...extra
})
const sr = (reports = [], extra = {}) => ({
  type: 'SR', ssrc: 0xfedcba98, ntpSec: 0xeeac6656, ntpFrac: 0x36872b02, rtpTimestamp: 0x69ee7e9d, packetCount: 164, octetCount: 24000, reports, ...extra
})
const rr = (reports = []) => ({ type: 'RR', ssrc: 0x5846c8fc, reports })
const sdes = (items) => ({ type: 'SDES', chunks: [{ ssrc: 0xfedcba98, items }] })
/** What the decoder returns for sdes(items): the by-name view plus the ordered list. */
const decodedSdes = (items) => ({ type: 'SDES', chunks: [{ ssrc: 0xfedcba98, items, list: listOf(items) }] })
const SDES_ORDER = ['cname', 'name', 'email', 'phone', 'loc', 'tool', 'note']
function listOf (items) {
  const list = SDES_ORDER.filter((name) => items[name] !== undefined).map((name) => ({ type: SDES_ORDER.indexOf(name) + 1, name, text: items[name] }))
  for (const { prefix, value } of items.priv || []) list.push({ type: 8, name: 'priv', prefix, text: value })
  return list
}
/** The decoded packets without the SDES lists, in the shape the encoder takes. */
const withoutLists = (packets) => packets.map((p) => (p.type === 'SDES' ? { ...p, chunks: p.chunks.map(({ list, ...chunk }) => chunk) } : p))

/** One RTCP packet from its first octet, type and body (the length is filled in). */
function raw (first, pt, body) {
  const out = Buffer.concat([Buffer.from([first, pt, 0, 0]), Buffer.from(body)])
  out.writeUInt16BE(Math.ceil(out.length / 4) - 1, 2)
  return out
}
const ssrcBytes = (ssrc) => [ssrc >>> 24, (ssrc >>> 16) & 255, (ssrc >>> 8) & 255, ssrc & 255]
const item = (type, bytes) => [type, bytes.length, ...bytes]
const ascii = (text) => [...Buffer.from(text, 'latin1')]
const emptyRr = () => encodeRtcp([rr()])

/** Assert fn throws a DecodeError with this reason. */
function rejects (buf, reason) {
  assert.throws(() => decodeRtcp(buf), (err) => {
    assert.ok(err instanceof DecodeError, `expected DecodeError, got ${err}`)
    assert.equal(err.code, 'ERR_DECODE')
    assert.equal(err.reason, reason, err.message)
    return true
  })
}

function roundTrip (packets) {
  const buf = encodeRtcp(packets)
  const decoded = decodeRtcp(buf)
  assert.ok(encodeRtcp(decoded.packets).equals(buf), 're-encoding the decoded packets gives the same bytes')
  return { packets: withoutLists(decoded.packets) }
}

test('SR, RR, SDES, BYE, APP round trip field by field', () => {
  const packets = [
    sr([block(1), block(0xffffffff, { cumulativeLost: -5 })]),
    rr([block(2)]),
    {
      type: 'SDES',
      chunks: [
        { ssrc: 0xfedcba98, items: { cname: 'ffmpeg@host', name: 'Zoë', email: 'a@b.c', phone: '+1 555', loc: 'Lab', tool: 'Lavf', note: 'hi', priv: [{ prefix: 'x-ab', value: 'v1' }, { prefix: '', value: 'v2' }] } },
        { ssrc: 7, items: { cname: 'abc' } }
      ]
    },
    { type: 'BYE', sources: [0xfedcba98, 1], reason: 'teardown' },
    { type: 'APP', subtype: 17, ssrc: 9, name: 'ABCD', data: Buffer.from('01020304a0b0c0d0', 'hex') }
  ]
  assert.deepEqual(roundTrip(packets), { packets })
})

test('BYE without reason, empty RR, SR extension round trip', () => {
  const packets = [rr(), sr([], { extension: Buffer.from('cafebabe', 'hex') }), { type: 'BYE', sources: [] }, { type: 'BYE', sources: [3] }]
  assert.deepEqual(roundTrip(packets), { packets })
})

test('SDES chunk whose items end exactly on a word boundary gets a full null word', () => {
  // ssrc(4) + cname item 2+2 = 8 bytes: the END item needs another word
  const buf = encodeRtcp([rr(), sdes({ cname: 'ab' })])
  assert.equal(buf.length, 8 + 4 + 12)
  assert.deepEqual(decodeRtcp(buf).packets[1], decodedSdes({ cname: 'ab' }))
})

test('XR: known blocks are decoded, an unknown block type is skipped by its length', () => {
  const rrt = { bt: 4, typeSpecific: 0, data: Buffer.from('eeac665636872b02', 'hex') }
  const unknown = { bt: 99, typeSpecific: 5, data: Buffer.alloc(12, 0xab) }
  const dlrr = { bt: 5, typeSpecific: 0, data: Buffer.from('000000010000000200000003000000040000000500000006', 'hex') }
  const voip = { bt: 7, typeSpecific: 0, data: Buffer.from('00000009' + '0a0b0c0d' + '00140028' + '0032003c' + 'f6e51e0a' + '5d5e2a28' + '0b000050' + '00780096', 'hex') }
  const { packets } = roundTrip([rr(), { type: 'XR', ssrc: 42, blocks: [rrt, unknown, dlrr, voip] }])
  const [r, u, d, v] = packets[1].blocks
  assert.deepEqual(u, unknown)
  assert.deepEqual([r.kind, r.ntpSec, r.ntpFrac], ['rrt', 0xeeac6656, 0x36872b02])
  assert.deepEqual(d.items, [{ ssrc: 1, lrr: 2, dlrr: 3 }, { ssrc: 4, lrr: 5, dlrr: 6 }])
  assert.equal(v.kind, 'voip-metrics')
  assert.deepEqual([v.ssrc, v.lossRate, v.gapDensity, v.burstDuration, v.endSystemDelay], [9, 10, 13, 20, 60])
  assert.deepEqual([v.signalLevel, v.noiseLevel, v.mosLq, v.mosCq, v.rxConfig], [-10, -27, 42, 40, 11])
  assert.deepEqual([v.jbNominal, v.jbMaximum, v.jbAbsMax], [80, 120, 150])
})

test('unknown packet types are skipped by their length', () => {
  const fb = Buffer.from('81cd0002' + '00000001' + '00000002', 'hex') // RTPFB (205)
  const buf = Buffer.concat([encodeRtcp([rr([block(1)])]), fb, encodeRtcp([sdes({ cname: 'x' })])])
  assert.deepEqual(decodeRtcp(buf).packets.map((p) => p.type), ['RR', 'SDES'])
})

test('padding on the last packet is removed, P bit set', () => {
  const buf = encodeRtcp([sr([block(1)]), { ...sdes({ cname: 'pad' }), padding: 8 }])
  assert.equal(buf[28 + 24] & 0x20, 0x20)
  assert.deepEqual(decodeRtcp(buf).packets, [sr([block(1)]), decodedSdes({ cname: 'pad' })])
  const single = encodeRtcp([{ ...rr([block(5)]), padding: 4 }])
  assert.deepEqual(decodeRtcp(single).packets, [rr([block(5)])])
})

test('31 report blocks fit one packet; encodeReport splits 40 into SR + RR, which the decoder refuses as too many sources', () => {
  const reports = Array.from({ length: 31 }, (_, i) => block(i + 1))
  assert.equal(roundTrip([sr(reports)]).packets[0].reports.length, 31)
  assert.throws(() => encodeRtcp([rr([...reports, block(99)])]), InvalidOptionError)
  const many = Array.from({ length: 40 }, (_, i) => block(i + 1))
  const bytes = encodeReport({ ssrc: 5, sender: sr(), reports: many, cname: 'c' })
  // The headers as written: SR with RC 31, then an RR with RC 9 (RFC 3550 §6.4.2).
  const second = (bytes.readUInt16BE(2) + 1) * 4
  assert.deepEqual([bytes[0] & 0x1f, bytes[1], bytes[second] & 0x1f, bytes[second + 1]], [31, 200, 9, 201])
  rejects(bytes, 'too-many-sources')
})

test('cumulative lost is signed 24-bit and clamped when encoding', () => {
  const values = [-1, -8388608, 8388607, 0, 1]
  const { packets } = roundTrip([rr(values.map((v, i) => block(i, { cumulativeLost: v })))])
  assert.deepEqual(packets[0].reports.map((b) => b.cumulativeLost), values)
  const clamped = decodeRtcp(encodeRtcp([rr([block(1, { cumulativeLost: 1e9 }), block(2, { cumulativeLost: -1e9 })])]))
  assert.deepEqual(clamped.packets[0].reports.map((b) => b.cumulativeLost), [8388607, -8388608])
  const raw = encodeRtcp([rr([block(1)])])
  raw.fill(0xff, 13, 16)
  assert.equal(decodeRtcp(raw).packets[0].reports[0].cumulativeLost, -1)
})

test('SSRCs and 32-bit fields decode as unsigned numbers', () => {
  const { packets } = roundTrip([sr([block(0xffffffff, { highestSeq: 0xffffffff, jitter: 0x80000000 })], { ssrc: 0x80000000 })])
  assert.equal(packets[0].ssrc, 2147483648)
  assert.equal(packets[0].reports[0].ssrc, 4294967295)
  assert.equal(packets[0].reports[0].highestSeq, 4294967295)
})

test('encodeReport builds RR + SDES + BYE with a reason', () => {
  const { packets } = decodeRtcp(encodeReport({ ssrc: 77, reports: [block(8)], cname: 'rx@host', bye: 'hangup' }))
  assert.deepEqual(packets, [
    { type: 'RR', ssrc: 77, reports: [block(8)] },
    { type: 'SDES', chunks: [{ ssrc: 77, items: { cname: 'rx@host' }, list: [{ type: 1, name: 'cname', text: 'rx@host' }] }] },
    { type: 'BYE', sources: [77], reason: 'hangup' }
  ])
  assert.equal(decodeRtcp(encodeReport({ ssrc: 1, cname: 'a', bye: true })).packets[2].reason, undefined)
})

test('encoder rejects shapes RTCP cannot carry', () => {
  assert.throws(() => encodeRtcp([{ type: 'NOPE' }]), InvalidOptionError)
  assert.throws(() => encodeRtcp('x'), InvalidOptionError)
  assert.throws(() => encodeRtcp([{ type: 'APP', ssrc: 1, name: 'ABC', data: Buffer.alloc(0) }]), InvalidOptionError)
  assert.throws(() => encodeRtcp([{ type: 'APP', ssrc: 1, name: 'ABCD', data: Buffer.alloc(3) }]), InvalidOptionError)
  assert.throws(() => encodeRtcp([sdes({ cname: 'x'.repeat(256) })]), InvalidOptionError)
  assert.throws(() => encodeRtcp([{ type: 'XR', ssrc: 1, blocks: [{ bt: 1, data: Buffer.alloc(2) }] }]), InvalidOptionError)
  assert.throws(() => encodeRtcp([rr([block(-1)])]), RangeError)
})

/** Valid base datagram for the validation cases: RR(1 block) + SDES. */
const base = () => encodeRtcp([rr([block(1)]), sdes({ cname: 'abc' })])

test('validation failures carry stable reasons', async (t) => {
  const cases = {
    'not-buffer': ['a string', () => 'hello world'],
    'too-short': ['7 bytes', () => base().subarray(0, 7)],
    'bad-version': ['version 1 in the first header', () => { const b = base(); b[0] = (b[0] & 0x3f) | 0x40; return b }],
    'first-not-sr-rr': ['SDES first', () => encodeRtcp([sdes({ cname: 'abc' }), rr()])],
    'bad-length': ['length longer than the datagram', () => { const b = base(); b.writeUInt16BE(99, 2); return b }],
    'bad-padding': ['padding count 0', () => { const b = encodeRtcp([{ ...rr(), padding: 4 }]); b[b.length - 1] = 0; return b }],
    'report-count': ['RC 31 with one block', () => { const b = base(); b[0] = 0x9f; return b }],
    'truncated-block': ['XR block longer than the packet', () => encodeRtcp([rr(), { type: 'XR', ssrc: 1, blocks: [{ bt: 4, data: Buffer.alloc(8) }] }]).fill(9, 18, 20)],
    'source-count-mismatch': ['SDES count 1 with two chunks', () => { const b = encodeRtcp([rr(), { type: 'SDES', chunks: [{ ssrc: 1, items: { cname: 'a' } }, { ssrc: 2, items: { cname: 'b' } }] }]); b[8] = 0x81; return b }],
    'sdes-unterminated': ['SDES chunk with no null octet', () => Buffer.concat([emptyRr(), raw(0x81, 202, [...ssrcBytes(1), ...item(1, ascii('ab'))])])],
    'nonzero-padding': ['SDES fill octets after END not null', () => Buffer.concat([emptyRr(), raw(0x81, 202, [...ssrcBytes(1), ...item(1, ascii('ab')), 0, 7, 0, 0])])],
    'sdes-bad-priv': ['PRIV prefix length beyond the item', () => Buffer.concat([emptyRr(), raw(0x81, 202, [...ssrcBytes(1), ...item(8, [5, 0x61]), 0, 0, 0, 0])])],
    'too-many-sources': ['two RRs of 31 and 1 report blocks', () => encodeRtcp([rr(Array.from({ length: 31 }, (_, i) => block(i + 1))), rr([block(99)])])],
    'too-many-items': ['one chunk of 249 empty NOTE items', () => Buffer.concat([emptyRr(), sdesChunk(249)])],
    srtcp: ['an RR whose body and SDES are ciphertext, then the E flag and index 1 and an 80-bit tag', () => srtcp(encodeRtcp([rr([block(5)]), { type: 'SDES', chunks: [{ ssrc: 1, items: { cname: 'a@b' } }] }]), 10)]
  }
  assert.deepEqual(Object.keys(cases).sort(), [...DECODE_REASONS].sort(), 'every exported reason has a case')
  for (const [reason, [label, make]] of Object.entries(cases)) {
    await t.test(`${reason}: ${label}`, () => rejects(make(), reason))
  }
})

/**
 * `compound` as SRTCP (RFC 3711 §3.4) would carry it: its first eight bytes
 * in clear, the rest noise in place of ciphertext, then the E flag with
 * SRTCP index `index`, an `mki`-byte MKI and a `tag`-byte authentication
 * tag; with `aead` (AES-GCM, RFC 7714 §17) the 16-byte tag is encrypted
 * with the rest, before the index word, which ends the datagram.
 */
function srtcp (compound, tag, index = 1, { mki = 0, aead = false } = {}) {
  const sealed = aead ? Buffer.concat([compound, Buffer.alloc(16)]) : compound
  const out = Buffer.concat([sealed, Buffer.alloc(4 + mki + (aead ? 0 : tag), 0xa5)])
  for (let i = 8; i < sealed.length; i++) out[i] = (i * 167 + 13) & 255
  out.writeUInt32BE((0x80000000 | index) >>> 0, sealed.length)
  return out
}

test('SRTCP: refused as srtcp with a 10- or 4-byte tag or AES-GCM (tag before the index), with or without an MKI, even where its ciphertext would read as RTCP; plain RTCP ending in such a word is not SRTCP', () => {
  const sr = encodeRtcp([{ type: 'SR', ssrc: 0x1234, ntpSec: 1, ntpFrac: 2, rtpTimestamp: 3, packetCount: 4, octetCount: 5, reports: [] }])
  // FFmpeg's SRTCP with HMAC-SHA1-32: a lone SR, index 1 and 4 bytes of tag read as a packet of type 0 that fits: taken whole before.
  const readable = srtcp(sr, 4)
  assert.equal(tryDecodeRtcp(readable).reason, 'srtcp')
  for (const tag of [10, 4]) {
    for (const mki of tag === 4 ? [0] : [0, 1, 4]) assert.equal(tryDecodeRtcp(srtcp(encodeRtcp([rr([block(5)])]), tag, 70000 & 0xffff, { mki })).reason, 'srtcp', `a ${tag}-byte tag, a ${mki}-byte MKI`)
  }
  for (const mki of [0, 4]) assert.equal(tryDecodeRtcp(srtcp(encodeRtcp([rr([block(5)])]), 16, 70000 & 0xffff, { mki, aead: true })).reason, 'srtcp', `AES-GCM, a ${mki}-byte MKI`)
  // Plain RTCP: a lone SR (nothing after its first packet), and an SR and SDES whose CNAME bytes fill the places an index would be.
  assert.equal(tryDecodeRtcp(sr).reason, undefined)
  const withCname = encodeRtcp([{ type: 'SR', ssrc: 1, ntpSec: 1, ntpFrac: 2, rtpTimestamp: 3, packetCount: 4, octetCount: 5, reports: [] }, { type: 'SDES', chunks: [{ ssrc: 1, items: { cname: 'user@host.example.com' } }] }])
  assert.equal(tryDecodeRtcp(withCname).reason, undefined)
  // An unknown packet type after the first is passed over, as before, when nothing ends as SRTCP does.
  assert.equal(tryDecodeRtcp(Buffer.concat([emptyRr(), raw(0x80, 0, [1, 2, 3, 4, 5, 6, 7, 8])])).reason, undefined)
})

/** One SDES packet, one chunk of `n` empty NOTE items and its END word. */
function sdesChunk (n) {
  const items = Array.from({ length: n }, () => item(7, [])).flat()
  const body = [...ssrcBytes(1), ...items, 0]
  while (body.length % 4) body.push(0)
  return raw(0x81, 202, body)
}

test('SDES items and XR blocks are bounded per compound (too-many-items): 248 pass, the 249th is refused however the datagram spreads them', () => {
  assert.equal(decodeRtcp(Buffer.concat([emptyRr(), sdesChunk(248)])).packets[1].chunks[0].list.length, 248)
  rejects(Buffer.concat([emptyRr(), sdesChunk(200), sdesChunk(49)]), 'too-many-items')
  const xr = (n) => ({ type: 'XR', ssrc: 1, blocks: Array.from({ length: n }, () => ({ bt: 99, data: Buffer.alloc(0) })) })
  assert.equal(decodeRtcp(Buffer.concat([emptyRr(), sdesChunk(224), encodeRtcp([xr(24)])])).packets[2].blocks.length, 24)
  rejects(Buffer.concat([emptyRr(), sdesChunk(224), encodeRtcp([xr(25)])]), 'too-many-items')
  // A mixer describing 31 contributors in full: every named item and a PRIV each.
  const full = (ssrc) => ({ ssrc, items: { cname: `c${ssrc}@h`, name: 'n', email: 'e', phone: 'p', loc: 'l', tool: 't', note: 'x', priv: [{ prefix: 'p', value: 'v' }] } })
  const mixer = decodeRtcp(encodeRtcp([rr(), { type: 'SDES', chunks: Array.from({ length: 31 }, (_, i) => full(i + 1)) }]))
  assert.deepEqual(mixer.packets[1].chunks.map((c) => c.list.length), Array(31).fill(8))
  // What a 64 KB datagram can stack: about 21,000 empty items or 16,000
  // empty XR blocks, refused at the 249th, before the rest is read.
  rejects(Buffer.concat([emptyRr(), sdesChunk(21000)]), 'too-many-items')
  rejects(encodeRtcp([rr(), xr(16000)]), 'too-many-items')
  // An empty DLRR block counts as one XR entry (too-many-sources past 31).
  const dlrr = (n) => ({ type: 'XR', ssrc: 1, blocks: Array.from({ length: n }, () => ({ bt: 5, data: Buffer.alloc(0) })) })
  assert.equal(decodeRtcp(encodeRtcp([rr(), dlrr(31)])).packets[1].blocks.length, 31)
  rejects(encodeRtcp([rr(), dlrr(32)]), 'too-many-sources')
})

test('more validation: the second packet and the inner structures', async (t) => {
  const cases = [
    ['bad-version', 'version 3 in the second header', () => { const b = base(); b[32] |= 0xc0; return b }],
    ['bad-length', 'trailing 2 bytes', () => Buffer.concat([base(), Buffer.alloc(2)])],
    ['bad-length', 'trailing word with a bad length', () => Buffer.concat([base(), Buffer.from('80ca0005', 'hex')])],
    ['bad-length', 'SR header with no sender info', () => Buffer.from('80c8000100000001', 'hex')],
    ['bad-length', 'APP without a name', () => Buffer.concat([encodeRtcp([rr()]), Buffer.from('80cc000100000001', 'hex')])],
    ['bad-padding', 'padding bit on the first of two packets', () => encodeRtcp([{ ...rr(), padding: 4 }, sdes({ cname: 'a' })])],
    ['bad-padding', 'padding count larger than the packet body', () => { const b = encodeRtcp([{ ...rr(), padding: 4 }]); b[b.length - 1] = 9; return b }],
    ['report-count', 'SDES count 2 with one chunk', () => { const b = base(); b[32] = 0x82; return b }],
    ['report-count', 'BYE count 5 with one source', () => { const b = encodeRtcp([rr(), { type: 'BYE', sources: [1] }]); b[8] = 0x85; return b }],
    ['truncated-block', 'SDES item longer than the packet', () => { const b = base(); b[41] = 200; return b }],
    ['truncated-block', 'BYE reason longer than the packet', () => { const b = encodeRtcp([rr(), { type: 'BYE', sources: [1], reason: 'ab' }]); b[16] = 10; return b }],
    ['bad-padding', 'padding count 3, not a multiple of four (§6.4.1)', () => { const b = encodeRtcp([rr([block(1)]), { ...sdes({ cname: 'a' }), padding: 4 }]); b[b.length - 1] = 3; return b }],
    ['bad-padding', 'padding count 6 on a 4-byte-padded packet', () => { const b = encodeRtcp([{ ...rr([block(1)]), padding: 8 }]); b[b.length - 1] = 6; return b }],
    ['source-count-mismatch', 'SDES count 0 with a chunk', () => { const b = base(); b[32] = 0x80; return b }],
    ['source-count-mismatch', 'BYE count 1 with two sources and a reason', () => { const b = encodeRtcp([rr(), { type: 'BYE', sources: [1, 2], reason: 'ab' }]); b[8] = 0x81; return b }],
    ['source-count-mismatch', 'SDES with a null word after its last chunk', () => Buffer.concat([emptyRr(), raw(0x81, 202, [...ssrcBytes(1), ...item(1, ascii('ab')), 0, 0, 0, 0, 0, 0, 0, 0])])],
    ['sdes-unterminated', 'last of two chunks runs to the end of the packet', () => Buffer.concat([emptyRr(), raw(0x82, 202, [...ssrcBytes(1), ...item(1, ascii('a')), 0, ...ssrcBytes(2), ...item(1, ascii('bc'))])])],
    ['sdes-unterminated', 'chunk items fill the packet exactly, END missing (with padding after)', () => Buffer.concat([emptyRr(), raw(0xa1, 202, [...ssrcBytes(1), ...item(1, ascii('ab')), 0, 0, 0, 4])])],
    ['nonzero-padding', 'BYE reason fill octets not null', () => { const b = encodeRtcp([rr(), { type: 'BYE', sources: [1], reason: 'ab' }]); b[b.length - 1] = 0x20; return b }],
    ['sdes-bad-priv', 'empty PRIV item (no prefix length octet)', () => Buffer.concat([emptyRr(), raw(0x81, 202, [...ssrcBytes(1), ...item(8, []), 0, 0])])]
  ]
  for (const [reason, label, make] of cases) {
    await t.test(`${reason}: ${label}`, () => rejects(make(), reason))
  }
})

test('SDES keeps every item in order: repeated types, PRIV, unassigned types 9–255', () => {
  const body = [
    ...ssrcBytes(7),
    ...item(1, ascii('first@host')), ...item(6, ascii('tool-a')), ...item(1, ascii('second@host')),
    ...item(8, [3, ...ascii('x-a'), ...ascii('v1')]), ...item(12, ascii('rid0')), ...item(255, [0, 1, 2]),
    ...item(6, ascii('tool-b')), ...item(8, [0, ...ascii('v2')]), 0
  ]
  while (body.length % 4) body.push(0)
  const { packets } = decodeRtcp(Buffer.concat([emptyRr(), raw(0x81, 202, body)]))
  assert.deepEqual(packets[1].chunks[0].list, [
    { type: 1, name: 'cname', text: 'first@host' },
    { type: 6, name: 'tool', text: 'tool-a' },
    { type: 1, name: 'cname', text: 'second@host' },
    { type: 8, name: 'priv', prefix: 'x-a', text: 'v1' },
    { type: 12, name: null, text: 'rid0' },
    { type: 255, name: null, text: '\u0000\u0001\u0002' },
    { type: 6, name: 'tool', text: 'tool-b' },
    { type: 8, name: 'priv', prefix: '', text: 'v2' }
  ])
  assert.deepEqual(packets[1].chunks[0].items, { cname: 'first@host', tool: 'tool-a', priv: [{ prefix: 'x-a', value: 'v1' }, { prefix: '', value: 'v2' }] }, 'the by-name view holds the first of each type')
})

test('invalid UTF-8 in SDES text, PRIV and BYE reasons keeps the original bytes', () => {
  const bad = [0x61, 0xff, 0xfe, 0x62]
  const body = [...ssrcBytes(1), ...item(1, bad), ...item(2, ascii('ok é')), ...item(8, [1, 0x70, 0xc3]), 0]
  while (body.length % 4) body.push(0)
  const reason = [bad.length, ...bad]
  while (reason.length % 4) reason.push(0)
  const buf = Buffer.concat([emptyRr(), raw(0x81, 202, body), raw(0x81, 203, [...ssrcBytes(1), ...reason])])
  const { packets } = decodeRtcp(buf)
  const [cname, name, priv] = packets[1].chunks[0].list
  assert.deepEqual(cname, { type: 1, name: 'cname', text: 'a\ufffd\ufffdb', raw: Buffer.from(bad), invalidUtf8: true })
  assert.equal(name.text, 'ok \ufffd', 'latin1 bytes that are not UTF-8 get replacement characters…')
  assert.deepEqual([name.invalidUtf8, name.raw], [true, Buffer.from(ascii('ok é'))], '…and keep their bytes')
  assert.deepEqual(priv, { type: 8, name: 'priv', prefix: 'p', text: '\ufffd', raw: Buffer.from([1, 0x70, 0xc3]), invalidUtf8: true })
  assert.deepEqual(packets[2], { type: 'BYE', sources: [1], reason: 'a\ufffd\ufffdb', reasonRaw: Buffer.from(bad), reasonInvalidUtf8: true })
  const valid = decodeRtcp(encodeRtcp([rr(), sdes({ cname: 'Zoë 😀' }), { type: 'BYE', sources: [1], reason: 'adiós' }])).packets
  assert.deepEqual(valid[1].chunks[0].list, [{ type: 1, name: 'cname', text: 'Zoë 😀' }], 'valid UTF-8 carries no raw copy')
  assert.deepEqual(valid[2], { type: 'BYE', sources: [1], reason: 'adiós' })
})

test('tolerate: a documented deviation is accepted and listed, others still refused', () => {
  const unterminated = Buffer.concat([emptyRr(), raw(0x81, 202, [...ssrcBytes(1), ...item(1, ascii('ab'))])])
  assert.deepEqual(TOLERABLE_REASONS, ['sdes-unterminated', 'nonzero-padding'])
  const lenient = decodeRtcp(unterminated, { tolerate: ['sdes-unterminated'] })
  assert.deepEqual(lenient.deviations, ['sdes-unterminated'])
  assert.deepEqual(lenient.packets[1].chunks[0].items, { cname: 'ab' })
  rejects(unterminated, 'sdes-unterminated')
  const dirtyFill = Buffer.concat([emptyRr(), raw(0x81, 202, [...ssrcBytes(1), ...item(1, ascii('ab')), 0, 7, 0, 0])])
  assert.deepEqual(decodeRtcp(dirtyFill, { tolerate: ['nonzero-padding'] }).deviations, ['nonzero-padding'])
  assert.throws(() => decodeRtcp(dirtyFill, { tolerate: ['sdes-unterminated'] }), (err) => err.reason === 'nonzero-padding')
  assert.equal(decodeRtcp(base(), { tolerate: TOLERABLE_REASONS }).deviations, undefined, 'no deviation, no list')
  assert.throws(() => decodeRtcp(base(), { tolerate: ['bad-version'] }), InvalidOptionError)
})

test('tryDecodeRtcp returns the refusal instead of throwing', () => {
  const b = base()
  b[0] = 0x40
  assert.deepEqual(tryDecodeRtcp(b), { packets: null, reason: 'bad-version', offset: 0, length: b.length })
  assert.deepEqual(tryDecodeRtcp('x'), { packets: null, reason: 'not-buffer', offset: 0, length: 0 })
  assert.deepEqual(tryDecodeRtcp(new Uint8Array(base())), decodeRtcp(base()), 'a Uint8Array decodes like a Buffer')
})

test('toStreamUpdates: SR blocks carry sender counters and the reporter CNAME, BYE ends', () => {
  const now = Date.UTC(2024, 0, 2)
  const decoded = decodeRtcp(encodeRtcp([
    sr([block(11, { fractionLost: 64 })]),
    rr([block(12, { cumulativeLost: -2 })]),
    sdes({ cname: 'ffmpeg@host' }),
    { type: 'BYE', sources: [0xfedcba98, 5] }
  ]))
  const ts = new Date(now)
  assert.deepEqual(toStreamUpdates(decoded, { address: '127.0.0.1', port: 5 }, now), [
    { fromID: '4275878552', toID: '11', IP: '127.0.0.1', highestPacketNum: 0x1fffe, timestamp: ts, fields: { cname: 'ffmpeg@host', fractionLost: 0.25, cumulativeLost: 3, jitter: 120, lsr: 0x12345678, dlsr: 65536, packetCount: 164, octetCount: 24000 } },
    { fromID: String(0x5846c8fc), toID: '12', IP: '127.0.0.1', highestPacketNum: 0x1fffe, timestamp: ts, fields: { fractionLost: 26 / 256, cumulativeLost: -2, jitter: 120, lsr: 0x12345678, dlsr: 65536 } },
    { endID: '4275878552', IP: '127.0.0.1', timestamp: ts },
    { endID: '5', IP: '127.0.0.1', timestamp: ts }
  ])
})

test('toStreamUpdates: SR without blocks and its CNAME make one side update', () => {
  const decoded = decodeRtcp(encodeRtcp([sr(), sdes({ cname: 'tx' }), { type: 'APP', subtype: 0, ssrc: 1, name: 'TEST' }]))
  const items = toStreamUpdates(decoded, { address: '10.0.0.1' }, new Date(5))
  assert.deepEqual(items, [{ sideID: '4275878552', IP: '10.0.0.1', timestamp: new Date(5), fields: { packetCount: 164, octetCount: 24000, cname: 'tx' } }])
  const before = Date.now()
  const [item] = toStreamUpdates(decoded, { address: '10.0.0.1' })
  assert.ok(item.timestamp instanceof Date && item.timestamp.getTime() >= before)
})

function mutate (buf, rand) {
  const out = Buffer.from(buf)
  const edits = 1 + Math.floor(rand() * 4)
  for (let i = 0; i < edits; i++) out[Math.floor(rand() * out.length)] = Math.floor(rand() * 256)
  return rand() < 0.2 ? out.subarray(0, Math.floor(rand() * out.length)) : out
}

function randomBuffer (rand) {
  const buf = Buffer.alloc(Math.floor(rand() * 120))
  for (let i = 0; i < buf.length; i++) buf[i] = Math.floor(rand() * 256)
  if (buf.length > 1 && rand() < 0.7) buf[0] = 0x80 | (buf[0] & 0x3f) // mostly version 2
  if (buf.length > 1 && rand() < 0.6) buf[1] = rand() < 0.5 ? 200 : 201 // mostly SR/RR first
  return buf
}

test('fuzz: 10,000 random and mutated datagrams throw nothing but DecodeError', () => {
  const rand = prng(0xc0ffee)
  const seeds = [
    base(),
    encodeReport({ ssrc: 3, sender: sr(), reports: [block(1), block(2)], cname: 'fuzz', bye: 'x' }),
    encodeRtcp([rr(), { type: 'XR', ssrc: 1, blocks: [{ bt: 4, data: Buffer.alloc(8) }, { bt: 5, data: Buffer.alloc(12) }, { bt: 7, data: Buffer.alloc(32) }] }, { type: 'APP', subtype: 1, ssrc: 2, name: 'abcd', data: Buffer.alloc(4) }, { ...sdes({ cname: 'a', priv: [{ prefix: 'p', value: 'v' }] }), padding: 4 }])
  ]
  const seen = {}
  for (let i = 0; i < 10000; i++) {
    const buf = i % 2 ? randomBuffer(rand) : mutate(seeds[i % seeds.length], rand)
    const tried = tryDecodeRtcp(buf)
    try {
      decodeRtcp(buf)
      assert.notEqual(tried.packets, null, 'tryDecodeRtcp accepts what decodeRtcp accepts')
      seen.ok = (seen.ok || 0) + 1
    } catch (err) {
      if (!(err instanceof DecodeError)) assert.fail(`case ${i} (${buf.toString('hex')}) threw ${err.stack}`)
      assert.ok(DECODE_REASONS.includes(err.reason), `unlisted reason ${err.reason}`)
      assert.equal(tried.reason, err.reason)
      seen[err.reason] = (seen[err.reason] || 0) + 1
    }
  }
  assert.ok(seen.ok > 100, `some mutations still decode: ${JSON.stringify(seen)}`)
})
