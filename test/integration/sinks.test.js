'use strict'

// The update sink's store against the Java MongoDB server: counts exact
// under redelivery and a second writer, last values ordered by arrival,
// and a server that misreports a bulk (as FerretDB 1.24 does: it applies
// the ops before a failing one, reports the failure at index 0, and stops).

const test = require('node:test')
const assert = require('node:assert/strict')
const { MongoClient } = require('mongodb')
const { getTestMongo, uniqueDbName } = require('../helpers/mongo')
const { UpdateStore } = require('../../workers/storage/update-store')
const { writeAccounted } = require('../../workers/storage/write-accounting')
const { createSink } = require('../../workers/sink-stores')
const { SERIALIZED, serializedInserts } = require('../../workers/storage/serialized-inserts')

async function database (t) {
  const { uri } = await getTestMongo()
  const client = await new MongoClient(uri).connect()
  t.after(() => client.close())
  return client.db(uniqueDbName('sinks'))
}

async function collection (t) {
  return (await database(t)).collection('metrics')
}

const mark = (batchId, seq, redelivered = false, origin = 'run1_1') => ({ origin, batchId, seq, redelivered })

// A collection that, like FerretDB 1.24, runs the ops of a bulk up to the
// first `poisoned` one, then answers with one error at index 0 and no counts
// (a write conflict, 112: a refusal that passes, so the op is held for the
// next write, where one that never passes would be given up).
function misreporting (real, poisoned) {
  const calls = []
  return {
    calls,
    find: (...args) => real.find(...args),
    async bulkWrite (ops, options) {
      calls.push(ops.length)
      const stop = ops.findIndex(poisoned)
      if (stop < 0 || ops.length === 1) {
        if (stop === 0) throw Object.assign(new Error('bad op'), { writeErrors: [{ index: 0, code: 112, errmsg: 'bad op' }], result: { matchedCount: 0, upsertedCount: 0 } })
        return real.bulkWrite(ops, options)
      }
      if (stop > 0) await real.bulkWrite(ops.slice(0, stop), options).catch(() => {})
      throw Object.assign(new Error('BulkWriteError'), { writeErrors: [{ index: 0, code: 112, errmsg: 'bad op' }], result: { matchedCount: 0, upsertedCount: 0 } })
    }
  }
}

test('update store: a bulk the server misreports is split down to the op at fault; the ops it had applied are not applied twice', async (t) => {
  const real = await collection(t)
  const store = new UpdateStore(null, { what: 'metric upserts' })
  store.collection = misreporting(real, (op) => op.updateOne.filter._id === 'bad')
  for (let i = 0; i < 16; i++) store.update(`m${i}`, { inc: { count: 1, sum: i } }, mark(100, 1))
  store.update('bad', { inc: { count: 1 } }, mark(100, 1))
  for (let i = 16; i < 32; i++) store.update(`m${i}`, { inc: { count: 1, sum: i } }, mark(100, 1))
  await assert.rejects(store.flush(), /metric upserts: the server refused 1 \(112: bad op\)/)
  assert.ok(store.stats.splits >= 5, `split down to one op (${store.stats.splits} splits)`)
  assert.equal(store.size, 1, 'only the op at fault is held for the next write')
  assert.equal(store.oldestPending(), 1)
  const docs = await real.find({ _id: { $ne: 'bad' } }).toArray()
  assert.equal(docs.length, 32)
  for (const doc of docs) assert.equal(doc.count, 1, `${doc._id} counted once though its op was sent ${store.collection.calls.length} times in parts`)
  assert.equal(docs.reduce((n, doc) => n + doc.sum, 0), 31 * 32 / 2)
})

test('update store: the last value is the newest message by arrival, whatever order the writes come in', async (t) => {
  const real = await collection(t)
  const store = new UpdateStore(real)
  const last = (value, batch, index) => ({ latest: { last: { order: [batch, index], value } }, min: { min: value }, max: { max: value } })
  store.update('g', last(5, 200, 3), mark(200, 2))
  store.update('g', last(9, 200, 1), mark(200, 2)) // earlier in the same batch
  await store.flush()
  store.update('g', last(1, 150, 0), mark(150, 3, true, 'run1_2')) // an older batch, redelivered later
  await store.flush()
  const doc = await real.findOne({ _id: 'g' })
  assert.deepEqual(doc.last, { batch: 200, index: 3, value: 5 })
  assert.deepEqual([doc.min, doc.max], [1, 9])
})

