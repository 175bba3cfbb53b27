'use strict'

// The master's time per HEP packet for the hep collector's distribution,
// on one core, alternating rounds in one run: before = the call key alone
// (collectors/hep/call-key.js, what the master did), after = the split of
// a TCP segment holding several calls' messages into a packet per call
// (collectors/hep/call-parts.js) and the call key of each part. Packets
// encoded by hep-js: rtpengine's RTCP (JSON, UDP), a SIP INVITE over UDP
// and over TCP, a TCP segment of one call's 100/180/200, one of two calls'
// three messages, and a trunk segment of 20 messages of 7 calls.
//
//   node benchmarks/hep-call-parts.js [--seconds 6]

const HEPjs = require('hep-js')
const { callKeyOf } = require('../collectors/hep/call-key')
const { callPartsOf } = require('../collectors/hep/call-parts')

const ROUNDS = 4
const seconds = Number((process.argv.slice(2).join(' ').match(/--seconds\s+(\d+(?:\.\d+)?)/) || [])[1] || 6)

function rcinfo (type, protocol, callId) {
  return { protocolFamily: 2, protocol, srcIp: '10.1.2.3', dstIp: '10.9.8.7', srcPort: 5060, dstPort: 5060, timeSeconds: 1795590000, timeUseconds: 1000, payloadType: type, captureId: 2001, hepNodeName: 'agent', ...(callId ? { correlation_id: callId } : {}) }
}

function sip (first, callId, cseq) {
  return [first, 'Via: SIP/2.0/TCP 10.1.2.3:5060;branch=z9hG4bK776asdhds', 'From: "Alice" <sip:alice@a.example.com>;tag=1928301774', 'To: <sip:+4930123456@b.example.com>', `Call-ID: ${callId}`,
    `CSeq: ${cseq}`, 'Contact: <sip:alice@10.1.2.3:5060;transport=tcp>', 'Max-Forwards: 70', 'User-Agent: bench', 'Content-Length: 0', '', ''].join('\r\n')
}

const call = (i) => `${(0x5f3759df * (i + 1) >>> 0).toString(16)}-${i}@pbx.example.net`
const rtcp = JSON.stringify({ ssrc: 123456, type: 201, report_count: 1, report_blocks: [{ source_ssrc: 654321, highest_seq_no: 1200, fraction_lost: 0, ia_jitter: 40, packets_lost: 5, lsr: 0, dlsr: 0 }] })
const responses = (id) => ['SIP/2.0 100 Trying', 'SIP/2.0 180 Ringing', 'SIP/2.0 200 OK'].map((line) => sip(line, id, '1 INVITE'))
const KINDS = {
  'rtcp-json-udp': HEPjs.encapsulate(rtcp, rcinfo(5, 17, call(0))),
  'sip-invite-udp': HEPjs.encapsulate(sip('INVITE sip:+4930123456@b.example.com SIP/2.0', call(1), '1 INVITE'), rcinfo(1, 17)),
  'sip-invite-tcp': HEPjs.encapsulate(sip('INVITE sip:+4930123456@b.example.com SIP/2.0', call(2), '1 INVITE'), rcinfo(1, 6)),
  'tcp-one-call-3-msgs': HEPjs.encapsulate(responses(call(3)).join(''), rcinfo(1, 6)),
  'tcp-two-calls-3-msgs': HEPjs.encapsulate([responses(call(4))[0], responses(call(5))[2], responses(call(4))[1]].join(''), rcinfo(1, 6)),
  'tcp-trunk-20-msgs-7-calls': HEPjs.encapsulate(Array.from({ length: 20 }, (_, i) => responses(call(10 + (i % 7)))[i % 3]).join(''), rcinfo(1, 6))
}

let sink = 0
const before = (p) => { sink ^= callKeyOf(p, 0, p.length) }
const after = (p) => {
  const parts = callPartsOf(p, 0, p.length)
  if (parts === null) sink ^= callKeyOf(p, 0, p.length)
  else for (const part of parts) sink ^= callKeyOf(part, 0, part.length)
}

// ns per packet of `fn` over `packet` for about `ms`.
function timed (fn, packet, ms) {
  let n = 0
  const start = process.hrtime.bigint()
  const until = start + BigInt(Math.round(ms * 1e6))
  let now = start
  while (now < until) {
    for (let i = 0; i < 1000; i++) fn(packet)
    n += 1000
    now = process.hrtime.bigint()
  }
  return Number(now - start) / n
}

const budget = seconds * 1000 / Object.keys(KINDS).length / ROUNDS / 2
console.log(`hep call parts: ns per packet in the master, ${ROUNDS} alternating rounds of ~${Math.round(budget)} ms each (median)`)
console.log(['packet', 'bytes', 'parts', 'before (key)', 'after (parts + keys)', 'after/before'].join('\t'))
for (const [name, packet] of Object.entries(KINDS)) {
  timed(before, packet, 50)
  timed(after, packet, 50) // warm-up
  const b = []
  const a = []
  for (let r = 0; r < ROUNDS; r++) {
    b.push(timed(before, packet, budget))
    a.push(timed(after, packet, budget))
  }
  const median = (xs) => xs.sort((x, y) => x - y)[Math.floor(xs.length / 2)]
  const parts = callPartsOf(packet, 0, packet.length)
  console.log([name, packet.length, parts === null ? 'whole' : parts.length, median(b).toFixed(0), median(a).toFixed(0), (median(a) / median(b)).toFixed(2)].join('\t'))
}
if (sink === 0.5) console.log(sink)
