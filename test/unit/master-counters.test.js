'use strict'
// The master's counters have one owner (lib/master/counters.js): each of its
// operations moves exactly the fields it names, nothing else can write them,
// and the reason a refused message is dropped under is chosen in one place
// of the master (Dispatcher#dropRefused, lib/master/dispatcher.js).
const test = require('node:test')
const assert = require('node:assert/strict')
const path = require('node:path')
const { MasterCounters } = require('../../lib/master/counters')
const { LoadBalancer } = require('../..')

// read() as flat `path → number` pairs: 'dropped.queueFull' → 0.
function flat (value, prefix = '', out = {}) {
  for (const [key, v] of Object.entries(value)) {
    if (typeof v === 'object') flat(v, `${prefix}${key}.`, out)
    else out[prefix + key] = v
  }
  return out
}

// What `operation` changed, as `path → difference`; fields it created count from 0.
function moves (counters, operation) {
  const before = flat(counters.read())
  operation(counters)
  const after = flat(counters.read())
  const changed = {}
  for (const [key, value] of Object.entries(after)) {
    const delta = value - (before[key] || 0)
    if (delta !== 0) changed[key] = delta
  }
  return changed
}

test('each operation moves exactly the fields it names', () => {
  const c = new MasterCounters()
  assert.deepEqual(moves(c, (x) => x.accepted(120)), { received: 1, bytes: 120, dispatched: 1 })
  assert.deepEqual(moves(c, (x) => x.dropped('queueFull')), { received: 1, 'dropped.queueFull': 1 })
  assert.deepEqual(moves(c, (x) => x.dropped('bufferFull')), { received: 1, 'dropped.bufferFull': 1 })
  assert.deepEqual(moves(c, (x) => x.dropped('someProtocolsOwn')), { received: 1, 'dropped.someProtocolsOwn': 1 })
  assert.deepEqual(moves(c, (x) => x.droppedAccepted('workerLost', 7)), { 'dropped.workerLost': 7 })
  assert.deepEqual(moves(c, (x) => x.replayed(256)), { replayed: 256 })
  assert.deepEqual(moves(c, (x) => x.deadLettered(12)), { deadLettered: 12 })
  assert.deepEqual(moves(c, (x) => x.kept(9)), { 'buffer.kept': 9 })
  assert.deepEqual(moves(c, (x) => x.damaged(2, 300)), { 'buffer.damagedRecords': 2, 'buffer.damagedBytes': 300 })
  assert.deepEqual(moves(c, (x) => x.listenerRestarted()), { 'restarts.listener': 1 })
  assert.deepEqual(moves(c, (x) => x.event('connections')), { 'events.connections': 1 })
  assert.deepEqual(moves(c, (x) => x.event('connectionsRejected', 'notAllowed')), { 'events.connectionsRejected': 1, 'eventReasons.connectionsRejected.notAllowed': 1 })
  assert.equal(c.event('connectionsRejected', 'perSourceLimit'), 2, 'event() answers with the event\'s count')
})

test('a fresh set of counters lists every drop reason at 0', () => {
  const { received, dropped } = new MasterCounters().read()
  assert.equal(received, 0)
  assert.deepEqual(dropped, { queueFull: 0, oversize: 0, badFrame: 0, empty: 0, partial: 0, workerLost: 0, shutdown: 0, notAllowed: 0, bufferFull: 0, bufferUnreadable: 0 })
})

test('nothing outside the owner can change a counter', () => {
  const c = new MasterCounters()
  c.accepted(10)
  assert.deepEqual(Object.keys(c), [], 'no public fields')
  assert.throws(() => { c.received = 5 }, TypeError)
  assert.throws(() => { c.dropped = {} }, TypeError, 'the operation cannot be replaced either')
  const copy = c.read()
  copy.received = 99
  copy.dropped.queueFull = 99
  copy.buffer.kept = 99
  copy.events.x = 1
  c.event('e', 'r')
  c.read().eventReasons.e.r = 99
  const now = c.read()
  assert.equal(now.received, 1)
  assert.equal(now.dropped.queueFull, 0)
  assert.equal(now.buffer.kept, 0)
  assert.equal(now.events.x, undefined)
  assert.equal(now.eventReasons.e.r, 1)
})

