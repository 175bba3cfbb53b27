'use strict'
// What `collector verify` expects of a definition (app/verify/model.js,
// app/verify/expectation.js), without a cluster: records numbered in their
// message, sums per key, counters per minute, refusals by reason, kept
// state as the last message left it, and what depends on the arrival time
// left out by name.

const test = require('node:test')
const assert = require('node:assert/strict')
const { defineCollector, sinks, DecodeError } = require('../..')
const { expectation } = require('../../app/verify/expectation')
const { SPREAD } = require('../../app/verify/sender')

const MID_MINUTE = Date.UTC(2026, 10, 25, 10, 7, 30)
const FROM = { address: '127.0.0.1', family: 'IPv4', port: 40000, size: 0 }

const pairs = defineCollector({
  name: 'pairs',
  file: __filename,
  keep: {},
  decode: (message, settings, { kept }) => {
    const text = message.data.toString()
    if (text === 'bad') return new DecodeError('badLine', 'a bad line')
    kept.set('last', text)
    kept.set('seen', (kept.get('seen') || 0) + 1)
    return text.split(',').map((word) => ({ word }))
  },
  sinks: [
    sinks.documents({ collection: 'words', of: (record, { receivedAt }) => ({ word: record.word, receivedAt }) }),
    sinks.updates({ collection: 'totals', of: (record, { receivedAt }) => ({ _id: `${record.word}|${new Date(Math.floor(receivedAt / 60000) * 60000).toISOString()}`, inc: { n: 1, len: record.word.length }, max: { lastSeen: receivedAt } }) }),
    sinks.counters({ of: (record) => ({ metric: `words.${record.word}`, n: 2 }) })
  ]
})

function expect (texts) {
  const sent = texts.map((text, i) => ({ data: Buffer.from(text), rinfo: FROM, at: MID_MINUTE + i * 10 }))
  return expectation(pairs.definition, {}, sent, SPREAD)
}

test('each record of a message is a document of its own, numbered in it; an arrival field is left out by name', () => {
  const { sinks: [documents] } = expect(['a,b', 'a'])
  assert.equal(documents.documents, 3)
  const keys = [...documents.expected.keys()].map((key) => key.split('\u0002')[1]).sort()
  // "a" at place 0 twice (two messages), "b" at place 1 once.
  assert.deepEqual(keys.map((key) => key.split('\u0001').filter((entry) => !entry.startsWith('receivedAt'))), [['#r=n:0', 'word=s:a'], ['#r=n:1', 'word=s:b']])
  assert.ok(keys.every((key) => key.includes('receivedAt=*')), 'the arrival time is not compared')
  assert.deepEqual([...documents.expected.values()].map((e) => e.count).sort(), [1, 2])
})

test('updates: per key the sum of each inc; a key by minute is exact away from a minute\'s end; a max of the arrival left out', () => {
  const { sinks: [, updates] } = expect(['a,b', 'a', 'a'])
  const a = updates.expected.get('s:a|2026-11-25T10:07:00.000Z')
  assert.deepEqual(Object.fromEntries(a.inc), { n: 3, len: 3 })
  assert.deepEqual([...a.masked], ['max.lastSeen'])
  assert.equal(updates.unkeyed, 0)
})

test('counters: n per metric, day and minute; refusals by reason; kept state as the last message left it', () => {
  const out = expect(['a,b', 'bad', 'a'])
  const [, , counters] = out.sinks
  const a = counters.expected.get('20261125/words.a')
  assert.equal(a.daily, 4)
  assert.deepEqual([...a.minutes], [['10.07', 4]])
  assert.deepEqual(out.outcomes, { messages: 3, processed: 2, failed: 0, refused: { badLine: 1 } })
  assert.deepEqual([...out.kept.expected.values()].map((k) => [k.name, k.value]), [['last', 'a'], ['seen', 2]])
})

test('a key that depends on the arrival within the spread is counted apart, not compared', () => {
  const sent = [{ data: Buffer.from('a'), rinfo: FROM, at: Date.UTC(2026, 10, 25, 10, 7, 59, 900) }]
  const { sinks: [, updates, counters] } = expectation(pairs.definition, {}, sent, SPREAD)
  assert.equal(updates.unkeyed, 1)
  assert.equal(updates.expected.size, 0)
  assert.equal(counters.unkeyed, 1, 'a counter without `at` counts in the minute of the arrival')
})
