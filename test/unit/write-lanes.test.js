'use strict'

const test = require('node:test')
const assert = require('node:assert/strict')
const { WriteLanes } = require('../../workers/storage/write-lanes')

test('write lanes: more bulk writes at once while the server keeps its time per document, fewer once it queues them', () => {
  const lanes = new WriteLanes({ initial: 1, max: 4 })
  for (let i = 0; i < 5; i++) lanes.record(1000, 50) // 0.05 ms a document, steady
  assert.equal(lanes.size, 4, 'grown to the most while the server keeps up')
  lanes.record(1000, 400) // 8× the best: the writes wait on each other
  assert.equal(lanes.size, 2, 'halved')
  lanes.record(1000, 400)
  assert.equal(lanes.size, 1)
  lanes.record(1000, 400)
  assert.equal(lanes.size, 1, 'never below one')
  lanes.record(0, 0)
  assert.equal(lanes.size, 1, 'an empty write says nothing')
})

test('write lanes: the best time drifts up, so a slower server for good is served by more lanes again', () => {
  const lanes = new WriteLanes({ initial: 4, max: 4 })
  lanes.record(1000, 10) // one very fast write
  let size = 0
  for (let i = 0; i < 60; i++) size = lanes.record(1000, 100) // 10× slower from now on
  assert.equal(size, 4, `back to 4 once the new pace is the best seen (now ${lanes.best.toFixed(3)} ms a document)`)
})
