'use strict'

/*
 * What a sink's `of(record, message)` may give, checked when the worker
 * shapes a message's records (definition-worker.js), before anything of the
 * message is held: a mistake in a definition fails the message whole (its
 * `failed` count, one log line naming the sink), where it was stored as
 * garbage (every count in one document of a random _id, a metric named
 * "undefined") or sent to the server to be refused for good, holding the
 * worker's acknowledgements behind it. Each check gives the problem, or
 * null.
 */

const { valueMistake } = require('./storage/document-size')

// Checked per record: nothing allocated per call but a problem's text.
const OBJECT_PARTS = Object.freeze(['min', 'max', 'last', 'set', 'setOnInsert'])

/** An updates sink's update: `{ [key], inc?, min?, max?, last?, set?, setOnInsert? }`. */
function updateProblem (u, key) {
  if (!isPlainObject(u)) return `gave ${describe(u)}, not an update object`
  if (u[key] === undefined || u[key] === null) return `gave an update without its key (${key})`
  // The key is the upsert's filter: an object of operators ({ $ne: 'x' }, from a sender's JSON)
  // would match another key's document and count there.
  const operator = isPlainObject(u[key]) && u[key]._bsontype === undefined ? dollarField(u[key]) : null
  if (operator !== null) return `gave ${key} an object with operator ${operator}, not a value`
  if (u.inc !== undefined) {
    if (!isPlainObject(u.inc)) return `gave inc ${describe(u.inc)}, not an object of numbers`
    for (const field in u.inc) if (!isIncrement(u.inc[field])) return `gave inc.${field} ${describe(u.inc[field])}, not a finite number`
  }
  for (const part of ['inc', ...OBJECT_PARTS]) {
    if (u[part] === undefined || u[part] === null) continue
    if (!isPlainObject(u[part])) return `gave ${part} ${describe(u[part])}, not an object`
    // A field the server refuses for good, the messages already counted processed.
    const field = dollarField(u[part])
    if (field !== null) return `gave ${part}.${field}: a field name starting with $`
    const empty = emptyPartField(u[part])
    if (empty !== null) return `gave ${part}.${empty}: a field path with an empty part (MongoDB refuses it)`
    const mistake = valueMistake(u[part])
    if (mistake !== null) return `gave an update whose ${part}.${mistake}`
  }
  return null
}

// The first own field name of `object` that starts with $, or null.
function dollarField (object) {
  for (const field in object) if (field.charCodeAt(0) === 36) return field
  return null
}

// The first own field name whose dotted path has an empty part ('a..b',
// '.a', 'a.', ''), or null: MongoDB refuses the update for good (the
// embedded server took it, so a collector verified on it failed on
// MongoDB); a name built from a sender's text ('by.' + plugin) can have one.
function emptyPartField (object) {
  for (const field in object) {
    if (field === '' || field.charCodeAt(0) === 46 || field.charCodeAt(field.length - 1) === 46 || field.includes('..')) return JSON.stringify(field)
  }
  return null
}

/** A counters sink's count: `{ metric, n?, at? }`. */
function countProblem (c) {
  if (!isPlainObject(c)) return `gave ${describe(c)}, not a count { metric, n?, at?, key? }`
  if (typeof c.metric !== 'string' || c.metric === '') return `gave metric ${describe(c.metric)}, not a non-empty string`
  if (c.n !== undefined && !Number.isFinite(c.n)) return `gave n ${describe(c.n)}, not a finite number`
  if (c.at !== undefined && !(c.at instanceof Date ? !Number.isNaN(c.at.getTime()) : Number.isFinite(c.at))) return `gave at ${describe(c.at)}, not a valid Date or epoch ms`
  if (c.key !== undefined && (typeof c.key !== 'string' || c.key === '')) return `gave key ${describe(c.key)}, not a non-empty string`
  return null
}

/**
 * A count of a counters sink whose keys are capped (workers/counter-key-cap.js):
 * a keyed count is at its message's arrival, the day whose `otherwise`
 * document a redelivered batch is read against.
 */
function cappedCountProblem (c) {
  const problem = countProblem(c)
  if (problem !== null || c.key === undefined || c.at === undefined) return problem
  return `gave at ${describe(c.at)} with key ${describe(c.key)}: a count whose key is capped is counted at its message's arrival`
}

/** A documents sink's document. */
function documentProblem (doc) {
  return isPlainObject(doc) ? null : `gave ${describe(doc)}, not a document (an object)`
}

/**
 * A document holding what BSON stores other than as written
 * (storage/document-size.js 'mistake'): a function or a symbol, left out
 * without a word; an Invalid Date, stored as 1970-01-01.
 */
function mistakeProblem (doc) {
  const mistake = valueMistake(doc)
  return mistake === null ? null : `gave a document whose ${mistake}: not stored`
}

/**
 * What a sink's shape() gives for a record it refuses by name (not a
 * mistake of the definition: what the message carries cannot be stored).
 * The worker then drops the message under `reason`, nothing of it held,
 * and logs `text` at most every 5 s.
 */
class Refusal {
  constructor (reason, text) {
    this.reason = reason
    this.text = text
    Object.freeze(this)
  }
}

/** Throws the first problem of `items` (`check(item, arg)`), naming the sink. */
function checkAll (items, check, spec, arg) {
  for (let i = 0; i < items.length; i++) {
    const problem = check(items[i], arg)
    if (problem !== null) throw new TypeError(`${spec.kind} sink of ${spec.collection}: of() ${problem}`)
  }
  return items
}

// What $inc takes: a finite number, a bigint (stored as a 64-bit integer),
// or one of BSON's numeric types (Long, Int32, Double, Decimal128).
const BSON_NUMBERS = new Set(['Long', 'Int32', 'Double', 'Decimal128'])
function isIncrement (n) {
  return Number.isFinite(n) || typeof n === 'bigint' || (n !== null && typeof n === 'object' && BSON_NUMBERS.has(n._bsontype))
}

function isPlainObject (value) {
  return value !== null && typeof value === 'object' && !Array.isArray(value)
}

function describe (value) {
  if (value === undefined) return 'undefined'
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)
  if (Array.isArray(value)) return 'an array'
  if (value instanceof Date && Number.isNaN(value.getTime())) return 'an Invalid Date'
  return typeof value === 'object' && value !== null ? 'an object' : String(value)
}

/**
 * The entries sink `s` of `n` was given for one message, from what the
 * worker's shapeAll() made (record by record, sink by sink): each shape()
 * gave null, one entry, or a list of them.
 */
function entriesOf (shaped, s, n) {
  let entries = 0
  for (let at = s; at < shaped.length; at += n) {
    const one = shaped[at]
    entries += one === null || one === undefined ? 0 : Array.isArray(one) ? one.length : 1
  }
  return entries
}

module.exports = { updateProblem, countProblem, cappedCountProblem, documentProblem, mistakeProblem, checkAll, Refusal, entriesOf }
