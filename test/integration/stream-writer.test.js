'use strict'

// The writer on its own against the real server: how the two directions of
// a stream share one upsert, and how that upsert recovers from a wrong or
// stale belief about who is `from`.
const { test, after } = require('node:test')
const assert = require('node:assert')
const { MongoClient } = require('mongodb')
const mongoose = require('mongoose')
const { directionKey, pairKey } = require('../../workers/storage/stream-key')
const StreamWriter = require('../../workers/storage/stream-writer')
const { removeLegacySentinel } = require('../../workers/storage/stream-upgrade')
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
  await removeLegacySentinel(collection)
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

// Side statistics of the simplest kind (a sum, a minimum, a maximum), to
// check that the $inc of statistics is applied once like the packet count.
class SumStats {
  constructor (value) {
    Object.assign(this, { n: value, lo: value, hi: value })
  }

  merge (other) {
    this.n += other.n
    this.lo = Math.min(this.lo, other.lo)
    this.hi = Math.max(this.hi, other.hi)
    return this
  }

  addTo (update, side) {
    update.$inc[`${side}.s.n`] = this.n
    update.$min[`${side}.s.lo`] = this.lo
    update.$max[`${side}.s.hi`] = this.hi
  }
}

// A master SIGKILLed during a database stall leaves its workers flushing
// when the database is back, while the next run replays the same batches
// from its disk buffer to new workers: two writers of one origin's
// batches, each with its own coalescer and writer, and replies lost after
// the server applied a write (the worker then writes the entries again,
// as StreamWorker does). The oracle counts what the batches hold.
test('two writers of the same batches apply each once, in 120 random interleavings with lost replies: packet counts and statistics exact, one stream per pair', { timeout: 180000 }, async (t) => {
  const { collection } = await streams()
  const repeats = { alreadyApplied: 0, yielded: 0 }
  let seed = 20261125
  const random = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648)
  const lossy = {
    find: (...args) => collection.find(...args),
    bulkWrite: async (ops, options) => {
      const result = await collection.bulkWrite(ops, options)
      if (random() < 0.2) throw Object.assign(new Error('connection reset after the write'), { name: 'MongoNetworkError' })
      return result
    }
  }
  const flushWith = async (w) => {
    const entries = w.coalescer.take()
    try {
      w.coalescer.restore((await w.writer.write(entries, new Date(T0))).unresolved)
    } catch (err) {
      w.coalescer.restore(err.unwritten || entries)
    }
  }
  for (let round = 0; round < 120; round++) {
    const ends = [`r${round}a`, `r${round}b`, `r${round}c`, `r${round}d`]
    const directions = [[ends[0], ends[1]], [ends[1], ends[0]], [ends[2], ends[3]], [ends[3], ends[2]]]
    // 12 batches of one origin, each with 0 to 3 reports of each direction.
    const batches = Array.from({ length: 12 }, (_, i) => ({
      batchId: 500 + i,
      items: directions.flatMap(([fromID, toID]) => Array.from({ length: Math.floor(random() * 4) }, () => ({ fromID, toID, value: 1 + Math.floor(random() * 50) })))
    }))
    const expected = new Map(directions.map(([fromID, toID]) => [`${fromID}>${toID}`, { packets: 0, n: 0, lo: Infinity, hi: -Infinity }]))
    for (const { items } of batches) {
      for (const { fromID, toID, value } of items) {
        const e = expected.get(`${fromID}>${toID}`)
        e.packets++
        e.n += value
        e.lo = Math.min(e.lo, value)
        e.hi = Math.max(e.hi, value)
      }
    }
    // The orphan (first deliveries, guarded since its master is gone) got
    // a prefix of the batches; the replayer gets them all, redelivered, and
    // guards only those unless it writes to a server where every upsert is.
    const writerOf = (guardAll) => ({ coalescer: new PacketCoalescer(1e6), writer: new StreamWriter(lossy, { guardAll: () => guardAll }) })
    const orphan = { ...writerOf(true), next: 0, upTo: 1 + Math.floor(random() * 12), redelivered: false }
    const replayer = { ...writerOf(random() < 0.5), next: 0, upTo: 12, redelivered: true }
    let seq = 0
    let steps = 0
    while (orphan.next < orphan.upTo || replayer.next < replayer.upTo || orphan.coalescer.size > 0 || replayer.coalescer.size > 0) {
      assert.ok(++steps < 2000, `round ${round}: the writers settle`)
      const w = random() < 0.5 ? orphan : replayer
      if (w.next < w.upTo && random() < 0.6) {
        const { batchId, items } = batches[w.next++]
        const mark = { origin: 'run1_1', batchId, seq: ++seq, redelivered: w.redelivered }
        items.forEach((item, k) => w.coalescer.add({ fromID: item.fromID, toID: item.toID, highestPacketNum: batchId * 10 + k, timestamp: T0, stats: new SumStats(item.value) }, 0, mark))
      } else {
        await flushWith(w)
      }
    }
    const docs = await collection.find({ pairKey: { $in: [pairKey(ends[0], ends[1]), pairKey(ends[2], ends[3])] } }).toArray()
    const present = [...expected.values()].filter((e) => e.packets > 0)
    assert.ok(docs.length <= 2, `round ${round}: one stream per pair (${docs.length})`)
    const sides = new Map()
    for (const doc of docs) for (const [mine, peer] of [[doc.from, doc.to], [doc.to, doc.from]]) if (mine.packets !== undefined) sides.set(`${mine.ID}>${peer.ID}`, mine)
    for (const [direction, e] of expected) {
      if (e.packets === 0) continue
      const side = sides.get(direction)
      assert.ok(side, `round ${round}: ${direction} stored`)
      assert.deepStrictEqual({ packets: side.packets, n: side.s.n, lo: side.s.lo, hi: side.s.hi }, e, `round ${round}: ${direction}, each batch once`)
    }
    assert.strictEqual(docs.reduce((sum, doc) => sum + doc.metadata.packets, 0), present.reduce((sum, e) => sum + e.packets, 0), `round ${round}: metadata.packets`)
    for (const w of [orphan, replayer]) for (const key of Object.keys(repeats)) repeats[key] += w.writer.stats[key]
  }
  t.diagnostic(`segments found stored: ${repeats.alreadyApplied}; sides left to the other writer: ${repeats.yielded}`)
  assert.ok(repeats.alreadyApplied > 0 && repeats.yielded > 0, 'both ways a guarded upsert misses were met')
})

