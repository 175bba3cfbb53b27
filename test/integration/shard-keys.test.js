'use strict'

// Sharding-ready collections: every unique index the workers create starts
// with its collection's shard key (MongoDB enforces a unique index on a
// sharded collection only then), every stream document carries its shard
// key, `pairKey`, whatever wrote or closed it, and the streams of earlier
// versions get theirs at worker start without a duplicate.
const { test, after } = require('node:test')
const assert = require('node:assert')
const path = require('node:path')
const { MongoClient } = require('mongodb')
const mongoose = require('mongoose')
const { LoadBalancer } = require('../..')
const { SHARD_KEYS, defineModels } = require('../../workers/storage/schemas')
const syslog = require('../../collectors/syslog')
const { createSink } = require('../../workers/sink-stores')
const StreamWriter = require('../../workers/storage/stream-writer')
const { removeLegacySentinel, backfillPairKeys } = require('../../workers/storage/stream-upgrade')
const StreamSweeper = require('../../workers/storage/stream-sweeper')
const { PacketCoalescer } = require('../../workers/storage/packet-coalescer')
const { pairKey, flowKey, closedKey } = require('../../workers/storage/stream-key')
const { getTestMongo, uniqueDbName } = require('../helpers/mongo')
const { sendAll, waitFor } = require('../helpers/streams')

const WORKER = path.join(__dirname, '..', 'fixtures/json-stream-worker.js')
const T0 = Date.UTC(2026, 10, 21, 12, 0, 0)
let client
let connection
after(() => Promise.all([client && client.close(), connection && connection.close()]))

async function database (prefix) {
  const { uri } = await getTestMongo()
  if (!client) client = await new MongoClient(uri).connect()
  if (!connection) connection = await mongoose.createConnection(uri).asPromise()
  const name = uniqueDbName(prefix)
  // The worker's own model definitions, so the indexes are the ones it makes.
  const models = () => defineModels(connection.useDb(name, { useCache: false }))
  return { uri, name, db: client.db(name), models }
}

/** Writes packets through the real coalescer and `writer`; returns its result. */
async function write (writer, packets, now = new Date()) {
  const coalescer = new PacketCoalescer(1e6)
  for (const packet of packets) coalescer.add(packet)
  return writer.write(coalescer.take(), now)
}

const packets = (fromID, toID, numbers) => numbers.map((n) => ({ fromID, toID, IP: `ip-${fromID}`, highestPacketNum: n, timestamp: T0 + n }))
const fieldsOf = (key) => Object.keys(key)

/** A stream document as versions before `pairKey` wrote it. */
function legacyStream (a, b, { closedId = null, packets = 1 } = {}) {
  const doc = {
    openKey: pairKey(a, b),
    flowKey: flowKey(a, b),
    active: closedId === null,
    from: { ID: a, highestPacketNum: 10, firstPacketNum: 1, packets },
    to: { ID: b },
    startTime: new Date(T0),
    endTime: new Date(T0 + 10),
    stream_ended: { from: false, to: false },
    metadata: { lastUpdated: new Date(), packets }
  }
  if (closedId !== null) {
    doc._id = closedId
    doc.openKey = closedKey(doc.openKey, closedId)
    doc.flowKey = closedKey(doc.flowKey, closedId)
  }
  return doc
}

/** An earlier version's database: its two single-field unique indexes, and its streams. */
async function legacyDatabase (db, docs) {
  const streams = db.collection('streams')
  await streams.createIndex({ openKey: 1 }, { unique: true })
  await streams.createIndex({ flowKey: 1 }, { unique: true })
  for (let i = 0; i < docs.length; i += 1000) await streams.insertMany(docs.slice(i, i + 1000))
  return streams
}

test('SHARD_KEYS names one shard key per collection the workers write', () => {
  assert.deepStrictEqual(SHARD_KEYS, { streams: { pairKey: 1 }, counters: { _id: 'hashed' }, syslog: { _id: 'hashed' } })
  assert.ok(Object.isFrozen(SHARD_KEYS) && Object.values(SHARD_KEYS).every(Object.isFrozen))
})

