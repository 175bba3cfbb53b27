'use strict'

// The RTCP decoder against an implementation nobody here wrote: pion/rtcp
// (Go, github.com/pion/rtcp), built from test/oracles/pion-rtcp. The same
// datagrams (a valid corpus, one per named defect, seeded mutations) go to
// both; they must agree on accept/reject and on the decoded fields, except
// where pion departs from RFC 3550: each such case is listed in EXCEPTIONS
// with the RFC section, and only a datagram matching its predicate uses it.
// tshark's dissection of real peers' RTCP is in rtcp-peers.test.js.

const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { spawnSync } = require('node:child_process')
const { tryDecodeRtcp } = require('../../collectors/rtcp/decoder')
const { encodeRtcp, encodeReport } = require('../../collectors/rtcp/encoder')
const { prng } = require('../helpers/prng')
const { removeDir } = require('../helpers/temp-dir')

const ORACLE_DIR = path.join(__dirname, '..', 'oracles', 'pion-rtcp')
const MUTATIONS = 3000

function buildOracle (t) {
  const which = spawnSync('go', ['version'], { encoding: 'utf8' })
  if (which.error) return null
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pion-rtcp-'))
  t.after(() => removeDir(dir))
  const binary = path.join(dir, 'pion-rtcp')
  const built = spawnSync('go', ['build', '-o', binary, '.'], { cwd: ORACLE_DIR, encoding: 'utf8', timeout: 120000 })
  assert.equal(built.status, 0, `go build failed: ${built.stderr}`)
  return binary
}

function runOracle (binary, datagrams) {
  const input = datagrams.map((d) => d.toString('base64')).join('\n') + '\n'
  const out = spawnSync(binary, [], { input, encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 })
  assert.equal(out.status, 0, out.stderr)
  const lines = out.stdout.trim().split('\n').map((line) => JSON.parse(line))
  assert.equal(lines.length, datagrams.length)
  return lines
}

/** Ours, in the oracle's terms: SDES text and reasons as the bytes received. */
function normalizeOurs (packets) {
  return packets.map((p) => {
    if (p.type === 'SR' || p.type === 'RR') {
      const out = { ...p, reports: p.reports.map(normalizeBlock), extension: p.extension ? p.extension.toString('hex') : '' }
      return out
    }
    if (p.type === 'SDES') return { type: 'SDES', chunks: p.chunks.map((c) => ({ ssrc: c.ssrc, items: c.list.map(itemBytes) })) }
    if (p.type === 'BYE') return { type: 'BYE', sources: p.sources, reason: p.reasonRaw ? p.reasonRaw.toString('hex') : Buffer.from(p.reason || '', 'utf8').toString('hex') }
    if (p.type === 'APP') return { type: 'APP', ssrc: p.ssrc, name: Buffer.from(p.name, 'latin1').toString('hex'), subtype: p.subtype, data: p.data.toString('hex') }
    return { type: 'XR', ssrc: p.ssrc, blockTypes: p.blocks.map((b) => b.bt) }
  })
}

function normalizeBlock (b) {
  const { cumulativeLost, ...rest } = b
  return { ...rest, totalLost: cumulativeLost & 0xffffff }
}

function itemBytes (item) {
  if (item.raw) return { type: item.type, text: item.raw.toString('hex') }
  if (item.type !== 8) return { type: item.type, text: Buffer.from(item.text, 'utf8').toString('hex') }
  const prefix = Buffer.from(item.prefix, 'utf8')
  return { type: 8, text: Buffer.concat([Buffer.from([prefix.length]), prefix, Buffer.from(item.text, 'utf8')]).toString('hex') }
}

/** The common headers of a datagram, as far as they can be walked. */
function headers (buf) {
  const out = []
  for (let at = 0; at + 4 <= buf.length;) {
    out.push({ at, padded: (buf[at] & 0x20) !== 0, pt: buf[at + 1], end: at + (buf.readUInt16BE(at + 2) + 1) * 4 })
    at = out[out.length - 1].end
  }
  return out
}

