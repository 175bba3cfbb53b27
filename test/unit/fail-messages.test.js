'use strict'
// A store that gives up what the server refused for good turns the
// messages behind it from processed to failed (WorkerRuntime#failMessages):
// each message once, however many of its documents, chunks or sinks name
// it; one still in doWork is counted failed when it finishes, not twice.
const test = require('node:test')
const assert = require('node:assert/strict')
const WorkerRuntime = require('../../lib/worker/worker-runtime')

// The runtime's counting state alone: an acknowledged-pending batch 1 of 5
// messages, and batch 2 being run, at its message 3.
function runtimeAt () {
  const done = { seq: 1, processed: 5, failed: 0 }
  const current = { seq: 2, processed: 3, failed: 0 }
  const runtime = Object.assign(Object.create(WorkerRuntime.prototype), { unacked: [done], batch: current, completed: 1, index: 3, processed: 8, failed: 0, dropReason: null })
  return { runtime, done, current }
}

test('failMessages: each message of a batch once, processed to failed; the worker\'s totals move with it', () => {
  const { runtime, done } = runtimeAt()
  runtime.failMessages(1, new Set([1, 4]))
  runtime.failMessages(1, [4, 1, 4]) // named again: by another chunk, another sink
  assert.deepEqual([done.processed, done.failed], [3, 2])
  assert.deepEqual([runtime.processed, runtime.failed], [6, 2])
  runtime.failMessages(9, [0]) // a batch no longer held: nothing to move
  assert.deepEqual([runtime.processed, runtime.failed], [6, 2])
})

test('failMessages: the message still in doWork is counted failed when done, not processed, and only then', () => {
  const { runtime, current } = runtimeAt()
  runtime.failMessages(2, [1, 3])
  assert.deepEqual([current.processed, current.failed], [2, 1], 'message 1, done already, moves now')
  runtime.done(current) // message 3 finishes
  assert.deepEqual([current.processed, current.failed], [2, 2])
  assert.deepEqual([runtime.processed, runtime.failed], [7, 2])
  runtime.index = 4
  runtime.done(current) // message 4: not named, processed
  assert.deepEqual([current.processed, current.failed], [3, 2])
})
