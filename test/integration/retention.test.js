'use strict'
// Retention end to end on the embedded server, which has no TTL monitor:
// the leader worker deletes what is older than a few seconds by each
// collection's date field, while workers are SIGKILLed. What still
// receives (a stream with packets, a stream pausing for longer than the
// retention) keeps its one document, whole; nothing is made again in part.

const test = require('node:test')
const assert = require('node:assert/strict')
const dgram = require('node:dgram')
const path = require('node:path')
const { MongoClient } = require('mongodb')
const { LoadBalancer } = require('../..')
const syslog = require('../../collectors/syslog')
const { startTestCollector } = require('../helpers/collector')
const { captureLogger } = require('../helpers/capture-logger')
const { getTestMongo, uniqueDbName } = require('../helpers/mongo')
const { killLoop } = require('../helpers/kill-loop')
const { sendAll, streamDocs, waitFor } = require('../helpers/streams')
const { pairKey } = require('../../workers/storage/stream-key')
const { storageOf } = require('../../lib/shared/worker-stats')

const WORKER = path.join(__dirname, '..', 'fixtures/json-stream-worker.js')
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

// `n` RFC 5424 lines `<tag>-<i>`, sent paced (one datagram each).
async function sendLines (port, tag, n, perMs = 2) {
  const socket = dgram.createSocket('udp4')
  await new Promise((resolve) => socket.connect(port, '127.0.0.1', resolve))
  for (let i = 0; i < n; i++) {
    socket.send(`<14>1 ${new Date().toISOString()} retention-host app - - - ${tag}-${i}`)
    if (i % 20 === 19) await sleep(20 * perMs)
  }
  await new Promise((resolve) => socket.close(resolve))
}

const countOf = (db, tag) => db.collection('syslog').countDocuments({ message: new RegExp(`^${tag}-`) })

test('syslog with --retention 3s: messages older than 3 s by arrival are deleted by the leader, through worker SIGKILLs; the day\'s counters stay exact', { timeout: 90000 }, async (t) => {
  const { logger, records } = captureLogger()
  const { collector, db, port } = await startTestCollector(t, syslog, ['--retention', '3s', '--storage-interval', '1s'], { logger })
  const kills = killLoop(collector, 700)
  await sendLines(port, 'old', 300)
  await waitFor(async () => await countOf(db, 'old') === 300, { what: 'the first 300 messages stored', timeout: 30000 })
  const arrivals = new Map((await db.collection('syslog').find({ message: /^old-/ }).toArray()).map((doc) => [String(doc._id), doc.receivedAt.getTime()]))
  // Newer messages keep coming while the old ones expire; none goes before
  // its time: one missing at a look had arrived 3 s before that look.
  const sending = sendLines(port, 'new', 300, 10)
  await waitFor(async () => {
    const left = new Set((await db.collection('syslog').find({ message: /^old-/ }, { projection: { _id: 1 } }).toArray()).map((doc) => String(doc._id)))
    const lookedAt = Date.now()
    for (const [id, at] of arrivals) if (!left.has(id)) assert.ok(at <= lookedAt - 3000, `deleted ${lookedAt - at} ms after its arrival`)
    return left.size === 0
  }, { what: 'the first messages deleted', timeout: 30000, interval: 100 })
  await sending
  const killed = await kills.stop(2)
  t.diagnostic(`workers SIGKILLed: ${killed}`)
  await waitFor(() => collector.summary().processed === 600, { what: 'every message acknowledged', timeout: 30000 })
  // What stays is younger than the retention and a sweep (a batch stored
  // late after a kill keeps its arrival, and goes at the next sweep).
  await waitFor(async () => {
    const [oldest] = await db.collection('syslog').find().sort({ receivedAt: 1 }).limit(1).toArray()
    return !oldest || Date.now() - oldest.receivedAt.getTime() < 3000 + 1500
  }, { what: 'nothing older than the retention and a sweep', timeout: 10000, interval: 100 })
  // A day's counter document is deleted only once the whole day is older
  // than the retention: today's counts every message, exactly once.
  const counters = await db.collection('counters').find({ metric: /^syslog\.retention-host\./ }).toArray()
  assert.equal(counters.reduce((sum, c) => sum + c.daily, 0), 600)
  assert.ok(counters.every((c) => c.dayStart instanceof Date && c.dayStart.getTime() === Date.parse(`${c.day.slice(0, 4)}-${c.day.slice(4, 6)}-${c.day.slice(6)}T00:00:00Z`)), 'each counter document has its day\'s start, its age field')
  // Counted by the leader (a later leader counts from its start): send and
  // let expire a last batch with no more kills.
  await sendLines(port, 'last', 50)
  await waitFor(async () => await countOf(db, 'last') === 50, { what: 'the last batch stored' })
  const storage = await waitFor(async () => {
    const s = storageOf(await collector.stats())
    return s && s.collections.syslog.deleted.retention >= 50 && await countOf(db, 'last') === 0 && s
  }, { what: 'the last batch deleted and counted', timeout: 30000, interval: 200 })
  assert.equal(storage.expiry, 'sweeper')
  assert.equal(storage.collections.syslog.retentionMs, 3000)
  assert.equal(storage.collections.counters.deleted.retention, 0, 'today\'s counters are kept')
  const line = records.find((r) => /^retention: /.test(r.msg))
  assert.ok(line, 'one line at start says what expires')
  assert.match(line.msg, /syslog 3s by receivedAt, counters 3s by day \(dayStart\), by the leader worker every 1s, in batches: this server has no TTL monitor/)
})