/**
 * Where pion departs from RFC 3550 (or RFC 3611): each with its section,
 * when it applies, and what each side does. No other disagreement passes.
 */
const EXCEPTIONS = [
  {
    rfc: 'RFC 3550 §6.1 and A.2: the first packet of a compound packet must be SR or RR; pion also accepts RFC 5506 reduced-size RTCP',
    applies: (buf, ours, pion) => ours.reason === 'first-not-sr-rr' && pion.ok
  },
  {
    rfc: 'RFC 3550 §6.4.1: padding is counted by its last octet, only on the last packet, a multiple of four; pion keeps padding inside SR/RR/SDES/BYE/XR bodies and does not check where it is',
    applies: (buf) => headers(buf).some((h) => h.padded)
  },
  {
    rfc: 'RFC 3550 §6.5 and §6.6: the octets filling an SDES chunk or a BYE reason to 32 bits MUST be null; pion skips them unread',
    applies: (buf, ours, pion) => ours.reason === 'nonzero-padding' && pion.ok
  },
  {
    rfc: 'RFC 3550 §6.6: the source count must cover every SSRC of a BYE; pion ignores what follows the reason',
    applies: (buf, ours, pion) => ours.reason === 'source-count-mismatch' && pion.ok && headers(buf).some((h) => h.pt === 203 && h.at <= ours.offset && ours.offset < h.end)
  },
  {
    rfc: 'RFC 3550 §6.5.8: a PRIV item starts with a prefix length that fits the item; pion does not read PRIV items apart',
    applies: (buf, ours, pion) => ours.reason === 'sdes-bad-priv' && pion.ok
  },
  {
    rfc: 'RFC 3611 §3: an XR block length counts the block\'s words and must stay within its XR packet; pion clamps an overrunning block to the packet and accepts it',
    applies: (buf, ours, pion) => ours.reason === 'truncated-block' && pion.ok && headers(buf).some((h) => h.pt === 207 && h.at <= ours.offset && ours.offset < h.end)
  },
  {
    rfc: 'RFC 3550 §6.4 / A.2 and RFC 3611 §3: packet types and XR block contents the receiver does not use are skipped by length; pion parses RTPFB/PSFB (RFC 4585) bodies and XR blocks of types 1–7 and refuses ones it cannot read',
    applies: (buf, ours, pion) => ours.packets !== null && !pion.ok && headers(buf).some((h) => h.pt === 205 || h.pt === 206 || h.pt === 207)
  }
]

function compare (buf, ours, pion) {
  if (ours.packets === null && !pion.ok) return null
  if (ours.packets !== null && pion.ok) {
    const expected = normalizeOurs(ours.packets)
    const theirs = pion.packets.filter((p) => p.type !== 'OTHER')
    try {
      assert.deepEqual(theirs, expected)
      return null
    } catch (err) {
      return `fields differ: ${err.message}`
    }
  }
  return ours.packets === null ? `we refuse (${ours.reason} at ${ours.offset}), pion accepts` : `we accept, pion refuses (${pion.error})`
}

function validCorpus () {
  const rand = prng(7)
  const u32 = () => Math.floor(rand() * 0x100000000)
  const block = () => ({ ssrc: u32(), fractionLost: Math.floor(rand() * 256), cumulativeLost: Math.floor(rand() * 0x1000000) - 0x800000, highestSeq: u32(), jitter: u32(), lsr: u32(), dlsr: u32() })
  const sender = () => ({ ntpSec: u32(), ntpFrac: u32(), rtpTimestamp: u32(), packetCount: u32(), octetCount: u32() })
  const out = []
  for (let i = 0; i < 40; i++) {
    const ssrc = u32()
    const reports = Array.from({ length: i % 7 }, block)
    out.push(encodeReport({ ssrc, sender: i % 2 ? sender() : undefined, reports, cname: `user${i}@host.example`, bye: i % 5 === 0 ? 'bye now' : i % 5 === 1 }))
    out.push(encodeRtcp([
      { type: 'RR', ssrc, reports: reports.slice(0, 2) },
      { type: 'SDES', chunks: [{ ssrc, items: { cname: 'Zoë@host', name: 'Zoë 😀', tool: 'x', note: 'n' } }, { ssrc: u32(), items: { cname: 'c2', priv: [{ prefix: 'x-p', value: 'v' }] } }] },
      { type: 'APP', subtype: i % 32, ssrc, name: 'TEST', data: Buffer.alloc((i % 3) * 4, i) },
      { type: 'XR', ssrc, blocks: [{ bt: 4, data: Buffer.alloc(8, 1) }, { bt: 5, data: Buffer.alloc(12, 2) }, { bt: 42, data: Buffer.alloc(4 * (i % 3)) }] },
      { type: 'BYE', sources: [ssrc, u32()], reason: i % 2 ? 'x'.repeat(i % 9) : undefined }
    ]))
  }
  return out
}

