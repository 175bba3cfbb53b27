'use strict'

const { test, after } = require('node:test')
const assert = require('node:assert')
const path = require('node:path')
const { MongoClient } = require('mongodb')
const { LoadBalancer } = require('../..')
const { CounterStore } = require('../../workers/storage/counter-store')
const { getTestMongo, uniqueDbName } = require('../helpers/mongo')
const { createTcpProxy } = require('../helpers/tcp-proxy')
const { sendAll, waitFor } = require('../helpers/streams')

const WORKER = path.join(__dirname, '..', 'fixtures/json-stream-worker.js')
let client
after(() => client && client.close())

async function counters () {
  const { uri, server } = await getTestMongo()
  if (!client) client = await new MongoClient(uri).connect()
  const database = uniqueDbName('counters')
  return { uri, server, database, collection: client.db(database).collection('counters') }
}

/** Counts bulkWrite calls and operations going to the real collection. */
function spy (collection) {
  const seen = { calls: 0, ops: 0 }
  return {
    seen,
    bulkWrite (ops, options) {
      seen.calls++
      seen.ops += ops.length
      return collection.bulkWrite(ops, options)
    }
  }
}

test('increments across a UTC midnight go to two day documents with exact daily, hourly and minute', async () => {
  const { collection } = await counters()
  const store = new CounterStore(collection)
  const before = Date.UTC(2026, 11, 31, 23, 59, 0)
  const afterMidnight = Date.UTC(2027, 0, 1, 0, 0, 0)
  for (let i = 0; i < 7; i++) store.increment('m', before + i * 8000) // 23:59:00 … 23:59:48
  for (let i = 0; i < 5; i++) store.increment('m', new Date(afterMidnight + i * 1000))
  store.increment('m', afterMidnight + 61000, 3) // 00:01:01
  await store.flush()
  const day1 = await collection.findOne({ _id: '20261231/m' })
  const day2 = await collection.findOne({ _id: '20270101/m' })
  assert.strictEqual(await collection.countDocuments(), 2)
  assert.deepStrictEqual({ daily: day1.daily, hourly: day1.hourly, minute: day1.minute }, { daily: 7, hourly: { 23: 7 }, minute: { 23: { 59: 7 } } })
  assert.deepStrictEqual({ daily: day2.daily, hourly: day2.hourly, minute: day2.minute }, { daily: 8, hourly: { '00': 8 }, minute: { '00': { '00': 5, '01': 3 } } })
  assert.strictEqual(day2.metric, 'm')
  assert.strictEqual(day2.day, '20270101')
})

test('flush coalesces: N increments become one operation per document', async () => {
  const { collection } = await counters()
  const wire = spy(collection)
  const store = new CounterStore(wire)
  const t0 = Date.UTC(2026, 5, 1, 10, 0, 0)
  for (let i = 0; i < 3000; i++) store.increment(i % 3 ? 'a' : 'b', t0 + i * 100) // 5 minutes, 2 metrics
  assert.strictEqual(store.size, 2)
  await store.flush()
  assert.deepStrictEqual(wire.seen, { calls: 1, ops: 2 })
  assert.strictEqual(store.stats.ops, 2)
  assert.strictEqual(store.size, 0)
  const a = await collection.findOne({ _id: '20260601/a' })
  assert.strictEqual(a.daily, 2000)
  assert.strictEqual(a.hourly['10'], 2000)
  assert.strictEqual(Object.values(a.minute['10']).reduce((s, n) => s + n, 0), 2000)
  assert.strictEqual(a.minute['10']['00'], 400) // i = 1..599 not divisible by 3
  await store.flush()
  assert.strictEqual(wire.seen.calls, 1, 'nothing pending: no write')
})

