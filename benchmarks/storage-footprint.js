'use strict'
// What one record costs in storage, per built-in collector, on the embedded
// server's on-disk (H2) backend: a syslog line, a StatsD metric-minute, an
// RTCP stream (ended, with its call quality), a SIP call (HEP), a NetFlow
// flow. Each collector (2 workers) stores --scale × its records into a
// fresh server; then, per collection, the documents' BSON size and their
// index keys (what `collector status` shows, docs/storage.md#capacity) and
// the growth of the server's data file, everything included. MongoDB's
// WiredTiger compresses documents (snappy) and index keys (prefix
// compression): its figures are smaller; these say how large the records
// are before that, and what the embedded server takes.
// Prints a table and one JSON line.
// Usage: node benchmarks/storage-footprint.js [--scale 1] [--only syslog,statsd,rtcp,hep,netflow]
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const dgram = require('node:dgram')
const minimist = require('minimist')
const { MongoClient } = require('mongodb')
const HEPjs = require('hep-js')
const { startJavaServer } = require('../lib/mongo/java-server')
const { measureCollection } = require('../workers/storage/capacity')
const { generateSyslog } = require('../collectors/syslog/generator')
const RtcpSimulator = require('../collectors/rtcp/simulator')
const { v5Packet } = require('../test/helpers/netflow-packets')
const { waitFor } = require('../test/helpers/wait-for')

const args = minimist(process.argv.slice(2), { string: ['only'], default: { scale: 1, only: 'syslog,statsd,rtcp,hep,netflow' } })
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))
const n = (count) => Math.max(10, Math.round(count * args.scale))

// A realistic access-log line, about 280 bytes as sent.
const LINE = '10.20.30.40 - - "GET /api/v1/orders?customer=83412&page=2 HTTP/1.1" 200 5123 "https://shop.example.com/cart" "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36"'

const KINDS = {
  syslog: {
    per: 'syslog line',
    records: n(20000),
    datagrams: (count) => Array.from({ length: count }, (_, i) => generateSyslog({ host: `web-${i % 8}.example.net`, app: 'nginx', procid: String(1000 + i % 50), msgid: 'access', severity: 'info', facility: 'local0', message: `${LINE} ${i}` })),
    fields: { syslog: 'receivedAt', counters: 'dayStart' }
  },
  statsd: {
    per: 'StatsD metric-minute',
    records: n(10000),
    datagrams: (count) => Array.from({ length: count }, (_, i) => `app.service${i % 20}.endpoint${Math.floor(i / 20)}.latency:${i % 300}|ms`),
    fields: { metrics: 'minute' }
  },
  rtcp: {
    per: 'RTCP stream (ended, with call quality)',
    records: n(1000),
    argv: ['--stream-timeout', '10s'], // longer than the sending takes: one stream a call
    // 12 reports from each end: a minute of a call at RTCP's usual 5 s.
    datagrams: (count) => { const sim = new RtcpSimulator({ streams: count }); return Array.from({ length: count * 24 }, () => sim.next()) },
    settled: async (db) => await db.collection('streams').countDocuments({ active: true }) === 0,
    fields: { streams: 'metadata.lastUpdated', counters: 'dayStart' }
  },
  hep: {
    per: 'SIP call (HEP: INVITE, 180, 200, ACK, BYE)',
    records: n(2000),
    datagrams: (count) => Array.from({ length: count }, (_, i) => sipCall(`${i}-a84b4c76e66710@pc33.example.com`, i)).flat(),
    fields: { calls: 'lastReceivedAt' }
  },
  netflow: {
    per: 'NetFlow flow (v5, 30 a datagram)',
    records: n(20000),
    datagrams: (count) => { const out = []; for (let i = 0; i < count; i += 30) out.push(v5Datagram(i, Math.min(30, count - i))); return out },
    fields: { flows: 'receivedAt', flow_minutes: 'minute', interface_minutes: 'minute', exporters: 'lastSeen' }
  }
}

function sipCall (callId, i) {
  const from = `"Alice ${i}" <sip:alice${i}@atlanta.example.com>;tag=1928301774`
  const to = `<sip:bob${i}@biloxi.example.com>`
  const message = (line, cseq, toTag) => [line, 'Via: SIP/2.0/UDP pc33.atlanta.example.com;branch=z9hG4bK776asdhds', 'Max-Forwards: 70',
    `To: ${to}${toTag ? ';tag=a6c85cf' : ''}`, `From: ${from}`, `Call-ID: ${callId}`, `CSeq: ${cseq}`, 'Contact: <sip:alice@pc33.atlanta.example.com>', 'Content-Length: 0', '', ''].join('\r\n')
  const now = Math.floor(Date.now() / 1000)
  const hep = (payload, back) => HEPjs.encapsulate(payload, { protocolFamily: 2, protocol: 17, srcIp: back ? '10.0.0.2' : '10.0.0.1', dstIp: back ? '10.0.0.1' : '10.0.0.2', srcPort: 5060, dstPort: 5060, timeSeconds: now, timeUseconds: 0, payloadType: 1, captureId: 1, hepNodeName: 'bench' })
  return [
    hep(message(`INVITE sip:bob${i}@biloxi.example.com SIP/2.0`, '314159 INVITE', false)),
    hep(message('SIP/2.0 180 Ringing', '314159 INVITE', true), true),
    hep(message('SIP/2.0 200 OK', '314159 INVITE', true), true),
    hep(message(`ACK sip:bob${i}@biloxi.example.com SIP/2.0`, '314159 ACK', true)),
    hep(message(`BYE sip:alice${i}@pc33.atlanta.example.com SIP/2.0`, '231 BYE', true), true)
  ]
}

