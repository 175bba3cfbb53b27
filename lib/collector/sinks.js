'use strict'

const InvalidOptionError = require('../../exceptions/invalid-option-error')
const { closestName } = require('../shared/closest-name')

/**
 * The sinks a collector definition writes to, as declarations: what kind,
 * which collection, and `of(record, message)`, the function that turns one
 * decoded record into what the sink stores (null or an empty array: nothing
 * for this sink). The worker builds the stores from them
 * (workers/sinks.js); the master loads only this file. Every sink is
 * exactly once under redelivery, worker kills and a master SIGKILL with the
 * disk buffer (docs/writing-collectors.md).
 *
 * `message` beside the record: `{ receivedAt, remote }` (a Date, and the
 * sender's `{ address, port }`).
 *
 * Every sink also takes `maxBatch` (entries held that have the worker
 * write at once; documents: also the size of each insert, 1000 by default)
 * and `fromSettings`, `{ field: setting }`: fields of the sink taken from
 * the worker's settings when set (e.g. `{ collection: 'countersCollection' }`,
 * the sink's own value the default).
 *
 * `expireBy` (updates and documents sinks): the date field `--retention`
 * and `--max-storage` read a document's age from (docs/storage.md,
 * Retention): one that never changes (a message's arrival, a per-minute
 * document's minute) or, for a document updated in place, one each upsert
 * moves forward (`max: { lastSeen: receivedAt }`: a last activity, so that
 * what still receives is never old). A sink without one is kept forever.
 * Counters (by day) and streams (ended ones, by their last activity) know
 * theirs.
 */

/**
 * Documents updated in place, one per `_id` (or per `key`, a unique field
 * of the collection's): `of` gives `{ _id, inc?, min?, max?, last?, set?,
 * setOnInsert? }` (or an array of them), each of inc/min/max/last an object
 * `{ field: number }`. `inc` counts once per message; `min`/`max` keep the
 * extremes; `last` keeps the value of the message that reached the master
 * last, stored as `{ batch, index, value }` and never overwritten by an
 * older message delivered again; `set`: values every copy of the message
 * carries (so that their order does not matter). A document with no `inc`
 * is written without a watermark.
 * @param {{ collection: string, of: Function, key?: string, indexes?: Array<{ key: object, unique?: boolean }>, expireBy?: string }} spec
 */
function updates (spec) {
  return sink('updates', spec)
}

/**
 * Per-minute counters, one document per metric and UTC day (`daily`,
 * `hourly.HH`, `minute.HH.MM`): `of` gives `{ metric, n?, at? }` or an
 * array (n: 1, at: the message's arrival, by default). `writeEvery`: ms its
 * increments are coalesced across flushes (Sink.due). A metric naming what
 * a sender chooses (a host name) gives that part as `key`: each worker
 * takes at most `maxNewKeysPerMinute` new keys a minute (0 or unset: no
 * cap), remembering `maxKnownKeys` (default ten times that), and counts the
 * rest under the sink's `otherwise` metric (workers/counter-key-cap.js).
 * @param {{ collection?: string, of: Function, preallocateRate?: number, writeEvery?: number, maxNewKeysPerMinute?: number, maxKnownKeys?: number, otherwise?: string }} spec
 */
function counters (spec) {
  const capped = spec && (spec.maxNewKeysPerMinute !== undefined || (spec.fromSettings && spec.fromSettings.maxNewKeysPerMinute !== undefined))
  if (capped && (typeof spec.otherwise !== 'string' || spec.otherwise === '')) {
    throw InvalidOptionError.problem('sinks', 'a counters sink with maxNewKeysPerMinute needs otherwise, the metric counted past it')
  }
  return sink('counters', { collection: 'counters', ...spec })
}

/**
 * One document inserted per record (`of` gives it, an array of them, or
 * null): a message that gave one record storing one document has the
 * message's key as `_id` (an ObjectId); any other document is numbered in
 * its message, `_id: { m: <the message's key>, r: n }` (a datagram of 30
 * flows: r 0 to 29). A redelivered message collides where it landed.
 * @param {{ collection: string, of: Function, indexes?: Array<{ key: object, unique?: boolean }>, expireBy?: string }} spec
 */
function documents (spec) {
  return sink('documents', spec)
}

// The stream settings (workers/mongo-settings.js STREAM_SETTINGS) a streams sink takes.
const STREAM_FROM_SETTINGS = Object.freeze({
  collection: 'streamsCollection',
  countersCollection: 'countersCollection',
  counterMetric: 'counterMetric',
  preallocateRate: 'preallocateRate',
  maxPending: 'maxPending',
  maxBatch: 'maxStreamsPerFlush',
  streamTimeout: 'streamTimeout',
  byeGrace: 'byeGrace',
  streamSegment: 'streamSegment',
  sweepInterval: 'sweepInterval',
  sweep: 'sweep'
})