const rr = () => Buffer.from('81c90007' + '00000001' + '00000002' + '01000003' + '00000004' + '00000005' + '00000006' + '00000007', 'hex')
const pkt = (hex) => { const b = Buffer.from(hex, 'hex'); b.writeUInt16BE(b.length / 4 - 1, 2); return b }

/** One datagram per defect the decoder used to let through, and each reason. */
const DEFECTS = {
  'repeated SDES types and types 9–255 kept in order': Buffer.concat([rr(), pkt('81ca0000' + '00000007' + '010161' + '010162' + '0c0263' + 'ff00' + '08030178' + '79' + '000000')]),
  'invalid UTF-8 in SDES text and BYE reason': Buffer.concat([rr(), pkt('81ca0000' + '00000007' + '0103' + '61fffe' + '00'), pkt('81cb0000' + '00000007' + '03' + 'c3' + '2861' + '')]),
  'sdes-unterminated': Buffer.concat([rr(), pkt('81ca0000' + '00000007' + '01026162')]),
  'bad-padding (count 3)': Buffer.concat([rr(), pkt('a1ca0000' + '00000007' + '0101610000000003')]),
  'source-count-mismatch (SDES)': Buffer.concat([rr(), pkt('81ca0000' + '00000007' + '01016100' + '00000008' + '01016200')]),
  'source-count-mismatch (BYE)': Buffer.concat([rr(), pkt('81cb0000' + '00000007' + '00000008' + '02616200')]),
  'nonzero-padding (SDES)': Buffer.concat([rr(), pkt('81ca0000' + '00000007' + '01026162' + '00070000')]),
  'sdes-bad-priv': Buffer.concat([rr(), pkt('81ca0000' + '00000007' + '08020561' + '00000000')]),
  'first-not-sr-rr': pkt('81ca0000' + '00000007' + '01016100'),
  'report-count': Buffer.concat([pkt('9fc90000' + '00000001')])
}

function mutations (seeds, count) {
  const rand = prng(0x5eed)
  const out = []
  for (let i = 0; i < count; i++) {
    const b = Buffer.from(seeds[i % seeds.length])
    const edits = 1 + Math.floor(rand() * 3)
    for (let e = 0; e < edits; e++) {
      const at = Math.floor(rand() * b.length)
      b[at] = rand() < 0.5 ? Math.floor(rand() * 256) : b[at] ^ (1 << Math.floor(rand() * 8))
    }
    out.push(rand() < 0.1 ? b.subarray(0, Math.floor(rand() * b.length)) : b)
  }
  return out
}