test('every unique index of streams, counters and syslog starts with its collection\'s shard key', async () => {
  const { db, models } = await database('shard_indexes')
  await models()
  // The syslog definition's sinks create their indexes as its workers do.
  for (const spec of syslog.definition.sinks) await createSink(spec).prepare(db)
  for (const [collection, shardKey] of Object.entries(SHARD_KEYS)) {
    const indexes = await db.collection(collection).indexes()
    const keyFields = fieldsOf(shardKey)
    const startsWithShardKey = (index) => keyFields.every((field, i) => fieldsOf(index.key)[i] === field)
    const supportsShardKey = (index) => startsWithShardKey(index) && keyFields.every((field) => index.key[field] === shardKey[field])
    const unique = indexes.filter((index) => index.unique && index.name !== '_id_')
    for (const index of unique) {
      assert.ok(startsWithShardKey(index), `${collection}: unique index ${index.name} does not start with the shard key ${JSON.stringify(shardKey)}`)
    }
    if (Object.values(shardKey).every((direction) => direction === 1)) {
      // A ranged key needs an index it prefixes; shardCollection builds the
      // { _id: 'hashed' } index of a hashed key itself on an empty collection.
      assert.ok(indexes.some(supportsShardKey), `${collection}: no index supports the shard key`)
    }
    if (collection === 'streams') {
      assert.deepStrictEqual(unique.map((index) => index.name).sort(), ['pairKey_1_flowKey_1', 'pairKey_1_openKey_1'])
      assert.ok(!indexes.some((index) => index.name === 'openKey_1' || index.name === 'flowKey_1'), 'no single-field unique index')
    }
  }
})

test('stream documents carry pairKey: both directions of a pair, and after the sweeper closed one', async () => {
  const { db, models } = await database('shard_docs')
  await models()
  const collection = db.collection('streams')
  await removeLegacySentinel(collection)
  const writer = new StreamWriter(collection)
  // A-B: both ends report (the second one bounces once onto 'to'); C-D one way.
  assert.deepStrictEqual(await write(writer, [...packets('A', 'B', [1, 2]), ...packets('B', 'A', [7])]), { failed: [], unresolved: [] })
  assert.deepStrictEqual(await write(writer, [...packets('B', 'A', [8]), ...packets('A', 'B', [3]), ...packets('C', 'D', [1])]), { failed: [], unresolved: [] })
  // C-D ends; its next packet, from D this time, starts a new stream of the same pair.
  const old = new Date(Date.now() - 120000)
  await collection.updateOne({ pairKey: pairKey('C', 'D'), flowKey: flowKey('C', 'D') }, { $set: { 'metadata.lastUpdated': old } })
  assert.strictEqual(await new StreamSweeper(collection, { streamTimeout: 60000, byeGrace: 5000, interval: 1000 }).sweep(), 1)
  assert.deepStrictEqual(await write(new StreamWriter(collection), packets('D', 'C', [5])), { failed: [], unresolved: [] })

  const docs = await collection.find().toArray()
  assert.strictEqual(docs.length, 3, `one stream per pair and per life: ${JSON.stringify(docs.map((d) => [d.from && d.from.ID, d.to && d.to.ID, d.active, d.openKey, d.flowKey]))}`)
  for (const doc of docs) assert.strictEqual(doc.pairKey, pairKey(doc.from.ID, doc.to.ID), `${doc.from.ID}>${doc.to.ID}`)
  const ab = docs.find((doc) => doc.pairKey === pairKey('A', 'B'))
  assert.deepStrictEqual([ab.from.ID, ab.from.packets, ab.to.packets], ['A', 3, 2], 'both directions in one document')
  const [closed, open] = ['C', 'D'].map((from) => docs.find((doc) => doc.from.ID === from))
  assert.strictEqual(closed.active, false)
  assert.strictEqual(closed.openKey, closedKey(pairKey('C', 'D'), closed._id), 'closing released openKey')
  assert.strictEqual(closed.pairKey, pairKey('C', 'D'), '...and kept pairKey')
  assert.strictEqual(open.active, true)
  assert.strictEqual(open.pairKey, closed.pairKey, 'the new stream of the pair has the same shard key')
})