/**
 * Bilateral streams (workers/streams-sink.js): each record is an item of
 * StreamWorker's decode() (a packet `{ fromID, toID, IP, highestPacketNum,
 * timestamp, fields?, stats?, counts? }`, a side update `{ sideID,
 * fields }` or an end `{ endID }`), or `of(record, message)` gives them.
 * Packets are upserted into one document per pair of ends and counted in
 * `counterMetric` (default `<collector name>.packets`; `minuteFields`: the
 * prefixes of the items' per-minute `counts`); the leader worker ends the
 * streams quiet for `streamTimeout` and stores `analytics(doc, endedAt)`.
 * Its `fromSettings` defaults to the stream settings (STREAM_SETTINGS):
 * the definition's settings include them.
 * @param {{ collection?: string, countersCollection?: string, counterMetric?: string, minuteFields?: string[], analytics?: Function, of?: Function }} [spec]
 */
function streams (spec = {}) {
  return sink('streams', { collection: 'streams', ...spec, fromSettings: { ...STREAM_FROM_SETTINGS, ...spec.fromSettings } })
}

const KINDS = Object.freeze(['updates', 'counters', 'documents', 'streams'])

// What a sink declaration of each kind may say: a key not among them is a
// typo (`indexs`, `expireby`), or one of another kind (`otherwise` on a
// documents sink), refused at load, not ignored.
const COMMON_KEYS = ['collection', 'of', 'fromSettings', 'maxBatch', 'writeEvery']
const SPEC_KEYS = Object.freeze({
  updates: [...COMMON_KEYS, 'key', 'indexes', 'expireBy', 'expireSpan', 'expireFrom'],
  counters: [...COMMON_KEYS, 'indexes', 'preallocateRate', 'maxNewKeysPerMinute', 'maxKnownKeys', 'otherwise'],
  documents: [...COMMON_KEYS, 'indexes', 'expireBy', 'expireSpan'],
  streams: [...COMMON_KEYS, 'preallocateRate', 'countersCollection', 'counterMetric', 'minuteFields', 'analytics', 'streamTimeout', 'byeGrace', 'streamSegment', 'maxPending', 'sweep', 'sweepInterval']
})

function sink (kind, spec) {
  const refuse = (what) => { throw InvalidOptionError.problem('sinks', `${article(kind)} ${kind} sink${spec && typeof spec.collection === 'string' ? ` (${spec.collection})` : ''} ${what}`) }
  if (!spec || (typeof spec.of !== 'function' && !(kind === 'streams' && spec.of === undefined))) refuse('needs of(record, message), the function giving what it stores')
  const own = SPEC_KEYS[kind]
  for (const key of Object.keys(spec)) {
    if (own.includes(key)) continue
    const others = KINDS.filter((other) => SPEC_KEYS[other].includes(key))
    const closest = others.length === 0 ? closestName(key, own) : null
    refuse(`takes no ${key}${others.length > 0 ? `: that is ${others.map((other) => `${article(other)} ${other} sink's`).join(' or ')}` : closest ? `; did you mean ${closest}?` : ''} (it takes ${own.join(', ')})`)
  }
  if (typeof spec.collection !== 'string' || spec.collection === '') refuse('needs the name of its collection')
  if (spec.expireBy !== undefined && (typeof spec.expireBy !== 'string' || spec.expireBy === '')) {
    refuse(`names in expireBy the date field of its documents (got ${JSON.stringify(spec.expireBy)})`)
  }
  if (spec.expireFrom !== undefined && (kind !== 'updates' || spec.expireBy === undefined || typeof spec.expireFrom !== 'string' || spec.expireFrom === '')) {
    refuse(`takes expireFrom, with expireBy on an updates sink, as the date field documents written before expireBy existed take it from (got ${JSON.stringify(spec.expireFrom)})`)
  }
  if (spec.expireSpan !== undefined && (spec.expireBy === undefined || !(Number.isInteger(spec.expireSpan) && spec.expireSpan > 0))) {
    refuse(`takes expireSpan, with expireBy, as the ms its documents keep receiving after their expireBy time (got ${JSON.stringify(spec.expireSpan)})`)
  }
  if (spec.indexes !== undefined && !(Array.isArray(spec.indexes) && spec.indexes.every((index) => index && typeof index === 'object' && index.key && typeof index.key === 'object'))) {
    refuse(`takes indexes as an array of { key, ...options } (got ${JSON.stringify(spec.indexes)})`)
  }
  for (const [field, setting] of Object.entries(spec.fromSettings || {})) {
    if (typeof setting !== 'string') refuse(`names a setting in fromSettings.${field} (got ${JSON.stringify(setting)})`)
  }
  return Object.freeze({ ...spec, kind })
}

function article (kind) {
  return kind === 'updates' ? 'an' : 'a'
}

// A kind that does not exist (`sinks.timeseries(...)`) is said so by name,
// with the kinds there are, where JavaScript said "is not a function".
// What tools probe a module for (then, toJSON, default) stays undefined.
const NOT_KINDS = new Set(['then', 'toJSON', 'default', '__esModule'])
module.exports = new Proxy({ updates, counters, documents, streams, KINDS }, {
  get (target, name) {
    if (typeof name === 'symbol' || name in target || NOT_KINDS.has(name)) return target[name]
    return () => { throw InvalidOptionError.problem('sinks', `there is no sinks.${name}: a sink is one of sinks.${KINDS.join(', sinks.')}`) }
  }
})
