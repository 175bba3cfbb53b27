'use strict'

// What the leader's background jobs log when a pass fails: nothing while
// the database is away (the worker says that, once a while: during a 2-minute
// outage an operator counted 21 five-line "stream sweep failed" blocks with
// an empty stack), one line naming the error otherwise.

const test = require('node:test')
const assert = require('node:assert/strict')
const StreamSweeper = require('../../workers/storage/stream-sweeper')

function recorder () {
  const lines = []
  const logger = { warn: (fields, msg) => lines.push({ fields, msg }), info () {}, error () {}, debug () {} }
  return { lines, logger }
}

test('a stream sweep that fails: not logged for a database away, one line with the error as text otherwise; counted either way', async () => {
  const { lines, logger } = recorder()
  const sweeper = new StreamSweeper(null, { streamTimeout: 60000, byeGrace: 1000, interval: 1000, logger })
  const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:27500'), { name: 'MongoServerSelectionError' })
  for (const err of [refused, new Error('E11000 something the server refused')]) {
    sweeper.sweep = () => Promise.reject(err)
    sweeper.tick()
    await sweeper.running
  }
  assert.equal(sweeper.stats.errors, 2)
  assert.deepEqual(lines, [{ fields: { error: 'E11000 something the server refused' }, msg: 'stream sweep failed (E11000 something the server refused); will retry' }])
})