// On the embedded server a filter beyond the unique index's keys costs a
// scan of the collection: there (guardAll false) a first delivery's upsert
// filters on exactly { pairKey, flowKey }, and only the upserts that can
// meet a second writer carry the watermark conditions.
test('which upserts are guarded: all when guardAll says so; otherwise redelivered batches and entries written again after a lost reply, first deliveries never', async () => {
  const { collection } = await streams()
  const filters = []
  let loseReply = false
  const recording = {
    find: (...args) => collection.find(...args),
    bulkWrite: async (ops, options) => {
      for (const op of ops) filters.push(Object.keys(op.updateOne.filter))
      const result = await collection.bulkWrite(ops, options)
      if (loseReply) throw Object.assign(new Error('connection reset after the write'), { name: 'MongoNetworkError' })
      return result
    }
  }
  const mark = (batchId, redelivered = false) => ({ origin: 'run1_0', batchId, seq: batchId, redelivered })
  const writeOnce = async (writer, coalescer, items) => {
    filters.length = 0
    for (const [packet, m] of items) coalescer.add(packet, 0, m)
    const entries = coalescer.take()
    try {
      coalescer.restore((await writer.write(entries)).unresolved)
    } catch (err) {
      coalescer.restore(err.unwritten || entries)
    }
    return filters.slice()
  }
  const [g1] = packets('G1', 'G2', [1, 2])
  const unguarded = new StreamWriter(recording, { guardAll: () => false })
  const coalescer = new PacketCoalescer(1e6)
  assert.deepStrictEqual(await writeOnce(unguarded, coalescer, [[g1, mark(1)]]), [['pairKey', 'flowKey']], 'a first delivery: the index keys alone')
  assert.deepStrictEqual(await writeOnce(unguarded, coalescer, [[g1, mark(2, true)]]), [['pairKey', 'flowKey', 'from.watermarks.run1_0']], 'a redelivered batch: guarded')
  loseReply = true
  await writeOnce(unguarded, coalescer, [[g1, mark(3)]])
  loseReply = false
  assert.deepStrictEqual(await writeOnce(unguarded, coalescer, []), [['pairKey', 'flowKey', 'from.watermarks.run1_0']], 'written again after a lost reply: guarded, and found stored')
  assert.strictEqual(unguarded.stats.alreadyApplied, 1)
  assert.strictEqual(coalescer.size, 0, 'nothing left to write')
  const guardedAll = new StreamWriter(recording, { guardAll: () => true })
  assert.deepStrictEqual(await writeOnce(guardedAll, new PacketCoalescer(1e6), [[g1, mark(4)]]), [['pairKey', 'flowKey', 'from.watermarks.run1_0']], 'every upsert, first deliveries too')
  assert.deepStrictEqual(await writeOnce(guardedAll, new PacketCoalescer(1e6), [[packets('H1', 'H2', [1])[0], null]]), [['pairKey', 'flowKey']], 'an item without a batch (outside a worker) is never guarded')
  const [doc] = await collection.find({ pairKey: pairKey('G1', 'G2') }).toArray()
  assert.deepStrictEqual([doc.from.packets, doc.from.watermarks.run1_0], [4, 4], 'batches 1 to 4 once each')
})

