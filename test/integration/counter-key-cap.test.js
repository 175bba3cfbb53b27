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
  assert.deepEqual(await counted(db), { 'syslog.h1.err': 1, 'syslog.h2.err': 1 })
})
