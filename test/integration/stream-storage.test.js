'use strict'

const { test, after } = require('node:test')
const assert = require('node:assert')
const path = require('node:path')
const dgram = require('node:dgram')
const { MongoClient } = require('mongodb')
const { LoadBalancer } = require('../..')
const { getTestMongo, uniqueDbName } = require('../helpers/mongo')
const { sendAll, shuffle, streamDocs, waitFor } = require('../helpers/streams')

const WORKER = path.join(__dirname, '..', 'fixtures/json-stream-worker.js')
const T0 = Date.UTC(2026, 10, 21, 12, 0, 0)
let client
after(() => client && client.close())

async function database () {
  const { uri } = await getTestMongo()
  if (!client) client = await new MongoClient(uri).connect()
  const name = uniqueDbName('storage')
  return { uri, name, db: client.db(name) }
}

async function startCollector (t, uri, name, workerOptions = {}, lbOptions = {}) {
  const lb = new LoadBalancer({
    worker: WORKER,
    instances: 2,
    workerOptions: { mongoUri: uri, database: name, flushInterval: 50, sweep: false, ...workerOptions },
    ...lbOptions
  })
  t.after(() => lb.stop())
  await lb.start()
  return { lb, port: lb.address().port }
}

function packet (fromID, toID, n, extra = {}) {
  return { fromID, toID, IP: `10.0.${fromID.length}.1`, highestPacketNum: n, timestamp: T0 + n, ...extra }
}

function workerSum (stats, read) {
  return stats.workers.reduce((sum, w) => sum + (read(w.custom) || 0), 0)
}

async function sendRaw (port, texts) {
  const socket = dgram.createSocket('udp4')
  await new Promise((resolve) => socket.connect(port, '127.0.0.1', resolve))
  for (const text of texts) await new Promise((resolve) => socket.send(Buffer.from(text), resolve))
  await new Promise((resolve) => socket.close(resolve))
}

const processedAll = (lb, n) => () => lb.summary().processed === n

test('bilateral swap: the first sender stays from; each side keeps its own max', async (t) => {
  const { uri, name, db } = await database()
  const { lb, port } = await startCollector(t, uri, name)
  await sendAll(port, [5, 3, 9].map((n) => packet('A', 'B', n)))
  await waitFor(async () => (await streamDocs(db)).length === 1)
  await sendAll(port, [40, 42, 41].map((n) => packet('B', 'A', n)))
  await waitFor(processedAll(lb, 6))
  await lb.stop()
  const docs = await streamDocs(db)
  assert.strictEqual(docs.length, 1)
  const [doc] = docs
  assert.strictEqual(doc.from.ID, 'A', 'the first sender is from')
  assert.strictEqual(doc.to.ID, 'B')
  assert.strictEqual(doc.from.highestPacketNum, 9)
  assert.strictEqual(doc.to.highestPacketNum, 42)
  assert.strictEqual(doc.from.packets, 3)
  assert.strictEqual(doc.to.packets, 3)
  assert.strictEqual(doc.metadata.packets, 6)
})

test('both directions racing for a new stream: one document, from is one of the two senders', async (t) => {
  const { uri, name, db } = await database()
  // round-robin over 2 workers: A→B and B→A land on different workers in the same window
  const { lb, port } = await startCollector(t, uri, name, { flushInterval: 20 }, { batchSize: 1 })
  const pairs = 50
  const packets = []
  for (let s = 0; s < pairs; s++) packets.push(packet(`a${s}`, `b${s}`, 1), packet(`b${s}`, `a${s}`, 2))
  await sendAll(port, packets)
  await waitFor(processedAll(lb, packets.length))
  await waitFor(async () => (await streamDocs(db, { 'metadata.packets': 2 })).length === pairs)
  // Each pair's second writer (on the other worker) starts as 'from' and must bounce off the index.
  const flips = workerSum(await lb.stats(), (c) => c.duplicateRetries)
  await lb.stop()
  assert.ok(flips >= pairs, `every pair went through the E11000 path (${flips} flips)`)
  const docs = await streamDocs(db)
  assert.strictEqual(docs.length, pairs, 'one document per pair')
  for (const doc of docs) {
    const s = doc.from.ID.slice(1)
    assert.deepStrictEqual([doc.from.ID, doc.to.ID].sort(), [`a${s}`, `b${s}`])
    const first = doc.from.ID[0] === 'a' ? 1 : 2
    assert.strictEqual(doc.from.highestPacketNum, first, 'from holds the sender that created it')
    assert.strictEqual(doc.to.highestPacketNum, 3 - first)
    assert.strictEqual(doc.metadata.packets, 2)
  }
})

