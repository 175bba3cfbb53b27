'use strict'

// A new user's mistakes in a definition (test/fixtures/mistakes-definition.js),
// on real forked workers and the Java MongoDB server: an `of` that throws
// part-way through a message's records, or gives what its sink cannot store
// (an update without its key, a non-numeric inc, a metric that is not a
// name, a document that is not an object, a function where a value goes,
// which BSON would leave out without a word, an Invalid Date, which it
// would store as 1970-01-01), and a decode that returns
// undefined or a Promise. Each fails its message whole: counted `failed`,
// said in one log line naming the sink or the hook, nothing of the message
// stored in any sink, and the worker goes on storing what comes after.

const test = require('node:test')
const assert = require('node:assert/strict')
const dgram = require('node:dgram')
const mistakes = require('../fixtures/mistakes-definition')
const { startTestCollector } = require('../helpers/collector')
const { captureLogger } = require('../helpers/capture-logger')
const { waitFor } = require('../helpers/wait-for')
const { accountedFor } = require('../../lib/master/counters')

const WRONG = ['throwat 5', 'str 2', 'badinc 4', 'noid 3', 'badmetric 2', 'undef 0', 'promise 3', 'method 2', 'setfn 2', 'baddate 2', 'num 3']

test('definition mistakes fail their message whole, counted and said once, nothing of it stored, and what follows is stored', { timeout: 60000 }, async (t) => {
  const { logger, records } = captureLogger()
  const { collector, db, port } = await startTestCollector(t, mistakes, [], { instances: 1, logger })
  const socket = dgram.createSocket('udp4')
  t.after(() => socket.close())
  const send = (text) => new Promise((resolve, reject) => socket.send(text, port, '127.0.0.1', (err) => err ? reject(err) : resolve()))
  await send('ok 4')
  for (const [i, line] of WRONG.entries()) {
    await send(line)
    // One failure line a second at most (a flood of them is one line): one mistake a second.
    await waitFor(async () => (await collector.stats()).failed === i + 1, { what: `${line} failed` })
    await new Promise((resolve) => setTimeout(resolve, 1100))
  }
  await send('ok 6') // after them: stored, acknowledged
  const s = await waitFor(async () => {
    const stats = await collector.stats()
    return stats.received === WRONG.length + 2 && stats.inFlight === 0 && accountedFor(stats) ? stats : null
  }, { timeout: 30000, what: 'every message processed or failed' })
  assert.equal(s.failed, WRONG.length, 'each wrong message failed')
  assert.equal(s.processed, 2)
  await waitFor(async () => await db.collection('mistake_docs').countDocuments() === 10, { what: 'the ok messages\' documents stored' })
  const docs = await db.collection('mistake_docs').find().toArray()
  assert.deepEqual([...new Set(docs.map((d) => d.mode))], ['ok'], 'nothing of a failed message, not even its records before the mistake')
  assert.deepEqual(await db.collection('mistake_sums').find().toArray(), [{ _id: 'ok', n: 10, ...(await db.collection('mistake_sums').findOne({ _id: 'ok' }, { projection: { _id: 0, n: 0 } })) }], 'one sum, of the ok records')
  const metrics = await db.collection('mistake_counts').distinct('metric')
  assert.deepEqual(metrics, ['mistakes.ok'])
  const said = records.filter((r) => r.level === 'error' && r.fields.err).map((r) => `${r.fields.err.type}: ${r.fields.err.message}`).join('\n')
  for (const expected of [
    /TypeError: Cannot read properties of undefined \(reading 'deep'\)/,
    /documents sink of mistake_docs: of\(\) gave "doc 0", not a document \(an object\)/,
    /updates sink of mistake_sums: of\(\) gave inc\.n "one", not a finite number/,
    /updates sink of mistake_sums: of\(\) gave an update without its key \(_id\)/,
    /counters sink of mistake_counts: of\(\) gave metric 42, not a non-empty string/,
    /decode returned undefined: return null when a message has nothing to store/,
    /decode returned a Promise: decode and enrich are synchronous/,
    /documents sink of mistake_docs: of\(\) gave a document whose at is a function or a symbol, which BSON leaves out/,
    /updates sink of mistake_sums: of\(\) gave an update whose set\.last\.line is a function or a symbol, which BSON leaves out/,
    /documents sink of mistake_docs: of\(\) gave a document whose at is an Invalid Date, which BSON stores as 1970-01-01/,
    /decode or enrich gave a record that is a number: a record is an object/
  ]) assert.match(said, expected)
  // What went wrong is on the log line itself, not in its fields only (QA).
  assert.ok(records.some((r) => r.level === 'error' && r.msg === 'doWork failed: decode returned undefined: return null when a message has nothing to store (a missing return?)'), records.map((r) => r.msg).join('\n'))
})

// QA: on the native receive path a key() that threw on a sender's bytes
// crashed the master (an uncaught exception); on node:dgram it was said as
// "distribute() failed".
for (const receiver of ['native', 'dgram']) {
  test(`a key() that throws on a sender's bytes or gives what is not a key (${receiver} receiver): the message goes by its sender, counted in events.keyErrors and said as key()'s, and everything is stored`, { timeout: 60000 }, async (t) => {
    const { logger, records } = captureLogger()
    const { collector, db, port } = await startTestCollector(t, require('../fixtures/throwing-key-definition'), ['--udp-receiver', receiver], { logger })
    const socket = dgram.createSocket('udp4')
    t.after(() => socket.close())
    // and one whose key is an object, hashed as "[object Object]" before: all such on one worker, nothing said (QA)
    const lines = ['{"host":"a"}', 'not json', '{"host":"b"}', '{', '{"host":"a"}', 'x', '{"host":{"name":"c"}}']
    for (const line of lines) await new Promise((resolve, reject) => socket.send(line, port, '127.0.0.1', (err) => err ? reject(err) : resolve()))
    const s = await waitFor(async () => {
      const stats = await collector.stats()
      return stats.processed === lines.length && stats.inFlight === 0 ? stats : null
    }, { what: 'every datagram stored' })
    assert.equal(s.events.keyErrors, 4)
    assert.equal(s.events.distributeErrors || 0, 0)
    assert.deepEqual((await db.collection('keyed').find().toArray()).map((d) => d.text).sort(), [...lines].sort())
    const said = records.filter((r) => r.level === 'error').map((r) => r.msg)
    assert.equal(said.filter((m) => /^key\(\) failed on a message: .*JSON.*; such messages go by their sender's address \(counted in events\.keyErrors\)$/.test(m)).length, 1, said.join('\n'))
  })
}
