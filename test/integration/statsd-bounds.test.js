'use strict'

// The StatsD collector against a hostile sender (issue 36): numbers that
// would store Infinity or NaN, and a flood of new metric names. Real forked
// workers, real UDP on port 0, the Java MongoDB server; the master's
// counters balance after each.

const test = require('node:test')
const assert = require('node:assert/strict')
const dgram = require('node:dgram')
const statsd = require('../../collectors/statsd')
const { startTestCollector } = require('../helpers/collector')
const { captureLogger } = require('../helpers/capture-logger')
const { waitFor } = require('../helpers/wait-for')
const { accountedFor } = require('../../lib/master/counters')

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

/** The StatsD collector on port 0 with `flags`, its database and a recording logger. */
async function startStatsd (t, flags = []) {
  const { logger, records } = captureLogger()
  return { ...await startTestCollector(t, statsd, flags, { logger }), records }
}

/** A UDP socket bound to `address` (any 127.x.y.z is this host): send(port, text). */
async function sender (t, address = '127.0.0.1') {
  const socket = dgram.createSocket('udp4')
  await new Promise((resolve) => socket.bind(0, address, resolve))
  t.after(() => socket.close())
  return (port, text) => new Promise((resolve, reject) => socket.send(text, port, '127.0.0.1', (err) => err ? reject(err) : resolve()))
}

function settled (collector, received) {
  return waitFor(async () => {
    const s = await collector.stats()
    return s.received === received && s.inFlight === 0 && accountedFor(s) ? s : null
  }, { timeout: 60000, what: `${received} lines processed or dropped` })
}

test('statsd: values and rates that would store Infinity or NaN are refused as valueRange; what is stored stays finite and exact', async (t) => {
  const { collector, db, port } = await startStatsd(t)
  const send = await sender(t)
  // One counter: Infinity, then -Infinity (their sum NaN), then 5.
  await send(port, 'x:1e400|c\nx:-1e400|c\nx:5|c')
  await send(port, `y:1|c|@1e-320\ng:1e400|g\ng:-1e400|g\nt:1e400|ms\nbig:${Number.MAX_SAFE_INTEGER}|g\nbytes:${2 ** 32}|c`)
  const s = await settled(collector, 9)
  assert.equal(s.processed, 3, 'x:5, big and bytes')
  assert.deepEqual({ valueRange: s.dropped.valueRange, gaugeDelta: s.dropped.gaugeDelta }, { valueRange: 5, gaugeDelta: 1 })
  assert.equal(s.dropped.total, 6)
  assert.equal(s.received, s.processed + s.failed + s.dropped.total)
  const docs = await db.collection('metrics').find().toArray()
  const byName = Object.fromEntries(docs.map((doc) => [doc.name, doc]))
  assert.deepEqual(Object.keys(byName).sort(), ['big', 'bytes', 'x'])
  assert.deepEqual([byName.x.count, byName.x.sum], [1, 5], 'the counter holds the one finite line, exactly')
  assert.deepEqual([byName.big.min, byName.big.max, byName.big.last.value], [Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER])
  assert.equal(byName.bytes.sum, 2 ** 32)
  for (const doc of docs) {
    for (const field of ['sum', 'min', 'max']) if (doc[field] !== undefined) assert.ok(Number.isFinite(doc[field]), `${doc.name}.${field} = ${doc[field]}`)
  }
})

test('statsd: new names beyond --max-new-keys-per-minute are refused as newKeyLimit, names already known keep being stored exactly, the log names the sender', async (t) => {
  const { collector, db, port, records } = await startStatsd(t, ['--max-new-keys-per-minute', '20'])
  const known = Array.from({ length: 6 }, (_, i) => `known${i}`)
  const honest = await sender(t, '127.0.0.1')
  const hostile = await sender(t, '127.0.0.2')
  const rounds = 5
  let sent = 0
  await honest(port, known.map((name) => `${name}:1|c`).join('\n'))
  sent += known.length
  await settled(collector, sent)
  const flood = 300
  for (let i = 0; i < flood; i += 30) {
    await hostile(port, Array.from({ length: 30 }, (_, j) => `spam${i + j}:1|c`).join('\n'))
    sent += 30
    if (i % 90 === 0) {
      // Known names keep coming through the flood.
      await honest(port, known.map((name) => `${name}:1|c`).join('\n'))
      sent += known.length
    }
    await sleep(5)
  }
  for (let round = 2; round < rounds; round++) {
    await honest(port, known.map((name) => `${name}:1|c`).join('\n'))
    sent += known.length
  }
  const s = await settled(collector, sent)
  const honestLines = sent - flood
  const refused = s.dropped.newKeyLimit || 0
  const docs = await db.collection('metrics').find().toArray()
  const spamStored = new Set(docs.filter((doc) => doc.name.startsWith('spam')).map((doc) => doc.name)).size
  t.diagnostic(`refused ${refused} of ${flood} new names; stored ${spamStored}`)
  assert.ok(refused > 0, 'the flood went past the cap')
  assert.ok(spamStored <= 2 * 20, `at most the cap in each of (at most) two minutes the test spans: ${spamStored}`)
  assert.equal(spamStored + refused, flood, 'each new name either stored or refused by name')
  assert.equal(s.dropped.total, refused)
  assert.equal(s.received, s.processed + s.failed + s.dropped.total)
  for (const name of known) {
    const counts = docs.filter((doc) => doc.name === name)
    assert.equal(counts.reduce((n, doc) => n + doc.sum, 0), honestLines / known.length, `${name}: every line stored, none refused`)
  }
  const perWorker = s.workers.reduce((n, w) => n + ((w.custom && w.custom.newKeys && w.custom.newKeys.refused) || 0), 0)
  assert.equal(perWorker, refused, 'the workers count the refused records')
  const line = records.find((r) => r.fields && r.fields.busiestSource)
  assert.ok(line, `a log line names the busiest source: ${JSON.stringify(records.map((r) => r.msg))}`)
  assert.equal(line.fields.busiestSource, '127.0.0.2')
  assert.match(line.msg, /maxNewKeysPerMinute/)
})
