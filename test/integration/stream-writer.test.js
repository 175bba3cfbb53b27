'use strict'

// The writer on its own against the real server: how the two directions of
// a stream share one upsert, and how that upsert recovers from a wrong or
// stale belief about who is `from`.
const { test, after } = require('node:test')
const assert = require('node:assert')
const { MongoClient } = require('mongodb')
const mongoose = require('mongoose')
const { directionKey } = require('../../workers/storage/stream-key')
const StreamWriter = require('../../workers/storage/stream-writer')
const StreamSweeper = require('../../workers/storage/stream-sweeper')
const { PacketCoalescer } = require('../../workers/storage/packet-coalescer')
const { defineModels } = require('../../workers/storage/schemas')
const { getTestMongo, uniqueDbName } = require('../helpers/mongo')
const { streamDocs } = require('../helpers/streams')

const T0 = Date.UTC(2026, 10, 21, 12, 0, 0)
let client
let connection
after(() => Promise.all([client && client.close(), connection && connection.close()]))

// A fresh database with the stream worker's indexes, made by its own code.
async function streams () {
  const { uri } = await getTestMongo()
  if (!client) client = await new MongoClient(uri).connect()
  if (!connection) connection = await mongoose.createConnection(uri).asPromise()
  const name = uniqueDbName('writer')
  await defineModels(connection.useDb(name, { useCache: false }))
  const db = client.db(name)
  const collection = db.collection('streams')
  await StreamWriter.prepare(collection)
  return { db, collection }
}

/** One flush: the packets through the real coalescer, then `writer`; returns the ops it cost. */
async function flush (writer, packets, now = new Date()) {
  const coalescer = new PacketCoalescer(1e6)
  for (const packet of packets) coalescer.add(packet)
  const before = writer.stats.ops
  const result = await writer.write(coalescer.take(), now)
  assert.deepStrictEqual(result, { failed: [], unresolved: [] })
  return writer.stats.ops - before
}

const packets = (fromID, toID, numbers) => numbers.map((n) => ({ fromID, toID, IP: `ip-${fromID}`, highestPacketNum: n, timestamp: T0 + n }))

test('both directions of a known stream in one flush cost one upsert, with each side exact', async () => {
  const { db } = await streams()
  const writer = new StreamWriter(db.collection('streams'))
  // Flush 1 teaches the writer the sides: A creates the stream, B bounces once and is 'to'.
  assert.strictEqual(await flush(writer, [...packets('A', 'B', [1, 2]), ...packets('B', 'A', [100])]), 3, 'A, B as from (E11000), B as to')
  assert.strictEqual(writer.stats.duplicateRetries, 1)
  // From now on one op per stream per flush, both sides in it.
  for (let round = 0; round < 3; round++) {
    const base = 10 * (round + 1)
    assert.strictEqual(await flush(writer, [...packets('B', 'A', [100 + base, 101 + base]), ...packets('A', 'B', [base, base + 1, base + 2])]), 1)
  }
  assert.strictEqual(writer.stats.duplicateRetries, 1, 'no more bounces')
  const [doc, ...more] = await streamDocs(db)
  assert.strictEqual(more.length, 0)
  assert.strictEqual(doc.from.ID, 'A')
  assert.strictEqual(doc.to.ID, 'B')
  assert.deepStrictEqual([doc.from.highestPacketNum, doc.from.firstPacketNum, doc.from.packets, doc.from.IP_ADDRESS], [32, 1, 11, 'ip-A'])
  assert.deepStrictEqual([doc.to.highestPacketNum, doc.to.firstPacketNum, doc.to.packets, doc.to.IP_ADDRESS], [131, 100, 7, 'ip-B'])
  assert.strictEqual(doc.metadata.packets, 18)
  assert.strictEqual(doc.startTime.getTime(), T0 + 1)
  assert.strictEqual(doc.endTime.getTime(), T0 + 131)
})