test('updates sink: a field of min, max, last, set or setOnInsert whose value is undefined is left out, not written as null', async (t) => {
  const db = await database(t)
  const sink = createSink({ kind: 'updates', collection: 'metrics', of: (record) => record })
  await sink.prepare(db)
  const take = (u, batchId, index) => sink.accept(sink.shape(u, {}), { mark: mark(batchId, index), index })
  take({ _id: 'h', min: { low: 3 }, max: { high: 7 }, last: { line: 'a' }, set: { host: 'x' }, setOnInsert: { first: 1 } }, 1, 0)
  await sink.write()
  // A record whose fields did not parse: each undefined (the driver would write null, and a $min of null replaces the minimum).
  take({ _id: 'h', min: { low: undefined }, max: { high: undefined }, last: { line: undefined }, set: { host: undefined }, setOnInsert: { first: undefined } }, 2, 0)
  take({ _id: 'n', set: { host: undefined, ok: 1 }, setOnInsert: { first: undefined } }, 2, 1)
  await sink.write()
  const h = await db.collection('metrics').findOne({ _id: 'h' }, { projection: { watermarks: 0 } })
  assert.deepEqual(h, { _id: 'h', low: 3, high: 7, line: { batch: 1, index: 0, value: 'a' }, host: 'x', first: 1 })
  assert.deepEqual(await db.collection('metrics').findOne({ _id: 'n' }, { projection: { watermarks: 0 } }), { _id: 'n', ok: 1 })
})

test('update store: two writers of the same batches (a master SIGKILLed and its next run) apply each once', async (t) => {
  const real = await collection(t)
  const first = new UpdateStore(real)
  const second = new UpdateStore(real)
  for (let batch = 1; batch <= 6; batch++) first.update('c', { inc: { n: 10 } }, mark(batch, batch))
  await first.flush()
  // The replay: batches 4 to 9, one at a time as redelivered.
  for (let batch = 4; batch <= 9; batch++) second.update('c', { inc: { n: 10 } }, mark(batch, batch, true))
  await second.flush()
  await second.flush()
  const doc = await real.findOne({ _id: 'c' })
  assert.equal(doc.n, 90, 'nine batches of 10')
  assert.equal(second.stats.alreadyCounted, 3, 'batches 4 to 6 were stored by the first writer')
})

test('update store: an heir takes the batches its dead predecessor may have applied (redelivered), then ones of the same origin it never saw: each counted once', async (t) => {
  const real = await collection(t)
  const dead = new UpdateStore(real)
  dead.update('m', { inc: { n: 1 } }, mark(5, 1))
  await dead.flush() // the dead worker stored batch 5, and died before its acknowledgement
  const heir = new UpdateStore(real)
  heir.update('m', { inc: { n: 1 } }, mark(5, 1, true)) // batch 5 again, redelivered
  heir.update('m', { inc: { n: 1 } }, mark(8, 2)) // formed for the slot while no worker was up: never delivered
  heir.update('m', { inc: { n: 1 } }, mark(9, 3))
  await heir.flush()
  await heir.flush()
  const doc = await real.findOne({ _id: 'm' })
  assert.equal(doc.n, 3, 'batch 5 once, batches 8 and 9 once each')
  assert.deepEqual(heir.repeats(), { alreadyCounted: 1, yielded: 0 }, 'batch 5 known as stored; nothing left to a writer that does not exist')
})

// As on the embedded server (storage/write-guard.js): counting upserts are
// guarded only where a second writer of their batches may meet them.
const firstUnguarded = { guardAll: () => false }

// A collection that records the filters it is sent and, `lost` times, applies a bulk then throws as a dropped connection would.
function recording (real, lost = 0) {
  const filters = []
  return {
    filters,
    find: (...args) => real.find(...args),
    async bulkWrite (ops, options) {
      for (const op of ops) filters.push(op.updateOne.filter)
      const result = await real.bulkWrite(ops, options)
      if (lost-- > 0) throw Object.assign(new Error('connection reset'), { name: 'MongoNetworkError' })
      return result
    }
  }
}

