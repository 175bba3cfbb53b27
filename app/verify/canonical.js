'use strict'

// Values as `collector verify` compares them: what the driver would store
// (a BSON round trip: undefined becomes null, a BigInt a number, a Buffer
// Binary) flattened to `path → tagged text`, so that an expected document
// and a stored one compare leaf by leaf, whatever their key order, and a
// leaf can be left out of the comparison (an arrival time) by its path.

const { BSON } = require('mongodb')

// The driver's default: undefined is written as null (ignoreUndefined false).
const SERIALIZE = Object.freeze({ ignoreUndefined: false })

/** `value` as the database would give it back. */
function stored (value) {
  return BSON.deserialize(BSON.serialize({ v: value }, SERIALIZE)).v
}

/** One leaf as text: its type and value (`n:3`, `s:abc`, `d:2026-…`, …). */
function tag (value) {
  if (value === null || value === undefined) return 'null'
  switch (typeof value) {
    case 'number': return `n:${value === 0 ? 0 : value}`
    case 'bigint': return `n:${value}`
    case 'string': return `s:${value}`
    case 'boolean': return `b:${value}`
  }
  if (value instanceof Date) return `d:${Number.isNaN(value.getTime()) ? 'invalid' : value.toISOString()}`
  switch (value._bsontype) {
    case 'ObjectId': return `o:${value.toHexString()}`
    case 'Binary': return `x:${Buffer.from(value.buffer).toString('base64')}`
    case 'Long': case 'Int32': case 'Double': return `n:${Number(value.valueOf())}`
    case undefined: break
    default: return `${value._bsontype}:${String(value)}`
  }
  if (Buffer.isBuffer(value)) return `x:${value.toString('base64')}`
  return null // an object or array: not a leaf
}

/**
 * `value`'s leaves by path (`a.b.0`): a Map of tagged text. Empty objects
 * and arrays are leaves of their own (`{}`, `[]`).
 */
function flatten (value, prefix = '', into = new Map()) {
  const leaf = tag(value)
  if (leaf !== null) {
    into.set(prefix, leaf)
    return into
  }
  const keys = Object.keys(value)
  if (keys.length === 0) into.set(prefix, Array.isArray(value) ? '[]' : '{}')
  for (const key of keys) flatten(value[key], prefix === '' ? key : `${prefix}.${key}`, into)
  return into
}

/** The paths whose leaves differ between two flattened values (either side's). */
function differing (a, b) {
  const paths = new Set()
  for (const [path, leaf] of a) if (b.get(path) !== leaf) paths.add(path)
  for (const path of b.keys()) if (!a.has(path)) paths.add(path)
  return paths
}

/** One text for a flattened value, `masked` paths standing for any value. */
function keyOf (flat, masked = EMPTY) {
  const entries = []
  for (const [path, leaf] of flat) entries.push(`${path}=${masked.has(path) ? '*' : leaf}`)
  for (const path of masked) if (!flat.has(path)) entries.push(`${path}=*`)
  return entries.sort().join('\u0001')
}

/** A key of keyOf as one short line, for the report. */
function describeKey (key, width = 160) {
  const text = key.split('\u0001').map((entry) => entry.replace(/=[a-z]:/, '=')).join(', ')
  return text.length > width ? `${text.slice(0, width - 1)}…` : text
}

/** The value at a dotted path of a stored document (undefined when absent). */
function valueAt (doc, path) {
  let at = doc
  for (const part of path.split('.')) {
    if (at === null || typeof at !== 'object') return undefined
    at = at[part]
  }
  return at
}

const EMPTY = new Set()

module.exports = { stored, tag, flatten, differing, keyOf, describeKey, valueAt }