// The decision at its one place, with the pool and disk buffer the master
// would have (a worker: saturated or not; a buffer: full or not).
// `filling`: bytes of the batch each worker is filling; a buffer's `room`: bytes it takes before its bound.
function balancer ({ workers, journal, slotsToCome = 0, filling = 0 }) {
  const lb = new LoadBalancer({ worker: path.join(__dirname, '..', 'fixtures', 'counting-worker.js') })
  const pushed = []
  const holders = Array.from({ length: slotsToCome }, () => ({ state: 'gone', saturated: false, filling: { length: 0 }, push: (m) => pushed.push(m) }))
  const rotation = workers.map((saturated) => ({ state: 'ready', saturated, filling: { length: filling }, push: (m) => pushed.push(m) }))
  lb.pool = { rotation, live: rotation, current: [...rotation, ...holders], holders: () => holders }
  lb.journal = journal && { ...journal, fullWith: (forming) => journal.full || forming >= (journal.room ?? Infinity) }
  return { lb, pushed }
}

const message = { data: Buffer.from('hello'), rinfo: { address: '127.0.0.1', port: 9 } }

test('a refused message is counted once, under the reason the master knows', () => {
  const cases = [
    { name: 'every worker saturated, no buffer', workers: [true, true], journal: null, reason: 'queueFull' },
    { name: 'every worker saturated, buffer full', workers: [true, true], journal: { full: true }, reason: 'bufferFull' },
    { name: 'no worker up, no buffer', workers: [], journal: null, slotsToCome: 2, reason: 'queueFull' },
    { name: 'no worker up, buffer with room, every slot given up', workers: [], journal: { full: false }, reason: 'queueFull' },
    { name: 'no worker up, buffer full', workers: [], journal: { full: true }, slotsToCome: 2, reason: 'bufferFull' },
    { name: 'every worker saturated, the batches being filled reach the buffer\'s bound', workers: [true, true], journal: { full: false, room: 100 }, filling: 50, reason: 'bufferFull' }
  ]
  for (const { name, workers, journal, slotsToCome, filling, reason } of cases) {
    const { lb, pushed } = balancer({ workers, journal, slotsToCome, filling })
    assert.equal(lb.ctx.dispatch(message), false, name)
    assert.deepEqual([lb.summary(null).received, pushed.length], [0, 0], `${name}: a refusal alone counts nothing`)
    lb.ctx.dropRefused()
    const { received, bytes, dispatched, dropped } = lb.summary(null)
    assert.deepEqual({ received, bytes, dispatched, [reason]: dropped[reason], total: dropped.total }, { received: 1, bytes: 0, dispatched: 0, [reason]: 1, total: 1 }, name)
  }
})

test('a message a worker takes is counted once as received and dispatched, forced or not', () => {
  const cases = [
    { name: 'a worker with room', workers: [false, true], journal: null, force: false },
    { name: 'every worker saturated, buffer with room', workers: [true], journal: { full: false }, force: false },
    { name: 'forced past maxInFlight, buffer full', workers: [true], journal: { full: true }, force: true },
    { name: 'no worker up, buffer with room: held for a slot\'s next worker', workers: [], journal: { full: false }, slotsToCome: 2, force: false }
  ]
  for (const { name, workers, journal, slotsToCome, force } of cases) {
    const { lb, pushed } = balancer({ workers, journal, slotsToCome })
    assert.equal(lb.ctx.dispatch(message, force), true, name)
    const { received, bytes, dispatched, dropped } = lb.summary(null)
    assert.deepEqual({ received, bytes, dispatched, dropped: dropped.total, pushed: pushed.length }, { received: 1, bytes: 5, dispatched: 1, dropped: 0, pushed: 1 }, name)
  }
  const { lb } = balancer({ workers: [], journal: { full: false } })
  assert.equal(lb.ctx.dispatch(message, true), false, 'forced, with no worker up, is still refused')
})
