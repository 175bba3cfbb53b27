'use strict'
// How the native receive path picks a worker for a batch entry is decided
// once, from what the balancer declares (lib/master/dispatcher.js
// entryPlan), and says why: a distribute() of one's own is honoured for
// every datagram, a key() with entryKey() needs no message, and a key()
// without it builds one. Checked through the dispatcher on real batch bytes
// with stand-in workers.
const test = require('node:test')
const assert = require('node:assert/strict')
const path = require('node:path')
const { LoadBalancer, batchEntry } = require('../..')
const { entrySize, writeEntry } = require('../../lib/shared/batch-codec')

const WORKER = path.join(__dirname, '..', 'fixtures', 'counting-worker.js')

// Datagrams from three sources, in batch format.
function batchOf (datagrams) {
  const buf = Buffer.alloc(datagrams.reduce((n, d) => n + entrySize(Buffer.from(d.data), d.address), 0))
  let end = 0
  for (const d of datagrams) end = writeEntry(buf, end, Buffer.from(d.data), d.address, d.port)
  return { buf, end }
}

const DATAGRAMS = Array.from({ length: 12 }, (_, i) => ({ data: `call-${i % 4} #${i}`, address: `127.0.0.${1 + (i % 3)}`, port: 5000 + (i % 3) }))

// Prepares the plan as start() does, with two stand-in workers; returns what each took.
function run (lb) {
  const taken = [[], []]
  lb.pool = { rotation: [0, 1].map((slot) => ({ slot, state: 'ready', saturated: false, inFlight: 0, pushEntry: (buf, offset, next) => taken[slot].push(buf.toString('latin1', offset, next)) })) }
  lb.dispatcher.prepare(lb._declared())
  const { buf, end } = batchOf(DATAGRAMS)
  lb.ctx.dispatchEntries(buf, end)
  assert.equal(lb.summary(null).dispatched, DATAGRAMS.length, 'every datagram dispatched once')
  return { plan: lb.dispatcher.plan, taken: taken.map((entries) => entries.length) }
}

class OwnDistribute extends LoadBalancer {
  distribute (workers, message) {
    this.asked = (this.asked || 0) + 1
    return workers[message.data.toString().startsWith('call-0') ? 1 : 0]
  }
}

// The call in the payload, as an RTCP collector would key it (a string key, hashed).
class CallKey extends LoadBalancer {
  key (message) { return message.data.toString().split(' ')[0] }
}

// As a user writes it, from the package's batchEntry (the entry's layout is not theirs to know).
class CallEntryKey extends CallKey {
  entryKey (buf, offset) {
    this.read = (this.read || 0) + 1
    return buf.toString('latin1', batchEntry.dataStart(buf, offset), batchEntry.dataEnd(buf, offset)).split(' ')[0]
  }
}

test('a distribute() of its own is asked for every datagram of the native path, and the plan says why', () => {
  const lb = new OwnDistribute({ worker: WORKER })
  const { plan, taken } = run(lb)
  assert.equal(plan.strategy, null)
  assert.match(plan.describe, /per message: OwnDistribute has a distribute\(\) of its own/)
  assert.equal(lb.asked, DATAGRAMS.length)
  assert.deepEqual(taken, [9, 3], 'the three call-0 datagrams on worker 1, as distribute() said')
})

test('built-in distributions choose from the entry bytes without a message', () => {
  const rr = run(new LoadBalancer({ worker: WORKER }))
  assert.equal(rr.plan.describe, 'per entry')
  assert.deepEqual(rr.taken, [6, 6], 'round-robin alternates')
  const hashed = run(new LoadBalancer({ worker: WORKER, distribution: 'hash' }))
  assert.equal(hashed.plan.describe, 'per entry')
  assert.equal(hashed.taken[0] % 4, 0, 'one source (four datagrams) lands on one worker')
})

test('hash on a key() of its own: per entry with entryKey(), per message without, each the same choice as key()', () => {
  const withEntryKey = new CallEntryKey({ worker: WORKER, distribution: 'hash' })
  const a = run(withEntryKey)
  assert.equal(a.plan.describe, 'per entry: hash of entryKey()')
  assert.equal(withEntryKey.read, DATAGRAMS.length)
  const b = run(new CallKey({ worker: WORKER, distribution: 'hash' }))
  assert.match(b.plan.describe, /per message: CallKey has a key\(\) without entryKey\(\)/)
  assert.deepEqual(a.taken, b.taken, 'entryKey() and key() give each call the same worker')
  assert.equal(a.taken[0] % 3, 0, 'one call (three datagrams) lands on one worker')
  const rr = run(new CallKey({ worker: WORKER }))
  assert.equal(rr.plan.describe, 'per entry', 'round-robin never reads a key')
})

test('a distribution function of the user\'s builds a message per datagram', () => {
  const seen = []
  const lb = new LoadBalancer({ worker: WORKER, distribution: (workers, message) => { seen.push(message.rinfo.address); return workers[0] } })
  const { plan, taken } = run(lb)
  assert.equal(plan.describe, 'per message: distribution is a function of its own')
  assert.deepEqual(taken, [12, 0])
  assert.deepEqual(seen, DATAGRAMS.map((d) => d.address))
})

// parts() as a class field (or set in a subclass's constructor) exists only
// once LoadBalancer's constructor has returned: the dispatcher, which read
// it there, never split, while the balancer declared it (reuseport refused it).
class FieldParts extends LoadBalancer {
  parts = (buf, start, end) => [buf.subarray(start, start + 6), buf.subarray(start + 6, end)]
}

test('a parts() given as a class field splits as a method does', () => {
  const lb = new FieldParts({ worker: WORKER })
  const taken = []
  lb.pool = { rotation: [0, 1].map((slot) => ({ slot, state: 'ready', saturated: false, inFlight: 0, push: (message) => taken.push(message.data.toString('latin1')), pushEntry: (buf, offset, next) => taken.push('whole') })) }
  lb.dispatcher.prepare(lb._declared())
  const { buf, end } = batchOf(DATAGRAMS)
  lb.ctx.dispatchEntries(buf, end)
  assert.equal(lb.summary(null).dispatched, DATAGRAMS.length * 2, 'each datagram two parts, each counted')
  assert.deepEqual(taken.slice(0, 2), ['call-0', ' #0'])
  assert.throws(() => new FieldParts({ worker: WORKER, split: 'lines' }).dispatcher.prepare({ parts: true }), /split.*cannot be combined with a collector that splits its messages itself/)
})