test('migration: streams written before pairKey get it from the backfill (several at once), and the writer then updates them, no duplicate', async () => {
  const { db, models } = await database('shard_migrate')
  const docs = [legacyStream('A', 'B', { packets: 4 }), legacyStream('A', 'B', { closedId: 'old-closed-1' }), legacyStream('B', 'C', { packets: 2 })]
  for (let i = 0; i < 2500; i++) docs.push(legacyStream(`M${i}`, `N${i}`))
  docs.push({ note: 'not a stream' })
  const collection = await legacyDatabase(db, docs)
  await models() // the new indexes next to the old ones, over documents still without pairKey
  const names = (await collection.indexes()).map((index) => index.name)
  for (const index of ['openKey_1', 'flowKey_1', 'pairKey_1_openKey_1', 'pairKey_1_flowKey_1']) assert.ok(names.includes(index), index)

  const [first, ...others] = await Promise.all([0, 1, 2].map(() => backfillPairKeys(collection, { batchSize: 300 })))
  const updated = [first, ...others].reduce((sum, counts) => sum + counts.updated, 0)
  assert.strictEqual(updated, 2503, 'each document set once, whichever worker got to it')
  assert.strictEqual(first.skipped, 1, 'the document that is not a stream is left alone')
  assert.deepStrictEqual(await backfillPairKeys(collection), { updated: 0, skipped: 1 })

  const streams = await collection.find({ from: { $exists: true } }).toArray()
  assert.strictEqual(streams.length, 2503)
  for (const doc of streams) assert.strictEqual(doc.pairKey, pairKey(doc.from.ID, doc.to.ID))
  assert.strictEqual((await collection.findOne({ _id: 'old-closed-1' })).pairKey, pairKey('A', 'B'), 'a closed stream too')

  // Both directions of the old open streams: updated in place.
  const writer = new StreamWriter(collection)
  assert.deepStrictEqual(await write(writer, [...packets('B', 'A', [20]), ...packets('A', 'B', [11, 12]), ...packets('C', 'B', [30])]), { failed: [], unresolved: [] })
  const open = await collection.find({ active: true, pairKey: { $in: [pairKey('A', 'B'), pairKey('B', 'C')] } }).toArray()
  assert.strictEqual(open.length, 2, 'one open stream per pair')
  const ab = open.find((doc) => doc.from.ID === 'A')
  assert.deepStrictEqual([ab.from.packets, ab.from.highestPacketNum, ab.to.packets, ab.to.highestPacketNum, ab.metadata.packets], [6, 12, 1, 20, 7])
  const bc = open.find((doc) => doc.from.ID === 'B')
  assert.deepStrictEqual([bc.to.ID, bc.to.packets, bc.metadata.packets], ['C', 1, 3])
})

test('rolling upgrade: a stream an earlier collector opens after the backfill is picked up within a flush, not duplicated', async () => {
  const { db, models } = await database('shard_rolling')
  const collection = await legacyDatabase(db, [])
  await models()
  await removeLegacySentinel(collection)
  // An older collector, still running, opens X-Y (no pairKey)...
  await collection.insertOne(legacyStream('X', 'Y', { packets: 3 }))
  // ...and this one gets Y's reports: its upserts cannot see that stream,
  // and the old unique indexes refuse a second one.
  const writer = new StreamWriter(collection)
  const first = await write(writer, packets('Y', 'X', [40, 41]))
  assert.strictEqual(first.failed.length, 0)
  assert.strictEqual(first.unresolved.length, 1, 'left for the next flush, as any unresolved entry')
  assert.strictEqual((await collection.findOne({ flowKey: flowKey('X', 'Y') })).pairKey, pairKey('X', 'Y'), 'the unresolved write backfilled it')
  // The next flush (the worker restores unresolved entries) lands on it.
  assert.deepStrictEqual(await writer.write(first.unresolved), { failed: [], unresolved: [] })
  const docs = await collection.find({ pairKey: pairKey('X', 'Y') }).toArray()
  assert.strictEqual(docs.length, 1)
  assert.deepStrictEqual([docs[0].from.ID, docs[0].to.packets, docs[0].to.highestPacketNum, docs[0].metadata.packets], ['X', 2, 41, 5])
})

test('the leader worker backfills at start: old streams continue in place, whichever worker writes them', async (t) => {
  const { uri, name, db } = await database('shard_worker')
  const collection = await legacyDatabase(db, [legacyStream('W1', 'W2', { packets: 5 }), ...Array.from({ length: 50 }, (_, i) => legacyStream(`P${i}`, `Q${i}`))])
  const lb = new LoadBalancer({
    worker: WORKER,
    instances: 2,
    distribution: 'round-robin',
    workerOptions: { mongoUri: uri, database: name, flushInterval: 50, sweep: false }
  })
  t.after(() => lb.stop())
  await lb.start()
  const sent = [...packets('W2', 'W1', [1, 2, 3]), ...packets('W1', 'W2', [21, 22])]
  await sendAll(lb.address().port, sent)
  await waitFor(() => lb.summary().processed === sent.length)
  // The 50 streams nobody writes get theirs from the leader's pass alone.
  await waitFor(async () => (await collection.countDocuments({ pairKey: { $exists: false } })) === 0, { what: 'every old stream to have its pairKey' })
  await lb.stop()
  const docs = await collection.find({ pairKey: pairKey('W1', 'W2') }).toArray()
  assert.strictEqual(docs.length, 1, 'no second stream for the pair')
  assert.deepStrictEqual([docs[0].from.ID, docs[0].from.packets, docs[0].from.highestPacketNum, docs[0].to.packets, docs[0].metadata.packets], ['W1', 7, 22, 3, 10])
})

