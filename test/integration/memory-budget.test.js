'use strict'

// What --memory-budget counts (lib/master/in-flight-bytes.js): the bytes a
// worker holds of the messages it took and has not stored, not the bytes it
// was sent. Real forked workers, the disk buffer, the Java MongoDB server
// behind a TCP proxy that is cut (the database away, so nothing is stored
// and everything sent stays in flight): large lines that coalesce into a
// few updates all go to the worker, far past the budget in bytes sent;
// lines held as documents of their size stop at the budget and wait on
// disk. Once the database is back, each is stored once.

const test = require('node:test')
const assert = require('node:assert/strict')
const dgram = require('node:dgram')
const { MongoClient } = require('mongodb')
const { getTestMongo, uniqueDbName } = require('../helpers/mongo')
const { createTcpProxy } = require('../helpers/tcp-proxy')
const { tempBufferDir } = require('../helpers/buffer-dir')
const { waitFor } = require('../helpers/wait-for')

const LINES = 300
const LINE_BYTES = 2000
const BUDGET = 64 * 1024 // one worker: its share is all of it

// A collector with one worker behind a proxy to the test server, the database cut once its first flush is done
// (`away`); `budget` and `flags` its own.
async function startAway (t, collectorModule, { away = true, budget = BUDGET, flags = [] } = {}) {
  const { uri, server } = await getTestMongo()
  const proxy = await createTcpProxy({ targetPort: server.port })
  t.after(() => proxy.close())
  const database = uniqueDbName('budget')
  const argv = ['--port', '0', '-i', '1', '--database', database, '--buffer-dir', tempBufferDir(t), '--memory-budget', String(budget), '--batch-size', '8', ...flags]
  const collector = new collectorModule.Collector({ ...new collectorModule.Config(argv).getConfig(), workerOptions: { mongoUri: proxy.uri, serverSelectionTimeoutMS: 1500, dbRetryDelay: 100 } })
  t.after(() => collector.stop())
  await collector.start()
  await waitFor(async () => (await collector.stats()).workers[0].custom.flushes >= 1, { what: 'the first flush' })
  if (away) proxy.cut()
  const client = await new MongoClient(uri).connect()
  t.after(() => client.close())
  return { collector, proxy, db: client.db(database) }
}

// LINES datagrams of LINE_BYTES, line(i) padded; a few at a time, so that none is lost to the socket's buffer.
async function sendLines (collector, line) {
  const socket = dgram.createSocket('udp4')
  try {
    for (let i = 0; i < LINES; i++) {
      const text = line(i)
      const datagram = text + ' ' + 'x'.repeat(LINE_BYTES - text.length - 1)
      await new Promise((resolve, reject) => socket.send(datagram, collector.address().port, '127.0.0.1', (err) => err ? reject(err) : resolve()))
      if (i % 10 === 9) await new Promise((resolve) => setTimeout(resolve, 5))
    }
  } finally {
    socket.close()
  }
  await waitFor(() => collector.summary().received === LINES, { what: `${LINES} received` })
}

// The bytes of the batches its one worker was sent and has not acknowledged, and what the master counts of them.
function inFlightBytes (collector) {
  const handle = collector.pool.current[0]
  return { sent: handle.unacked.reduce((sum, batch) => sum + batch.size, 0), counted: handle.bytes.value }
}