test('streams with --retention 2s: an ended stream is deleted; one still receiving, and one pausing longer than the retention, keep their one whole document, through worker SIGKILLs', { timeout: 90000 }, async (t) => {
  const { uri } = await getTestMongo()
  const database = uniqueDbName('retention')
  const lb = new LoadBalancer({
    worker: WORKER,
    instances: 2,
    workerOptions: { mongoUri: uri, database, flushInterval: 50, streamTimeout: 4000, sweepInterval: 200, retention: 2000, storageInterval: 1000 }
  })
  t.after(() => lb.stop())
  await lb.start()
  const client = await new MongoClient(uri).connect()
  t.after(() => client.close())
  const db = client.db(database)
  const port = lb.address().port
  const sent = { L: 0, P: 0, Q: 0 }
  const n = { L: 0, P: 0, Q: 0 }
  // Both ends of a stream report, as RTCP peers do.
  const send = (name, count) => {
    const items = []
    for (let i = 0; i < count; i++) {
      n[name]++
      items.push({ fromID: `${name}1`, toID: `${name}2`, highestPacketNum: n[name], timestamp: Date.now() })
      items.push({ fromID: `${name}2`, toID: `${name}1`, highestPacketNum: n[name], timestamp: Date.now() })
    }
    sent[name] += items.length
    return sendAll(port, items)
  }
  const kills = killLoop(lb, 700)
  await send('Q', 10)
  // 9 s: L every 100 ms; P for 2 s, silent 3 s (beyond the retention, within
  // streamTimeout: still an open stream), then again.
  const started = Date.now()
  while (Date.now() - started < 9000) {
    const at = Date.now() - started
    await send('L', 1)
    if (at < 2000 || at > 5000) await send('P', 1)
    await sleep(100)
  }
  const killed = await kills.stop(2)
  t.diagnostic(`workers SIGKILLed: ${killed}`)
  await waitFor(() => lb.summary().processed === sent.L + sent.P + sent.Q, { what: 'every packet acknowledged', timeout: 30000 })
  await waitFor(async () => (await streamDocs(db, { pairKey: pairKey('Q1', 'Q2') })).length === 0, { what: 'the ended stream Q deleted', timeout: 30000, interval: 200 })
  for (const name of ['L', 'P']) {
    const docs = await streamDocs(db, { pairKey: pairKey(`${name}1`, `${name}2`) })
    assert.equal(docs.length, 1, `${name}: one stream, never ended, never deleted`)
    const [doc] = docs
    assert.equal(doc.active, true)
    assert.equal(doc.metadata.packets, sent[name], `${name}: every packet counted once`)
    // Whichever end's packet was written first is `from`.
    assert.deepEqual([[doc.from.ID, doc.to.ID].sort(), doc.from.highestPacketNum, doc.to.highestPacketNum], [[`${name}1`, `${name}2`], n[name], n[name]])
  }
  // Nothing made again in part: every stream document has its ends and keys.
  const partial = await db.collection('streams').countDocuments({ $or: [{ 'from.ID': { $exists: false } }, { 'to.ID': { $exists: false } }, { openKey: { $exists: false } }, { pairKey: { $exists: false } }, { startTime: { $exists: false } }] })
  assert.equal(partial, 0)
  const counters = await db.collection('counters').find().toArray()
  assert.equal(counters.reduce((sum, c) => sum + c.daily, 0), sent.L + sent.P + sent.Q, 'the packet counter is exact, and today\'s document kept')
})
