'use strict'

const { flagTypes } = require('../../lib/shared/value-types')
const InvalidOptionError = require('../../exceptions/invalid-option-error')

/*
 * Which collections expire, after how long and by which date field, and the
 * TTL index that has MongoDB's own monitor delete them (docs/storage.md,
 * Retention). Pure: the StorageKeeper (storage-keeper.js) runs it.
 *
 * A target is one collection a worker writes, as its sink declares it:
 * `{ collection, field, perDay?, span?, partial?, declared?, legacy? }`: `field`
 * the date its documents' age is read from (a stream's or call's last
 * activity, which every write moves forward, so nothing still receiving is
 * old; a message's arrival; a per-minute document's minute), `perDay` for
 * per-day documents (their field is the day's start: they expire once the
 * whole day is older than the retention), `span` the same for a bucket of
 * another length (ms: a per-minute document's minute, its sink's
 * `expireSpan`), `partial` a filter the documents
 * must also match (streams: `{ active: false }`, only ended ones), and
 * `declared` when the sink's own indexes name the field (the index exists
 * whatever the retention).
 */

const DAY_MS = 86400000
// MongoDB's bound on expireAfterSeconds.
const MAX_TTL_SECONDS = 2147483647
const OFF_WORDS = new Set(['off', '0', 'forever', 'never'])

// The shortest retention: `--retention 30` meant as days is 30 ms, and
// would delete every message as it is stored.
const MIN_RETENTION_MS = 1000

/** What is wrong with a retention in ms (0: nothing expires), or undefined. */
function retentionProblem (ms) {
  if (ms > 0 && ms < MIN_RETENTION_MS) return 'must be 0 (nothing expires) or at least 1s; give a unit, as in 30d (a bare number is milliseconds)'
  return undefined
}

/**
 * What is wrong with a `retentionFor` list (`name=duration`, duration as
 * `--retention` takes it, or `off`), or undefined.
 */
function retentionForProblem (list) {
  const named = new Set()
  for (const item of list) {
    const [name, value] = splitItem(item)
    if (!name || value === undefined) return `each item is COLLECTION=DURATION (e.g. flows=7d) or COLLECTION=off (got "${item}")`
    if (named.has(name)) return `${name} is named twice: one retention a collection`
    named.add(name)
    if (OFF_WORDS.has(value)) continue
    const { value: ms, error } = flagTypes.duration.parse(value)
    if (error) return `${name}: expected a duration such as 7d, 12h or 30s, or off (got "${value}")`
    const problem = retentionProblem(ms)
    if (problem) return `${name}: ${problem}`
  }
  return undefined
}

/** `retentionFor` as a Map from collection name to ms (0: kept forever). */
function parseRetentionFor (list = []) {
  const out = new Map()
  for (const item of list) {
    const [name, value] = splitItem(item)
    out.set(name, OFF_WORDS.has(value) ? 0 : flagTypes.duration.parse(value).value)
  }
  return out
}

function splitItem (item) {
  const at = item.indexOf('=')
  if (at < 0) return [item.trim(), undefined]
  return [item.slice(0, at).trim(), item.slice(at + 1).trim().toLowerCase()]
}

/**
 * Each target's retention in ms (0: kept forever), from the worker's
 * settings: its collection's `retentionFor` entry, else `retention`.
 * Throws an Error naming what `retentionFor` names that no target is.
 */
function retentionsOf (targets, { retention = 0, retentionFor = [] } = {}) {
  const overrides = parseRetentionFor(retentionFor)
  const names = new Set(targets.map((t) => t.collection))
  const unknown = [...overrides.keys()].filter((name) => !names.has(name))
  if (unknown.length > 0) throw new Error(`names ${unknown.join(', ')}, which is not one of the collections retention reaches (${[...names].join(', ') || 'none'})`)
  return new Map(targets.map((t) => [t.collection, overrides.has(t.collection) ? overrides.get(t.collection) : retention]))
}

/** The age below which a target's documents are deleted at `now`: epoch ms. */
// How long a document keeps receiving after its date field's time: a
// per-day document the day, a sink's bucket (a per-minute document's
// minute: expireSpan) its span, else nothing (the field moves with each write).
function spanOf (target) {
  return target.span || (target.perDay ? DAY_MS : 0)
}

