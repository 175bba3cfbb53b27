'use strict'

// A counters sink's cap on sender-chosen keys (workers/counter-key-cap.js)
// against a worker's death, on the real server: the syslog definition's
// counters sink, two instances standing for a worker and its heir given the
// same batch again. The dead worker's choice (its own key, or `otherwise`
// past the cap) was its memory's; its heir must count each line where it
// was counted, once, never under both.

const test = require('node:test')
const assert = require('node:assert/strict')
const { MongoClient } = require('mongodb')
const { getTestMongo, uniqueDbName } = require('../helpers/mongo')
const { createSink } = require('../../workers/sink-stores')
const syslog = require('../../collectors/syslog')

const spec = syslog.definition.sinks.find((sink) => sink.kind === 'counters')
let client
test.after(() => client && client.close())

async function sinkPair () {
  const { uri } = await getTestMongo()
  if (!client) client = await new MongoClient(uri).connect()
  const db = client.db(uniqueDbName('keycap'))
  const make = async () => {
    const sink = createSink(spec, { countersCollection: 'counters', maxNewHostsPerMinute: 1 }, null)
    await sink.prepare(db)
    return sink
  }
  return { db, dead: await make(), heir: await make() }
}

const receivedAt = new Date()
const messages = [{ receivedAt }, { receivedAt }]
const lines = [{ host: 'h1', severityName: 'err' }, { host: 'h2', severityName: 'err' }]
const batch = { origin: 'run1|0', batchId: 7, seq: 1, receivedAt: +receivedAt }

function take (sink, redelivered) {
  const mark = { ...batch, redelivered }
  lines.forEach((line, i) => {
    const message = { receivedAt, remote: { address: '10.0.0.1' } }
    sink.accept(sink.shape(line, message), { message, mark, redelivered, record: 0, index: i })
  })
}

async function counted (db) {
  return Object.fromEntries((await db.collection('counters').find().toArray()).map((doc) => [doc.metric, doc.daily]))
}

test('a worker that counted a line past the cap under (other hosts), then died: its heir counts the batch again where it was counted, once', async () => {
  const { db, dead, heir } = await sinkPair()
  take(dead, false) // h1 taken (the share is 1), h2 past it
  await dead.write(dead.take())
  assert.deepEqual(await counted(db), { 'syslog.h1.err': 1, 'syslog.(other hosts)': 1 })
  await heir.prepareRedelivered(messages, batch)
  take(heir, true)
  await heir.write(heir.take())
  assert.deepEqual(await counted(db), { 'syslog.h1.err': 1, 'syslog.(other hosts)': 1 }, 'two lines, counted twice')
})

test('a worker that died before its counts were written: its heir counts each line under its own host (its cap is not the dead worker\'s)', async () => {
  const { db, dead, heir } = await sinkPair()
  take(dead, false) // held, never written
  await heir.prepareRedelivered(messages, batch)
  take(heir, true)
  await heir.write(heir.take())
  // (other hosts) covers the batch too, with nothing added: a late write of the dead worker's is refused there.
  assert.deepEqual(await counted(db), { 'syslog.h1.err': 1, 'syslog.h2.err': 1, 'syslog.(other hosts)': 0 })
})

test('a master SIGKILLed, its worker still flushing while the next run replays: whichever writes first, each line is counted once', async () => {
  const { db, dead, heir } = await sinkPair()
  take(dead, false) // the orphan: h2 past its cap, under (other hosts), not written yet
  await heir.prepareRedelivered(messages, batch)
  take(heir, true) // the next run's worker: nothing stored yet, each under its host
  await heir.write(heir.take())
  await dead.write(dead.take()) // the orphan's flush lands late
  const stored = await counted(db)
  assert.equal(Object.values(stored).reduce((a, b) => a + b, 0), 2, JSON.stringify(stored))
  assert.deepEqual([stored['syslog.h1.err'], stored['syslog.h2.err']], [1, 1])
})

test('a dead worker\'s write still on the wire lands after its heir prepared the batch, before the heir\'s counts: each line counted once', async () => {
  const { db, dead, heir } = await sinkPair()
  take(dead, false) // h1 under its host, h2 past the cap: under (other hosts)
  await heir.prepareRedelivered(messages, batch) // the heir decides while the dead worker's write is on its way
  await dead.write(dead.take()) // it lands now
  take(heir, true)
  await heir.write(heir.take())
  const stored = await counted(db)
  assert.equal(Object.values(stored).reduce((a, b) => a + b, 0), 2, JSON.stringify(stored))
  assert.equal(stored['syslog.h1.err'], 1, JSON.stringify(stored))
})

test('a capped count cannot carry its own time: refused as the definition\'s mistake, naming the sink', () => {
  const { sinks } = require('../..')
  const declared = sinks.counters({ otherwise: 'other', maxNewKeysPerMinute: 10, of: (r) => ({ metric: `m.${r.host}`, key: r.host, at: r.at }) })
  const sink = createSink(declared, {}, null)
  assert.throws(() => sink.shape({ host: 'h1', at: Date.now() - 3 * 86400000 }, { receivedAt }), { name: 'TypeError', message: /^counters sink of counters: of\(\) gave at .* with key "h1": a count whose key is capped is counted at its message's arrival$/ })
  assert.throws(() => sinks.counters({ maxNewKeysPerMinute: 10, of: () => null }), /needs otherwise, the metric counted past it/)
})
