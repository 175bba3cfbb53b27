'use strict'

// A worker's cap on new keys per minute (workers/new-key-limit.js), on a
// mocked clock: known keys always pass, refused ones are not remembered,
// the share comes back each minute, and the busiest sender is named.

const test = require('node:test')
const assert = require('node:assert/strict')
const { NewKeyLimit } = require('../../workers/new-key-limit')

test('new keys: taken while the minute\'s share lasts, refused beyond it; known keys always pass', (t) => {
  t.mock.timers.enable({ apis: ['Date'], now: 60000 * 1000 })
  const limit = new NewKeyLimit({ share: 3, known: 100 })
  assert.deepEqual(['a', 'b', 'c'].map((key) => limit.admits(key, '10.0.0.1')), [true, true, true])
  assert.equal(limit.admits('d', '10.0.0.2'), false, 'beyond the share')
  assert.equal(limit.admits('a', '10.0.0.1'), true, 'a known key passes however full the minute')
  assert.equal(limit.admits('d', '10.0.0.2'), false, 'a refused key is not remembered')
  assert.equal(limit.admits('e', '10.0.0.2', true), true, 'forced (a redelivered message): taken beyond the share')
  assert.deepEqual(limit.stats(), { share: 3, admitted: 4, refused: 2 })
  assert.deepEqual(limit.minuteStats(), { share: 3, newKeysThisMinute: 4, busiestSource: '10.0.0.1', busiestSourceNewKeys: 3 })
  limit.admits('f', '10.0.0.2')
  assert.equal(limit.minuteStats().busiestSource, '10.0.0.2', 'four new keys this minute, taken or not')
  t.mock.timers.tick(60000)
  assert.equal(limit.admits('d', '10.0.0.2'), true, 'the next minute brings a new share')
  assert.deepEqual(limit.minuteStats(), { share: 3, newKeysThisMinute: 1, busiestSource: '10.0.0.2', busiestSourceNewKeys: 1 })
})

test('new keys: the known keys are the most recently seen; one forgotten over the bound is new again', (t) => {
  t.mock.timers.enable({ apis: ['Date'], now: 0 })
  const limit = new NewKeyLimit({ share: 10, known: 2 })
  limit.admits('a', null)
  limit.admits('b', null)
  limit.admits('a', null) // a is the most recent: b goes first
  limit.admits('c', null)
  assert.deepEqual([...limit.known.keys()], ['a', 'c'])
  assert.equal(limit.known.evicted, 1)
  assert.equal(limit.admits('b', null), true)
  assert.equal(limit.stats().admitted, 4, 'b counted as new twice')
})

test('new keys: a message\'s records taken by key, each numbered where it stood; none left refuses the message', (t) => {
  t.mock.timers.enable({ apis: ['Date'], now: 0 })
  const limit = new NewKeyLimit({ share: 2, known: 100 })
  const keyOf = (record) => record.k
  assert.deepEqual(limit.take([{ k: 'a' }, { k: 'b' }], keyOf, null), { records: [{ k: 'a' }, { k: 'b' }], places: null }, 'all taken: numbered as they came')
  const some = limit.take([{ k: 'c' }, { k: 'a' }, { k: null }, { k: 'd' }], keyOf, null)
  assert.deepEqual(some, { records: [{ k: 'a' }, { k: null }], places: [1, 2] }, 'c and d beyond the share; a known; no key passes')
  assert.deepEqual(limit.take([{ k: 'e' }], keyOf, null), { records: null, places: null }, 'none left: the message is refused')
  assert.deepEqual(limit.take({ k: 'f' }, keyOf, null), { records: null, places: null }, 'a single record refused')
  assert.deepEqual(limit.take({ k: 'f' }, keyOf, null, true), { records: { k: 'f' }, places: null }, 'forced (redelivered): taken')
  assert.deepEqual(limit.take([], keyOf, null), { records: [], places: null }, 'no record: nothing to refuse')
})

// An RTCP datagram names several SSRCs, each a stream side: keyed by its
// first reporter alone, a known reporter's 31 blocks of fresh SSRCs opened
// 31 streams a datagram, none counted.
test('new keys: a record of several keys passes when the share has room for all its new ones; each is counted; the RTCP collector keys every SSRC a datagram names', (t) => {
  t.mock.timers.enable({ apis: ['Date'], now: 60000 * 1000 })
  const limit = new NewKeyLimit({ share: 4, known: 100 })
  assert.equal(limit.admits(['a', 'b'], '10.0.0.1'), true)
  assert.equal(limit.admits(['a', 'b', 'c'], '10.0.0.1'), true, 'one new key: taken')
  assert.equal(limit.admits(['d', 'e'], '10.0.0.1'), false, 'two new keys, room for one: none taken')
  assert.equal(limit.admits(['d'], '10.0.0.1'), true, 'so the one left is there for another')
  assert.deepEqual(limit.stats(), { share: 4, admitted: 4, refused: 2 })
  const rtcp = require('../../collectors/rtcp')
  const { decodeRtcp } = require('../../collectors/rtcp/decoder')
  const { encodeRtcp } = require('../../collectors/rtcp/encoder')
  const blocks = Array.from({ length: 31 }, (_, i) => ({ ssrc: 500 + i, fractionLost: 0, cumulativeLost: 0, highestSeq: 1, jitter: 0, lsr: 0, dlsr: 0 }))
  const decoded = decodeRtcp(encodeRtcp([{ type: 'RR', ssrc: 42, reports: blocks }]))
  assert.deepEqual(rtcp.definition.cardinality(decoded), [42, ...blocks.map((b) => b.ssrc)])
})