/** A collection that records the bulkWrites it is given and reports every op as done. */
function recordingCollection () {
  const ops = []
  return {
    ops,
    async bulkWrite (batch) {
      ops.push(...batch)
      // As a server answers when every op matched one document.
      return { matchedCount: batch.length, modifiedCount: batch.length, upsertedCount: 0 }
    }
  }
}

/** The shard key fields that an op's filter names by equality (hashed keys too: routed by the value's hash). */
function targets (op, shardKey) {
  const [kind] = Object.keys(op)
  const { filter } = op[kind]
  return Object.keys(shardKey).every((field) => typeof filter[field] === 'string')
}

test('every write by pair or by _id names its collection\'s whole shard key, so it goes to one shard', async () => {
  const { CounterStore } = require('../../workers/storage/counter-store')
  const streams = recordingCollection()
  const writer = new StreamWriter(streams)
  // New streams, a known pair in both directions (one pairOp), and a 'to' side.
  await write(writer, [...packets('S1', 'S2', [1]), ...packets('S3', 'S4', [1])])
  writer.flip({ key: require('../../workers/storage/stream-key').directionKey('S4', 'S3') })
  await write(writer, [...packets('S1', 'S2', [2]), ...packets('S4', 'S3', [5]), ...packets('S3', 'S4', [2])])
  const upserts = streams.ops.filter((op) => op.updateOne)
  assert.ok(upserts.length >= 4)
  for (const op of upserts) assert.ok(targets(op, SHARD_KEYS.streams), `upsert names pairKey: ${JSON.stringify(op.updateOne.filter)}`)
  assert.ok(upserts.some((op) => op.updateOne.update.$inc['from.packets'] && op.updateOne.update.$inc['to.packets']), 'a pair op is among them')

  // The sweeper's closes: by pair; a stream of an earlier version gets its pairKey as it closes.
  const closes = recordingCollection()
  const sweeper = new StreamSweeper(closes, { streamTimeout: 60000, byeGrace: 5000, interval: 1000 })
  const lastUpdated = new Date(T0)
  await sweeper.endBatch([
    { _id: 'c1', pairKey: pairKey('S1', 'S2'), openKey: pairKey('S1', 'S2'), flowKey: flowKey('S1', 'S2'), from: { ID: 'S1' }, to: { ID: 'S2' }, metadata: { lastUpdated } },
    { _id: 'c2', openKey: pairKey('O1', 'O2'), flowKey: flowKey('O1', 'O2'), from: { ID: 'O1' }, to: { ID: 'O2' }, metadata: { lastUpdated } }
  ], T0 + 1000)
  assert.ok(targets(closes.ops[0], SHARD_KEYS.streams), 'a close names the pair')
  assert.strictEqual(closes.ops[1].updateOne.update.$set.pairKey, pairKey('O1', 'O2'), 'an old stream gets its pairKey as it closes')

  // Counters: upserts by _id alone.
  const counters = recordingCollection()
  const store = new CounterStore(counters, { preallocateRate: 1 })
  store.increment('m', T0, 3)
  await store.flush()
  assert.ok(counters.ops.length === 2, 'the increment and the next day\'s preallocation')
  for (const op of counters.ops) assert.deepStrictEqual(Object.keys(op.updateOne.filter), ['_id'])
})

test('a stop while the leader\'s backfill is running logs no warning: the pass was cut off by the worker\'s own close', async (t) => {
  const { uri, name, db } = await database('shard_stop')
  await legacyDatabase(db, Array.from({ length: 3000 }, (_, i) => legacyStream(`S${i}`, `T${i}`)))
  const warnings = []
  const record = (level) => (fields, msg) => { if (typeof fields === 'string') msg = fields; warnings.push(`${level}: ${msg}`) }
  const logger = { trace () {}, debug () {}, info () {}, warn: record('warn'), error: record('error'), fatal: record('fatal'), child () { return logger } }
  const lb = new LoadBalancer({ worker: WORKER, instances: 2, distribution: 'round-robin', logger, workerOptions: { mongoUri: uri, database: name, flushInterval: 50, sweep: false } })
  t.after(() => lb.stop())
  await lb.start().catch((err) => { throw new Error(`${err.message}: ${warnings.join('; ')}`) })
  await lb.stop()
  assert.deepStrictEqual(warnings.filter((w) => /backfill/.test(w)), [])
})
