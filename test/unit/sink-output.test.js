'use strict'

// What a sink's of() may give (workers/sink-output.js), checked before a
// message's records are held: each problem named, and what the server takes
// ($inc of any BSON number) let through.

const test = require('node:test')
const assert = require('node:assert/strict')
const { Long, Int32, Double, Decimal128 } = require('mongodb')
const { updateProblem, countProblem, documentProblem, checkAll } = require('../../workers/sink-output')

test('an update needs its key; inc takes numbers, bigints and BSON numbers; the other parts are objects', () => {
  for (const n of [1, -2.5, 10n, Long.fromNumber(5), new Int32(3), new Double(1.5), Decimal128.fromString('1.5')]) {
    assert.equal(updateProblem({ _id: 'a', inc: { n } }, '_id'), null, String(n))
  }
  assert.equal(updateProblem({ _id: 'a', inc: { n: 'one' } }, '_id'), 'gave inc.n "one", not a finite number')
  assert.equal(updateProblem({ _id: 'a', inc: { n: NaN } }, '_id'), 'gave inc.n NaN, not a finite number')
  assert.equal(updateProblem({ inc: { n: 1 } }, '_id'), 'gave an update without its key (_id)')
  assert.equal(updateProblem({ name: 'x' }, 'name'), null, 'a key of its own')
  assert.equal(updateProblem({ _id: 'a', max: 5 }, '_id'), 'gave max 5, not an object')
  assert.equal(updateProblem('x', '_id'), 'gave "x", not an update object')
  assert.equal(updateProblem({ _id: 'a', max: { at: new Date() }, setOnInsert: { a: 1 } }, '_id'), null)
})

test('a count needs a metric name; n and at are numbers (or a Date)', () => {
  assert.equal(countProblem({ metric: 'a.b' }), null)
  assert.equal(countProblem({ metric: 'a', n: 2, at: new Date() }), null)
  assert.equal(countProblem({ metric: 42 }), 'gave metric 42, not a non-empty string')
  assert.equal(countProblem({ metric: 'a', n: '2' }), 'gave n "2", not a finite number')
  assert.equal(countProblem(7), 'gave 7, not a count { metric, n?, at?, key? }')
  assert.equal(countProblem({ metric: 'a.h1', key: 'h1' }), null)
  assert.equal(countProblem({ metric: 'a.h1', key: 7 }), 'gave key 7, not a non-empty string')
})

test('a document is an object; checkAll names the sink in its TypeError', () => {
  assert.equal(documentProblem({ a: 1 }), null)
  assert.equal(documentProblem([1]), 'gave an array, not a document (an object)')
  assert.throws(() => checkAll([{ a: 1 }, 'x'], documentProblem, { kind: 'documents', collection: 'logs' }), { name: 'TypeError', message: 'documents sink of logs: of() gave "x", not a document (an object)' })
})

test('an update whose key is an object of query operators, or whose fields start with $, is a problem', () => {
  const { ObjectId } = require('mongodb')
  // A sender's {"device":{"$ne":"x"}} as the _id matched another device's document and $inc'ed it.
  assert.equal(updateProblem({ _id: { $ne: 'zzz' }, inc: { n: 1 } }, '_id'), 'gave _id an object with operator $ne, not a value')
  assert.equal(updateProblem({ name: { a: 1, $in: ['a'] } }, 'name'), 'gave name an object with operator $in, not a value')
  assert.equal(updateProblem({ _id: { sensor: 's1', minute: 5 }, inc: { n: 1 } }, '_id'), null, 'a compound key')
  assert.equal(updateProblem({ _id: new ObjectId(), max: { at: new Date() } }, '_id'), null)
  // The server refuses these for good, after the messages were counted processed.
  assert.equal(updateProblem({ _id: 'a', inc: { $n: 1 } }, '_id'), 'gave inc.$n: a field name starting with $')
  assert.equal(updateProblem({ _id: 'a', set: { ok: 1, $where: 'x' } }, '_id'), 'gave set.$where: a field name starting with $')
  // A path with an empty part: MongoDB refuses it, the embedded server took it (QA: verified there, it would fail on MongoDB).
  for (const field of ['by.cpu.x..y', '.a', 'a.', '']) assert.equal(updateProblem({ _id: 'a', inc: { [field]: 1 } }, '_id'), `gave inc.${JSON.stringify(field)}: a field path with an empty part (MongoDB refuses it)`)
  assert.equal(updateProblem({ _id: 'a', max: { 'by.cpu.x.y': 1 } }, '_id'), null, 'a dotted path of named parts')
})

