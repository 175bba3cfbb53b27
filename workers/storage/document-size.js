'use strict'

const { mongo } = require('mongoose') // the driver mongoose uses: its BSON, one copy loaded

/** MongoDB's bound on one document (maxBsonObjectSize: 16 MiB on every server version). */
const MAX_DOCUMENT_BYTES = 16 * 1024 * 1024
// Room for the _id a documents sink gives a document ({ m: ObjectId, r, d }: 39 bytes).
const ID_BYTES = 64
const MAX_DEPTH = 64
const FIXED = Object.freeze({ ObjectId: 12, ObjectID: 12, Long: 8, Double: 8, Int32: 4, Decimal128: 16, Timestamp: 8 })

/**
 * What becomes of `doc` with the _id its sink gives it: 'fits'; 'tooLarge'
 * (over MAX_DOCUMENT_BYTES); 'unstorable' (BSON cannot hold it: a key
 * with a NUL byte, a value that refers to itself). Either of the last two
 * is never stored, so it is refused when taken rather than written again
 * for ever. 'mistake': it holds what BSON stores other than as written,
 * without a word: a function or a symbol (left out) or an Invalid Date
 * (stored as 1970-01-01): a mistake of the code that made it
 * (valueMistake says where). An upper bound of its BSON from a walk that
 * allocates nothing (each string at 3 bytes per UTF-16 unit, its most; NaN
 * for a NUL in a key or one of those mistakes) settles nearly every
 * document; past it, or for a value the walk does not know, the driver
 * computes the exact size.
 */
function documentFate (doc) {
  const bound = objectBound(doc, 0)
  if (Number.isNaN(bound)) return valueMistake(doc) === null ? 'unstorable' : 'mistake'
  if (bound + ID_BYTES <= MAX_DOCUMENT_BYTES) return 'fits'
  try {
    return mongo.BSON.calculateObjectSize(doc, { serializeFunctions: false, ignoreUndefined: false }) + ID_BYTES <= MAX_DOCUMENT_BYTES ? 'fits' : 'tooLarge'
  } catch {
    return 'unstorable' // the driver cannot serialize it (a cycle): it never could
  }
}

// A document's or array's bytes at most (Infinity: not known here).
function objectBound (object, depth) {
  if (depth > MAX_DEPTH) return Infinity
  const array = Array.isArray(object)
  // An object of a class, or one that says what it stores (toBSON): the driver measures it.
  if ((!array && !isPlain(object)) || typeof object.toBSON === 'function') return Infinity
  let bytes = 5 // its length and terminator
  if (array) {
    for (let i = 0; i < object.length; i++) bytes += 12 + valueBound(object[i], depth) // type, index key (≤ 10 digits), NUL
    return bytes
  }
  for (const key in object) {
    if (key.includes('\0')) return NaN // a BSON key is a C string
    bytes += 2 + 3 * key.length + valueBound(object[key], depth)
  }
  return bytes
}

function valueBound (value, depth) {
  switch (typeof value) {
    case 'string': return 5 + 3 * value.length
    case 'number': case 'bigint': return 8
    case 'boolean': return 1
    case 'undefined': return 0
    case 'function': case 'symbol': return NaN
  }
  if (value === null) return 0
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? NaN : 8
  if (ArrayBuffer.isView(value)) return 5 + value.byteLength
  const fixed = FIXED[value._bsontype]
  if (fixed !== undefined) return fixed
  if (value._bsontype === 'Binary' && value.buffer) return 5 + value.buffer.length
  return objectBound(value, depth + 1)
}

/**
 * The first value in `object` (a walk as deep as documentFate's) that BSON
 * stores other than as written, said with its path (`a.b.0 is ...`), or
 * null: a function or a symbol, which it leaves out; an Invalid Date
 * (new Date('garbage')), which it stores as 1970-01-01.
 */
function valueMistake (object, depth = 0) {
  if (depth > MAX_DEPTH || object === null || typeof object !== 'object' || !(Array.isArray(object) || isPlain(object)) || typeof object.toBSON === 'function') return null
  for (const key in object) {
    const value = object[key]
    if (typeof value === 'function' || typeof value === 'symbol') return `${key} is a function or a symbol, which BSON leaves out (a method not called?)`
    if (value instanceof Date && Number.isNaN(value.getTime())) return `${key} is an Invalid Date, which BSON stores as 1970-01-01 (a time that did not parse?)`
    const inner = valueMistake(value, depth + 1)
    if (inner !== null) return `${key}.${inner}`
  }
  return null
}

function isPlain (object) {
  const proto = Object.getPrototypeOf(object)
  return proto === Object.prototype || proto === null
}

module.exports = { MAX_DOCUMENT_BYTES, documentFate, valueMistake }
