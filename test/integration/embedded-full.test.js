'use strict'

// The embedded Java server in memory keeps every document in its Java
// heap. Filled, it used to stall for minutes in garbage collection and then
// break connections; now it refuses writes that add data with one message
// (java/.../MongoServerLauncher.java, HeapGuard), and a collector holds
// what it could not store until room is made. A server of its own with a
// small heap, so that it fills in seconds.

const test = require('node:test')
const assert = require('node:assert/strict')
const dgram = require('node:dgram')
const { MongoClient } = require('mongodb')
const syslog = require('../../collectors/syslog')
const { startJavaServer } = require('../../lib/mongo/java-server')
const { tempBufferDir } = require('../helpers/buffer-dir')
const { captureLogger } = require('../helpers/capture-logger')
const { waitFor } = require('../fixtures/foreground-run')

const HEAP = ['-XX:+UseSerialGC', '-Xss512k', '-Xmx96m']
const FULL = /the embedded database is full: it keeps its data in memory and holds \d+ MiB of its \d+ MiB; nothing more is stored until data is deleted \(--retention or --max-storage\), or start it with --db-path DIR \(on disk\) or a larger Java heap \(JAVA_TOOL_OPTIONS=-Xmx8g\)/

async function smallServer (t) {
  const server = await startJavaServer({ port: 0, jvmArgs: HEAP })
  t.after(() => server.stop())
  const client = await new MongoClient(server.uri, { serverSelectionTimeoutMS: 5000 }).connect()
  t.after(() => client.close())
  return { server, client }
}

test('a full in-memory server refuses inserts in one message (code 146), still answers reads, and takes writes again once data is deleted', { timeout: 120000 }, async (t) => {
  const { client } = await smallServer(t)
  const collection = client.db('full').collection('lines')
  const text = 'x'.repeat(200)
  let stored = 0
  let refusal = null
  while (!refusal && stored < 2000000) {
    try {
      await collection.insertMany(Array.from({ length: 1000 }, (_, i) => ({ _id: stored + i, text })), { ordered: false })
      stored += 1000
    } catch (err) {
      refusal = err
    }
  }
  assert.ok(refusal, 'the server refused a write before 2,000,000 documents')
  assert.equal(refusal.code, 146, refusal.message)
  assert.equal(refusal.codeName, 'ExceededMemoryLimit')
  assert.match(refusal.message, FULL)
  // Reads, and the server itself, still answer.
  const held = await collection.countDocuments()
  assert.ok(held >= stored, `${held} documents held, ${stored} acknowledged`)
  assert.deepEqual(await client.db('admin').command({ ping: 1 }), { ok: 1 })
  await assert.rejects(collection.insertOne({ _id: 'one more', text }), { code: 146 })

  await collection.deleteMany({ _id: { $lt: Math.floor(stored / 2) } })
  await waitFor(async () => {
    try {
      await collection.insertOne({ _id: 'after the delete', text })
      return true
    } catch (err) {
      assert.equal(err.code, 146, err.message)
      return false
    }
  }, { what: 'an insert taken after half was deleted', timeout: 30000 })
})

test('a collector on a full in-memory server says so, drops nothing, and stores the rest once room is made', { timeout: 180000 }, async (t) => {
  const { server, client } = await smallServer(t)
  const { logger, records } = captureLogger()
  const config = new syslog.Config(['--port', '0', '-i', '1', '--database', 'full', '--flush-interval', '50ms', '--buffer-dir', tempBufferDir(t)]).getConfig()
  const collector = new syslog.Collector({ ...config, logger, workerOptions: { mongoUri: server.uri } })
  t.after(() => collector.stop())
  await collector.start()
  const port = collector.address().port
  const lines = client.db('full').collection('syslog')
  const fullLine = () => records.find((r) => FULL.test(`${r.msg} ${JSON.stringify(r.fields)}`))

  // ~200-byte lines, 10,000/s, until the server refuses them.
  const socket = dgram.createSocket('udp4')
  t.after(() => socket.close())
  const padding = 'p'.repeat(150)
  let sent = 0
  while (!fullLine() && sent < 400000) {
    for (let i = 0; i < 100; i++, sent++) socket.send(`<14>1 2026-11-27T10:00:00Z host${sent % 20} app - - - line ${sent} ${padding}`, port, '127.0.0.1')
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  assert.ok(fullLine(), `the worker's log says the database is full (sent ${sent})`)
  assert.equal(fullLine().level, 'warn')

  await waitFor(async () => (await collector.stats()).received >= sent * 0.99, { what: 'the lines received', timeout: 30000 })
  const during = await collector.stats()
  assert.equal(during.dropped.total - (during.dropped.kernel || 0), 0, `nothing dropped: ${JSON.stringify(during.dropped)}`)
  assert.ok(during.processed < during.received, `some lines wait for room (${during.processed} of ${during.received} stored)`)

  // Room made: what is stored now is deleted (by _id, so that a write
  // landing meanwhile is not), and noted.
  const deleted = await lines.find({}, { projection: { message: 1 } }).toArray()
  const removed = await lines.bulkWrite(deleted.map(({ _id }) => ({ deleteOne: { filter: { _id } } })), { ordered: false })
  assert.equal(removed.deletedCount, deleted.length)
  await waitFor(async () => { const s = await collector.stats(); return s.processed === s.received }, { what: 'every line received stored once room was made', timeout: 90000 })
  const after = await collector.stats()
  assert.equal(after.dropped.total - (after.dropped.kernel || 0), 0, JSON.stringify(after.dropped))
  // Every line received was stored (before the delete or after), and none twice now.
  const kept = await lines.find({}, { projection: { message: 1 } }).toArray()
  const numbers = (docs) => docs.map((d) => Number(/^line (\d+) /.exec(d.message)[1]))
  assert.equal(new Set(numbers(kept)).size, kept.length, 'no line stored twice')
  assert.equal(new Set([...numbers(kept), ...numbers(deleted)]).size, after.received, 'every line received was stored')
})
