'use strict'

// The built-in StatsD collector, a collector definition: real forked
// workers, real UDP on port 0, the Java MongoDB server. What it stores is
// checked against sums the test keeps of what it sent, line by line.

const test = require('node:test')
const assert = require('node:assert/strict')
const dgram = require('node:dgram')
const statsd = require('../../collectors/statsd')
const { startTestCollector } = require('../helpers/collector')
const { waitFor } = require('../helpers/wait-for')
const { killLoop } = require('../helpers/kill-loop')
const { accountedFor } = require('../../lib/master/counters')

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

async function sender (t) {
  const socket = dgram.createSocket('udp4')
  t.after(() => socket.close())
  return (port, text) => new Promise((resolve, reject) => socket.send(text, port, '127.0.0.1', (err) => err ? reject(err) : resolve()))
}

// Every message accounted for and none in flight.
function settled (collector) {
  return waitFor(async () => {
    const s = await collector.stats()
    return s.inFlight === 0 && accountedFor(s) ? s : null
  }, { timeout: 60000, what: 'every line processed or dropped' })
}

// Documents of `metrics` summed per name and type, across minutes.
async function totals (db) {
  const sums = new Map()
  for (const doc of await db.collection('metrics').find().toArray()) {
    const key = `${doc.name}|${doc.type}`
    const t = sums.get(key) || { count: 0, sum: 0, min: Infinity, max: -Infinity, docs: [] }
    t.count += doc.count
    t.sum += doc.sum || 0
    if (doc.min !== undefined) t.min = Math.min(t.min, doc.min)
    if (doc.max !== undefined) t.max = Math.max(t.max, doc.max)
    t.docs.push(doc)
    sums.set(key, t)
  }
  return sums
}

test('statsd: lines of a datagram are metrics of their own; counters, timers and gauges per minute; bad lines refused by name', async (t) => {
  const { collector, db, port } = await startTestCollector(t, statsd)
  const send = await sender(t)
  await send(port, 'api.hits:1|c\napi.hits:2|c|@0.5\r\nlatency:120|ms\nlatency:80|ms\n\nqueue:7|g')
  await sleep(50)
  await send(port, 'queue:3|g\nbroken line\nsets:1|s\nqueue:+1|g\nlatency:abc|ms\nx:1|c|@2')
  await send(port, '\n\n')
  const s = await settled(collector)
  assert.equal(s.received, 12, 'counted per line; a datagram with no line once')
  assert.equal(s.processed, 6)
  const { badLine, unsupportedType, gaugeDelta, badValue, badRate, empty } = s.dropped
  assert.deepEqual({ badLine, unsupportedType, gaugeDelta, badValue, badRate, empty }, { badLine: 1, unsupportedType: 1, gaugeDelta: 1, badValue: 1, badRate: 1, empty: 1 })
  assert.equal(s.dropped.total, 6)
  const sums = await totals(db)
  assert.deepEqual([...sums.keys()].sort(), ['api.hits|c', 'latency|ms', 'queue|g'])
  const hits = sums.get('api.hits|c')
  assert.equal(hits.count, 2)
  assert.equal(hits.sum, 1 + 2 / 0.5)
  const latency = sums.get('latency|ms')
  assert.deepEqual([latency.count, latency.sum, latency.min, latency.max], [2, 200, 80, 120])
  const queue = sums.get('queue|g')
  assert.equal(queue.count, 2)
  assert.deepEqual([queue.min, queue.max], [3, 7])
  const newest = queue.docs.sort((a, b) => b.minute - a.minute)[0]
  assert.equal(newest.last.value, 3, 'the gauge keeps the value sent last')
  assert.ok(newest.minute instanceof Date && newest.minute.getUTCSeconds() === 0)
})

test('statsd: a sampled timer counts 1 / rate a line and sums its values, as etsy statsd does; its range check is on the value (QA)', async (t) => {
  const { collector, db, port } = await startTestCollector(t, statsd)
  const send = await sender(t)
  // etsy statsd: timer_counters += 1 / rate, the values as sent (count 10 + 10 + 10 + 1, sum 1 + 1 + 500000000 + 4).
  await send(port, 't:1|ms|@0.1\nt:1|ms|@0.1\nt:500000000|ms|@0.1\nt:4|ms')
  const s = await settled(collector)
  assert.equal(s.processed, 4, JSON.stringify(s.dropped))
  const timer = (await totals(db)).get('t|ms')
  assert.deepEqual([timer.count, timer.sum, timer.min, timer.max], [31, 500000006, 1, 500000000])
  // The mean of the values sent is sum / samples (etsy statsd's mean divides by the values, not the scaled count).
  assert.equal(timer.docs.reduce((n, d) => n + d.samples, 0), 4)
})

test('statsd: affinity is by metric name, computed in the master for each line', () => {
  const lb = Object.create(statsd.Collector.prototype)
  assert.equal(lb.key({ data: Buffer.from('api.hits:1|c'), rinfo: { address: '127.0.0.1', port: 1 } }), 'api.hits')
  assert.equal(statsd.Collector.settings.defaults.distribution, 'hash')
  assert.equal(statsd.Collector.settings.defaults.split, 'lines')
})

