'use strict'
// Stream storage under load: a separate sender process → LoadBalancer (2
// workers, hash distribution on the stream) → MongoDB, then an exact check of
// every document. First measures the server's raw bulkWrite upsert ceiling in
// the same run, since these machines are noisy.
// Usage: node benchmarks/streams.js [--scale 0.1] [--only hot,hot-bidi,wide]
// (BENCH_DEBUG=1 also prints mismatching docs and the poll timeline)
const path = require('node:path')
const { execFile } = require('node:child_process')
const minimist = require('minimist')
const { MongoClient } = require('mongodb')
const mongoose = require('mongoose')
const { LoadBalancer } = require('..')
const { startJavaServer } = require('../lib/mongo/java-server')
const { packetOp } = require('../workers/storage/stream-ops')
const { defineModels } = require('../workers/storage/schemas')
const { entryOf } = require('../workers/storage/packet-coalescer')
const { packetOf } = require('./stream-sender')

const args = minimist(process.argv.slice(2), { string: ['only'], default: { scale: 1, instances: 2, only: 'hot,hot-bidi,wide' } })
const WORKER = path.join(__dirname, '../test/fixtures/binary-stream-worker.js')
const POLL_MS = 250
const DRAIN_LIMIT_MS = 600000

const SCENARIOS = {
  hot: { streams: 1000, rate: 50000, ms: 10000, bidirectional: 0 },
  'hot-bidi': { streams: 1000, rate: 50000, ms: 10000, bidirectional: 1 },
  wide: { streams: 100000, rate: 20000, ms: 15000, bidirectional: 0 }
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

/** Flow affinity on the stream number, so both directions of a stream meet in one worker. */
class StreamBalancer extends LoadBalancer {
  key (message) {
    return message.data.length >= 4 ? message.data.readUInt32BE(0) : 0
  }
}

async function mongo () {
  if (process.env.MONGODB_URI) return { uri: process.env.MONGODB_URI, stop: () => {} }
  const server = await startJavaServer({ port: 0 })
  return { uri: server.uri, stop: () => server.stop() }
}

// The workers' own indexes, through the models they define (schemas.js).
async function streamIndexes (uri, database) {
  const connection = await mongoose.createConnection(uri, { dbName: database }).asPromise()
  try {
    await defineModels(connection)
  } finally {
    await connection.close()
  }
}

function ceilingOps (client, count, pass, now) {
  const ops = []
  for (let s = 0; s < count; s++) {
    const fromID = `c${client}a${s}`
    const toID = `c${client}b${s}`
    ops.push(packetOp(entryOf({ fromID, toID, IP: '10.0.0.1', highestPacketNum: pass + 1, timestamp: now }), 'from', now))
  }
  return ops
}

// Raw ceiling: 2 clients, each unordered bulkWrites of 1,000 upserts of the
// document shape the workers write, one insert pass then one update pass.
async function measureCeiling (uri, streamsPerClient) {
  const client = await new MongoClient(uri).connect()
  const database = `bench_ceiling_${process.pid}`
  const collection = client.db(database).collection('streams')
  await streamIndexes(uri, database)
  const started = process.hrtime.bigint()
  let upserts = 0
  await Promise.all([0, 1].map(async (c) => {
    for (let pass = 0; pass < 2; pass++) {
      const ops = ceilingOps(c, streamsPerClient, pass, new Date())
      for (let i = 0; i < ops.length; i += 1000) {
        const batch = ops.slice(i, i + 1000)
        await collection.bulkWrite(batch, { ordered: false })
        upserts += batch.length
      }
    }
  }))
  const seconds = Number(process.hrtime.bigint() - started) / 1e9
  await collection.db.dropDatabase().catch(() => {})
  await client.close()
  return { upserts, seconds, perSecond: upserts / seconds }
}

function send (port, s) {
  return new Promise((resolve, reject) => {
    const argv = [path.join(__dirname, 'stream-sender.js'), port, s.streams, s.rate, s.ms, s.bidirectional]
    execFile(process.execPath, argv, { timeout: s.ms * 4 + 10000 }, (err, stdout) => {
      if (err) return reject(err)
      resolve(JSON.parse(stdout))
    })
  })
}

function sumWorkers (stats, key) {
  return stats.workers.reduce((sum, w) => sum + ((w.custom && w.custom[key]) || 0), 0)
}

/** Polls until every received packet is processed and written; returns the write timeline. */
async function drain (lb, sender) {
  const samples = []
  const deadline = Date.now() + DRAIN_LIMIT_MS
  let senderDone = false
  let stable = 0
  sender.then(() => { senderDone = true }, () => { senderDone = true })
  while (Date.now() < deadline) {
    await sleep(POLL_MS)
    const stats = await lb.stats()
    const sample = { t: Date.now(), senderDone, received: stats.received, processed: stats.processed, writes: sumWorkers(stats, 'streamWrites'), pending: sumWorkers(stats, 'pending') }
    const last = samples[samples.length - 1]
    samples.push(sample)
    // ops are counted when a bulkWrite starts: the real end of the writes is lb.stop()
    const idle = senderDone && sample.processed === sample.received && last && last.processed === sample.processed
    stable = idle ? stable + 1 : 0
    if (stable >= 2) return samples
  }
  throw new Error(`not drained within ${DRAIN_LIMIT_MS} ms`)
}

/**
 * The upsert rate while the writers were saturated: over the poll intervals
 * that began with at least a full 1,000-op bulkWrite waiting for every
 * worker, as the ceiling measurement keeps its 2 clients. The whole-run rate
 * also counts the ramp-up, and a lagging collector coalesces more, so needs
 * fewer upserts for the same packets. Null when never saturated.
 */
function saturatedRate (samples, workers) {
  let writes = 0
  let ms = 0
  for (let i = 1; i < samples.length; i++) {
    if (samples[i - 1].pending < 1000 * workers) continue
    writes += samples[i].writes - samples[i - 1].writes
    ms += samples[i].t - samples[i - 1].t
  }
  return ms >= 2000 ? Math.round(writes / (ms / 1000)) : null
}

function expectedDocs (s, sent) {
  const want = new Map()
  for (let i = 0; i < sent; i++) {
    const { stream, direction, number } = packetOf(i, s.streams, s.bidirectional)
    let w = want.get(stream)
    if (!w) want.set(stream, (w = { a: 0, b: 0, packets: 0 }))
    if (direction === 0) w.a = Math.max(w.a, number)
    else w.b = Math.max(w.b, number)
    w.packets++
  }
  return want
}

/**
 * One doc per pair, exact max per side, exact packet count, and the sum of
 * stored packet counts. When the kernel dropped datagrams before the master
 * (sent > received) which ones is unknown, so each doc is then only checked
 * not to exceed what was sent; the sum still has to match what was received.
 */
async function checkDocs (db, s, sent, received) {
  const want = expectedDocs(s, sent)
  const exact = received === sent
  const docs = await db.collection('streams').find({ openKey: { $exists: true } }, { projection: { from: 1, to: 1, metadata: 1 } }).toArray()
  let bad = 0
  let storedPackets = 0
  const seen = new Set()
  const fits = (got, max) => exact ? got === (max || undefined) : (got === undefined || got <= max)
  for (const doc of docs) {
    storedPackets += doc.metadata.packets
    const stream = Number(doc.from.ID.slice(1))
    const w = want.get(stream)
    const [a, b] = doc.from.ID[0] === 'a' ? [doc.from, doc.to] : [doc.to, doc.from]
    const ok = w && !seen.has(stream) && fits(a.highestPacketNum, w.a) && fits(b.highestPacketNum, w.b) && fits(doc.metadata.packets, w.packets)
    if (!ok && ++bad <= 3 && process.env.BENCH_DEBUG) console.error('mismatch', JSON.stringify({ want: w, doc }))
    seen.add(stream)
  }
  return { docs: docs.length, expected: want.size, mismatches: bad + (exact ? want.size - seen.size : 0), storedPackets, exact }
}

function scaled (s) {
  const f = Number(args.scale)
  return { ...s, streams: Math.max(1, Math.round(s.streams * f)), rate: Math.max(1, Math.round(s.rate * f)) }
}

async function runScenario (name, uri, client) {
  const s = scaled(SCENARIOS[name])
  const database = `bench_${name.replace(/\W/g, '_')}_${process.pid}`
  const lb = new StreamBalancer({
    worker: WORKER,
    instances: args.instances,
    distribution: 'hash',
    maxInFlight: 200000,
    drainTimeout: DRAIN_LIMIT_MS, // the master SIGKILLs a worker still flushing after this
    workerOptions: { mongoUri: uri, database, sweep: false, streamTimeout: 3600000, preallocateRate: 0, flushTimeout: DRAIN_LIMIT_MS - 10000 }
  })
  await lb.start()
  const started = Date.now()
  const sender = send(lb.address().port, s)
  const samples = await drain(lb, sender)
  if (process.env.BENCH_DEBUG) for (const x of samples) console.error(JSON.stringify({ ...x, t: x.t - started })) // the timeline
  const { sent } = await sender
  await sleep(2 * POLL_MS) // let the last flush start so its ops show in the stats
  const stats = await lb.stats()
  await lb.stop()
  const stoppedAt = Date.now()
  const summary = lb.summary()
  const writes = sumWorkers(stats, 'streamWrites')
  const packets = sumWorkers(stats, 'packets')
  const check = await checkDocs(client.db(database), s, sent, summary.received)
  await client.db(database).dropDatabase().catch(() => {})
  const writeSeconds = (stoppedAt - started) / 1000
  const saturated = saturatedRate(samples, args.instances)
  return {
    scenario: name,
    streams: s.streams,
    offeredPerSec: s.rate,
    sent,
    received: summary.received,
    kernelDropped: summary.dropped.kernel, // never reached the master: the UDP socket's buffer overflowed
    unaccounted: sent - summary.received - summary.dropped.kernel, // neither received nor counted by the kernel: must be 0
    processed: summary.processed,
    dropped: summary.dropped.total,
    packets,
    streamWrites: writes,
    writesPerPacket: +(writes / Math.max(1, packets)).toFixed(4),
    upsertsPerSec: Math.round(writes / Math.max(0.001, writeSeconds)),
    saturatedUpsertsPerSec: saturated,
    drainAfterSendMs: Math.max(0, stoppedAt - started - s.ms),
    duplicateRetries: sumWorkers(stats, 'duplicateRetries'),
    dbErrors: sumWorkers(stats, 'dbErrors'),
    workerDropped: sumWorkers(stats, 'dropped'), // stream updates a worker gave up (maxPending, shutdown)
    rejected: sumWorkers(stats, 'rejected'),
    docs: check.docs,
    expectedDocs: check.expected,
    check: check.exact ? 'exact' : 'bounded',
    mismatches: check.mismatches,
    storedPackets: check.storedPackets,
    lostUpdates: summary.received - check.storedPackets + check.mismatches // reached the collector, not the database
  }
}

function table (rows) {
  const keys = Object.keys(rows[0])
  const width = keys.map((k) => Math.max(k.length, ...rows.map((r) => String(r[k]).length)))
  const line = (cells) => cells.map((c, i) => String(c).padStart(width[i])).join('  ')
  return [line(keys), ...rows.map((r) => line(keys.map((k) => r[k])))].join('\n')
}

async function main () {
  const { uri, stop } = await mongo()
  const client = await new MongoClient(uri).connect()
  try {
    const ceiling = await measureCeiling(uri, Math.max(1000, Math.round(Number(args['ceiling-streams'] || 5000) * Math.min(1, Number(args.scale) * 10))))
    console.log(`raw bulkWrite upsert ceiling (2 clients × unordered 1,000): ${Math.round(ceiling.perSecond)} upserts/s (${ceiling.upserts} in ${ceiling.seconds.toFixed(2)} s)`)
    const rows = []
    for (const name of args.only.split(',')) {
      rows.push(await runScenario(name, uri, client))
      console.log(table(rows.slice(-1)))
    }
    const wide = rows.find((r) => r.scenario === 'wide')
    const result = {
      ceilingUpsertsPerSec: Math.round(ceiling.perSecond),
      wideVsCeiling: wide ? +(wide.upsertsPerSec / ceiling.perSecond).toFixed(3) : null,
      wideSaturatedVsCeiling: wide && wide.saturatedUpsertsPerSec ? +(wide.saturatedUpsertsPerSec / ceiling.perSecond).toFixed(3) : null,
      scale: Number(args.scale),
      scenarios: rows
    }
    console.log('\n' + table(rows))
    console.log(JSON.stringify(result))
  } finally {
    await client.close()
    await stop()
  }
}

main().catch((err) => {
  console.error(err)
  process.exitCode = 1
})