function cutoffOf (target, retentionMs, now) {
  return now - retentionMs - spanOf(target)
}

/** The TTL index's expireAfterSeconds for a retention: whole seconds, a day more for per-day documents. */
function ttlSeconds (target, retentionMs) {
  return Math.min(MAX_TTL_SECONDS, Math.ceil((retentionMs + spanOf(target)) / 1000))
}

/** The index a target's field gets: single-field, with its partial filter. */
function ageIndex (target) {
  const options = { name: target.partial ? `${target.field}_1_retention` : `${target.field}_1` }
  if (target.partial) options.partialFilterExpression = target.partial
  return { key: { [target.field]: 1 }, options }
}

/** The index of `indexes` (listIndexes) on the target's field alone, with the same partial filter, or undefined. */
function findAgeIndex (indexes, target) {
  const key = JSON.stringify({ [target.field]: 1 })
  const partial = JSON.stringify(target.partial || null)
  return indexes.find((index) => JSON.stringify(index.key) === key && JSON.stringify(index.partialFilterExpression || null) === partial)
}

/**
 * What to do to the target's age index, given the collection's indexes
 * (listIndexes): `{ action, ... }`, one of
 * - `create`: `{ key, options }` (options with expireAfterSeconds when `ttl`);
 * - `collMod`: `{ command }`, the expiry of the existing index changed in
 *   place (never dropped and rebuilt);
 * - `keep`: nothing to do (`expiring`: the seconds after which an index that
 *   is not ours to change still deletes, when retention is off for it).
 * `ttl`: the server deletes by this index (retention on, a TTL monitor);
 * `wanted`: the index is needed at all (retention or a budget on, or the
 * sink declares it).
 */
function planAgeIndex (indexes, target, { retentionMs, ttl, wanted }) {
  const existing = findAgeIndex(indexes, target)
  const expiring = existing && typeof existing.expireAfterSeconds === 'number' ? existing.expireAfterSeconds : null
  if (!(ttl && retentionMs > 0)) {
    if (existing) return { action: 'keep', expiring: retentionMs > 0 ? null : expiring }
    if (!wanted) return { action: 'keep', expiring: null }
    return { action: 'create', ...ageIndex(target) }
  }
  const seconds = ttlSeconds(target, retentionMs)
  if (!existing) {
    const index = ageIndex(target)
    return { action: 'create', key: index.key, options: { ...index.options, expireAfterSeconds: seconds } }
  }
  if (expiring === seconds) return { action: 'keep', expiring: null }
  return { action: 'collMod', from: expiring, command: { collMod: target.collection, index: { name: existing.name, expireAfterSeconds: seconds } } }
}

/**
 * Whether the server deletes expired documents itself: MongoDB reports its
 * TTL monitor in serverStatus (`metrics.ttl`); mongo-java-server accepts
 * TTL indexes and never expires anything, and reports no such figure.
 * `retentionBy` (the worker setting) forces either way.
 */
function hasTtlMonitor (serverStatus, retentionBy = 'auto') {
  if (retentionBy !== 'auto') return retentionBy === 'ttl'
  return Boolean(serverStatus && serverStatus.metrics && serverStatus.metrics.ttl)
}

/** A retention for a log line: 7d, 36h, 90s; off. */
function formatRetention (ms) {
  return ms > 0 ? flagTypes.duration.format(ms) : 'off'
}

/**
 * A worker's retention settings against the collections it writes
 * (`targets`, its storageTargets()), at start: a retentionFor naming one it
 * does not write is a typo, refused by name (InvalidOptionError). Asked for
 * with none to reach: `warn(line)` says so.
 */
function checkRetention (targets, settings, warn) {
  try {
    retentionsOf(targets, settings)
  } catch (err) {
    throw new InvalidOptionError('retentionFor', (settings.retentionFor || []).join(','), err.message)
  }
  if ((settings.retention > 0 || settings.maxStorage > 0) && targets.length === 0) warn('names no collections for retention (storageTargets()): --retention and --max-storage delete nothing')
}

module.exports = { checkRetention, retentionProblem, DAY_MS, spanOf, retentionForProblem, parseRetentionFor, retentionsOf, cutoffOf, ttlSeconds, ageIndex, findAgeIndex, planAgeIndex, hasTtlMonitor, formatRetention }
