'use strict'

// workers/storage/bson-writer.js writes a document's BSON itself, for the
// values records hold: byte for byte what the driver's serializer makes
// with the driver's defaults, checked here on random documents; for any
// other value it leaves the document to the driver's serializer.
const test = require('node:test')
const assert = require('node:assert/strict')
const { mongo } = require('mongoose')
const { writeDocument } = require('../../workers/storage/bson-writer')
const { serialize } = require('../../workers/storage/serialized-inserts')
const { prng } = require('../helpers/prng')

const { ObjectId, Long, Decimal128, Binary, Timestamp } = mongo.BSON
const DRIVER_DEFAULTS = { checkKeys: false, serializeFunctions: false, ignoreUndefined: false }
const driverBytes = (doc) => mongo.BSON.serialize(doc, DRIVER_DEFAULTS)

const STRINGS = ['', 'a', 'nginx-5.dc1.example.net', 'ошибка соединения', '日本語テキスト', 'emoji 😀 x', '\ud800 lone', 'tail \udfff', 'nul\x00inside', 'a'.repeat(5000), '$set', 'a.b', '€']
const NUMBERS = [0, -0, 1, -1, 2 ** 31 - 1, -(2 ** 31), 2 ** 31, -(2 ** 31) - 1, 2 ** 53 - 1, 2 ** 53, 1.5, -1e-300, Number.MAX_VALUE, NaN, Infinity, -Infinity]
const DATES = [new Date(0), new Date(1795359436906), new Date(-1), new Date(-62135596800000), new Date(8.64e15), new Date(-8.64e15), new Date(4294967295), new Date(4294967296)]

function randomValue (rand, depth) {
  const pick = (list) => list[Math.floor(rand() * list.length)]
  const kind = Math.floor(rand() * (depth > 3 ? 8 : 10))
  switch (kind) {
    case 0: return pick(STRINGS)
    case 1: return pick(NUMBERS)
    case 2: return Math.floor((rand() - 0.5) * 2 ** (1 + Math.floor(rand() * 60)))
    case 3: return pick([true, false, null, undefined])
    case 4: return pick(DATES)
    case 5: return new ObjectId(Buffer.from(Array.from({ length: 12 }, () => Math.floor(rand() * 256))))
    case 6: return Buffer.from(Array.from({ length: Math.floor(rand() * 40) }, () => Math.floor(rand() * 256)))
    case 7: return String.fromCharCode(...Array.from({ length: Math.floor(rand() * 30) }, () => Math.floor(rand() * 0xffff)))
    case 8: {
      const array = Array.from({ length: Math.floor(rand() * 13) }, () => randomValue(rand, depth + 1))
      if (rand() < 0.2) array[array.length + 2] = 'after a hole'
      return array
    }
    default: return randomDocument(rand, depth + 1)
  }
}

function randomDocument (rand, depth = 0) {
  const doc = rand() < 0.1 ? Object.create(null) : {}
  const keys = ['_id', 'host', 'severity', 'k', '', 'ключ', '$inc', 'a.b', '10', '2', 'structuredData', 'x😀']
  for (let i = Math.floor(rand() * 8); i > 0; i--) doc[keys[Math.floor(rand() * keys.length)] + (rand() < 0.5 ? '' : i)] = randomValue(rand, depth)
  return doc
}

test('random documents of the values records hold: byte for byte the driver\'s BSON', () => {
  const rand = prng(20261127)
  let written = 0
  for (let i = 0; i < 20000; i++) {
    const doc = randomDocument(rand)
    const ours = writeDocument(doc)
    const theirs = driverBytes(doc)
    if (ours === null) continue // a key with a NUL: left to the driver
    written++
    assert.ok(ours.equals(theirs), `document ${i}: ${ours.toString('hex')} != ${theirs.toString('hex')}`)
  }
  assert.ok(written > 19000, `${written} of 20,000 written here`)
})

test('a syslog record as the collector stores it, and a document past the scratch size', () => {
  const record = {
    _id: new ObjectId(),
    format: '5424',
    facility: 17,
    severity: 5,
    timestamp: new Date(),
    host: 'nginx-5.dc1.example.net',
    procid: null,
    msgid: undefined,
    structuredData: { origin: { ip: '10.1.22.129' }, 'trace@41058': { tag: ['a', 'b]c'] } },
    message: 'Accepted publickey for deploy',
    receivedAt: new Date()
  }
  assert.ok(writeDocument(record).equals(driverBytes(record)))
  const big = { _id: { m: new ObjectId(), r: 3 }, text: 'é'.repeat(300000), list: Array.from({ length: 5000 }, (_, i) => ({ i, s: 'x'.repeat(i % 50) })) }
  assert.ok(writeDocument(big).equals(driverBytes(big)))
  assert.ok(writeDocument(record).equals(driverBytes(record)), 'after the scratch grew')
})

test('values it does not write are left to the driver\'s serializer, whose bytes serialize() then gives', () => {
  class Point { constructor () { this.x = 1 } }
  const others = [
    { n: Long.fromNumber(5) }, { d: Decimal128.fromString('1.5') }, { b: new Binary(Buffer.from('ab'), 4) }, { t: new Timestamp({ t: 1, i: 2 }) },
    { big: 10n }, { m: new Map([['a', 1]]) }, { r: /x/g }, { p: new Point() }, { f: () => 1, s: Symbol('s') }, { when: new Date(NaN) },
    { nested: { toBSON: () => ({ a: 1 }) } }, { f64: new Float64Array([1, 2]) }, new Point()
  ]
  for (const doc of others) {
    assert.equal(writeDocument(doc), null, JSON.stringify(Object.keys(doc)))
    assert.ok(serialize(doc).equals(driverBytes(doc)))
  }
  const circular = { a: {} }
  circular.a.self = circular
  assert.equal(writeDocument(circular), null)
  assert.throws(() => serialize(circular), /circular/)
  assert.throws(() => serialize({ 'nul\x00key': 1 }), /null bytes/, 'a key the driver refuses is refused as the driver does')
})
