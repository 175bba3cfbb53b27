'use strict'
// The example of docs/writing-collectors.md, run as a user runs it:
// `collector run ./examples/metrics-collector` over UDP and TCP into the test
// database, counters checked to the unit, then SIGINT.
const test = require('node:test')
const assert = require('node:assert/strict')
const dgram = require('node:dgram')
const net = require('node:net')
const { MongoClient } = require('mongodb')
const { getTestMongo, uniqueDbName } = require('../helpers/mongo')
const { runCollector, waitFor } = require('../fixtures/foreground-run')
const { accountedFor } = require('../..')

const EXAMPLE = './examples/metrics-collector'

async function sendDatagrams (port, payloads) {
  const socket = dgram.createSocket('udp4')
  try {
    for (let i = 0; i < payloads.length; i++) {
      await new Promise((resolve, reject) => socket.send(payloads[i], port, '127.0.0.1', (err) => err ? reject(err) : resolve()))
      if (i % 100 === 99) await new Promise((resolve) => setTimeout(resolve, 5))
    }
  } finally {
    socket.close()
  }
}

async function sendLines (port, lines) {
  const socket = net.connect(port, '127.0.0.1')
  await new Promise((resolve, reject) => socket.once('connect', resolve).once('error', reject))
  await new Promise((resolve) => socket.end(lines.map((l) => `${l}\n`).join(''), resolve))
}

// Sum of `daily` per metric over the counter documents (one per metric and day).
async function dailyTotals (uri, database) {
  const client = await new MongoClient(uri).connect()
  try {
    const totals = {}
    for (const doc of await client.db(database).collection('counters').find().toArray()) totals[doc.metric] = (totals[doc.metric] || 0) + doc.daily
    return totals
  } finally {
    await client.close()
  }
}

async function runExample (t, flags) {
  const { uri } = await getTestMongo()
  const database = uniqueDbName('metrics')
  const run = await runCollector(t, EXAMPLE, { flags: ['-i', '2', '--database', database, '--flush-interval', '50ms', ...flags], env: { MONGODB_URI: uri } })
  return { run, uri, database }
}

async function stopAndCheck (run, sent) {
  await waitFor(async () => {
    const s = await run.stats()
    return s && s.processed + s.dropped.total >= sent && s.inFlight === 0
  }, { what: 'every message processed or dropped', timeout: 30000 })
  const stats = await run.stats()
  run.child.kill('SIGINT')
  const { code, stderr } = await run.exited
  assert.equal(code, 0, stderr)
  assert.ok(accountedFor(stats), JSON.stringify(stats))
  return stats
}

test('metrics example over UDP: counters, timers and a prefix stored per minute; each line a message, bad lines refused by reason', { timeout: 90000 }, async (t) => {
  const { run, uri, database } = await runExample(t, ['--prefix', 'app.'])
  const payloads = []
  for (let i = 0; i < 400; i++) payloads.push('requests:1|c')
  for (let i = 0; i < 100; i++) payloads.push('latency:20|ms\nlatency:40|ms\nerrors:1|c|@0.5')
  for (let i = 0; i < 20; i++) payloads.push('not a metric')
  for (let i = 0; i < 10; i++) payloads.push('requests:1|c\nrequests:x|c')
  await sendDatagrams(run.port, payloads)
  const lines = 400 + 300 + 20 + 20
  const stats = await stopAndCheck(run, lines)
  assert.equal(stats.received, lines, 'each line of a datagram is a message')
  assert.equal(stats.dropped.badMetric, 30, 'every bad line refused by reason')
  assert.equal(stats.processed, lines - 30)
  assert.deepEqual(await dailyTotals(uri, database), {
    'app.requests': 410,
    'app.latency.sum': 6000,
    'app.latency.count': 200,
    'app.errors': 200
  })
})

test('metrics example over TCP (newline framing) and a bad flag refused before it starts', { timeout: 90000 }, async (t) => {
  const { run, uri, database } = await runExample(t, ['--protocol', 'tcp_server'])
  const lines = []
  for (let i = 0; i < 300; i++) lines.push(`jobs.done:${i % 3}|c`, `queue.depth:${i}|g`)
  await sendLines(run.port, lines.slice(0, 300))
  await sendLines(run.port, lines.slice(300))
  await stopAndCheck(run, lines.length)
  assert.deepEqual(await dailyTotals(uri, database), {
    'jobs.done': 300,
    'queue.depth.sum': (299 * 300) / 2,
    'queue.depth.count': 300
  })

  const bad = await runCollector(t, EXAMPLE, { flags: ['--prefix', 'no dots'] }).then(() => null, (err) => err)
  assert.ok(bad, 'a bad --prefix must not start')
  assert.match(bad.message, /--prefix: must be dot-separated/)
})

test('the example\'s counters sink counts exactly once while workers are SIGKILLed mid-stream', { timeout: 120000 }, async (t) => {
  const { killLoop } = require('../helpers/kill-loop')
  const { settled } = require('../helpers/lb')
  const MetricsCollector = require('../../examples/metrics-collector').Collector
  const { uri } = await getTestMongo()
  const database = uniqueDbName('metrics')
  const collector = new MetricsCollector({ port: 0, instances: 2, database, flushInterval: 50, workerOptions: { mongoUri: uri } })
  t.after(() => collector.stop())
  await collector.start()
  const kills = killLoop(collector, 700)
  const payloads = []
  for (let i = 0; i < 6000; i++) payloads.push(`hits.${i % 7}:1|c`)
  for (let i = 0; i < payloads.length; i += 500) {
    await sendDatagrams(collector.address().port, payloads.slice(i, i + 500))
    await new Promise((resolve) => setTimeout(resolve, 150))
  }
  const killed = await kills.stop(2)
  assert.ok(killed >= 2, `only ${killed} kills`)
  const summary = await settled(collector)
  assert.equal(summary.received, payloads.length)
  assert.equal(summary.dropped.total, 0, JSON.stringify(summary.dropped))
  await collector.stop()
  const totals = await dailyTotals(uri, database)
  assert.equal(Object.values(totals).reduce((a, b) => a + b, 0), payloads.length, JSON.stringify(totals))
  for (let k = 0; k < 7; k++) assert.equal(totals[`hits.${k}`], payloads.filter((p) => p.startsWith(`hits.${k}:`)).length)
})