// FerretDB 1.24 runs an unordered bulk up to its first failing op, then
// answers with that one error at index 0 and no counts: the RTCP writer
// retried the whole bulk forever there, re-applying the ops before it.
test('a bulk of guarded upserts whose reply does not account for it is split down to the op at fault: the rest stored once, that one refused alone', async () => {
  const { collection } = await streams()
  const poisoned = (op) => JSON.stringify(op.updateOne.filter).includes('bad')
  const misreporting = {
    find: (...args) => collection.find(...args),
    async bulkWrite (ops, options) {
      const stop = ops.findIndex(poisoned)
      if (stop < 0) return collection.bulkWrite(ops, options)
      if (stop > 0) await collection.bulkWrite(ops.slice(0, stop), options)
      throw Object.assign(new Error('BulkWriteError'), { writeErrors: [{ index: 0, code: 2, errmsg: 'a failure' }], result: { matchedCount: 0, upsertedCount: 0 } })
    }
  }
  const writer = new StreamWriter(misreporting)
  const coalescer = new PacketCoalescer(1e6)
  const ends = Array.from({ length: 30 }, (_, i) => i === 13 ? ['bad-a', 'bad-b'] : [`s${i}a`, `s${i}b`])
  for (let round = 0; round < 2; round++) {
    const mark = { origin: 'run1_1', batchId: 900 + round, seq: round + 1, redelivered: false }
    for (const [fromID, toID] of ends) coalescer.add({ fromID, toID, IP: `ip-${fromID}`, highestPacketNum: 10 + round, timestamp: T0 }, 0, mark)
    const result = await writer.write(coalescer.take(), new Date(T0))
    assert.deepStrictEqual(result.unresolved, [])
    assert.deepStrictEqual(result.failed.map(({ entry }) => entry.fromID), ['bad-a'], 'the op at fault is refused alone')
  }
  assert.ok(writer.stats.splits >= 8, `split down to one op, twice (${writer.stats.splits} splits)`)
  const docs = await collection.find({}).toArray()
  assert.strictEqual(docs.length, 29)
  for (const doc of docs) assert.strictEqual(doc.from.packets, 2, `${doc.from.ID}: each report once, though the ops before the bad one were sent again at each split`)
})
