'use strict'

const { test, after } = require('node:test')
const assert = require('node:assert')
const path = require('node:path')
const fs = require('node:fs')
const os = require('node:os')
const { MongoClient } = require('mongodb')
const { listDeadLetters } = require('../../lib/master/dead-letters')
const { LoadBalancer } = require('../..')
const { getTestMongo, uniqueDbName } = require('../helpers/mongo')
const { sendAll, shuffle, streamDocs, waitFor } = require('../helpers/streams')
const { removeDir } = require('../helpers/temp-dir')

const WORKER = path.join(__dirname, '..', 'fixtures/json-stream-worker.js')
let client
after(() => client && client.close())

async function setup (t, workerOptions = {}, lbOptions = {}) {
  const { uri } = await getTestMongo()
  if (!client) client = await new MongoClient(uri).connect()
  const database = uniqueDbName('streams')
  const lb = new LoadBalancer({
    worker: WORKER,
    instances: 3,
    distribution: 'round-robin',
    workerOptions: { mongoUri: uri, database, flushInterval: 50, sweep: false, ...workerOptions },
    ...lbOptions
  })
  t.after(() => lb.stop())
  await lb.start()
  return { lb, db: client.db(database), port: lb.address().port }
}

// Streams × packets, both directions, shuffled: the ultimate interleaving test.
function trafficFor (streams, perSide, t0) {
  const packets = []
  const expected = new Map()
  for (let s = 0; s < streams; s++) {
    const a = `A${s}`
    const b = `B${s}`
    for (let n = 1; n <= perSide; n++) {
      packets.push({ fromID: a, toID: b, IP: '10.0.0.1', highestPacketNum: 1000 + n, timestamp: t0 + n })
      packets.push({ fromID: b, toID: a, IP: '10.0.0.2', highestPacketNum: 5000 + n * 2, timestamp: t0 + n })
    }
    expected.set(`${a}|${b}`, { a, b, maxA: 1000 + perSide, maxB: 5000 + perSide * 2, packets: perSide * 2 })
  }
  return { packets: shuffle(packets), expected }
}

test('concurrent out-of-order packets from both ends give exactly one stream per pair with exact max and counts', async (t) => {
  const { lb, db, port } = await setup(t)
  const t0 = Date.UTC(2026, 10, 21, 12, 0, 0)
  const { packets, expected } = trafficFor(300, 10, t0)
  await sendAll(port, packets)
  await waitFor(() => lb.summary().received === packets.length)
  await lb.stop()
  const stats = lb.summary()
  assert.strictEqual(stats.received, packets.length, 'every datagram reached the master')
  assert.strictEqual(stats.processed, packets.length)
  const docs = await streamDocs(db)
  assert.strictEqual(docs.length, expected.size, 'one document per endpoint pair')
  for (const doc of docs) {
    const ids = [doc.from.ID, doc.to.ID].sort()
    const want = expected.get(`${ids[0]}|${ids[1]}`)
    assert.ok(want, `unexpected stream ${ids}`)
    const sideA = doc.from.ID === want.a ? doc.from : doc.to
    const sideB = doc.from.ID === want.a ? doc.to : doc.from
    assert.strictEqual(sideA.highestPacketNum, want.maxA)
    assert.strictEqual(sideB.highestPacketNum, want.maxB)
    assert.strictEqual(sideA.IP_ADDRESS, '10.0.0.1')
    assert.strictEqual(sideB.IP_ADDRESS, '10.0.0.2')
    assert.strictEqual(doc.metadata.packets, want.packets)
    assert.strictEqual(sideA.packets + sideB.packets, want.packets)
    assert.strictEqual(doc.active, true)
    assert.strictEqual(doc.startTime.getTime(), t0 + 1)
    assert.strictEqual(doc.endTime.getTime(), t0 + 10)
  }
})

test('stop with a database that hangs: the worker gives up at flushTimeout, nothing unstored is acknowledged, and the master keeps it as a dead letter (part of it may be stored), not dropped', { timeout: 60000 }, async (t) => {
  const { server } = await getTestMongo()
  if (!server) return t.skip('MONGODB_URI given: the test cannot pause a server it did not start')
  const records = []
  const keep = (level) => (fields, msg) => records.push({ level, fields, msg })
  const capture = { trace () {}, debug () {}, info () {}, warn: keep('warn'), fatal () {}, error: keep('error'), child () { return capture } }
  const deadLetterDir = fs.mkdtempSync(path.join(os.tmpdir(), 'dead-letter-'))
  t.after(() => removeDir(deadLetterDir))
  const { lb, db, port } = await setup(t, { flushTimeout: 1500, serverSelectionTimeoutMS: 60000 }, { instances: 1, logger: capture, drainTimeout: 20000, buffer: false, deadLetterDir })
  const packets = Array.from({ length: 40 }, (_, i) => ({ fromID: `H${i}`, toID: 'X', highestPacketNum: i, timestamp: Date.now() }))
  await sendAll(port, packets.slice(0, 1))
  // The first update has landed and its acknowledgement reached the master: a document
  // visible to a reader does not mean the writer has had its reply yet.
  await waitFor(async () => (await streamDocs(db)).length === 1 && lb.summary().processed === 1)
  server.pause()
  t.after(() => server.resume())
  await sendAll(port, packets.slice(1))
  await waitFor(async () => { const [w] = (await lb.stats()).workers; return w && w.custom && w.custom.packets === packets.length })
  assert.strictEqual(lb.summary().processed, 1, 'what the stalled database has not stored is not acknowledged')
  const started = Date.now()
  await lb.stop()
  const elapsed = Date.now() - started
  server.resume()
  assert.ok(elapsed < 15000, `the worker left on its own deadline, not the master's kill (${elapsed} ms)`)
  const report = records.find((r) => /stream updates not stored/.test(r.msg))
  // At warn: the master still has the messages and says where they wait (a dead letter here).
  assert.equal(report && report.level, 'warn', 'the abandonment is logged')
  assert.strictEqual(report.fields.pending + report.fields.unconfirmed, packets.length - 1, 'every update not known to be written is counted')
  const s = lb.summary()
  assert.strictEqual(s.dropped.shutdown || 0, 0, 'not dropped: some of it may have landed')
  assert.deepStrictEqual([s.deadLettered, s.deadLetteredBy], [packets.length - 1, { shutdown: packets.length - 1 }], 'kept as a dead letter, for collector replay to complete once')
  assert.strictEqual(s.received, s.processed + s.failed + s.dropped.total + s.deadLettered)
  const [letter] = listDeadLetters(deadLetterDir)
  assert.strictEqual(letter.reason, 'shutdown')
  assert.strictEqual(letter.messages, packets.length - 1)
})