test('update store, first deliveries unguarded: their upserts filter on the key alone, raise the watermark, and a redelivered batch the dead writer stored is not counted again', async (t) => {
  const real = await collection(t)
  const dead = new UpdateStore(null, firstUnguarded)
  dead.collection = recording(real)
  for (let batch = 1; batch <= 3; batch++) dead.update('u', { inc: { n: 1 } }, mark(batch, batch))
  await dead.flush()
  assert.deepEqual(dead.collection.filters, [{ _id: 'u' }], 'one upsert, by _id only')
  assert.equal((await real.findOne({ _id: 'u' })).watermarks.run1_1, 3)
  const heir = new UpdateStore(null, firstUnguarded)
  heir.collection = recording(real)
  heir.update('u', { inc: { n: 1 } }, mark(3, 1, true)) // stored by the dead one, redelivered
  heir.update('u', { inc: { n: 1 } }, mark(4, 2))
  await heir.flush()
  await heir.flush()
  assert.ok(Object.keys(heir.collection.filters[0]).length > 1, 'the redelivered batch\'s upsert is guarded')
  assert.equal((await real.findOne({ _id: 'u' })).n, 4, 'batches 1 to 4, each once')
})

test('update store, first deliveries unguarded: a write whose reply was lost after the server applied it is written again guarded, and counted once', async (t) => {
  const real = await collection(t)
  const store = new UpdateStore(null, firstUnguarded)
  store.collection = recording(real, 1)
  store.update('w', { inc: { n: 5 } }, mark(1, 1))
  await assert.rejects(store.flush(), /connection reset/)
  assert.equal(store.size, 1, 'kept: not proven stored')
  store.update('w', { inc: { n: 5 } }, mark(2, 2))
  await store.flush()
  await store.flush()
  assert.deepEqual(store.collection.filters[0], { _id: 'w' })
  assert.ok(Object.keys(store.collection.filters[1]).length > 1, 'the retry is guarded')
  assert.equal((await real.findOne({ _id: 'w' })).n, 10, 'batch 1 once, batch 2 once')
})

test('update store, first deliveries unguarded: a bulk the server misreports is written again in parts guarded; nothing is applied twice', async (t) => {
  const real = await collection(t)
  const store = new UpdateStore(null, { what: 'metric upserts', ...firstUnguarded })
  store.collection = misreporting(real, (op) => op.updateOne.filter._id === 'bad')
  for (let i = 0; i < 16; i++) store.update(`m${i}`, { inc: { count: 1 } }, mark(100, 1))
  store.update('bad', { inc: { count: 1 } }, mark(100, 1))
  for (let i = 16; i < 32; i++) store.update(`m${i}`, { inc: { count: 1 } }, mark(100, 1))
  await assert.rejects(store.flush(), /metric upserts: the server refused 1/)
  const docs = await real.find({ _id: { $ne: 'bad' } }).toArray()
  assert.equal(docs.length, 32)
  for (const doc of docs) assert.equal(doc.count, 1, `${doc._id} counted once though its op was sent several times`)
})

test('documents sink: several insert bulks in flight at once; one lost with its connection keeps its documents, the oldest of them holding back the acknowledgement, and they are stored once next write', async (t) => {
  const real = await collection(t)
  const sink = createSink({ kind: 'documents', collection: 'metrics', maxBatch: 10, of: (record) => record })
  let inFlight = 0
  let most = 0
  let calls = 0
  // What the sink writes through (the collection, or its serialized inserts), one bulk lost.
  const writer = SERIALIZED ? serializedInserts(real) : real
  sink.writer = {
    async bulkWrite (ops, options) {
      const call = ++calls
      inFlight++
      most = Math.max(most, inFlight)
      try {
        await new Promise((resolve) => setTimeout(resolve, 20))
        if (call === 2) throw Object.assign(new Error('connection reset'), { name: 'MongoNetworkError' })
        return await writer.bulkWrite(ops, options)
      } finally {
        inFlight--
      }
    }
  }
  const mark = { batchId: 1, origin: 'o', seq: 0 }
  for (let i = 0; i < 50; i++) sink.accept({ n: i }, { mark, index: i, seq: 100 + i, key: () => (0x6b0000000000000000000000n + BigInt(i)).toString(16), message: {} })
  await assert.rejects(sink.write(), /connection reset/)
  assert.ok(most >= 2, `bulks in flight together (at most ${most})`)
  assert.equal(sink.size, 10, 'the lost bulk\'s documents are held')
  assert.equal(sink.oldestPending(), 110, 'the second bulk\'s first message holds back the acknowledgement')
  await sink.write()
  assert.equal(sink.size, 0)
  const docs = await real.find().toArray()
  assert.deepEqual(docs.map((d) => d.n).sort((a, b) => a - b), Array.from({ length: 50 }, (_, i) => i), 'each stored once')
})