test('a wrong belief on the paired upsert (the stream is open the other way round) bounces both directions onto the right sides', async () => {
  const { db } = await streams()
  const collection = db.collection('streams')
  // Writer 1 believes A is from and B is to...
  const mistaken = new StreamWriter(collection)
  await flush(mistaken, [...packets('A', 'B', [1]), ...packets('B', 'A', [50])])
  // ...but that stream ends, and writer 2 opens the next one with B as from.
  await new StreamSweeper(collection, { streamTimeout: 1000, byeGrace: 5000, interval: 1000 }).sweep(Date.now() + 60000)
  await flush(new StreamWriter(collection), packets('B', 'A', [60]))
  const retriesBefore = mistaken.stats.duplicateRetries
  await flush(mistaken, [...packets('A', 'B', [2, 3]), ...packets('B', 'A', [61, 62])])
  assert.ok(mistaken.stats.duplicateRetries > retriesBefore, 'the stale paired upsert bounced')
  const open = await streamDocs(db, { active: true })
  assert.strictEqual(open.length, 1, 'one open stream for the pair')
  const [doc] = open
  assert.deepStrictEqual([doc.from.ID, doc.from.highestPacketNum, doc.from.packets], ['B', 62, 3])
  assert.deepStrictEqual([doc.to.ID, doc.to.highestPacketNum, doc.to.packets], ['A', 3, 2])
  assert.strictEqual(doc.metadata.packets, 5)
  const [closed] = await streamDocs(db, { active: false })
  assert.deepStrictEqual([closed.from.ID, closed.metadata.packets], ['A', 2], 'the ended stream got nothing more')
  // And the paired upsert is used again once the writer has relearnt the sides.
  assert.strictEqual(await flush(mistaken, [...packets('A', 'B', [4]), ...packets('B', 'A', [63])]), 1)
  assert.strictEqual((await streamDocs(db, { active: true }))[0].metadata.packets, 7)
})

test('watermarks: one read by pair and flow finds each sender\'s side, whichever direction its stream runs', async () => {
  const { db } = await streams()
  const writer = new StreamWriter(db.collection('streams'))
  const coalescer = new PacketCoalescer(1e6)
  const mark = (batchId) => ({ origin: 'run1_0', batchId, seq: batchId })
  coalescer.add(packets('A', 'B', [1])[0], 0, mark(4))
  coalescer.add(packets('C', 'D', [1])[0], 0, mark(6))
  await writer.write(coalescer.take())
  coalescer.add(packets('B', 'A', [9])[0], 0, mark(5)) // B is `to` of A-B
  assert.deepStrictEqual(await writer.write(coalescer.take()), { failed: [], unresolved: [] })
  const items = [['A', 'B'], ['B', 'A'], ['C', 'D'], ['D', 'C'], ['E', 'F']].map(([fromID, toID]) => ({ fromID, toID }))
  const marks = await writer.watermarks(items, 'run1_0')
  const byDirection = Object.fromEntries(items.map(({ fromID, toID }) => [`${fromID}>${toID}`, marks.get(directionKey(fromID, toID))]))
  assert.deepStrictEqual(byDirection, { 'A>B': 4, 'B>A': 5, 'C>D': 6, 'D>C': null, 'E>F': null })
  assert.strictEqual(marks.size, items.length)
  assert.strictEqual(await writer.watermark({ fromID: 'B', toID: 'A' }, 'run2_0'), null, 'another origin: none')
})

test('packet upserts and endpoint-wide updates go in separate bulkWrites; when the second fails only its entries are unwritten', async () => {
  const { collection } = await streams()
  const batches = []
  let failEndpointWrites = true
  // The real collection, except that a batch of updateManys (side fields,
  // BYE) fails as a dropped connection would, after the upserts landed.
  const faulty = Object.create(collection, {
    bulkWrite: {
      value: async (ops, options) => {
        batches.push(ops.map((op) => Object.keys(op)[0]))
        if (failEndpointWrites && ops.some((op) => op.updateMany)) throw Object.assign(new Error('connection reset'), { name: 'MongoNetworkError' })
        return collection.bulkWrite(ops, options)
      }
    }
  })
  const writer = new StreamWriter(faulty)
  const coalescer = new PacketCoalescer(1e6)
  for (const packet of packets('E1', 'E2', [1, 2])) coalescer.add(packet)
  coalescer.add({ sideID: 'E1', IP: 'ip-E1', timestamp: T0, fields: { cname: 'e1@test' } })
  coalescer.add({ endID: 'E2', timestamp: T0 })
  const err = await writer.write(coalescer.take()).then(() => null, (e) => e)
  assert.ok(err, 'the failure reaches the caller')
  assert.deepStrictEqual(batches, [['updateOne'], ['updateMany', 'updateMany']], 'upserts apart from updateManys; the side fields first, the BYE not tried after they failed')
  assert.deepStrictEqual(err.unwritten.map((e) => e.kind).sort(), ['end', 'side'], 'the stored packets are not written again (their $inc would count twice)')
  const [doc] = await collection.find({}).toArray()
  assert.strictEqual(doc.from.packets, 2)
  // Written again, as the worker does with what is unwritten: side and end land.
  failEndpointWrites = false
  assert.deepStrictEqual(await writer.write(err.unwritten), { failed: [], unresolved: [] })
  const [after] = await collection.find({}).toArray()
  assert.deepStrictEqual([after.from.packets, after.from.cname, after.stream_ended.to], [2, 'e1@test', true])
})
