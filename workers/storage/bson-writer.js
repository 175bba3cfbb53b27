'use strict'

const { mongo } = require('mongoose') // the driver mongoose uses: its BSON, one copy loaded

/*
 * A document's BSON, as the driver's serializer makes it with the driver's
 * defaults (no key checks, undefined stored as null, functions not
 * serialized), for the values a collector's records hold: strings,
 * numbers, booleans, null and undefined, Dates, ObjectIds, Buffers, plain
 * objects and arrays. Anything else (a Long, a Map, a class instance, a
 * toBSON method, a NaN date...) gives null: the caller serializes that
 * document with the driver's BSON instead.
 *
 * Why: the driver's serializer walks a document with a frame object per
 * nested object, a key array and a Set of the objects on the path; at
 * 10,000 syslog lines/s that was a quarter of what a worker allocated, and
 * the garbage collector a third of its CPU. This walk allocates nothing
 * but the bytes it returns. test/unit/bson-writer.test.js holds it
 * byte-identical to the driver's on random documents.
 */

const { ObjectId } = mongo.BSON
const INT32_MIN = -0x80000000
const INT32_MAX = 0x7fffffff
const TWO_32 = 0x100000000
const hasOwn = (object, key) => Object.prototype.hasOwnProperty.call(object, key)
const MAX_DEPTH = 64 // deeper (or circular): the driver's serializer decides

let scratch = Buffer.allocUnsafe(64 * 1024)

/** The document's bytes, or null when it holds a value this writer leaves to the driver's BSON. */
function writeDocument (doc) {
  if (doc === null || typeof doc !== 'object' || !isPlain(doc)) return null
  const end = writeObject(doc, 0, 0)
  if (end < 0) return null
  const bytes = Buffer.allocUnsafe(end)
  scratch.copy(bytes, 0, 0, end)
  return bytes
}

function isPlain (value) {
  const proto = Object.getPrototypeOf(value)
  return proto === Object.prototype || proto === null
}

// Room for `n` more bytes at `at` (the scratch grows, what it holds kept).
function room (at, n) {
  if (at + n <= scratch.length) return
  const bigger = Buffer.allocUnsafe(Math.max(scratch.length * 2, at + n))
  scratch.copy(bigger, 0, 0, at)
  scratch = bigger
}

// `text` as UTF-8 at `at` (room made); the bytes written. Short ASCII text
// byte by byte: cheaper than a call into the runtime, the usual key and field.
function writeText (text, at) {
  const n = text.length
  if (n <= 32) {
    let i = 0
    for (; i < n; i++) {
      const c = text.charCodeAt(i)
      if (c >= 0x80) break
      scratch[at + i] = c
    }
    if (i === n) return n
  }
  return scratch.utf8Write(text, at)
}

// A document (or, `array`, an array) from `at`; the index after it, or -1.
function writeObject (value, at, depth, array = false) {
  if (depth > MAX_DEPTH || typeof value.toBSON === 'function') return -1
  const start = at
  at += 4
  if (array) {
    for (let i = 0; i < value.length; i++) {
      const item = value[i]
      at = writeElement(String(i), item === undefined ? null : item, at, depth)
      if (at < 0) return -1
    }
  } else {
    // for-in, not Object.keys (no array per object); own keys only, in the same order.
    for (const key in value) {
      if (!hasOwn(value, key)) continue
      if (key.includes('\x00')) return -1
      const item = value[key]
      at = writeElement(key, item === undefined ? null : item, at, depth)
      if (at < 0) return -1
    }
  }
  room(at, 1)
  scratch[at++] = 0
  scratch.writeInt32LE(at - start, start)
  return at
}

// One element: its type byte, its name, its value; the index after it, or -1.
function writeElement (key, value, at, depth) {
  room(at, 3 * key.length + 2)
  const typeAt = at
  at = typeAt + 1 + writeText(key, typeAt + 1)
  scratch[at++] = 0
  switch (typeof value) {
    case 'string':
      room(at, 3 * value.length + 5)
      scratch[typeAt] = 0x02
      {
        const n = writeText(value, at + 4)
        scratch.writeInt32LE(n + 1, at)
        at += 4 + n
      }
      scratch[at++] = 0
      return at
    case 'number':
      room(at, 8)
      if (Number.isSafeInteger(value) && value >= INT32_MIN && value <= INT32_MAX && !Object.is(value, -0)) {
        scratch[typeAt] = 0x10
        return scratch.writeInt32LE(value, at)
      }
      scratch[typeAt] = 0x01
      return scratch.writeDoubleLE(value, at)
    case 'boolean':
      room(at, 1)
      scratch[typeAt] = 0x08
      scratch[at++] = value ? 1 : 0
      return at
    case 'object':
      return writeObjectValue(value, typeAt, at, depth)
    default: // bigint, symbol, function: the driver's serializer decides
      return -1
  }
}

function writeObjectValue (value, typeAt, at, depth) {
  if (value === null) {
    scratch[typeAt] = 0x0a
    return at
  }
  if (value instanceof Date) {
    const ms = value.getTime()
    if (!Number.isSafeInteger(ms)) return -1
    room(at, 8)
    scratch[typeAt] = 0x09
    const high = Math.floor(ms / TWO_32)
    scratch.writeUInt32LE(ms - high * TWO_32, at)
    return scratch.writeInt32LE(high, at + 4)
  }
  if (value instanceof ObjectId) {
    room(at, 12)
    scratch[typeAt] = 0x07
    return at + value.serializeInto(scratch, at)
  }
  if (value instanceof Uint8Array) {
    room(at, 5 + value.length)
    scratch[typeAt] = 0x05
    scratch.writeInt32LE(value.length, at)
    scratch[at + 4] = 0 // binary subtype: generic
    scratch.set(value, at + 5)
    return at + 5 + value.length
  }
  if (Array.isArray(value)) {
    scratch[typeAt] = 0x04
    return writeObject(value, at, depth + 1, true)
  }
  if (value._bsontype !== undefined || !isPlain(value)) return -1
  scratch[typeAt] = 0x03
  return writeObject(value, at, depth + 1)
}

module.exports = { writeDocument }
