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
// --hostile: end A's reports move their highest sequence 127 windows of
// packets each (a lost count that fits: intervals, not restarts), as a sender
// that chooses its sequence numbers can; prints the bytes a report of A adds
// to its side's windows as stored, against the same reports booked without
// the bound on new windows (collectors/rtcp/window-allowance.js: every window
// of each interval, packet-time.js windowsOf), worked out in the same run.
// Usage: node benchmarks/stream-growth.js [--minutes 120] [--every 30] [--flags '--stream-segment 1h'] [--hostile]
const dgram = require('node:dgram')
const minimist = require('minimist')
const HEPjs = require('hep-js')
const { MongoClient, BSON } = require('mongodb')
const hep = require('../collectors/hep')
const { startJavaServer } = require('../lib/mongo/java-server')
const { waitFor } = require('../test/helpers/wait-for')
const { MAX_DOCUMENT_BYTES } = require('../workers/storage/document-size')
const { windowsOf } = require('../collectors/rtcp/packet-time')

const args = minimist(process.argv.slice(2), { string: ['flags'], boolean: ['hostile'], default: { minutes: 120, every: 30, flags: '' } })
const T0 = Date.UTC(2026, 10, 20, 0, 0, 0) // capture times: any fixed day
const CALL = 'trunk-monitor@growth.example.com'
const A = 0x1a2b3c4d
const B = 0x5e6f7a8b
const HOSTILE_STEP = 127 * 500 // 127 windows of 20 ms packets a report

function rcinfo (at, src, dst) {
  return { protocolFamily: 2, protocol: 17, srcIp: src[0], srcPort: src[1], dstIp: dst[0], dstPort: dst[1], timeSeconds: Math.floor(at / 1000), timeUseconds: (at % 1000) * 1000, payloadType: 5, captureId: 9, correlation_id: CALL }
}

// End A's report of round `r` about B: { seq, lost }, 250 packets and 2 or 3 lost a round, or with --hostile 127 windows and 7.
function hostileEnd (r) {
  return args.hostile ? { seq: 1000 + HOSTILE_STEP * r, lost: 7 * r } : { seq: 1000 + 250 * r, lost: Math.floor(r * 2.5) }
}

// The two reports of the 5 s round `round`: each end's RR about the other (250 packets, 2 or 3 lost).
function round (r) {
  const at = T0 + 5000 * r
  const report = (ssrc, peer, { seq, lost }) => ({ ssrc, type: 201, report_count: 1, report_blocks: [{ source_ssrc: peer, highest_seq_no: seq, fraction_lost: 2, ia_jitter: 40 + (r % 7), packets_lost: lost, lsr: 0, dlsr: 0 }] })
  return [
    HEPjs.encapsulate(JSON.stringify(report(A, B, hostileEnd(r))), rcinfo(at, ['10.1.0.1', 30000], ['10.1.0.2', 40000])),
    HEPjs.encapsulate(JSON.stringify(report(B, A, { seq: 1000 + 250 * r, lost: Math.floor(r * 2.5) })), rcinfo(at + 40, ['10.1.0.2', 40000], ['10.1.0.1', 30000]))
  ]
}

// The windows of A's reports through round `rounds` booked without a bound on new ones, as stored
// (`quality.spans.500.<window>`: $inc of each interval's share, $min of the first report's time).
function unboundedWindows (rounds) {
  const windows = {}
  for (let r = 1; r < rounds; r++) {
    const [from, to] = [hostileEnd(r - 1), hostileEnd(r)]
    for (const [index, packets] of windowsOf(500, from.seq, to.seq)) {
      const w = windows[index] || (windows[index] = { lost: 0, expected: 0, delaySum: 0, delayCount: 0, at: new Date(T0 + 5000 * r) })
      w.lost += (to.lost - from.lost) * packets / (to.seq - from.seq)
      w.expected += packets
    }
  }
  return { 500: windows }
}

// The bytes of the windows of the side with the most of them (A's, with --hostile).
function largestSpans (docs) {
  const sides = docs.flatMap((doc) => [doc.from, doc.to]).filter((side) => side && side.quality && side.quality.spans)
  return Math.max(0, ...sides.map((side) => BSON.calculateObjectSize({ spans: side.quality.spans })))
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
      rows.push({ minute, documents: docs.length, bytes: Math.max(...measured.map((m) => m.bytes)), totalBytes: measured.reduce((n, m) => n + m.bytes, 0), grows: measured.reduce((n, m) => n + m.grows, 0), rounds: r, spans: largestSpans(docs) })
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
  if (!args.hostile) return console.log(JSON.stringify({ bench: 'stream-growth', flags: args.flags, rows, bytesPerMinute: perMinute, bucketsAndWindowsPerSideMinute: growsPerMinute / 2, daysTo16MiB }))
  // A's windows a report: as stored, against the same reports booked without the bound (the baseline, this run's reports).
  for (const row of rows) row.unboundedSpans = BSON.calculateObjectSize({ spans: unboundedWindows(row.rounds) })
  const reports = last.rounds - first.rounds
  const stored = (last.spans - first.spans) / reports
  const unbounded = (last.unboundedSpans - first.unboundedSpans) / reports
  console.log('\nhostile end A, its windows:  round  stored (B)  unbounded (B)')
  for (const row of rows) console.log(`${String(row.rounds).padStart(34)}  ${String(row.spans).padStart(10)}  ${String(row.unboundedSpans).padStart(13)}`)
  console.log(`a hostile report adds ${stored.toFixed(0)} B of windows as stored, ${unbounded.toFixed(0)} B unbounded (${(unbounded / stored).toFixed(1)}x): 16 MiB after ${(MAX_DOCUMENT_BYTES / stored).toFixed(0)} reports, against ${(MAX_DOCUMENT_BYTES / unbounded).toFixed(0)}`)
  console.log(JSON.stringify({ bench: 'stream-growth', hostile: true, flags: args.flags, rows, bytesPerMinute: perMinute, windowBytesPerReport: stored, unboundedWindowBytesPerReport: unbounded, ratio: unbounded / stored }))
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
