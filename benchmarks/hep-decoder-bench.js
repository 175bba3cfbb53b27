'use strict'

// HEP3 decoding on one core: collectors/hep/hep-decoder.js against hep-js
// (the npm package HOMER's Node tools use, a dev dependency), in the same
// run, alternating rounds, on packets encoded by hep-js itself: RTCP as
// rtpengine sends it (JSON, correlation id) and SIP INVITEs; then the same
// with our whole type 5 path (decode + JSON RTCP to packets), which hep-js
// does not do, for the cost per report. Reference: HOMER's published
// decode-only figure is 3.9 M packets/s on a Core Ultra 9 (many cores).
//
//   node benchmarks/hep-decoder-bench.js [--seconds 8]

const HEPjs = require('hep-js')
const { decodeHep, payloadOf } = require('../collectors/hep/hep-decoder')
const { rtcpOfHep } = require('../collectors/hep/rtcp-json')
const { prng } = require('../test/helpers/prng')

const VARIANTS = 64
const ROUNDS = 4

function makeCorpora () {
  const rand = prng(7)
  const u32 = () => Math.floor(rand() * 0x100000000)
  const rcinfo = (type, callId) => ({
    protocolFamily: 2, protocol: 17, srcIp: '10.1.2.3', dstIp: '10.9.8.7', srcPort: 30000 + Math.floor(rand() * 1000), dstPort: 40000,
    timeSeconds: 1795590000 + Math.floor(rand() * 1000), timeUseconds: Math.floor(rand() * 1e6), payloadType: type, captureId: 2001, hepNodeName: 'rtpengine', correlation_id: callId
  })
  const callId = () => `${u32().toString(16)}${u32().toString(16)}@pbx.example.net`
  const rtcp = () => `{ "sender_information":{"ntp_timestamp_sec":${u32()},"ntp_timestamp_usec":${u32()},"octets":${u32()},"rtp_timestamp":${u32()}, "packets":${u32()}},` +
    `"ssrc":${u32()},"type":200,"report_count":1,"report_blocks":[{"source_ssrc":${u32()},"highest_seq_no":${u32()},"fraction_lost":${Math.floor(rand() * 256)},"ia_jitter":${Math.floor(rand() * 3000)},"packets_lost":${Math.floor(rand() * 5000)},"lsr":${u32()},"dlsr":${Math.floor(rand() * 65536)}}],` +
    `"sdes_report_count":1,"sdes_information": [ {"sdes_chunk_ssrc":${u32()},"type":1,"text":"user@host.example.net"}] }`
  const sip = (id) => ['INVITE sip:+4930123456@b.example.com SIP/2.0', 'Via: SIP/2.0/UDP 10.1.2.3:5060;branch=z9hG4bK' + u32(), 'From: "Alice" <sip:alice@a.example.com>;tag=' + u32(),
    'To: <sip:+4930123456@b.example.com>', `Call-ID: ${id}`, 'CSeq: 1 INVITE', 'Contact: <sip:alice@10.1.2.3:5060>', 'Max-Forwards: 70', 'Content-Type: application/sdp', 'Content-Length: 0', '', ''].join('\r\n')
  return {
    'rtcp-json': Array.from({ length: VARIANTS }, () => HEPjs.encapsulate(rtcp(), rcinfo(5, callId()))),
    'sip-invite': Array.from({ length: VARIANTS }, () => { const id = callId(); return HEPjs.encapsulate(sip(id), rcinfo(1, id)) })
  }
}

let sink = 0

const DECODERS = {
  'hep-js': (buf) => { sink += HEPjs.decapsulate(buf).payload.length },
  ours: (buf) => { sink += payloadOf(decodeHep(buf)).length },
  'ours+rtcp': (buf) => { sink += rtcpOfHep(payloadOf(decodeHep(buf))).packets.length }
}

function runFor (decode, corpus, until) {
  let n = 0
  while (performance.now() < until) {
    for (let i = 0; i < corpus.length; i++) decode(corpus[i])
    n += corpus.length
  }
  return n
}

/** Rows per corpus: packets/s of hep-js and ours (and ours with the RTCP JSON for type 5), the ratio. */
async function run ({ seconds = 8 } = {}) {
  const corpora = makeCorpora()
  const rows = []
  for (const [name, corpus] of Object.entries(corpora)) {
    const names = name === 'rtcp-json' ? ['hep-js', 'ours', 'ours+rtcp'] : ['hep-js', 'ours']
    const slice = (seconds * 1000) / (Object.keys(corpora).length * ROUNDS * names.length)
    const total = Object.fromEntries(names.map((n) => [n, [0, 0]]))
    for (const n of names) runFor(DECODERS[n], corpus, performance.now() + 50)
    for (let round = 0; round < ROUNDS; round++) {
      for (const n of round % 2 ? [...names].reverse() : names) {
        const start = performance.now()
        total[n][0] += runFor(DECODERS[n], corpus, start + slice)
        total[n][1] += performance.now() - start
      }
    }
    const perSec = Object.fromEntries(names.map((n) => [n, Math.round(total[n][0] / total[n][1] * 1000)]))
    rows.push({ corpus: name, messages: total['hep-js'][0] + total.ours[0], baselinePerSec: perSec['hep-js'], newPerSec: perSec.ours, ratio: Math.round(perSec.ours / perSec['hep-js'] * 100) / 100, withRtcpPerSec: perSec['ours+rtcp'] })
  }
  if (sink === 0.5) console.log(sink)
  return rows
}

module.exports = { run }

if (require.main === module) {
  const at = process.argv.indexOf('--seconds')
  const seconds = at > 0 ? Number(process.argv[at + 1]) : 8
  run({ seconds }).then((rows) => {
    console.log(require('./decoder-table').decoderTable([{ decoder: 'hep', rows, baseline: 'hep-js', target: 5 }]))
    for (const r of rows) if (r.withRtcpPerSec) console.log(`hep ${r.corpus}: with the type 5 JSON read into RTCP packets ${r.withRtcpPerSec.toLocaleString('en-US')}/s`)
    console.log(JSON.stringify({ bench: 'hep-decoder', rows }))
  })
}