// The same shuffled traffic split across two independent collectors.
function twoHostTraffic (streams, perSide) {
  const packets = []
  const expected = new Map()
  for (let s = 0; s < streams; s++) {
    const a = `ha${s}`
    const b = `hb${s}`
    for (let n = 1; n <= perSide; n++) packets.push(packet(a, b, 100 + n), packet(b, a, 900 + n * 3))
    expected.set(a, { a, b, maxA: 100 + perSide, maxB: 900 + perSide * 3, packets: perSide * 2 })
  }
  return { packets: shuffle(packets, 7), expected }
}

test('two collector hosts (2 workers each) on one database: exactly one document per pair, exact max and counts', async (t) => {
  const { uri, name, db } = await database()
  const hostA = await startCollector(t, uri, name)
  const hostB = await startCollector(t, uri, name)
  const { packets, expected } = twoHostTraffic(200, 8)
  const half = packets.length / 2
  const halves = [packets.filter((_, i) => i % 2 === 0), packets.filter((_, i) => i % 2 === 1)]
  await Promise.all([sendAll(hostA.port, halves[0]), sendAll(hostB.port, halves[1])])
  await waitFor(() => hostA.lb.summary().processed === half && hostB.lb.summary().processed === half)
  const retries = workerSum(await hostA.lb.stats(), (c) => c.duplicateRetries) + workerSum(await hostB.lb.stats(), (c) => c.duplicateRetries)
  await Promise.all([hostA.lb.stop(), hostB.lb.stop()])
  const docs = await streamDocs(db)
  assert.strictEqual(docs.length, expected.size, 'one document per endpoint pair')
  for (const doc of docs) {
    const want = expected.get(doc.from.ID) || expected.get(doc.to.ID)
    assert.ok(want, `unexpected stream ${doc.from.ID}/${doc.to.ID}`)
    const [sideA, sideB] = doc.from.ID === want.a ? [doc.from, doc.to] : [doc.to, doc.from]
    assert.strictEqual(sideB.ID, want.b)
    assert.strictEqual(sideA.highestPacketNum, want.maxA)
    assert.strictEqual(sideB.highestPacketNum, want.maxB)
    assert.strictEqual(doc.metadata.packets, want.packets)
    assert.strictEqual(sideA.packets + sideB.packets, want.packets)
  }
  t.diagnostic(`E11000 side flips across both hosts: ${retries}`)
})

test('side updates land on the side of that endpoint; an end item marks only its side ended', async (t) => {
  const { uri, name, db } = await database()
  const { lb, port } = await startCollector(t, uri, name)
  await sendAll(port, [packet('S1', 'R1', 1), packet('S2', 'R1', 1)])
  await waitFor(async () => (await streamDocs(db)).length === 2)
  await sendAll(port, [packet('R1', 'S1', 1)])
  await waitFor(async () => (await streamDocs(db, { 'to.highestPacketNum': 1 })).length === 1)
  await sendAll(port, [
    { sideID: 'S1', timestamp: T0 + 10, fields: { cname: 's1@host', jitter: 7 } },
    { sideID: 'R1', timestamp: T0 + 10, IP: '10.9.9.9', fields: { cname: 'r1@host' } },
    { endID: 'S2', timestamp: T0 + 20 }
  ])
  await waitFor(processedAll(lb, 6))
  await lb.stop()
  const s1 = (await streamDocs(db, { 'from.ID': 'S1' }))[0]
  assert.strictEqual(s1.from.cname, 's1@host')
  assert.strictEqual(s1.from.jitter, 7)
  assert.strictEqual(s1.to.cname, 'r1@host', 'R1 holds the to side of S1↔R1')
  assert.strictEqual(s1.to.IP_ADDRESS, '10.9.9.9')
  assert.deepStrictEqual(s1.stream_ended, { from: false, to: false })
  const s2 = (await streamDocs(db, { 'from.ID': 'S2' }))[0]
  assert.strictEqual(s2.to.cname, 'r1@host', 'a side update reaches every open stream of the endpoint')
  assert.strictEqual(s2.from.cname, undefined)
  assert.deepStrictEqual(s2.stream_ended, { from: true, to: false })
  assert.strictEqual(s2.endedAt.getTime(), T0 + 20)
  assert.strictEqual(s2.active, true, 'closing is the sweeper\'s job')
})

