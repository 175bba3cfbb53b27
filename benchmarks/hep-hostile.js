'use strict'

// What an unauthenticated sender can make a HEP worker spend, on one core:
// the whole record path (collectors/hep/hep-records.js, with an auth key
// configured) per packet for hostile packets, each against the baseline in
// the same run, a plain keyed SIP INVITE. A packet without the key should
// cost what a plain one costs whatever it carries; before the key was
// checked first, an unkeyed gzip bomb of ~2 KB cost about 230 times as much.
//
//   node benchmarks/hep-hostile.js [--seconds 6]

const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const zlib = require('node:zlib')
const { hepRecordOf } = require('../collectors/hep/hep-records')

const KEY = 'right-key'
const ROUNDS = 4

function chunk (type, body) {
  const head = Buffer.alloc(6)
  head.writeUInt16BE(type, 2)
  head.writeUInt16BE(6 + body.length, 4)
  return Buffer.concat([head, body])
}

function hepPacket ({ type, payload, gzip = false, key }) {
  const chunks = [chunk(0x0b, Buffer.from([type])), ...(key ? [chunk(0x0e, Buffer.from(key))] : []), chunk(gzip ? 0x10 : 0x0f, Buffer.from(payload))]
  const packet = Buffer.concat([Buffer.from('HEP3\0\0', 'latin1'), ...chunks])
  packet.writeUInt16BE(packet.length, 4)
  return packet
}

function corpora () {
  const invite = ['INVITE sip:bob@b.example SIP/2.0', 'Call-ID: c1@a.example', 'From: <sip:alice@a.example>;tag=1', 'To: <sip:bob@b.example>', 'CSeq: 1 INVITE', '', ''].join('\r\n')
  const blocks = Array.from({ length: 9000 }, (_, i) => ({ source_ssrc: i, highest_seq_no: 1, fraction_lost: 0, ia_jitter: 0, packets_lost: 0, lsr: 0, dlsr: 0 }))
  return {
    'keyed INVITE (baseline)': hepPacket({ type: 1, payload: invite, key: KEY }),
    'unkeyed gzip bomb': hepPacket({ type: 1, payload: zlib.gzipSync(Buffer.alloc(2 * 1024 * 1024)), gzip: true }),
    'unkeyed 9,000-block JSON': hepPacket({ type: 5, payload: zlib.gzipSync(JSON.stringify({ ssrc: 1, report_blocks: blocks })), gzip: true }),
    'keyed 9,000-block JSON': hepPacket({ type: 5, payload: zlib.gzipSync(JSON.stringify({ ssrc: 1, report_blocks: blocks })), gzip: true, key: KEY })
  }
}

function runFor (packet, settings, until) {
  const at = new Date()
  let n = 0
  while (performance.now() < until) {
    for (let i = 0; i < 16; i++) hepRecordOf(packet, settings, at)
    n += 16
  }
  return n
}

function run ({ seconds = 6 } = {}) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hep-hostile-'))
  const settings = { hepPasswordFile: path.join(dir, 'key') }
  fs.writeFileSync(settings.hepPasswordFile, `${KEY}\n`)
  const packets = corpora()
  const names = Object.keys(packets)
  const total = Object.fromEntries(names.map((n) => [n, [0, 0]]))
  const slice = (seconds * 1000) / (ROUNDS * names.length)
  for (let round = 0; round < ROUNDS; round++) {
    for (const name of round % 2 ? [...names].reverse() : names) {
      const start = performance.now()
      total[name][0] += runFor(packets[name], settings, start + slice)
      total[name][1] += performance.now() - start
    }
  }
  fs.rmSync(dir, { recursive: true, force: true })
  const usOf = (name) => total[name][1] * 1000 / total[name][0]
  const base = usOf(names[0])
  return names.map((name) => ({ packet: name, bytes: packets[name].length, usPerPacket: Math.round(usOf(name) * 100) / 100, ratio: Math.round(usOf(name) / base * 10) / 10 }))
}

module.exports = { run }

if (require.main === module) {
  const at = process.argv.indexOf('--seconds')
  const rows = run({ seconds: at > 0 ? Number(process.argv[at + 1]) : 6 })
  console.log('packet                      bytes   µs/packet   × baseline')
  for (const r of rows) console.log(`${r.packet.padEnd(26)} ${String(r.bytes).padStart(6)} ${r.usPerPacket.toFixed(2).padStart(11)} ${r.ratio.toFixed(1).padStart(12)}`)
  console.log(JSON.stringify({ bench: 'hep-hostile', rows }))
}
