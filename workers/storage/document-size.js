'use strict'

const { mongo } = require('mongoose') // the driver mongoose uses: its BSON, one copy loaded

/** MongoDB's bound on one document (maxBsonObjectSize: 16 MiB on every server version). */
const MAX_DOCUMENT_BYTES = 16 * 1024 * 1024
// Room for the _id a documents sink gives a document ({ m: ObjectId, r, d }: 39 bytes).
const ID_BYTES = 64
const MAX_DEPTH = 64
const FIXED = Object.freeze({ ObjectId: 12, ObjectID: 12, Long: 8, Double: 8, Int32: 4, Decimal128: 16, Timestamp: 8 })

/**
 * Whether `doc`, with the _id its sink gives it, is within
 * MAX_DOCUMENT_BYTES: a larger one is never stored, so it is refused when
 * taken rather than written again for ever. An upper bound of its BSON
 * from a walk that allocates nothing (each string at 3 bytes per UTF-16
 * unit, its most) settles nearly every document; past it, or for a value
 * the walk does not know, the driver computes the exact size.
 */
function fitsOneDocument (doc) {
  if (objectBound(doc, 0) + ID_BYTES <= MAX_DOCUMENT_BYTES) return true
  try {
    return mongo.BSON.calculateObjectSize(doc, { serializeFunctions: false, ignoreUndefined: false }) + ID_BYTES <= MAX_DOCUMENT_BYTES
  } catch {
    return true // the driver cannot serialize it: its write fails as the driver's would
  }
}

// A document's or array's bytes at most (Infinity: not known here).
function objectBound (object, depth) {
  if (depth > MAX_DEPTH) return Infinity
  const proto = Object.getPrototypeOf(object)
  const array = Array.isArray(object)
  if (!array && proto !== Object.prototype && proto !== null) return Infinity
  let bytes = 5 // its length and terminator
  if (array) {
    for (let i = 0; i < object.length; i++) bytes += 12 + valueBound(object[i], depth) // type, index key (≤ 10 digits), NUL
    return bytes
  }
  for (const key in object) bytes += 2 + 3 * key.length + valueBound(object[key], depth)
  return bytes
}

function valueBound (value, depth) {
  switch (typeof value) {
    case 'string': return 5 + 3 * value.length
    case 'number': case 'bigint': return 8
    case 'boolean': return 1
    case 'undefined': case 'function': case 'symbol': return 0
  }
  if (value === null) return 0
  if (value instanceof Date) return 8
  if (ArrayBuffer.isView(value)) return 5 + value.byteLength
  const fixed = FIXED[value._bsontype]
  if (fixed !== undefined) return fixed
  if (value._bsontype === 'Binary' && value.buffer) return 5 + value.buffer.length
  return objectBound(value, depth + 1)
}

module.exports = { MAX_DOCUMENT_BYTES, fitsOneDocument }
