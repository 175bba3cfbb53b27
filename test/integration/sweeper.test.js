'use strict'

const { test, after } = require('node:test')
const assert = require('node:assert')
const path = require('node:path')
const { MongoClient } = require('mongodb')
const mongoose = require('mongoose')
const { LoadBalancer } = require('../..')
const StreamSweeper = require('../../workers/storage/stream-sweeper')
const { oracleRatings } = require('../helpers/emodel-oracle')
const StreamWriter = require('../../workers/storage/stream-writer')
const { removeLegacySentinel } = require('../../workers/storage/stream-upgrade')
const AdaptiveBatch = require('../../workers/storage/adaptive-batch')
const { PacketCoalescer } = require('../../workers/storage/packet-coalescer')
const { pairKey, flowKey } = require('../../workers/storage/stream-key')
const { defineModels } = require('../../workers/storage/schemas')
const { getTestMongo, uniqueDbName } = require('../helpers/mongo')
const { CallQuality } = require('../../collectors/rtcp/call-quality')
const { callAnalytics } = require('../../collectors/rtcp/quality-analytics')
const { toStreamUpdates } = require('../../collectors/rtcp/to-stream-updates')
const { encodeReport } = require('../../collectors/rtcp/encoder')
const { decodeRtcp } = require('../../collectors/rtcp/decoder')
const { sendAll, streamDocs, waitFor } = require('../helpers/streams')

const WORKER = path.join(__dirname, '..', 'fixtures/json-stream-worker.js')
const T0 = Date.UTC(2026, 10, 21, 12, 0, 0)
const TIMEOUT = 60000
// The sweeper has no defaults of its own: the StreamWorker gives it its settings.
const TIMES = { streamTimeout: TIMEOUT, byeGrace: 5000, interval: 1000 }
let client
let connection
after(() => Promise.all([client && client.close(), connection && connection.close()]))

// A fresh database with the stream worker's indexes, made by its own code.
async function streams () {
  const { uri } = await getTestMongo()
  if (!client) client = await new MongoClient(uri).connect()
  if (!connection) connection = await mongoose.createConnection(uri).asPromise()
  const database = uniqueDbName('sweeper')
  await defineModels(connection.useDb(database, { useCache: false }))
  const db = client.db(database)
  const collection = db.collection('streams')
  await removeLegacySentinel(collection)
  return { uri, database, db, collection }
}

/** Writes items through the real coalescer and writer, as of `now`. */
async function write (collection, items, now = new Date()) {
  const coalescer = new PacketCoalescer(1e6)
  for (const item of items) coalescer.add(item)
  const result = await new StreamWriter(collection).write(coalescer.take(), now)
  assert.deepStrictEqual(result, { failed: [], unresolved: [] })
}

function packets (fromID, toID, numbers, t0 = T0) {
  return numbers.map((n) => ({ fromID, toID, highestPacketNum: n, timestamp: t0 + n * 20 }))
}

const range = (a, b) => Array.from({ length: b - a + 1 }, (_, i) => a + i)
const byFrom = async (collection, id) => (await streamDocs(collection.s.db, { 'from.ID': id }))[0]