function v5Datagram (first, count) {
  const secs = Math.floor(Date.now() / 1000)
  const records = Array.from({ length: count }, (_, k) => {
    const i = first + k
    return { srcAddr: `10.${(i >> 8) & 255}.${i & 255}.1`, dstAddr: `192.168.${i % 200}.${i % 250}`, srcPort: 1024 + i % 60000, dstPort: 443, proto: 6, packets: 10 + i % 90, bytes: 1500 * (10 + i % 90), inputIf: 1 + i % 4, outputIf: 5 + i % 4, first: 1000, last: 5000 }
  })
  return v5Packet({ sysUptime: 10000, secs, sequence: first, records })
}

async function measureKind (name, kind) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `footprint-${name}-`))
  const server = await startJavaServer({ port: 0, dbPath: dir })
  const file = path.join(dir, 'collector.mv.db')
  const module = require(`../collectors/${name}`)
  const config = new module.Config(['--port', '0', '-i', '2', '--database', 'footprint', '--flush-interval', '100ms', '--buffer-dir', path.join(dir, 'buffer'), ...(kind.argv || [])]).getConfig()
  const collector = new module.Collector({ ...config, workerOptions: { mongoUri: server.uri } })
  await collector.start()
  const client = await new MongoClient(server.uri).connect()
  const db = client.db('footprint')
  await sleep(1000) // indexes made; the empty database's file
  const empty = fs.statSync(file).size
  const datagrams = kind.datagrams(kind.records)
  const socket = dgram.createSocket('udp4')
  for (let i = 0; i < datagrams.length; i++) {
    socket.send(datagrams[i], collector.address().port, '127.0.0.1')
    if (i % 100 === 99) await sleep(15)
  }
  await waitFor(() => collector.summary().processed === datagrams.length, { timeout: 300000, interval: 200, what: `${name}: ${datagrams.length} stored` })
  if (kind.settled) await waitFor(() => kind.settled(db), { timeout: 60000, interval: 250, what: `${name} settled` })
  socket.close()
  await collector.stop()
  const collections = {}
  for (const [collection, field] of Object.entries(kind.fields)) collections[collection] = await measureCollection(db, { collection, field })
  await client.close()
  await sleep(1500) // the backend commits about every second
  await server.stop()
  const fileBytes = fs.statSync(file).size - empty
  fs.rmSync(dir, { recursive: true, force: true })
  return { name, per: kind.per, records: kind.records, collections, fileBytes }
}

function perRecord (result) {
  let data = 0
  let index = 0
  for (const c of Object.values(result.collections)) {
    data += c.dataBytes
    index += c.indexBytes
  }
  return { data: Math.round(data / result.records), index: Math.round(index / result.records), file: Math.round(result.fileBytes / result.records) }
}

async function main () {
  const results = []
  for (const name of args.only.split(',')) {
    process.stderr.write(`${name}…\n`)
    results.push(await measureKind(name, KINDS[name]))
  }
  console.log('per record (bytes): documents\' BSON + index keys (estimated, as `collector status` shows) | growth of the embedded server\'s data file')
  console.log(['record'.padEnd(42), 'records', 'data', 'index', 'total', 'file'].join('  '))
  for (const r of results) {
    const p = perRecord(r)
    console.log([r.per.padEnd(42), String(r.records).padStart(7), String(p.data).padStart(4), String(p.index).padStart(5), String(p.data + p.index).padStart(5), String(p.file).padStart(4)].join('  '))
    for (const [name, c] of Object.entries(r.collections)) {
      console.log(`    ${name.padEnd(18)} ${String(c.documents).padStart(7)} documents, ${Math.round(c.dataBytes / Math.max(1, c.documents))} B data + ${Math.round(c.indexBytes / Math.max(1, c.documents))} B index each`)
    }
  }
  console.log(JSON.stringify({ benchmark: 'storage-footprint', scale: args.scale, results: results.map((r) => ({ name: r.name, records: r.records, perRecord: perRecord(r), collections: Object.fromEntries(Object.entries(r.collections).map(([k, c]) => [k, { documents: c.documents, dataBytes: c.dataBytes, indexBytes: c.indexBytes }])) })) }))
}

main().catch((err) => { console.error(err); process.exit(1) })
