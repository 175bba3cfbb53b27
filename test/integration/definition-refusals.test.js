'use strict'

// What no server stores does not hold a worker (a QA pass wrote a
// collector whose one bad record held its slot for good, across restarts,
// until its buffer filled and good traffic was dropped): a document BSON
// cannot hold (a key with a NUL byte, from a field the sender names) is
// refused when shaped, by name; an upsert the server refuses for a reason
// that no state of it changes (a $inc on a field holding text: code 14; a
// NUL byte in an updated field's name, which our serializer refuses) is
// given up at once, counted and logged, and the messages behind and after
// it are stored; so is a documents sink's duplicate on its own unique index,
// its message failed. Real forked workers on the Java server
// (test/fixtures/refusals-definition.js).

const test = require('node:test')
const assert = require('node:assert/strict')
const dgram = require('node:dgram')
const refusals = require('../fixtures/refusals-definition')
const unique = require('../fixtures/unique-definition')
const { startTestCollector } = require('../helpers/collector')
const { waitFor } = require('../helpers/wait-for')
const { accountedFor } = require('../../lib/master/counters')

async function start (t, definition = refusals) {
  const logs = []
  const logger = { child: () => logger, trace () {}, debug () {}, info () {}, warn: (o, m) => logs.push(m || o), error: (o, m) => logs.push(m || o), fatal () {} }
  const { collector, db, port } = await startTestCollector(t, definition, [], { instances: 1, logger })
  const socket = dgram.createSocket('udp4')
  t.after(() => socket.close())
  const send = async (all) => { for (const text of all) await new Promise((resolve, reject) => socket.send(text, port, '127.0.0.1', (err) => err ? reject(err) : resolve())) }
  const settled = (received) => waitFor(async () => {
    const s = await collector.stats()
    return s.received === received && s.inFlight === 0 && accountedFor(s) ? s : null
  }, { timeout: 60000, what: `${received} messages processed, failed or dropped` })
  const sinkStats = async (collection) => (await collector.stats()).workers.map((w) => w.custom.sinks && w.custom.sinks[collection]).filter(Boolean)
  return { collector, db, send, settled, logs, sinkStats }
}

test('a document with a NUL byte in a key is refused when shaped (dropped.unstorable); the messages after it are stored', async (t) => {
  const { db, send, settled } = await start(t)
  await send(['a x\u0000y 1', ...Array.from({ length: 40 }, () => 'b f 1')])
  const s = await settled(41)
  assert.equal(s.dropped.unstorable, 1)
  assert.equal(s.processed, 40)
  assert.equal(s.inFlight, 0, 'nothing held behind it')
  assert.equal(await db.collection('readings').countDocuments(), 40)
  assert.deepEqual((await db.collection('totals').find().toArray()).map(({ _id, n }) => [_id, n]), [['b', 40]], 'nothing of the refused message')
})

test('an upsert the server refuses for good (code 14) is given up, logged; the rest is stored and the slot is free', async (t) => {
  const { db, send, settled, logs, sinkStats } = await start(t)
  await db.collection('totals').insertOne({ _id: 'bad', n: 'n/a' })
  await send([...Array.from({ length: 5 }, () => 'bad f 1'), ...Array.from({ length: 20 }, () => 'good f 1')])
  const s = await settled(25)
  assert.equal(s.processed, 25, 'their documents are stored; the refused upsert is counted by its sink')
  const [totals] = await sinkStats('totals')
  assert.ok(totals.refused >= 1, `the sink counts what it gave up (${JSON.stringify(totals)})`)
  assert.ok(logs.some((m) => /totals upserts: the server refused 1 for good \(14: /.test(m)), logs.join('\n'))
  assert.equal((await db.collection('totals').findOne({ _id: 'bad' })).n, 'n/a')
  assert.equal((await db.collection('totals').findOne({ _id: 'good' })).n, 20)
  assert.equal(await db.collection('readings').countDocuments(), 25)
  // The slot is free: what comes next is stored at once.
  await send(Array.from({ length: 10 }, () => 'good f 1'))
  await settled(35)
  assert.equal((await db.collection('totals').findOne({ _id: 'good' })).n, 30)
})

test('an upsert our serializer refuses (a NUL byte in a field name the sender chose) is isolated and given up; the upserts beside it in the bulk are stored', async (t) => {
  const { db, send, settled, logs, sinkStats } = await start(t)
  await send(['nul f 1 a\u0000b', ...Array.from({ length: 20 }, (_, i) => `k${i % 4} f 1 c${i % 2}`)])
  const s = await settled(21)
  assert.equal(s.processed, 21, 'every document stored; the one upsert given up is its sink\'s to count')
  const [totals] = await sinkStats('totals')
  assert.equal(totals.refused, 1)
  assert.ok(logs.some((m) => /totals upserts: the server refused 1 for good \(22: /.test(m)), logs.join('\n'))
  const stored = Object.fromEntries((await db.collection('totals').find().toArray()).map((d) => [d._id, [d.n, d.codes]]))
  assert.deepEqual(stored, { k0: [5, { c0: 5 }], k1: [5, { c1: 5 }], k2: [5, { c0: 5 }], k3: [5, { c1: 5 }] }, 'nothing of nul; the rest whole')
  assert.equal(await db.collection('readings').countDocuments(), 21)
})

test('a document refused as a duplicate on the definition\'s own unique index is not taken for stored (as one on _id is): given up, its message failed', async (t) => {
  const { db, send, settled, logs, sinkStats } = await start(t, unique)
  await send(['s1 1'])
  await settled(1)
  await send(['s1 2', 's2 3'])
  const s = await settled(3)
  assert.equal(s.failed, 1, 'the second s1: refused, not counted stored')
  assert.equal(s.processed, 2)
  const [units] = await sinkStats('units')
  assert.equal(units.refused, 1)
  assert.equal(units.stored, 2)
  assert.ok(logs.some((m) => /units inserts: the server refused 1 document for good \(11000: a document with the same serial(_1)? is stored\)/.test(m)), logs.join('\n'))
  assert.deepEqual((await db.collection('units').find().sort({ serial: 1 }).toArray()).map((d) => [d.serial, d.n]), [['s1', 1], ['s2', 3]])
})
