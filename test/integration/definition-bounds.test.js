'use strict'

// The framework's bounds on what one message costs (issue 36), on a test
// definition (test/fixtures/fanout-definition.js), real forked workers and
// the Java MongoDB server: a message that decodes (or enriches) into more
// records than its definition's maxRecords is refused whole, by name; a
// record that brings a new key beyond the worker's share of
// --max-new-keys-per-minute is left out, and a message left with none is
// refused by name; known keys always pass.

const test = require('node:test')
const assert = require('node:assert/strict')
const dgram = require('node:dgram')
const fanout = require('../fixtures/fanout-definition')
const { startTestCollector } = require('../helpers/collector')
const { waitFor } = require('../helpers/wait-for')
const { accountedFor } = require('../../lib/master/counters')

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

async function startFanout (t, instances, flags = []) {
  const { collector, db, port } = await startTestCollector(t, fanout, flags, { instances })
  const socket = dgram.createSocket('udp4')
  t.after(() => socket.close())
  const send = (text) => new Promise((resolve, reject) => socket.send(text, port, '127.0.0.1', (err) => err ? reject(err) : resolve()))
  const settled = (received) => waitFor(async () => {
    const s = await collector.stats()
    return s.received === received && s.inFlight === 0 && accountedFor(s) ? s : null
  }, { timeout: 60000, what: `${received} messages processed or dropped` })
  const stored = async () => Object.fromEntries((await db.collection('keys').find().toArray()).map((doc) => [doc._id, doc.n]))
  return { collector, send, settled, stored }
}

test('definition: a message decoded or enriched into more records than its maxRecords is refused as tooManyRecords, nothing of it stored', async (t) => {
  const { send, settled, stored } = await startFanout(t, 2)
  await send('a 10\nb 51\nwide 20\nc 50')
  const s = await settled(4)
  assert.equal(s.dropped.tooManyRecords, 2, 'b: 51 decoded; wide: 20 decoded, 60 enriched')
  assert.equal(s.dropped.total, 2)
  assert.equal(s.processed, 2)
  const keys = Object.keys(await stored())
  assert.equal(keys.length, 60, 'a.0-9 and c.0-49')
  assert.ok(keys.every((key) => key.startsWith('a.') || key.startsWith('c.')), 'nothing of b or wide')
  const malformed = s.workers.reduce((n, w) => n + ((w.custom.malformed && w.custom.malformed.tooManyRecords) || 0), 0)
  assert.equal(malformed, 2, 'counted by the workers too')
})

test('definition: records bringing new keys beyond the share are left out, a message left with none refused as newKeyLimit, known keys always stored', async (t) => {
  // One window for the whole test: not in a minute's last 10 seconds.
  if (Date.now() % 60000 > 50000) await sleep(60000 - (Date.now() % 60000) + 100)
  const { collector, send, settled, stored } = await startFanout(t, 1, ['--max-new-keys-per-minute', '5'])
  await send('k 3')
  await settled(1)
  await send('k 10') // k.0-2 known; k.3, k.4 new within the 5; k.5-9 beyond
  await settled(2)
  await send('z 4') // every record new, beyond: the message is refused
  await send('k 3') // known
  const s = await settled(4)
  assert.equal(s.processed, 3)
  assert.equal(s.dropped.newKeyLimit, 1)
  assert.equal(s.dropped.total, 1)
  assert.deepEqual(await stored(), { 'k.0': 3, 'k.1': 3, 'k.2': 3, 'k.3': 1, 'k.4': 1 })
  const [worker] = s.workers
  assert.deepEqual(worker.custom.newKeys, { share: 5, admitted: 5, refused: 9 })
  assert.equal(worker.custom.held.knownKeys, 5)
  assert.equal((await collector.stats()).workers[0].custom.newKeys.refused, 9)
})

test('definition: a message its sinks have no room for under --max-pending is dropped whole as workerFull, no part of it stored', async (t) => {
  const fanoutStreams = require('../fixtures/fanout-streams-definition')
  const { getTestMongo, uniqueDbName } = require('../helpers/mongo')
  const { createTcpProxy } = require('../helpers/tcp-proxy')
  const { MongoClient } = require('mongodb')
  const { uri, server } = await getTestMongo()
  const proxy = await createTcpProxy({ targetPort: server.port })
  t.after(() => proxy.close())
  const database = uniqueDbName('room')
  // One batch (--batch-delay): a worker holding over half its --max-pending takes no further batch until a write
  // made room (test/integration/sink-room.test.js), so only a batch that overflows by itself drops.
  const config = new fanoutStreams.Config(['--port', '0', '-i', '1', '--database', database, '--max-pending', '5', '--batch-delay', '500']).getConfig()
  const collector = new fanoutStreams.Collector({ ...config, workerOptions: { mongoUri: proxy.uri, sweep: false, serverSelectionTimeoutMS: 1500, dbRetryDelay: 100 } })
  t.after(() => collector.stop())
  await collector.start()
  await waitFor(async () => (await collector.stats()).workers[0].custom.flushes >= 1, { what: 'the first flush' })
  // The database away: what the worker takes it holds.
  proxy.cut()
  const socket = dgram.createSocket('udp4')
  t.after(() => socket.close())
  const sendAndSettle = async (text, taken) => {
    await new Promise((resolve, reject) => socket.send(text, port(), '127.0.0.1', (err) => err ? reject(err) : resolve()))
    return waitFor(async () => { const s = await collector.stats(); return s.workers[0].custom.messages === taken ? s : null }, { timeout: 30000, what: text })
  }
  const port = () => collector.address().port
  const send = (text) => new Promise((resolve, reject) => socket.send(text, port(), '127.0.0.1', (err) => err ? reject(err) : resolve()))
  await send('a 3') // 3 pairs and the packet counter's document: 4 of 5
  await send('b 3') // 3 more: no room for the whole, none of it held
  const s = await sendAndSettle('c 1', 3) // room for one
  assert.equal(s.workers[0].custom.dropped, 1, 'b')
  assert.equal(s.workers[0].custom.sinks.streams.packets, 4, 'a and c')
  proxy.restore()
  await collector.stop()
  const client = await new MongoClient(uri).connect()
  t.after(() => client.close())
  const pairs = (await client.db(database).collection('streams').find().toArray()).map((doc) => [doc.from.ID, doc.to.ID].sort()[0]).sort()
  assert.deepEqual(pairs, ['a.0', 'a.1', 'a.2', 'c.0'], 'nothing of b')
  assert.deepEqual([collector.summary().processed, collector.summary().dropped.workerFull], [2, 1])
})