test('writeAccounted: an unreachable server leaves every op unwritten, with its error, and is not split', async () => {
  let calls = 0
  const down = { bulkWrite: async () => { calls++; throw Object.assign(new Error('connect ECONNREFUSED'), { name: 'MongoNetworkError' }) } }
  const out = await writeAccounted(down, [{ insertOne: { document: { a: 1 } } }, { insertOne: { document: { a: 2 } } }], 'inserts')
  assert.deepEqual(out.unwritten, [0, 1])
  assert.equal(out.splits, 0)
  assert.equal(calls, 1)
  assert.match(out.error.message, /ECONNREFUSED/)
})

test('documents sink: held as BSON or as objects, the same documents are stored, every BSON type the records carry intact, and a chunk never passes the bytes a server takes in one message', async (t) => {
  const { mongo: { ObjectId, Long, Decimal128 } } = require('mongoose')
  const at = new Date(Date.UTC(2026, 10, 27, 11, 22, 33, 444))
  const records = Array.from({ length: 25 }, (_, i) => ({
    n: i, at, text: `é ${i} ☎`, nested: { a: { b: [1, 'two', null, { c: true }] } }, bytes: Buffer.from([i, 0, 255]),
    id: new ObjectId('6b0000000000000000000001'), long: Long.fromNumber(2 ** 40 + i), dec: Decimal128.fromString('1.10'), missing: undefined, nothing: null, neg: -0.5
  }))
  const stored = {}
  for (const serialized of [true, false]) {
    const db = await database(t)
    const real = db.collection('metrics')
    const sink = createSink({ kind: 'documents', collection: 'metrics', maxBatch: 10, of: (record) => ({ ...record }) })
    sink.serialized = serialized
    await sink.prepare(db)
    if (!serialized) sink.writer = real // the driver's own bulkWrite: what the bytes must equal
    const mark = { batchId: 1, origin: 'o', seq: 0 }
    for (let i = 0; i < records.length; i++) sink.accept(records[i], { mark, index: i, seq: 100 + i, key: () => (0x6b0000000000000000000000n + BigInt(i)).toString(16), message: {} })
    assert.equal(sink.buffer.every((held) => (held.constructor.name === 'Serialized') === serialized), true, 'held as it says')
    await sink.write()
    assert.equal(sink.size, 0)
    stored[serialized] = (await real.find().sort({ n: 1 }).toArray())
  }
  assert.equal(stored.true.length, records.length)
  assert.deepEqual(stored.true, stored.false)
  const doc = stored.true[3]
  assert.deepEqual([doc.at, doc.text, doc.nested, doc.bytes.buffer.toString('hex'), doc.id.toHexString(), String(doc.long), String(doc.dec), doc.missing, doc.nothing, doc.neg],
    [at, 'é 3 ☎', { a: { b: [1, 'two', null, { c: true }] } }, '0300ff', '6b0000000000000000000001', String(2 ** 40 + 3), '1.10', null, null, -0.5])

  // 40 documents of 1 MB: in chunks of at most 16 MB, each written whole.
  const db = await database(t)
  const real = db.collection('big')
  const sink = createSink({ kind: 'documents', collection: 'big', of: (record) => record })
  assert.ok(sink.serialized, 'this driver (7.x) takes documents serialized')
  await sink.prepare(db)
  const sizes = []
  sink.writer = { bulkWrite: (ops, options) => { sizes.push(ops.reduce((n, op) => n + op.insertOne.document.bytes.length, 0)); return serializedInserts(real).bulkWrite(ops, options) } }
  const mark = { batchId: 1, origin: 'o', seq: 0 }
  for (let i = 0; i < 40; i++) sink.accept({ i, pad: 'x'.repeat(1024 * 1024) }, { mark, index: i, seq: i, key: () => (0x6c0000000000000000000000n + BigInt(i)).toString(16), message: {} })
  await sink.write()
  assert.equal(await real.countDocuments(), 40)
  assert.ok(sizes.length >= 3 && sizes.every((bytes) => bytes <= 16 * 1024 * 1024), `chunks of ${sizes.map((b) => (b / 1048576).toFixed(1)).join(', ')} MB`)
})