test('--memory-budget: messages that coalesce into a few updates all go to the worker, far past the budget in bytes sent, while the database is away; each counted once when it is back', { timeout: 120000 }, async (t) => {
  const coalescing = require('../fixtures/coalescing-definition')
  const { collector, proxy, db } = await startAway(t, coalescing)
  await sendLines(collector, (i) => `k${i % 4}`)
  const s = await waitFor(async () => { const stats = await collector.stats(); return stats.workers[0].custom.messages === LINES ? stats : null },
    { timeout: 20000, what: `the worker took all ${LINES} lines` })
  const bytes = inFlightBytes(collector)
  t.diagnostic(`counted ${bytes.counted}, sent ${bytes.sent} bytes`)
  assert.equal(s.processed, 0, 'nothing acknowledged: the database is away')
  assert.equal(collector.summary().buffered, 0, 'nothing waits on disk')
  assert.ok(bytes.sent >= LINES * LINE_BYTES, `sent and not acknowledged: ${bytes.sent} bytes, ${Math.round(bytes.sent / BUDGET)}× the budget`)
  assert.ok(bytes.counted <= BUDGET, `counted against the budget: ${bytes.counted} bytes (4 updates held), within ${BUDGET}`)
  proxy.restore()
  await waitFor(() => collector.summary().processed === LINES, { timeout: 60000, what: 'all stored' })
  const docs = await db.collection('keys').find().sort({ _id: 1 }).toArray()
  assert.deepEqual(docs.map((doc) => [doc._id, doc.n]), [['k0', 75], ['k1', 75], ['k2', 75], ['k3', 75]])
})

test('--memory-budget: messages held as documents of their size stop at the budget and wait on disk while the database is away; each stored once when it is back', { timeout: 120000 }, async (t) => {
  const syslog = require('../../collectors/syslog')
  const { collector, proxy, db } = await startAway(t, syslog)
  await sendLines(collector, (i) => `<13>Nov 30 12:00:00 host app: line${i}`)
  // Settled: what the worker took stops moving, the rest waits on disk.
  let taken = -1
  await waitFor(async () => {
    const now = (await collector.stats()).workers[0].custom.messages
    const settled = now === taken && collector.summary().buffered > 0
    taken = now
    return settled
  }, { timeout: 20000, interval: 500, what: 'the worker holding its share, the rest on disk' })
  const summary = collector.summary()
  const bytes = inFlightBytes(collector)
  assert.equal(summary.processed, 0, 'nothing acknowledged: the database is away')
  assert.equal(summary.buffered + summary.inFlight, LINES, 'each line in flight or on disk')
  t.diagnostic(`the worker took ${taken} of ${LINES}; counted ${bytes.counted}, sent ${bytes.sent} bytes`)
  assert.ok(taken > 0 && taken * LINE_BYTES <= 1.25 * BUDGET, `the worker took ${taken} lines (${taken * LINE_BYTES} bytes), about the budget of ${BUDGET}`)
  assert.ok(bytes.counted >= taken * LINE_BYTES, `counted against the budget: ${bytes.counted} bytes, at least the lines' own`)
  proxy.restore()
  await waitFor(() => collector.summary().processed === LINES, { timeout: 60000, what: 'all stored' })
  const lines = (await db.collection('syslog').find().toArray()).map((doc) => /line(\d+)/.exec(doc.message)[1])
  assert.equal(lines.length, LINES, 'each stored once')
  assert.equal(new Set(lines).size, LINES)
})

test('--memory-budget: a worker holding little, whose next batch does not fit beside what it holds, is asked to write (ipc.WRITE) rather than left to its flush timer', { timeout: 120000 }, async (t) => {
  // Batches of 8 lines of 2,000 bytes, each near the 20,000-byte budget: one in flight at a time, and a worker
  // holding 4 updates (4 KiB, under 3/4 of its share) does not write on `waits`. Its own timer, every 5 s, would take
  // 38 × 5 s for the 38 batches; the last batch waits for it (nothing after it waits for room).
  const coalescing = require('../fixtures/coalescing-definition')
  const { collector, db } = await startAway(t, coalescing, { away: false, budget: 20000, flags: ['--flush-interval', '5s'] })
  await sendLines(collector, (i) => `k${i % 4}`)
  await waitFor(() => collector.summary().processed === LINES, { timeout: 30000, what: `all ${LINES} stored, a write asked for each batch that waited` })
  const docs = await db.collection('keys').find().sort({ _id: 1 }).toArray()
  assert.deepEqual(docs.map((doc) => [doc._id, doc.n]), [['k0', 75], ['k1', 75], ['k2', 75], ['k3', 75]])
})