test('idle streams are ended with analytics; active ones are untouched', async () => {
  const { collection } = await streams()
  const idleSince = new Date(Date.now() - 2 * TIMEOUT)
  const lossy = range(1, 10).filter((n) => n !== 4 && n !== 7 && n !== 8) // 7 of 10
  await write(collection, [...packets('I1', 'I2', lossy), ...packets('I2', 'I1', range(100, 104))], idleSince)
  await write(collection, packets('L1', 'L2', range(1, 5)), new Date())
  const sweeper = new StreamSweeper(collection, TIMES)
  assert.strictEqual(await sweeper.sweep(), 1)
  const idle = await byFrom(collection, 'I1')
  assert.strictEqual(idle.active, false)
  assert.deepStrictEqual(idle.stream_ended, { from: true, to: true })
  assert.strictEqual(idle.endReason, 'timeout')
  assert.strictEqual(idle.openKey, `${pairKey('I1', 'I2')}#${idle._id}`, 'the open key is released')
  assert.strictEqual(idle.flowKey, `${flowKey('I1', 'I2')}#${idle._id}`, 'the flow key is released')
  assert.strictEqual(idle.pairKey, pairKey('I1', 'I2'), 'the pair key (the shard key) stays')
  const a = idle.analytics
  assert.strictEqual(a.durationMs, 104 * 20 - 20, 'first to last packet of the stream')
  assert.strictEqual(a.packets, 12)
  assert.deepStrictEqual(a.from, { expected: 10, received: 7, lost: 3, lossRate: 0.3 })
  assert.deepStrictEqual(a.to, { expected: 5, received: 5, lost: 0, lossRate: 0 })
  const live = await byFrom(collection, 'L1')
  assert.strictEqual(live.active, true)
  assert.strictEqual(live.analytics, undefined)
  assert.strictEqual(live.openKey, pairKey('L1', 'L2'))
  assert.strictEqual(live.flowKey, flowKey('L1', 'L2'))
  assert.strictEqual(sweeper.stats.ended, 1)
})

test('an RTCP stream ends with call quality: loss over the call from its first and last reports, not packets counted', async () => {
  const { collection } = await streams()
  // The case: 12 receiver reports a side, 5 of every 250 packets lost (2 %), then idle.
  const quality = new CallQuality()
  const items = []
  const idleSince = Date.now() - 2 * TIMEOUT
  for (let k = 1; k <= 12; k++) {
    for (const [me, peer] of [[21, 22], [22, 21]]) {
      const block = { ssrc: peer, fractionLost: 5, cumulativeLost: 5 * k, highestSeq: 1000 + 250 * k, jitter: 160, lsr: 0, dlsr: 0 }
      const datagram = decodeRtcp(encodeReport({ ssrc: me, reports: [block], cname: `c${me}` }))
      items.push(...toStreamUpdates(datagram, { address: '10.0.0.1' }, idleSince - (12 - k) * 5000, quality))
    }
  }
  await write(collection, items, new Date(idleSince))
  const sweeper = new StreamSweeper(collection, { ...TIMES, analytics: callAnalytics })
  assert.strictEqual(await sweeper.sweep(), 1)
  const [doc] = await streamDocs(collection.s.db, { pairKey: pairKey('21', '22') })
  const a = doc.analytics
  assert.strictEqual(a.reports, 24)
  assert.strictEqual(a.durationMs, 11 * 5000)
  for (const side of [a.from, a.to]) {
    assert.strictEqual(side.lossRate, 0.02, 'Δcumulative / Δhighest (the old model said 0.9956)')
    assert.strictEqual(side.lossBasis, 'first-last')
    assert.deepStrictEqual([side.jitterMs.min, side.jitterMs.max], [20, 20])
    assert.strictEqual(side.rttMs, null, 'no SR, no RTT')
    assert.strictEqual(side.mos, null, 'no round trip measured: no MOS with a network delay')
    assert.strictEqual(side.mosEndpoints.count, 12, 'each report scored on the endpoints\' delay, apart')
    assert.strictEqual(side.verdict.delayBasis, 'endpoints')
  }
  assert.strictEqual(a.mosMin, null)
  // The verdict on what the ends add (50 ms buffer + G.711's 20 ms), no network term: the independent E-model's.
  const [oracle] = oracleRatings([{ Ie: 0, Bpl: 25.1, Ppl: 2, T: 70, Ta: 70, Tr: 140 }])
  assert.ok(Math.abs(a.mos - oracle.MOS) < 1e-9, `verdict ${a.mos} vs oracle ${oracle.MOS}`)
  assert.deepStrictEqual([a.delayBasis, a.band], ['endpoints', 'good'])
})

