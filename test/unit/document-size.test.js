'use strict'

// documentFate against the driver's own BSON size, around 16 MiB, and what BSON cannot hold.
const test = require('node:test')
const assert = require('node:assert/strict')
const { mongo } = require('mongoose')
const { documentFate, MAX_DOCUMENT_BYTES } = require('../../workers/storage/document-size')
const fitsOneDocument = (doc) => documentFate(doc) === 'fits'

const size = (doc) => mongo.BSON.calculateObjectSize(doc)
const ID = 64 // the room kept for the sink's _id

test('a document fits when its BSON and the room for its _id are within 16 MiB, as the driver measures it', () => {
  const base = size({ message: '' })
  const fits = { message: 'a'.repeat(MAX_DOCUMENT_BYTES - ID - base) }
  const over = { message: 'a'.repeat(MAX_DOCUMENT_BYTES - ID - base + 1) }
  assert.equal(size(fits) + ID, MAX_DOCUMENT_BYTES)
  assert.equal(fitsOneDocument(fits), true)
  assert.equal(fitsOneDocument(over), false)
})

test('multi-byte text, nested objects, arrays, buffers and BSON values are measured, not guessed', () => {
  const euro = '€'.repeat(6 * 1024 * 1024) // 3 bytes each in UTF-8: 18 MiB, in 6 Mi characters
  assert.equal(fitsOneDocument({ a: { b: [euro] } }), false)
  assert.equal(fitsOneDocument({ a: Buffer.alloc(MAX_DOCUMENT_BYTES) }), false)
  assert.equal(fitsOneDocument({ a: new mongo.Binary(Buffer.alloc(MAX_DOCUMENT_BYTES)) }), false)
  assert.equal(fitsOneDocument({ a: Array.from({ length: 1000 }, () => 'x'.repeat(17000)) }), false)
  const usual = { at: new Date(), n: 1, big: 2n ** 40n, id: new mongo.ObjectId(), long: mongo.Long.fromNumber(5), sd: { 'x@1': { a: 'b' } }, list: [1, 'two', null], text: 'é'.repeat(4 * 1024 * 1024) }
  assert.equal(fitsOneDocument(usual), size(usual) + ID <= MAX_DOCUMENT_BYTES)
  assert.equal(fitsOneDocument(usual), true)
})

test('a key with a NUL byte, at any depth the walk reaches, or a value that refers to itself, is unstorable', () => {
  assert.equal(documentFate({ 'a\u0000b': 1 }), 'unstorable')
  assert.equal(documentFate({ a: { b: [{ 'c\u0000': 1 }] } }), 'unstorable')
  const cycle = { a: 1 }
  cycle.self = cycle
  assert.equal(documentFate(cycle), 'unstorable')
  assert.equal(documentFate({ a: 'b\u0000c' }), 'fits', 'a NUL in a string value is stored')
})
