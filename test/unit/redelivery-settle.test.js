'use strict'

// A worker given a dead worker's batches, where first deliveries' upserts
// are not guarded, waits once per dead worker before writing them again
// (workers/storage/redelivery-watermarks.js settle).

const test = require('node:test')
const assert = require('node:assert/strict')
const { RedeliveryWatermarks } = require('../../workers/storage/redelivery-watermarks')

// Whether `promise` settles within `ms` (a promise that waits longer is still pending then).
function settlesWithin (promise, ms) {
  return Promise.race([promise.then(() => true), new Promise((resolve) => setTimeout(() => resolve(false), ms))])
}

test('unguarded: the first redelivered batch of a dead worker waits; its next ones, and another origin once waited for, do not', async () => {
  const watermarks = new RedeliveryWatermarks(100, 300)
  assert.equal(await settlesWithin(watermarks.settle('run|0', false), 100), false, 'the first waits')
  assert.equal(await settlesWithin(watermarks.settle('run|0', false), 100), true, 'the next does not')
  const other = watermarks.settle('run|1', false)
  assert.equal(await settlesWithin(other, 100), false, 'another dead worker waits too')
  assert.equal(await settlesWithin(other, 400), true, 'for settleMs')
})

test('guarded (MongoDB): no wait', async () => {
  const watermarks = new RedeliveryWatermarks(100, 300)
  assert.equal(await settlesWithin(watermarks.settle('run|0', true), 100), true)
})
