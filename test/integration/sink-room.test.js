'use strict'

// A message of many records fills a worker's sinks (--max-pending counts
// entries, records) long before the master's in-flight bound (messages) is
// reached: with the database frozen, the worker refused what came as
// dropped.workerFull (4,654 of 10,000 datagrams of 1-50 readings at
// 1,000/s over a 10 s stall, the disk buffer on and empty). Now its next
// batch waits for room, and the master holds what comes.

const test = require('node:test')
const assert = require('node:assert/strict')
const dgram = require('node:dgram')
const readings = require('../fixtures/readings-definition')
const { startTestCollector } = require('../helpers/collector')
const { getTestMongo } = require('../helpers/mongo')
const { waitFor } = require('../helpers/streams')

test('a database frozen while messages of many records arrive: the worker waits for room, nothing is dropped as workerFull, every record stored once', { timeout: 90000 }, async (t) => {
  const { server } = await getTestMongo()
  if (!server) return t.skip('MONGODB_URI given: the test cannot pause a server it did not start')
  const { collector, db, port } = await startTestCollector(t, readings, ['--max-pending', '300', '--batch-size', '4'], { instances: 1 })
  const socket = dgram.createSocket('udp4')
  t.after(() => socket.close())
  const send = (from, to) => Promise.all(Array.from({ length: to - from }, (_, k) => new Promise((resolve, reject) => {
    socket.send(`b${from + k} 20`, port, '127.0.0.1', (err) => err ? reject(err) : resolve())
  })))
  await send(0, 5)
  await waitFor(() => collector.summary().processed === 5)
  server.pause()
  t.after(() => server.resume())
  for (let at = 5; at < 125; at += 10) await send(at, at + 10) // 2,400 records, 8 times --max-pending
  await waitFor(() => collector.summary().received === 125)
  await new Promise((resolve) => setTimeout(resolve, 2000))
  server.resume()
  await waitFor(() => { const s = collector.summary(); return s.processed + s.failed + s.dropped.total === 125 }, { timeout: 60000 })
  const s = collector.summary()
  assert.deepEqual({ processed: s.processed, dropped: s.dropped.total }, { processed: 125, dropped: 0 })
  await collector.stop()
  assert.equal(await db.collection('readings').countDocuments(), 125 * 20)
  const totals = await db.collection('sensor_totals').find().toArray()
  assert.equal(totals.reduce((sum, doc) => sum + doc.n, 0), 125 * 20)
})