test('a function or a symbol where a value goes, at any depth, is a problem: the driver\'s BSON would store the rest without it', () => {
  const { BSON } = require('mongodb')
  const { mistakeProblem } = require('../../workers/sink-output')
  const { documentFate } = require('../../workers/storage/document-size')
  const doc = { a: 1, at: Date.now, deep: { list: [1, Symbol('s')] } }
  // The premise, from the driver: both are gone from what it stores, without an error.
  const stored = BSON.deserialize(BSON.serialize(doc))
  assert.equal('at' in stored, false)
  assert.deepEqual(stored.deep.list, [1])
  assert.equal(documentFate(doc), 'mistake')
  assert.equal(mistakeProblem(doc), 'gave a document whose at is a function or a symbol, which BSON leaves out (a method not called?): not stored')
  assert.match(mistakeProblem({ deep: { list: [1, Symbol('s')] } }), /whose deep\.list\.1 is/)
  assert.equal(documentFate({ a: 1n, b: undefined, c: null }), 'fits', 'a bigint is stored (a Long), undefined as null')
  assert.equal(documentFate({ 'k\u0000': 1 }), 'unstorable', 'a NUL in a key stays unstorable')
  assert.equal(updateProblem({ _id: 'a', set: { last: { line: ''.trim } } }, '_id'), 'gave an update whose set.last.line is a function or a symbol, which BSON leaves out (a method not called?)')
  assert.equal(updateProblem({ _id: 'a', max: { at: Symbol('t') } }, '_id'), 'gave an update whose max.at is a function or a symbol, which BSON leaves out (a method not called?)')
  assert.equal(updateProblem({ _id: 'a', set: { at: new Date(), n: 2n, list: [1, 'x'] } }, '_id'), null)
  // An object that says what it stores: its toBSON is the driver's to call, not a value left out.
  const said = { a: { toBSON: () => 5 } }
  assert.deepEqual(BSON.deserialize(BSON.serialize(said)), { a: 5 })
  assert.equal(documentFate(said), 'fits')
  assert.equal(updateProblem({ _id: 'a', set: said }, '_id'), null)
})

test('an Invalid Date, at any depth, is a problem: the driver\'s BSON stores it as 1970-01-01, without an error', () => {
  const { BSON } = require('mongodb')
  const { mistakeProblem, countProblem } = require('../../workers/sink-output')
  const { documentFate } = require('../../workers/storage/document-size')
  const unparsed = new Date('27/Nov/2026:10:00:00') // a log's time Date() does not read
  // The premise, from the driver: stored, as the epoch.
  assert.equal(BSON.deserialize(BSON.serialize({ at: unparsed })).at.getTime(), 0)
  assert.equal(documentFate({ line: 'x', at: unparsed }), 'mistake')
  assert.equal(mistakeProblem({ line: 'x', meta: [{ at: unparsed }] }), 'gave a document whose meta.0.at is an Invalid Date, which BSON stores as 1970-01-01 (a time that did not parse?): not stored')
  assert.equal(updateProblem({ _id: 'a', max: { lastSeen: unparsed } }, '_id'), 'gave an update whose max.lastSeen is an Invalid Date, which BSON stores as 1970-01-01 (a time that did not parse?)')
  assert.equal(countProblem({ metric: 'm', at: unparsed }), 'gave at an Invalid Date, not a valid Date or epoch ms')
  assert.equal(countProblem({ metric: 'm', at: new Date(0) }), null)
  assert.equal(documentFate({ at: new Date(0) }), 'fits')
})