test('preallocation (rate 1) creates the next day with zeros; running it again changes nothing', async () => {
  const { collection } = await counters()
  const store = new CounterStore(collection, { preallocateRate: 1 })
  const t = Date.UTC(2026, 1, 28, 12, 30, 0) // next day crosses a month
  store.increment('p', t, 4)
  await store.flush()
  assert.strictEqual(store.stats.preallocations, 1)
  const next = await collection.findOne({ _id: '20260301/p' })
  assert.ok(next, 'the next day exists before any increment for it')
  assert.strictEqual(next.daily, 0)
  assert.strictEqual(Object.keys(next.hourly).length, 24)
  assert.ok(Object.values(next.hourly).every((n) => n === 0))
  assert.strictEqual(Object.keys(next.minute['23']).length, 60)
  assert.ok(Object.values(next.minute).every((h) => Object.values(h).every((n) => n === 0)))
  store.increment('p', t, 4)
  await store.flush()
  await store.preallocate('p', t)
  assert.deepStrictEqual(await collection.findOne({ _id: '20260301/p' }), next, 'idempotent')
  assert.strictEqual((await collection.findOne({ _id: '20260228/p' })).daily, 8)
  // An increment into the preallocated day fills its zeros.
  store.increment('p', Date.UTC(2026, 2, 1, 0, 5), 2)
  await store.flush()
  const filled = await collection.findOne({ _id: '20260301/p' })
  assert.strictEqual(filled.daily, 2)
  assert.strictEqual(filled.minute['00']['05'], 2)
  assert.strictEqual(filled.minute['00']['06'], 0)
})

test('a flush that fails keeps the increments; a later flush writes them exactly once', async (t) => {
  const { server, database } = await counters()
  if (!server) return t.skip('MONGODB_URI set: no local server to proxy')
  const proxy = await createTcpProxy({ targetPort: server.port })
  t.after(() => proxy.close())
  const viaProxy = await new MongoClient(proxy.uri, { serverSelectionTimeoutMS: 1500 }).connect()
  t.after(() => viaProxy.close())
  const collection = viaProxy.db(database).collection('counters')
  const store = new CounterStore(collection)
  const t0 = Date.UTC(2026, 3, 3, 3, 3, 0)
  store.increment('f', t0, 10)
  await store.flush()
  proxy.cut()
  store.increment('f', t0, 5)
  await assert.rejects(store.flush())
  assert.strictEqual(store.size, 1, 'kept')
  store.increment('f', t0 + 60000, 2) // more while down, merged
  await assert.rejects(store.flush())
  proxy.restore()
  await store.flush()
  assert.strictEqual(store.size, 0)
  await store.flush()
  const doc = await client.db(database).collection('counters').findOne({ _id: '20260403/f' })
  assert.strictEqual(doc.daily, 17)
  assert.deepStrictEqual(doc.minute['03'], { '03': 15, '04': 2 })
})