// Two calls whose phones picked one SSRC (a 32-bit random number: about one
// pair in 100,000 open SSRCs): a BYE matched by SSRC alone ended both.
test('a BYE ends the streams of its SSRC from its own address (or a side with none yet), not another call\'s with the same SSRC', async (t) => {
  const { uri, name, db } = await database()
  const { lb, port } = await startCollector(t, uri, name)
  await sendAll(port, [packet('X', 'A', 1, { IP: '10.0.0.1' }), packet('X', 'B', 1, { IP: '10.0.0.2' })])
  await waitFor(async () => (await streamDocs(db)).length === 2)
  await sendAll(port, [{ endID: 'X', IP: '10.0.0.2', timestamp: T0 + 20 }])
  await waitFor(processedAll(lb, 3))
  await lb.stop()
  const ended = Object.fromEntries((await streamDocs(db)).map((d) => [d.to.ID, d.stream_ended.from]))
  assert.deepStrictEqual(ended, { A: false, B: true }, 'the X at 10.0.0.2 said goodbye, not the X at 10.0.0.1')
})

test('malformed input is counted per reason in the worker stats and writes nothing', async (t) => {
  const { uri, name, db } = await database()
  const { lb, port } = await startCollector(t, uri, name)
  const bad = [
    '{"fromID": "A", oops', 'not json', '{"fromID":"A","toID":"B","highestPacketNum":1', // bad JSON ×3
    { toID: 'B', highestPacketNum: 1 }, { fromID: 'A', highestPacketNum: 1 }, // missing endpoint ×2
    { fromID: 'A', toID: 'B', highestPacketNum: 'x' }, { fromID: 'A', toID: 'B' }, { fromID: 'A', toID: 'B', highestPacketNum: null }, // ×3
    { fromID: 'A', toID: 'B', highestPacketNum: 1, timestamp: 'yesterday' } // bad timestamp ×1
  ]
  await sendRaw(port, bad.map((p) => typeof p === 'string' ? p : JSON.stringify(p)))
  await waitFor(() => lb.summary().processed + lb.summary().dropped.total === bad.length)
  // A message the decoder refuses is dropped under its reason; one whose
  // items are each refused was decoded, and is done (processed).
  assert.strictEqual(lb.summary().dropped['bad-json'], 3)
  assert.strictEqual(lb.summary().processed, bad.length - 3)
  const stats = await lb.stats()
  const reason = (r) => workerSum(stats, (c) => c.malformed[r])
  assert.strictEqual(reason('bad-json'), 3)
  assert.strictEqual(reason('missing-endpoint'), 2)
  assert.strictEqual(reason('bad-packet-number'), 3)
  assert.strictEqual(reason('bad-timestamp'), 1)
  assert.strictEqual(workerSum(stats, (c) => c.packets), 0)
  await lb.stop()
  assert.strictEqual((await streamDocs(db)).length, 0, 'no stream written')
  assert.strictEqual(await db.collection('counters').countDocuments(), 0, 'no counter written')
})

test('writesPerPacket is reported and well under 0.5 when a stream has many packets per flush', async (t) => {
  const { uri, name, db } = await database()
  const { lb, port } = await startCollector(t, uri, name, { flushInterval: 500 }, { instances: 1 })
  const packets = []
  for (let n = 1; n <= 400; n++) packets.push(packet(n % 2 ? 'W1' : 'W2', n % 2 ? 'W2' : 'W1', n))
  await sendAll(port, packets, { perTick: 400 })
  await waitFor(processedAll(lb, packets.length))
  await waitFor(async () => (await lb.stats()).workers[0].custom.pending === 0)
  const [worker] = (await lb.stats()).workers
  await lb.stop()
  const custom = worker.custom
  assert.strictEqual(custom.packets, 400)
  assert.strictEqual(typeof custom.writesPerPacket, 'number')
  assert.strictEqual(custom.writesPerPacket, custom.streamWrites / custom.packets)
  assert.ok(custom.writesPerPacket < 0.5, `writesPerPacket ${custom.writesPerPacket}`)
  t.diagnostic(`writesPerPacket ${custom.writesPerPacket} (${custom.streamWrites} stream ops for 400 packets)`)
  const [doc] = await streamDocs(db)
  assert.strictEqual(doc.metadata.packets, 400)
})