test('BYE: both sides ended closes at once; one side closes only after the grace period', async () => {
  const { collection } = await streams()
  const now = new Date()
  await write(collection, [...packets('B1', 'B2', [1]), ...packets('B2', 'B1', [1])], now)
  await write(collection, [...packets('H1', 'H2', [1]), ...packets('G1', 'G2', [1])], now)
  await write(collection, [{ endID: 'B1', timestamp: Date.now() }, { endID: 'B2', timestamp: Date.now() }, { endID: 'H1', timestamp: Date.now() }], now)
  const sweeper = new StreamSweeper(collection, TIMES)
  assert.strictEqual(await sweeper.sweep(), 1, 'only the stream both sides left')
  const both = await byFrom(collection, 'B1')
  assert.strictEqual(both.active, false)
  assert.strictEqual(both.endReason, 'bye')
  assert.strictEqual((await byFrom(collection, 'H1')).active, true, 'one BYE, within the grace period')
  assert.strictEqual(await sweeper.sweep(Date.now() + 6000), 1, 'one BYE, grace period over')
  assert.strictEqual((await byFrom(collection, 'H1')).endReason, 'bye')
  assert.strictEqual((await byFrom(collection, 'G1')).active, true, 'no BYE, not idle yet')
})

test('streams are judged as of the oldest message the master still holds: a goodbye or silence after it ends nothing yet', async () => {
  const { collection } = await streams()
  const now = Date.now()
  // Both ends said BYE (written now); idle for the timeout and 30 s more; idle for the timeout and 0.5 s more.
  await write(collection, [...packets('E1', 'E2', [1]), ...packets('E2', 'E1', [1])], new Date(now))
  await write(collection, [{ endID: 'E1', timestamp: now }, { endID: 'E2', timestamp: now }], new Date(now))
  await write(collection, packets('O1', 'O2', [1]), new Date(now - TIMEOUT - 30000))
  await write(collection, packets('R1', 'R2', [1]), new Date(now - TIMEOUT - 500))
  let held = 0 // the master does not answer: nothing is judged
  const sweeper = new StreamSweeper(collection, { ...TIMES, heldSince: async () => held })
  assert.strictEqual(await sweeper.sweep(now + 10), 0, 'no answer from the master: nothing ends')
  assert.deepStrictEqual([sweeper.stats.heldBackMs, sweeper.stats.unanswered], [null, 1])
  held = now - 1000 // a message received a second before the BYEs is not stored yet
  assert.strictEqual(await sweeper.sweep(now + 10), 1, 'only what was silent for the timeout before that message')
  assert.strictEqual((await byFrom(collection, 'O1')).endReason, 'timeout')
  assert.strictEqual((await byFrom(collection, 'E1')).active, true, 'the BYEs came after a message still held: the call stays open')
  assert.strictEqual((await byFrom(collection, 'R1')).active, true, 'idle for the timeout as of now, not as of the message held')
  assert.strictEqual(sweeper.stats.heldBackMs, 1010)
  held = Infinity // everything received is stored
  assert.strictEqual(await sweeper.sweep(now + 10), 2)
  assert.strictEqual((await byFrom(collection, 'E1')).endReason, 'bye')
  assert.strictEqual((await byFrom(collection, 'R1')).endReason, 'timeout')
})

test('through a LoadBalancer: a packet after the end starts a new stream', async (t) => {
  const { uri, database, db, collection } = await streams()
  const lb = new LoadBalancer({ worker: WORKER, instances: 2, workerOptions: { mongoUri: uri, database, flushInterval: 50, sweep: false } })
  t.after(() => lb.stop())
  await lb.start()
  const port = lb.address().port
  await sendAll(port, packets('N1', 'N2', [1, 2, 3]))
  await waitFor(async () => (await streamDocs(db)).length === 1)
  await sendAll(port, packets('N2', 'N1', [50, 51]))
  await waitFor(async () => (await streamDocs(db, { 'metadata.packets': 5 })).length === 1)
  const sweeper = new StreamSweeper(collection, TIMES)
  assert.strictEqual(await sweeper.sweep(Date.now() + 2 * TIMEOUT), 1)
  // N2 is cached as 'to' by its worker: the stale belief must bounce, not update the closed stream.
  await sendAll(port, [...packets('N2', 'N1', [60]), ...packets('N1', 'N2', [9])])
  await waitFor(() => lb.summary().processed === 7)
  await lb.stop()
  const docs = await streamDocs(db)
  assert.strictEqual(docs.length, 2, 'two streams for the pair')
  const open = docs.filter((d) => d.active)
  assert.strictEqual(open.length, 1)
  assert.strictEqual(open[0].metadata.packets, 2)
  assert.strictEqual(open[0].openKey, pairKey('N1', 'N2'))
  const closed = docs.find((d) => !d.active)
  assert.strictEqual(closed.metadata.packets, 5, 'the ended stream got nothing more')
  assert.strictEqual(closed.from.highestPacketNum, 3)
  assert.strictEqual(closed.to.highestPacketNum, 51)
})