// Counted at the batch's arrival, not at the items' own times (a sender's
// clock: see streams-sink.js countTime): every packet once, in the minutes
// they arrived.
test('through a StreamWorker: the per-minute packets counter is exact, at arrival', async (t) => {
  const { uri, database, collection } = await counters()
  const lb = new LoadBalancer({
    worker: WORKER,
    instances: 2,
    workerOptions: { mongoUri: uri, database, flushInterval: 50, sweep: false, counterMetric: 'rtp.packets', preallocateRate: 0 }
  })
  t.after(() => lb.stop())
  await lb.start()
  const t0 = Date.UTC(2026, 7, 9, 14, 58, 0)
  const perMinute = [120, 45, 300] // 14:58, 14:59, 15:00
  const packets = []
  perMinute.forEach((n, m) => {
    for (let i = 0; i < n; i++) packets.push({ fromID: `c${i % 7}`, toID: 'sink', highestPacketNum: i, timestamp: t0 + m * 60000 + (i * 137) % 60000 })
  })
  packets.push({ fromID: 'c1', toID: 'sink', highestPacketNum: 'bad', timestamp: t0 }) // not counted
  const sentAt = Date.now()
  await sendAll(lb.address().port, packets)
  await waitFor(() => lb.summary().processed === packets.length)
  await lb.stop()
  const minuteOf = (ms) => { const d = new Date(ms); return [d.toISOString().slice(0, 10).replace(/-/g, ''), d.toISOString().slice(11, 13), d.toISOString().slice(14, 16)] }
  const arrival = new Set([sentAt, Date.now()].map((ms) => minuteOf(ms).join('/')))
  const docs = await collection.find({ metric: 'rtp.packets' }).toArray()
  assert.strictEqual(docs.reduce((n, d) => n + d.daily, 0), 465)
  let counted = 0
  for (const doc of docs) {
    for (const [hh, minutes] of Object.entries(doc.minute)) {
      for (const [mm, n] of Object.entries(minutes)) {
        if (n === 0) continue
        assert.ok(arrival.has(`${doc.day}/${hh}/${mm}`), `counted in ${doc.day} ${hh}:${mm}, not a minute the packets arrived in`)
        counted += n
      }
    }
  }
  assert.strictEqual(counted, 465)
  assert.strictEqual(await collection.countDocuments({ _id: '20260809/rtp.packets' }), 0, 'nothing at the items\' own times')
})

// A master SIGKILLed during a database stall leaves its workers flushing
// when the database is back, while the next run replays the same batches
// from its disk buffer to new workers: two writers of one origin's batches.
// Each batch must be counted once whatever the order their writes land in,
// even when a reply is lost after the server applied the write.
test('two writers of the same batches count each once, in 150 random interleavings with lost replies', async () => {
  const { collection } = await counters()
  let seed = 20261124
  const random = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648)
  const t0 = Date.UTC(2026, 10, 24, 10, 0, 0)
  for (let round = 0; round < 150; round++) {
    let steps = 0
    const metric = `dup${round}`
    const batches = Array.from({ length: 12 }, (_, i) => ({ batchId: 1000 + i, n: 1 + Math.floor(random() * 9), minute: Math.floor(random() * 3) }))
    // The oracle: every batch once.
    const expected = { daily: 0, minute: {} }
    for (const b of batches) {
      expected.daily += b.n
      const mm = String(b.minute).padStart(2, '0')
      expected.minute[mm] = (expected.minute[mm] || 0) + b.n
    }
    const lossy = (target) => ({
      find: (...args) => target.find(...args),
      bulkWrite: async (ops, options) => {
        const result = await target.bulkWrite(ops, options)
        if (random() < 0.2) throw Object.assign(new Error('connection reset after the write'), { name: 'MongoNetworkError' })
        return result
      }
    })
    const orphan = { store: new CounterStore(lossy(collection)), next: 0, upTo: 1 + Math.floor(random() * 12), redelivered: false }
    const replayer = { store: new CounterStore(lossy(collection)), next: 0, upTo: 12, redelivered: true }
    let seq = 0
    const step = async (w) => {
      if (w.next < w.upTo && random() < 0.6) {
        const b = batches[w.next++]
        w.store.increment(metric, t0 + b.minute * 60000, b.n, { origin: 'run1_1', batchId: b.batchId, seq: ++seq, redelivered: w.redelivered })
      } else {
        await w.store.flush().catch(() => {})
      }
    }
    while (orphan.next < orphan.upTo || replayer.next < replayer.upTo || orphan.store.size > 0 || replayer.store.size > 0) {
      assert.ok(++steps < 1000, `round ${round}: the writers settle`)
      await step(random() < 0.5 ? orphan : replayer)
    }
    const doc = await collection.findOne({ _id: `20261124/${metric}` })
    assert.strictEqual(doc.daily, expected.daily, `round ${round}: daily`)
    assert.deepStrictEqual(doc.minute['10'], expected.minute, `round ${round}: minutes`)
    assert.strictEqual(doc.watermarks.run1_1, 1011)
  }
})
