'use strict'

// A write is taken as stored only when the server's reply accounts for
// every operation sent. The replies here are recorded shapes: FerretDB 1.24
// (SQLite) answers an unordered bulkWrite whose first operation fails with
// that one error and nothing else, having run none of the rest.

const test = require('node:test')
const assert = require('node:assert/strict')
const StreamWriter = require('../../workers/storage/stream-writer')
const { CounterStore } = require('../../workers/storage/counter-store')
const { PacketCoalescer } = require('../../workers/storage/packet-coalescer')
const { checkAccounted } = require('../../workers/storage/write-accounting')

// A collection whose bulkWrite answers with `reply(ops)`: a result, or an error to throw.
function recorded (reply) {
  const calls = []
  return {
    calls,
    async bulkWrite (ops) {
      calls.push(ops)
      const answer = reply(ops)
      if (answer instanceof Error) throw answer
      return answer
    }
  }
}

function bulkError (writeErrors, result) {
  return Object.assign(new Error('BulkWriteError'), { writeErrors, result })
}

function entries (n) {
  const coalescer = new PacketCoalescer(n)
  for (let i = 0; i < n; i++) coalescer.add({ fromID: `a${i}`, toID: `b${i}`, highestPacketNum: 1, timestamp: 0 })
  return coalescer.take()
}

test('stream upserts: a reply that stops at its first error (FerretDB) stores nothing; every entry stays unwritten, with a clear error', async () => {
  const collection = recorded(() => bulkError([{ index: 0, code: 2, errmsg: 'some failure' }], { matchedCount: 0, upsertedCount: 0 }))
  const writer = new StreamWriter(collection)
  const sent = entries(300)
  await assert.rejects(writer.write(sent), (err) => {
    assert.equal(err.code, 'ERR_DATABASE')
    assert.equal(err.reason, 'unaccounted')
    assert.match(err.message, /reply to 300 stream upserts accounts for 1 \(0 written, 1 refused\)/)
    assert.equal(err.unwritten.length, 300, 'every entry is written again, none acknowledged')
    return true
  })
})

test('stream upserts: a success that accounts for fewer operations than sent is not taken as one', async () => {
  const writer = new StreamWriter(recorded((ops) => ({ matchedCount: ops.length - 2, upsertedCount: 0 })))
  await assert.rejects(writer.write(entries(10)), { reason: 'unaccounted' })
})

test('stream upserts: a reply that accounts for every operation, errors included, is taken as it says', async () => {
  const ok = new StreamWriter(recorded((ops) => ({ matchedCount: ops.length - 1, upsertedCount: 1 })))
  assert.deepEqual(await ok.write(entries(5)), { failed: [], unresolved: [] })
  const refused = new StreamWriter(recorded((ops) => bulkError([{ index: 1, code: 2, errmsg: 'refused' }], { matchedCount: ops.length - 1, upsertedCount: 0 })))
  const { failed } = await refused.write(entries(4))
  assert.equal(failed.length, 1, 'the refused op is counted as refused; the others as written')
})

test('stream upserts: one MongoDB refuses for the 16 MiB bound on a document is told apart from other refusals (tooLarge)', async () => {
  // MongoDB's write error for an update that would grow a document past 16 MiB (the embedded server does not enforce the bound).
  const tooLarge = { index: 0, code: 17419, codeName: 'Location17419', errmsg: 'Resulting document after update is larger than 16777216' }
  const writer = new StreamWriter(recorded((ops) => bulkError([tooLarge, { index: 1, code: 2, errmsg: 'refused' }], { matchedCount: ops.length - 2, upsertedCount: 0 })))
  const { failed } = await writer.write(entries(3))
  assert.deepEqual(failed.map((f) => [f.entry.fromID, f.tooLarge, f.error]), [['a0', true, tooLarge.errmsg], ['a1', false, 'refused']])
  assert.deepEqual([writer.stats.rejected, writer.stats.tooLarge], [2, 1])
})

test('counter upserts: an unaccounted reply keeps the increments pending', async () => {
  const store = new CounterStore(recorded(() => ({ matchedCount: 0, upsertedCount: 0 })))
  store.increment('m', Date.UTC(2026, 10, 24, 14, 5), 3)
  await assert.rejects(store.flush(), { reason: 'unaccounted' })
  assert.equal(store.size, 1, 'still pending, written again at the next flush')
})

test('inserts: insertedCount and duplicate errors must add up to the documents sent', () => {
  assert.doesNotThrow(() => checkAccounted({ insertedCount: 7 }, 7, 0, 'syslog inserts'))
  assert.doesNotThrow(() => checkAccounted({ insertedCount: 5 }, 7, 2, 'syslog inserts'))
  // mongo-java-server's reply to 4 unordered inserts, 2 of them duplicates: n = 4 and 2 errors.
  assert.doesNotThrow(() => checkAccounted({ insertedCount: 4 }, 4, 2, 'syslog inserts'))
  assert.throws(() => checkAccounted({ insertedCount: 0 }, 7, 1, 'syslog inserts'), { reason: 'unaccounted', written: 0, refused: 1 })
  assert.throws(() => checkAccounted(undefined, 7, 1, 'syslog inserts'), { reason: 'unaccounted' })
})
