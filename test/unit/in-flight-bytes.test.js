'use strict'

const test = require('node:test')
const assert = require('node:assert/strict')
const { InFlightBytes } = require('../../lib/master/in-flight-bytes')

const batches = (...sizes) => sizes.map((size) => ({ size }))

// A worker's unacknowledged batches as WorkerHandle keeps them: sent in order, acknowledged from the oldest.
function worker (share) {
  const bytes = new InFlightBytes(share)
  const handle = { bytes, unacked: [], acked: 0 }
  handle.send = (...sizes) => { for (const batch of batches(...sizes)) { handle.unacked.push(batch); bytes.sentBatch(batch) } }
  handle.ack = (n, taken, held) => {
    const done = handle.unacked.splice(0, n)
    bytes.acknowledged(done, handle.acked, taken, held, handle.unacked)
    handle.acked += n
  }
  handle.report = (taken, held) => bytes.reported(taken, held, handle.unacked, handle.acked)
  return handle
}

test('in-flight bytes: a worker that says nothing of what it holds counts every batch sent and not acknowledged', () => {
  const w = worker(1000)
  w.send(400, 500)
  assert.equal(w.bytes.value, 900)
  assert.equal(w.bytes.fits({ size: 100 }), true)
  assert.equal(w.bytes.fits({ size: 101 }), false)
  w.report(2, null)
  assert.equal(w.bytes.value, 900, 'a report without held changes nothing')
  w.ack(1, 2, null)
  assert.equal(w.bytes.value, 500)
  assert.equal(w.bytes.near, false)
  w.send(300)
  assert.equal(w.bytes.near, true, '800 of 1000: past WAITS_AT')
  assert.equal(w.bytes.full, false)
})

test('in-flight bytes: batches taken count as what the worker holds of them; those not taken yet, as their bytes', () => {
  const w = worker(1000)
  w.send(400, 500, 600)
  w.report(2, 50) // the first two taken, held as 50 bytes
  assert.equal(w.bytes.value, 650)
  w.send(200)
  assert.equal(w.bytes.value, 850)
  w.report(4, 120)
  assert.equal(w.bytes.value, 120)
  w.ack(3, 4, 30) // three stored; the fourth held as 30
  assert.equal(w.bytes.value, 30)
  w.ack(1, 4, 0)
  assert.equal(w.bytes.value, 0)
  assert.equal(w.bytes.sent, 0)
  assert.equal(w.bytes.taken, 0)
})

test('in-flight bytes: an acknowledgement before any report, a report behind the acknowledgements, and a gone worker', () => {
  const w = worker(1000)
  w.send(100, 200, 300)
  w.ack(2, 2, null) // a worker acknowledging as it processes says nothing of what it holds
  assert.equal(w.bytes.value, 300)
  w.report(2, 10) // a report no further than the acknowledgements: the third is not taken
  assert.equal(w.bytes.value, 310)
  w.report(9, 10) // more than it was sent cannot be: only the third
  assert.equal(w.bytes.value, 10)
  w.ack(1, 3, 0)
  assert.equal(w.bytes.value, 0)
  w.send(700)
  w.bytes.reset()
  assert.equal(w.bytes.value, 0)
  assert.equal(w.bytes.held, null, 'the next worker counts by bytes sent until it says what it holds')
})

test('in-flight bytes: no budget (Infinity) never fills and tells the worker its share as 0', () => {
  const w = worker(Infinity)
  w.send(1e12)
  assert.equal(w.bytes.full, false)
  assert.equal(w.bytes.near, false)
  assert.equal(w.bytes.shareSent, 0)
})

test('held bytes: an updates sink counts the entries of a write in progress, as the documents sink counts its documents', () => {
  const { createSink } = require('../../workers/sink-stores')
  const { HELD_ENTRY_BYTES } = require('../../workers/sink')
  const sink = createSink({ kind: 'updates', collection: 'c', of: (record) => record })
  sink.accept([{ _id: 'a', inc: { n: 1 } }, { _id: 'b', inc: { n: 1 } }, { _id: 'a', inc: { n: 1 } }], { mark: null, index: 0 })
  assert.equal(sink.heldBytes, 2 * HELD_ENTRY_BYTES, 'two keys, however many updates')
  const taken = sink.take()
  assert.equal(sink.size, 0, 'nothing pending while the write is in progress')
  assert.equal(sink.heldBytes, 2 * HELD_ENTRY_BYTES, 'what is being written is still held')
  sink.accept([{ _id: 'c', inc: { n: 1 } }], { mark: null, index: 1 })
  assert.equal(sink.heldBytes, 3 * HELD_ENTRY_BYTES)
  sink.putBack(taken)
  assert.equal(sink.heldBytes, 3 * HELD_ENTRY_BYTES, 'a write that failed gives them back: counted once')
})
