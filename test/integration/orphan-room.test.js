'use strict'

// A master SIGKILLed while its database is stalled leaves its worker an
// orphan, which finishes the batches it was sent. It took them without
// waiting for room in its sinks (the wait was skipped at any shutdown), so
// what did not fit under --max-pending was dropped as workerFull, uncounted
// (the master is gone), while the rest of the same batch and later ones
// were stored: the updates sink's watermark went past the dropped messages.
// The next run replays the disk buffer: their documents, stored by key,
// came back, but their `$inc` was taken as applied already. A user's
// sensor collector lost 99 to 647 readings of its per-minute counts this
// way, every reading document stored once.

const test = require('node:test')
const assert = require('node:assert/strict')
const dgram = require('node:dgram')
const path = require('node:path')
const { MongoClient } = require('mongodb')
const { getTestMongo, uniqueDbName } = require('../helpers/mongo')
const { tempBufferDir } = require('../helpers/buffer-dir')
const { runCollector, withDatabase, waitFor } = require('../fixtures/foreground-run')

const READINGS = path.join(__dirname, '..', 'fixtures', 'readings-definition.js')
const RECORDS = 20 // readings a datagram

async function send (port, from, to) {
  const socket = dgram.createSocket('udp4')
  try {
    for (let i = from; i < to; i++) await new Promise((resolve, reject) => socket.send(`b${i} ${RECORDS}`, port, '127.0.0.1', (err) => err ? reject(err) : resolve()))
  } finally {
    socket.close()
  }
}

test('a master SIGKILLed during a database stall: its orphaned worker waits for room instead of dropping, and the next run\'s replay counts every reading once', { timeout: 180000 }, async (t) => {
  const { uri, server } = await getTestMongo()
  if (!server) return t.skip('MONGODB_URI given: the test cannot pause a server it did not start')
  const database = uniqueDbName('orphanroom')
  const env = { MONGODB_URI: withDatabase(uri, database), COLLECTOR_BUFFER_DIR: path.join(tempBufferDir(t), 'buffer') }
  const flags = ['-i', '1', '--max-pending', '300', '--batch-size', '4', '--flush-interval', '50ms']
  const name = `orphanroom${process.pid}`
  const first = await runCollector(t, READINGS, { flags, env, name })
  await send(first.port, 0, 5)
  await waitFor(async () => { const s = await first.stats(); return s.processed === 5 }, { what: 'the first 5 stored', timeout: 30000 })
  server.pause()
  t.after(() => server.resume())
  const sent = 125
  await send(first.port, 5, sent) // 2,400 readings: 8 times --max-pending
  await waitFor(async () => { const s = await first.stats(); return s.inFlight + s.buffered === sent - 5 && s.buffer.messages === sent - 5 }, { what: 'every datagram held or buffered, and on disk', timeout: 30000 })
  await new Promise((resolve) => setTimeout(resolve, 500)) // the worker past half its --max-pending, waiting
  const masterGone = new Promise((resolve) => first.child.once('exit', resolve))
  process.kill(first.pid, 'SIGKILL') // the master only: its worker finishes what it was sent
  await masterGone
  await new Promise((resolve) => setTimeout(resolve, 1000)) // the orphan through its queue, as far as it goes
  server.resume()
  const second = await runCollector(t, READINGS, { flags, env, name })
  await waitFor(async () => { const s = await second.stats(); return s.processed === sent - 5 && s.buffer.messages === 0 }, { what: 'the replay stored', timeout: 120000 })
  await first.exited // the orphan finished too
  const client = await new MongoClient(uri).connect()
  t.after(() => client.close())
  const db = client.db(database)
  assert.equal(await db.collection('readings').countDocuments(), sent * RECORDS, 'every reading stored once')
  const totals = await db.collection('sensor_totals').find().toArray()
  assert.equal(totals.reduce((sum, doc) => sum + doc.n, 0), sent * RECORDS, 'every reading counted once')
  process.kill(second.pid, 'SIGINT')
  assert.equal((await second.exited).code, 0)
})
