'use strict'
// How fast one stream's document grows: a two-way RTCP stream over HEP
// (rtpengine's JSON, a report from each end every 5 s of capture time, 20 ms
// packets, 1 % loss), sent through a real hep collector (2 workers) into the
// embedded server, its capture times stepping through --minutes of stream
// in a few seconds. At each checkpoint the stream's documents are read and
// their BSON measured, split into what grows (per side: the per-minute
// buckets `quality.minutes`, the windows `quality.spans`) and the rest.
// Prints a table and one JSON line: bytes a minute of stream adds, and how
// long a stream takes to reach MongoDB's 16 MiB bound on one document.
// Usage: node benchmarks/stream-growth.js [--minutes 120] [--every 30] [--flags '--stream-segment 1h']
const dgram = require('node:dgram')
const minimist = require('minimist')
const HEPjs = require('hep-js')
const { MongoClient, BSON } = require('mongodb')
const hep = require('../collectors/hep')
const { startJavaServer } = require('../lib/mongo/java-server')
const { waitFor } = require('../test/helpers/wait-for')
const { MAX_DOCUMENT_BYTES } = require('../workers/storage/document-size')

const args = minimist(process.argv.slice(2), { string: ['flags'], default: { minutes: 120, every: 30, flags: '' } })
const T0 = Date.UTC(2026, 10, 20, 0, 0, 0) // capture times: any fixed day
const CALL = 'trunk-monitor@growth.example.com'
const A = 0x1a2b3c4d
const B = 0x5e6f7a8b

function rcinfo (at, src, dst) {
  return { protocolFamily: 2, protocol: 17, srcIp: src[0], srcPort: src[1], dstIp: dst[0], dstPort: dst[1], timeSeconds: Math.floor(at / 1000), timeUseconds: (at % 1000) * 1000, payloadType: 5, captureId: 9, correlation_id: CALL }
}

// The two reports of the 5 s round `round`: each end's RR about the other (250 packets, 2 or 3 lost).
function round (r) {
  const at = T0 + 5000 * r
  const seq = 1000 + 250 * r
  const lost = Math.floor(r * 2.5)
  const report = (ssrc, peer) => ({ ssrc, type: 201, report_count: 1, report_blocks: [{ source_ssrc: peer, highest_seq_no: seq, fraction_lost: 2, ia_jitter: 40 + (r % 7), packets_lost: lost, lsr: 0, dlsr: 0 }] })
  return [
    HEPjs.encapsulate(JSON.stringify(report(A, B)), rcinfo(at, ['10.1.0.1', 30000], ['10.1.0.2', 40000])),
    HEPjs.encapsulate(JSON.stringify(report(B, A)), rcinfo(at + 40, ['10.1.0.2', 40000], ['10.1.0.1', 30000]))
  ]
}

function sizes (doc) {
  const part = (value) => value ? BSON.calculateObjectSize({ v: value }) : 0
  const grows = ['from', 'to'].reduce((n, side) => n + part(doc[side] && doc[side].quality && doc[side].quality.minutes) + part(doc[side] && doc[side].quality && doc[side].quality.spans), 0)
  return { bytes: BSON.calculateObjectSize(doc), grows }
}

async function main () {
  const server = await startJavaServer({ port: 0 }) // memory backend (no dbPath)
  const database = `growth_${process.pid}`
  const flags = args.flags ? args.flags.split(/\s+/) : []
  const config = new hep.Config(['--port', '0', '-i', '2', '--database', database, '--stream-timeout', '1h', '--flush-interval', '100ms', ...flags]).getConfig()
  const collector = new hep.Collector({ ...config, workerOptions: { mongoUri: server.uri } })
  await collector.start()
  const client = await new MongoClient(server.uri).connect()
  const streams = client.db(database).collection('streams')
  const socket = dgram.createSocket('udp4')
  const port = collector.address().port
  const rows = []
  let sent = 0
  try {
    for (let minute = 0, r = 0; minute < args.minutes;) {
      minute = Math.min(args.minutes, minute + Number(args.every))
      for (; r < minute * 12; r++) {
        for (const packet of round(r)) await new Promise((resolve, reject) => socket.send(packet, port, '127.0.0.1', (err) => err ? reject(err) : resolve()))
        sent += 2
        if (r % 50 === 0) await waitFor(() => collector.summary().processed >= sent - 200, { what: 'the collector keeping up', timeout: 120000 })
      }
      await waitFor(() => collector.summary().processed === sent, { what: `${sent} datagrams processed`, timeout: 120000 })
      const docs = await streams.find({}).toArray()
      const measured = docs.map(sizes)
      rows.push({ minute, documents: docs.length, bytes: Math.max(...measured.map((m) => m.bytes)), totalBytes: measured.reduce((n, m) => n + m.bytes, 0), grows: measured.reduce((n, m) => n + m.grows, 0) })
    }
  } finally {
    socket.close()
    await client.close()
    await collector.stop()
    await server.stop()
  }
  const [first, last] = [rows[0], rows[rows.length - 1]]
  const perMinute = (last.totalBytes - first.totalBytes) / (last.minute - first.minute)
  const growsPerMinute = (last.grows - first.grows) / (last.minute - first.minute)
  console.log('minute  documents  largest (B)  all (B)  minutes+spans (B)')
  for (const row of rows) console.log(`${String(row.minute).padStart(6)}  ${String(row.documents).padStart(9)}  ${String(row.bytes).padStart(11)}  ${String(row.totalBytes).padStart(7)}  ${String(row.grows).padStart(17)}`)
  const daysTo16MiB = MAX_DOCUMENT_BYTES / perMinute / 1440
  console.log(`grows ${perMinute.toFixed(0)} B a minute of stream (${(growsPerMinute / 2).toFixed(0)} B a side in minute buckets and windows); one document reaches 16 MiB after ${daysTo16MiB.toFixed(1)} days`)
  console.log(JSON.stringify({ bench: 'stream-growth', flags: args.flags, rows, bytesPerMinute: perMinute, bucketsAndWindowsPerSideMinute: growsPerMinute / 2, daysTo16MiB }))
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