test('pion/rtcp agrees with the decoder on valid, defect and mutated datagrams', async (t) => {
  const binary = buildOracle(t)
  if (!binary) return t.skip('go is not installed: the pion/rtcp oracle cannot be built')
  const valid = validCorpus()
  const defects = Object.values(DEFECTS)
  const mutated = mutations([...valid, ...defects], MUTATIONS)
  const all = [...valid, ...defects, ...mutated]
  const answers = runOracle(binary, all)
  const used = new Map(EXCEPTIONS.map((e) => [e.rfc, 0]))
  const failures = []
  all.forEach((buf, i) => {
    const ours = tryDecodeRtcp(buf)
    const pion = answers[i]
    const problem = compare(buf, ours, pion)
    if (problem === null) return
    const exception = EXCEPTIONS.find((e) => e.applies(buf, ours, pion))
    if (exception) return used.set(exception.rfc, used.get(exception.rfc) + 1)
    const kind = i < valid.length ? 'valid' : i < valid.length + defects.length ? `defect "${Object.keys(DEFECTS)[i - valid.length]}"` : 'mutation'
    failures.push(`${kind} #${i} ${buf.toString('hex')}: ${problem}`)
  })
  t.diagnostic(`exceptions used: ${JSON.stringify(Object.fromEntries(used))}`)
  assert.deepEqual(failures.slice(0, 10), [], `${failures.length} disagreements`)
  valid.forEach((buf, i) => {
    assert.ok(answers[i].ok && tryDecodeRtcp(buf).packets, `valid #${i} accepted by both`)
  })
  const accepted = all.filter((buf) => tryDecodeRtcp(buf).packets !== null).length
  assert.ok(accepted > valid.length + 100, `some mutations decode (${accepted})`)
})

/** RFC 5506 reduced-size datagrams, as WebRTC endpoints that negotiated rtcp-rsize send them. */
function reducedSizeCorpus () {
  return [
    pkt('81ce0000' + '00000001' + '00000002'), // PLI (PSFB FMT 1, RFC 4585 §6.3.1)
    pkt('81cd0000' + '00000001' + '00000002' + '00050003'), // generic NACK (RTPFB FMT 1, §6.2.1)
    pkt('81ca0000' + '00000007' + '01036162630000'.padEnd(16, '0')), // SDES, one CNAME
    pkt('81cb0000' + '00000007'), // BYE
    pkt('80cf0000' + '00000007' + '04000002' + '0000000100000002'), // XR with an RRTR block
    Buffer.concat([pkt('81ca0000' + '00000007' + '01016100'), pkt('81cd0000' + '00000001' + '00000002' + '00050003')]) // SDES, then a NACK
  ]
}

/** With reduced-size accepted: the exceptions but the first, and where the first packet's type is not RTCP's. */
const REDUCED_SIZE_EXCEPTIONS = [
  {
    rfc: 'RFC 5761 §4: RTCP packet types are 192–223, the rest an RTP payload type (RTP sent to the RTCP port); pion accepts any type as an unknown packet',
    applies: (buf, ours, pion) => ours.reason === 'first-not-sr-rr' && pion.ok && (buf[1] < 192 || buf[1] > 223)
  },
  ...EXCEPTIONS.slice(1)
]

test('with --reduced-size, pion/rtcp agrees on reduced-size datagrams (RFC 5506) and their mutations; strict, each is refused as first-not-sr-rr', async (t) => {
  const binary = buildOracle(t)
  if (!binary) return t.skip('go is not installed: the pion/rtcp oracle cannot be built')
  const valid = reducedSizeCorpus()
  const all = [...valid, ...mutations(valid, 1000)]
  const answers = runOracle(binary, all)
  const failures = []
  all.forEach((buf, i) => {
    const ours = tryDecodeRtcp(buf, { reducedSize: true })
    const problem = compare(buf, ours, answers[i])
    if (problem !== null && !REDUCED_SIZE_EXCEPTIONS.some((e) => e.applies(buf, ours, answers[i]))) failures.push(`#${i} ${buf.toString('hex')}: ${problem}`)
  })
  assert.deepEqual(failures.slice(0, 10), [], `${failures.length} disagreements`)
  valid.forEach((buf, i) => {
    assert.ok(answers[i].ok, `pion accepts #${i}`)
    assert.ok(tryDecodeRtcp(buf, { reducedSize: true }).reducedSize, `#${i} read as reduced-size`)
    assert.equal(tryDecodeRtcp(buf).reason, 'first-not-sr-rr', `#${i} refused strict`)
  })
})
