'use strict'

// A collector definition with every part (test/fixtures/events-definition.js)
// on real forked workers and the Java MongoDB server: each sink stores each
// line once through worker kills, the tally and refusals are counted, and
// the last value per user is the line sent last.

const test = require('node:test')
const assert = require('node:assert/strict')
const dgram = require('node:dgram')
const events = require('../fixtures/events-definition')
const { startTestCollector } = require('../helpers/collector')
const { waitFor } = require('../helpers/wait-for')
const { killLoop } = require('../helpers/kill-loop')
const { accountedFor } = require('../../lib/master/counters')

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

test('definition: documents, updates and counters sinks each store every line once through worker kills; enrich, tally and refusals', async (t) => {
  const { collector, db, port } = await startTestCollector(t, events, ['--tag', 'run1'])
  const socket = dgram.createSocket('udp4')
  t.after(() => socket.close())
  const send = (text) => new Promise((resolve, reject) => socket.send(text, port, '127.0.0.1', (err) => err ? reject(err) : resolve()))
  const users = 9
  const rounds = 300
  const sent = { login: 0, click: 0 }
  const loop = killLoop(collector, 600)
  for (let round = 0; round < rounds; round++) {
    const lines = []
    for (let u = 0; u < users; u++) {
      const action = (round + u) % 3 === 0 ? 'login' : 'click'
      sent[action]++
      lines.push(`u${u} ${action}`)
    }
    if (round % 50 === 0) lines.push('not an event at all')
    await send(lines.join('\n'))
    await sleep(8)
  }
  const killed = await loop.stop(2)
  const s = await waitFor(async () => {
    const stats = await collector.stats()
    return stats.inFlight === 0 && accountedFor(stats) ? stats : null
  }, { timeout: 60000, what: 'every line processed or dropped' })
  assert.ok(killed >= 2, `workers killed: ${killed}`)
  assert.equal(s.dropped.badEvent, rounds / 50)
  assert.equal(s.dropped.total, rounds / 50, JSON.stringify(s.dropped))
  assert.equal(s.processed, users * rounds)

  const stored = await db.collection('events').find().toArray()
  assert.equal(stored.length, users * rounds, 'one document per line, none twice')
  assert.ok(stored.every((doc) => doc.tag === 'run1'), 'the setting reached the workers')
  for (const user of await db.collection('users').find().toArray()) {
    assert.equal(user.events, rounds, `${user._id}: one increment per line`)
    const expected = (rounds - 1 + Number(user._id.slice(1))) % 3 === 0 ? 'login' : 'click'
    assert.equal(user.action.value, expected, `${user._id}: the action of the line sent last`)
    assert.ok(user.seen >= 1 && user.seen <= rounds, 'enrich ran, with state per worker')
  }
  const counters = await db.collection('event_counters').find().toArray()
  const daily = (action) => counters.filter((doc) => doc.metric === `events.${action}`).reduce((n, doc) => n + doc.daily, 0)
  assert.deepEqual({ login: daily('login'), click: daily('click') }, sent)

  const live = s.workers.filter((w) => w.custom && w.custom.actions)
  assert.ok(live.length > 0)
  for (const w of live) {
    assert.deepEqual(Object.keys(w.custom.sinks).sort(), ['event_counters', 'events', 'users'])
    assert.ok(Object.keys(w.custom.actions).every((name) => name === 'login' || name === 'click'))
  }
})