test('no document of ours in streams: after traffic the collection holds exactly the streams', async (t) => {
  const { uri, name, db } = await database()
  const { lb, port } = await startCollector(t, uri, name)
  const packets = []
  for (let c = 0; c < 30; c++) for (let n = 1; n <= 3; n++) packets.push(packet(`na${c}`, `nb${c}`, n), packet(`nb${c}`, `na${c}`, n))
  await sendAll(port, shuffle(packets))
  await waitFor(() => lb.summary().processed === packets.length)
  await lb.stop()
  assert.strictEqual(await db.collection('streams').countDocuments(), 30)
  assert.strictEqual(await db.collection('streams').countDocuments({ 'from.ID': { $exists: false } }), 0)
})

test('the streams collection dropped under running workers: its unique indexes come back before new streams are written, so no call gets two documents', async (t) => {
  const { uri, name, db } = await database()
  const { lb, port } = await startCollector(t, uri, name, {}, { distribution: 'round-robin', instances: 3 })
  const call = (prefix, c, n) => [packet(`${prefix}a${c}`, `${prefix}b${c}`, n), packet(`${prefix}b${c}`, `${prefix}a${c}`, n)]
  const first = []
  for (let c = 0; c < 50; c++) first.push(...call('d', c, 1))
  await sendAll(port, first)
  await waitFor(() => lb.summary().processed === first.length)
  await db.collection('streams').drop()
  await new Promise((resolve) => setTimeout(resolve, 1500)) // past the writers' index check interval
  const second = []
  for (let c = 0; c < 100; c++) for (let n = 1; n <= 3; n++) second.push(...call('e', c, n))
  await sendAll(port, shuffle(second))
  await waitFor(() => lb.summary().processed === first.length + second.length)
  await lb.stop()
  const docs = await db.collection('streams').find({ openKey: { $regex: 'e' } }).toArray()
  const pairs = new Map()
  for (const d of docs) pairs.set(d.openKey, (pairs.get(d.openKey) || 0) + 1)
  assert.strictEqual(docs.length, 100, `one document per call (${docs.length} for 100 calls)`)
  const indexes = await db.collection('streams').indexes()
  assert.ok(indexes.some((i) => i.unique && i.name === 'pairKey_1_openKey_1'), 'the unique { pairKey, openKey } index is back')
  assert.ok(docs.every((d) => d.pairKey === d.openKey), 'every open stream carries its pair key')
})

// A side's packet interval was stored by $max over { rank, ms }: at equal
// rank the longest stood (a first measure under silence suppression, 40 ms,
// for a call at 20), though the worker keeps the shortest; its worst window
// then spanned twice the media.
test('a side\'s packet interval: the surest rank, then the shortest, whichever flush reaches the server first', async () => {
  const { QualityStats } = require('../../collectors/rtcp/quality-stats')
  const { uri } = await getTestMongo()
  const client = await new MongoClient(uri).connect()
  try {
    const coll = client.db(uniqueDbName('packet')).collection('streams')
    const flush = (ms, rank) => {
      const stats = new QualityStats()
      stats.packet = { rank, ms, source: rank === 1 ? 'receiver-reports' : 'sdp' }
      const update = {}
      stats.addTo(update, 'from')
      return update
    }
    for (const [name, order] of [['40 then 20', [[40, 1], [20, 1]]], ['20 then 40', [[20, 1], [40, 1]]], ['sdp 30 beats 20', [[20, 1], [30, 3], [20, 1]]]]) {
      for (const [ms, rank] of order) await coll.updateOne({ _id: name }, flush(ms, rank), { upsert: true })
      const doc = await coll.findOne({ _id: name })
      const want = name.startsWith('sdp') ? 30 : 20
      assert.strictEqual(doc.from.quality.packet.ms, want, name)
    }
  } finally {
    await client.close()
  }
})