test('AdaptiveBatch: +10 % when fast, holds in band, ×2/3 when slow, within floor and ceiling', () => {
  const batch = new AdaptiveBatch({ initial: 100, floor: 10, ceiling: 150, fastMs: 0.5, slowMs: 2 })
  assert.strictEqual(batch.record(100, 10), 110, 'fast: 0.1 ms per update')
  assert.strictEqual(batch.record(110, 110), 110, 'in band: 1 ms per update')
  assert.strictEqual(batch.record(110, 55), 110, 'exactly fastMs is not fast')
  assert.strictEqual(batch.record(110, 220), 110, 'exactly slowMs is not slow')
  assert.strictEqual(batch.record(110, 1000), 73, 'slow: two thirds, rounded down')
  assert.strictEqual(batch.record(0, 1000), 73, 'an empty batch says nothing')
  for (let i = 0; i < 20; i++) batch.record(10, 0)
  assert.strictEqual(batch.size, 150, 'ceiling')
  for (let i = 0; i < 20; i++) batch.record(10, 1000)
  assert.strictEqual(batch.size, 10, 'floor')
  assert.strictEqual(new AdaptiveBatch().size, 100)
})

function idleDoc (i, lastUpdated) {
  const [a, b] = [`K${i}`, `Q${i}`]
  return {
    pairKey: pairKey(a, b),
    openKey: pairKey(a, b),
    flowKey: flowKey(a, b),
    active: true,
    from: { ID: a, highestPacketNum: 10, firstPacketNum: 1, packets: 10 },
    to: { ID: b, highestPacketNum: 20, firstPacketNum: 11, packets: 9 },
    startTime: new Date(T0),
    endTime: new Date(T0 + 1000),
    stream_ended: { from: false, to: false },
    metadata: { lastUpdated, packets: 19 }
  }
}

test('a backlog of 5,000 idle streams is swept completely, in adaptive batches', async (t) => {
  const { db, collection } = await streams()
  const old = new Date(Date.now() - 2 * TIMEOUT)
  const docs = Array.from({ length: 5000 }, (_, i) => idleDoc(i, old))
  for (let i = 0; i < docs.length; i += 1000) await collection.insertMany(docs.slice(i, i + 1000))
  await write(collection, packets('F1', 'F2', [1]))
  const sweeper = new StreamSweeper(collection, { ...TIMES, batch: { initial: 100, floor: 10, ceiling: 2000 } })
  const batches = []
  const record = sweeper.batch.record.bind(sweeper.batch)
  sweeper.batch.record = (count, ms) => {
    const next = record(count, ms)
    batches.push({ count, msPerUpdate: +(ms / count).toFixed(3), next })
    return next
  }
  assert.strictEqual(await sweeper.sweep(), 5000)
  assert.strictEqual(await collection.countDocuments({ active: true, openKey: /^\d+:K/ }), 0)
  assert.strictEqual(await collection.countDocuments({ active: false, endReason: 'timeout' }), 5000)
  assert.strictEqual((await streamDocs(db, { 'from.ID': 'F1' }))[0].active, true)
  assert.strictEqual(batches.reduce((s, b) => s + b.count, 0), 5000)
  assert.ok(batches.length > 1, 'more than one batch')
  assert.ok(batches.every((b) => b.next >= 10 && b.next <= 2000))
  t.diagnostic(`batch sizes: ${batches.map((b) => b.count).join(', ')}`)
  t.diagnostic(`ms per update: ${batches.map((b) => b.msPerUpdate).join(', ')}`)
})