test('statsd: through worker kills, counters are exact and no gauge is overwritten by an older line', async (t) => {
  const { collector, db, port } = await startTestCollector(t, statsd)
  const send = await sender(t)
  const metrics = 12
  const rounds = 400
  const loop = killLoop(collector, 700)
  for (let round = 1; round <= rounds; round++) {
    // Every line of a round in one datagram: each metric's counter +1, its gauge the round.
    const lines = []
    for (let m = 0; m < metrics; m++) lines.push(`c${m}:1|c`, `g${m}:${round}|g`)
    await send(port, lines.join('\n'))
    await sleep(10)
  }
  const killed = await loop.stop(2)
  const s = await settled(collector)
  assert.ok(killed >= 2, `workers killed: ${killed}`)
  assert.equal(s.dropped.kernel || 0, 0, 'no datagram lost before the collector (the test sends slowly)')
  assert.equal(s.dropped.total, 0, JSON.stringify(s.dropped))
  assert.deepEqual([s.received, s.processed, s.failed, s.deadLettered || 0], [rounds * metrics * 2, rounds * metrics * 2, 0, 0])
  const sums = await totals(db)
  // A count off by one once in ~30 full-suite runs (not seen alone): said whole, to tell which path.
  const off = [...sums].filter(([key, sum]) => sum.count !== rounds).map(([key, sum]) => `${key} ${sum.count}`)
  if (off.length > 0) t.diagnostic(`off: ${off.join(', ')}; workers: ${JSON.stringify(s.workers)}`)
  for (let m = 0; m < metrics; m++) {
    assert.equal(sums.get(`c${m}|c`).sum, rounds, `counter c${m}: once per line sent`)
    assert.equal(sums.get(`c${m}|c`).count, rounds)
    const gauge = sums.get(`g${m}|g`)
    assert.equal(gauge.count, rounds, `gauge g${m}: every line counted once`)
    for (const doc of gauge.docs) {
      // Values only grow, so the newest line of a minute holds its maximum.
      assert.equal(doc.last.value, doc.max, `g${m} at ${doc.minute.toISOString()}: last ${doc.last.value}, yet ${doc.max} came later`)
    }
  }
})

test('statsd: a master SIGKILLed mid-stream with the disk buffer, then started again: counters exact, gauges the newest', { timeout: 180000 }, async (t) => {
  const path = require('node:path')
  const { MongoClient } = require('mongodb')
  const { getTestMongo, uniqueDbName } = require('../helpers/mongo')
  const { tempBufferDir } = require('../helpers/buffer-dir')
  const { runCollector, withDatabase } = require('../fixtures/foreground-run')
  const { uri } = await getTestMongo()
  const database = uniqueDbName('statsdkill')
  const env = { MONGODB_URI: withDatabase(uri, database), COLLECTOR_BUFFER_DIR: path.join(tempBufferDir(t), 'buffer') }
  const flags = ['-i', '2', '--flush-interval', '200ms']
  // Writes held 5 s: at the kill most lines are on disk and not acknowledged, so the next run replays them.
  const first = await runCollector(t, 'statsd', { flags: ['-i', '2', '--flush-interval', '5s'], env })
  const send = await sender(t)
  const metrics = 6
  const rounds = 1000
  for (let round = 1; round <= rounds; round++) {
    const lines = []
    for (let m = 0; m < metrics; m++) lines.push(`k${m}:2|c`, `v${m}:${round}|g`)
    await send(first.port, lines.join('\n'))
    if (round % 50 === 0) await sleep(5)
  }
  await waitFor(async () => { const s = await first.stats(); return s && s.received === rounds * metrics * 2 && s.buffer.messages + s.processed >= s.received }, { what: 'every line received and on disk or stored', timeout: 30000 })
  const atKill = await first.stats()
  process.kill(first.pid, 'SIGKILL') // the master only: its workers flush what they hold, unacknowledged
  await first.exited
  const second = await runCollector(t, 'statsd', { flags, env })
  const client = await new MongoClient(uri).connect()
  t.after(() => client.close())
  const db = client.db(database)
  const s = await waitFor(async () => { const s = await second.stats(); return s && s.inFlight === 0 && s.buffer.messages === 0 ? s : null }, { what: 'the replay stored and acknowledged', timeout: 90000 })
  t.diagnostic(`at the kill: processed ${atKill.processed} of ${atKill.received}; replayed ${s.replayed}`)
  assert.ok(s.replayed > 0 && s.replayed >= atKill.received - atKill.processed, 'the second run replayed what the first had not seen acknowledged (some of it stored already)')
  const sums = await totals(db)
  for (let m = 0; m < metrics; m++) {
    assert.equal(sums.get(`k${m}|c`).sum, 2 * rounds, `k${m}: each line counted once across the two runs`)
    assert.equal(sums.get(`v${m}|g`).count, rounds)
    for (const doc of sums.get(`v${m}|g`).docs) assert.equal(doc.last.value, doc.max, `v${m}: the newest value of its minute`)
  }
  process.kill(second.pid, 'SIGINT')
  assert.equal((await second.exited).code, 0)
})
