'use strict'

// RTCP decoder speed on one core: today's decoder (a frozen copy of HEAD's,
// benchmarks/baseline/rtcp-decoder.js) against collectors/rtcp/decoder.js,
// in the same run, alternating rounds, on generated corpora. The new decoder
// is measured through tryDecodeRtcp, the call the RTCP worker makes; the
// baseline through decodeRtcp, its only API (a refusal throws).
//
//   node benchmarks/rtcp-decoder-bench.js [--seconds 12]

const baseline = require('./baseline/rtcp-decoder')
const { tryDecodeRtcp } = require('../collectors/rtcp/decoder')
const { encodeRtcp } = require('../collectors/rtcp/encoder')
const { prng } = require('../test/helpers/prng')

const VARIANTS = 64 // distinct datagrams per corpus
const ROUNDS = 4

function makeCorpora () {
  const rand = prng(42)
  const u32 = () => Math.floor(rand() * 0x100000000)
  const block = () => ({ ssrc: u32(), fractionLost: Math.floor(rand() * 256), cumulativeLost: Math.floor(rand() * 5000), highestSeq: u32(), jitter: Math.floor(rand() * 3000), lsr: u32(), dlsr: Math.floor(rand() * 65536) })
  const blocks = (n) => Array.from({ length: n }, block)
  const sdes = (ssrc) => ({ type: 'SDES', chunks: [{ ssrc, items: { cname: `user${ssrc % 1000}@host-${ssrc % 97}.example.net` } }] })
  const sender = () => ({ ntpSec: u32(), ntpFrac: u32(), rtpTimestamp: u32(), packetCount: u32(), octetCount: u32() })
  const kinds = {
    'sr+sdes': (ssrc) => [{ type: 'SR', ssrc, ...sender(), reports: blocks(1) }, sdes(ssrc)],
    'rr(5 blocks)+sdes': (ssrc) => [{ type: 'RR', ssrc, reports: blocks(5) }, sdes(ssrc)],
    'rr+sdes+bye': (ssrc) => [{ type: 'RR', ssrc, reports: blocks(2) }, sdes(ssrc), { type: 'BYE', sources: [ssrc], reason: 'call ended' }],
    'rr+sdes+xr': (ssrc) => [{ type: 'RR', ssrc, reports: blocks(1) }, sdes(ssrc), {
      type: 'XR',
      ssrc,
      blocks: [
        { bt: 4, data: Buffer.alloc(8, 1) },
        { bt: 5, data: Buffer.alloc(12, 2) },
        { bt: 7, data: Buffer.alloc(32, 3) }
      ]
    }]
  }
  const corpora = {}
  for (const [name, make] of Object.entries(kinds)) {
    corpora[name] = Array.from({ length: VARIANTS }, () => encodeRtcp(make(u32())))
  }
  corpora.malformed = makeMalformed(corpora, rand)
  return corpora
}

/** One datagram per refusal kind, cycled: the rejections a collector meets. */
function makeMalformed (corpora, rand) {
  const valid = [...corpora['sr+sdes'], ...corpora['rr(5 blocks)+sdes']]
  const edits = [
    (b) => { b[0] = (b[0] & 0x3f) | 0x40 }, // bad-version
    (b) => { b[3] = b[3] + 40 }, // bad-length
    (b) => { b[0] = (b[0] & 0xe0) | 31 }, // report-count
    (b) => { b[1] = 202 }, // first-not-sr-rr
    (b) => { b[b.length - 1] = 0x41; b[b.length - 2] = 0x41; b[b.length - 3] = 0x41; b[b.length - 4] = 0x41 }, // SDES unterminated / nonzero fill
    (b) => { b[b.length - 1] = 3; b[0] |= 0x20 } // padding on the first of two packets
  ]
  return Array.from({ length: VARIANTS }, (_, i) => {
    const b = Buffer.from(valid[Math.floor(rand() * valid.length)])
    edits[i % edits.length](b)
    return b
  })
}

let sink = 0

function runBaseline (corpus, until) {
  let n = 0
  while (performance.now() < until) {
    for (let i = 0; i < corpus.length; i++) {
      try {
        sink += baseline.decodeRtcp(corpus[i]).packets.length
      } catch (err) {
        sink += err.reason.length
      }
    }
    n += corpus.length
  }
  return n
}

function runNew (corpus, until) {
  let n = 0
  while (performance.now() < until) {
    for (let i = 0; i < corpus.length; i++) {
      const result = tryDecodeRtcp(corpus[i])
      sink += result.packets === null ? result.reason.length : result.packets.length
    }
    n += corpus.length
  }
  return n
}

/**
 * @param {{ seconds?: number }} [options] total measuring time
 * @returns {Promise<Array<{ corpus: string, messages: number, baselinePerSec: number, newPerSec: number, ratio: number }>>}
 */
async function run ({ seconds = 12 } = {}) {
  const corpora = makeCorpora()
  const names = Object.keys(corpora)
  const slice = (seconds * 1000) / (names.length * ROUNDS * 2)
  const rows = []
  for (const name of names) {
    const corpus = corpora[name]
    runBaseline(corpus, performance.now() + 50) // warm up both
    runNew(corpus, performance.now() + 50)
    const total = { baseline: [0, 0], new: [0, 0] }
    for (let round = 0; round < ROUNDS; round++) {
      for (const [which, fn] of round % 2 ? [['new', runNew], ['baseline', runBaseline]] : [['baseline', runBaseline], ['new', runNew]]) {
        const start = performance.now()
        total[which][0] += fn(corpus, start + slice)
        total[which][1] += performance.now() - start
      }
    }
    const baselinePerSec = Math.round(total.baseline[0] / total.baseline[1] * 1000)
    const newPerSec = Math.round(total.new[0] / total.new[1] * 1000)
    rows.push({ corpus: name, messages: total.baseline[0] + total.new[0], baselinePerSec, newPerSec, ratio: Math.round(newPerSec / baselinePerSec * 100) / 100 })
  }
  if (sink === 0.5) console.log(sink) // keep the results alive
  return rows
}

module.exports = { run }

if (require.main === module) {
  const at = process.argv.indexOf('--seconds')
  const seconds = at > 0 ? Number(process.argv[at + 1]) : 12
  run({ seconds }).then((rows) => {
    console.log(require('./decoder-table').decoderTable([{ decoder: 'rtcp', rows }]))
    console.log(JSON.stringify({ bench: 'rtcp-decoder', rows }))
  })
}
