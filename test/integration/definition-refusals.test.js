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
const { render } = require('../../app/commands/status')
const { buildSnapshot, computeRates } = require('../../app/stats-file')

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

test('a refusal under one of the framework\'s own reasons or one no counter can be named by fails its message, said why; the counters add up; collector status prints a sender\'s text escaped (QA)', async (t) => {
  const { collector, send, settled, logs } = await start(t)
  // kernel and total were overwritten by the master's own (received 4, processed 1, dropped 2, "dropped by reason: none").
  await send(['refuse kernel', 'refuse total', 'refuse workerLost', 'refuse toString', 'refuse \u001b[31mred', 'refuse tooHot', 'refuse tooHot', 'k1 n 1', '\u001b[41mdev\u202e n 2'])
  const s = await settled(9)
  assert.equal(s.processed, 2)
  assert.equal(s.failed, 5, 'each refusal under a name that cannot be its own fails')
  assert.deepEqual(Object.entries(s.dropped).filter(([reason, n]) => reason !== 'total' && n > 0), [['tooHot', 2]])
  assert.equal(s.dropped.total, 2)
  assert.equal(s.lost, 0)
  assert.equal(s.received, s.processed + s.failed + s.dropped.total)
  await waitFor(() => logs.some((m) => /^doWork failed: DecodeError: "kernel" is a reason the framework counts under itself/.test(String(m))), { what: 'the reason told in the log' })
  const stats = await collector.stats()
  const text = render(buildSnapshot({ name: 'refusals', collector: 'refusals', pid: process.pid, interval: 1000 }, stats, computeRates(stats)))
  assert.match(text, /^dropped by reason: tooHot 2$/m)
  assert.match(text, /^tallied: keys k1 1, \\x1b\[41mdev\\u202e 1$/m, 'a tallied key as escape text')
  // eslint-disable-next-line no-control-regex
  assert.doesNotMatch(text, /[\u001b\u202e]/)
})

test('DecodeError and dropMessage take a token of their own as the reason, and say what is wrong with another in one line', () => {
  const { DecodeError } = require('../..')
  for (const reason of ['badLine', 'hep-type-100', 'v9.template_unknown']) assert.equal(new DecodeError(reason).reason, reason)
  for (const [reason, message] of [['kernel', /"kernel" is a reason the framework counts under itself/], ['constructor', /"constructor" is a reason the framework/], ['two words', /a reason is a token of up to 64 letters/], [42, /got "42"/], ['x'.repeat(65), /up to 64/]]) {
    assert.throws(() => new DecodeError(reason), (err) => err.code === 'ERR_DECODE_REASON' && message.test(err.message) && !err.message.includes('\n'))
  }
})
