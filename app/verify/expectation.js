'use strict'

// What `collector verify` expects each sink to hold, computed from the
// definition alone (app/verify/model.js), per sink kind:
// - documents: how many documents of each content (and place in its
//   message, `_id.r`/`_id.d`), each to be stored once;
// - updates: per `_id` (or key), the sum of each `inc` field, `min`, `max`,
//   the `last` value, `setOnInsert` and `set` when every record agrees;
// - counters: per metric and UTC day, the sum of `n`, in total and per minute;
// - streams: per pair of ends, the packets of each side and its highest
//   packet number; side updates and ends are not verified;
// and the refusals by reason, and the kept state as the last message left it.
//
// The master stamps each message with the time it received its batch;
// verify knows only when it sent it. So the definition runs twice, at the
// earliest and the latest time the message could have been stamped: what
// differs between the two runs depends on the arrival (a `receivedAt`
// field, a per-second key) and is left out of the comparison, said so by
// name. verify sends nothing near a minute's end, so per-minute keys are the
// same in both runs and compared exactly.

const CollectorError = require('../../exceptions/collector-error')
const { runDefinition } = require('./model')
const { stored, tag, flatten, differing, keyOf } = require('./canonical')

/**
 * @param {object} definition
 * @param {object} settings the workers' settings
 * @param {Array<{ data: Buffer, rinfo?: object, remote?: object, at: number }>} sent the messages and when each was sent
 * @param {{ before: number, after: number }} spread how much earlier and later than `at` a message may be stamped (ms)
 * @param {string} [name] the collector's name as it ran (a streams sink's counter is named after it)
 */
function expectation (definition, settings, sent, spread, name = definition.name) {
  const capture = (outputs) => outputs.map((out, k) => out === null || out === undefined ? null : CAPTURE[definition.sinks[k].kind](out, definition.sinks[k]))
  const passes = [-spread.before, spread.after].map((offset) => {
    const messages = sent.map((m) => ({ ...m, receivedAt: new Date(m.at + offset) }))
    return { offset, messages, ...runDefinition(definition, settings, messages, capture) }
  })
  const { records, arrivalDependent } = alignedRecords(passes)
  const sinks = resolvedSinks(definition, settings, name).map((sink, k) => ({
    sink,
    ...BUILDERS[sink.kind](records.map((r) => ({ ...r, lo: r.lo[k], hi: r.hi[k] })), sink, definition)
  }))
  return { sinks, outcomes: outcomeCounts(passes[0].outcomes), arrivalDependent, kept: keptExpected(passes) }
}

// What each kind of sink's output is taken as: what the driver stores of
// it; of a streams item, what is verified of it (the rest may be anything).
const CAPTURE = {
  documents: storedOutput,
  updates: storedOutput,
  counters: storedOutput,
  streams: (out) => listOf(out).map((item) => item && typeof item === 'object'
    ? { fromID: item.fromID, toID: item.toID, highestPacketNum: item.highestPacketNum, sideID: item.sideID, endID: item.endID }
    : item)
}

function storedOutput (out, sink) {
  try {
    return stored(out)
  } catch (err) {
    throw new CollectorError(`sink ${sink.collection}: of() gave a value the MongoDB driver cannot store (${err.message})`, 'ERR_USAGE')
  }
}

// Each record the two runs agree a message gave, with its outputs in both;
// messages whose outcome depends on the arrival time are counted apart.
function alignedRecords ([lo, hi]) {
  const records = []
  let arrivalDependent = 0
  for (let i = 0; i < lo.outcomes.length; i++) {
    const a = lo.outcomes[i]
    const b = hi.outcomes[i]
    if (a.refused !== b.refused || a.failed !== b.failed || (a.records || []).length !== (b.records || []).length) {
      arrivalDependent++
      continue
    }
    for (let j = 0; j < (a.records || []).length; j++) {
      records.push({ message: i, place: a.records[j].place, many: a.many, lo: a.records[j].outputs, hi: b.records[j].outputs, at: [lo.messages[i].receivedAt, hi.messages[i].receivedAt] })
    }
  }
  return { records, arrivalDependent }
}

// Processed, refused by reason and failed, as the master would count them.
function outcomeCounts (outcomes) {
  const counts = { messages: outcomes.length, processed: 0, failed: 0, refused: {} }
  for (const o of outcomes) {
    if (o.refused) counts.refused[o.refused] = (counts.refused[o.refused] || 0) + 1
    else if (o.failed) counts.failed++
    else counts.processed++
  }
  return counts
}

// A sink's fields named in fromSettings, from the workers' settings (as
// workers/sink-stores.js resolves them); a streams sink's counter is named after
// the collector as it ran (`name`).
function resolvedSinks (definition, settings, name) {
  return definition.sinks.map((spec) => {
    const resolved = { ...spec }
    for (const [field, setting] of Object.entries(spec.fromSettings || {})) if (settings[setting] !== undefined) resolved[field] = settings[setting]
    if (spec.kind === 'streams' && !resolved.counterMetric) resolved.counterMetric = `${name}.packets`
    return resolved
  })
}

/** A key's text: a leaf's tag, an object's flattened key. */
function idText (value) {
  return tag(value) ?? `{${keyOf(flatten(value))}}`
}

function listOf (value) {
  if (value === null || value === undefined) return []
  return Array.isArray(value) ? value : [value]
}

// Each output of a sink for a record (`fn(output, its counterpart in the later run, record)`).
function eachOutput (records, fn) {
  for (const r of records) {
    const his = listOf(r.hi)
    listOf(r.lo).forEach((out, n) => fn(out, his[n] || {}, r))
  }
}

// documents: one per record (several when `of` gives an array), by content.
function expectDocuments (records) {
  const expected = new Map() // key → { count, message, masked }
  const masks = new Map() // the masked paths' signature → the paths
  let documents = 0
  for (const r of records) {
    if (!r.lo) continue
    const several = Array.isArray(r.lo)
    const his = listOf(r.hi)
    listOf(r.lo).forEach((doc, d) => {
      if (!doc) return
      const place = several ? { r: r.place, d } : r.many ? { r: r.place } : {}
      const a = documentLeaves(doc, place)
      const mask = differing(a, documentLeaves(his[d] || {}, place))
      const signature = [...mask].sort().join(',')
      masks.set(signature, mask)
      const key = `${signature}\u0002${keyOf(a, mask)}`
      const entry = expected.get(key) || { count: 0, message: r.message, masked: mask }
      entry.count++
      expected.set(key, entry)
      documents++
    })
  }
  return { expected, masks, documents }
}

/** A document's leaves without its _id, with its place in its message (`#r`, `#d`) as the _id says it. */
function documentLeaves (doc, place) {
  const { _id, ...rest } = doc
  const leaves = flatten(rest)
  if (place.r !== undefined) leaves.set('#r', tag(place.r))
  if (place.d !== undefined) leaves.set('#d', tag(place.d))
  return leaves
}

// updates: per key, the sums, extremes, last values and inserted fields.
function expectUpdates (records, sink) {
  const keyField = sink.key || '_id'
  const expected = new Map()
  let unkeyed = 0
  eachOutput(records, (u, h, r) => {
    if (idText(u[keyField]) !== idText(h[keyField])) return unkeyed++
    const id = idText(u[keyField])
    const entry = expected.get(id) || { key: u[keyField], records: 0, inc: new Map(), min: new Map(), max: new Map(), last: new Map(), setOnInsert: new Map(), set: new Map(), masked: new Set() }
    expected.set(id, entry)
    entry.records++
    addUpdate(entry, u, h, r)
  })
  return { expected, unkeyed, keyField }
}

function addUpdate (entry, u, h, r) {
  const each = (field, fn) => {
    for (const [path, value] of Object.entries(u[field] || {})) {
      const other = (h[field] || {})[path]
      if (idText(value) !== idText(other)) entry.masked.add(`${field}.${path}`)
      else fn(path, value)
    }
  }
  each('inc', (path, n) => entry.inc.set(path, (entry.inc.get(path) || 0) + Number(n)))
  each('min', (path, v) => { if (!entry.min.has(path) || below(v, entry.min.get(path))) entry.min.set(path, v) })
  each('max', (path, v) => { if (!entry.max.has(path) || below(entry.max.get(path), v)) entry.max.set(path, v) })
  each('last', (path, v) => entry.last.set(path, [...(entry.last.get(path) || []), { value: v, at: r.at[0].getTime() }]))
  for (const field of ['setOnInsert', 'set']) {
    each(field, (path, v) => {
      const seen = entry[field].get(path)
      entry[field].set(path, seen === undefined || idText(seen) === idText(v) ? v : VARIES)
    })
  }
}

const VARIES = Symbol('varies')

// $min/$max order for the values definitions use: numbers and dates by value, else as text.
function below (a, b) {
  const x = a instanceof Date ? a.getTime() : a
  const y = b instanceof Date ? b.getTime() : b
  return typeof x === 'number' && typeof y === 'number' ? x < y : String(x) < String(y)
}

// counters: per metric and day, `daily` and each minute.
function expectCounters (records) {
  const expected = new Map()
  let unkeyed = 0
  eachOutput(records, (c, h, r) => {
    const a = counterPlace(c, r.at[0])
    if (c.metric !== h.metric || a.minute !== counterPlace(h, r.at[1]).minute) return unkeyed++
    const id = `${a.day}/${c.metric}`
    const entry = expected.get(id) || { metric: c.metric, day: a.day, daily: 0, minutes: new Map() }
    expected.set(id, entry)
    const count = c.n === undefined || c.n === null ? 1 : Number(c.n) // null: undefined before the BSON round trip
    entry.daily += count
    entry.minutes.set(a.minute, (entry.minutes.get(a.minute) || 0) + count)
  })
  return { expected, unkeyed }
}

// The UTC day (YYYYMMDD) and minute (HH.MM) a counter output counts in.
function counterPlace (c, receivedAt) {
  const d = c.at === undefined || c.at === null ? receivedAt : new Date(c.at)
  const iso = d.toISOString()
  return { day: iso.slice(0, 10).replace(/-/g, ''), minute: `${iso.slice(11, 13)}.${iso.slice(14, 16)}` }
}

// streams: per pair of ends, each side's packets and highest packet number.
function expectStreams (records) {
  const expected = new Map()
  const notVerified = { sideUpdates: 0, ends: 0 }
  let packets = 0
  let unkeyed = 0
  eachOutput(records, (item, h) => {
    if (!item || typeof item !== 'object') return
    if (item.sideID !== undefined) return notVerified.sideUpdates++
    if (item.endID !== undefined) return notVerified.ends++
    if (item.fromID === undefined || item.fromID === null || item.toID === undefined || item.toID === null || !Number.isFinite(item.highestPacketNum)) return
    if (String(item.fromID) !== String(h.fromID) || String(item.toID) !== String(h.toID)) return unkeyed++
    addPacket(expected, item)
    packets++
  })
  return { expected, packets, unkeyed, notVerified }
}

// Stream IDs are stored as text (workers/storage/schemas.js): compared as text.
function addPacket (expected, item) {
  const from = String(item.fromID)
  const pair = [`s:${from}`, `s:${item.toID}`].sort().join(' ~ ')
  const entry = expected.get(pair) || { ends: [item.fromID, item.toID], sides: new Map() }
  expected.set(pair, entry)
  const side = entry.sides.get(from) || { id: item.fromID, packets: 0, highest: -Infinity }
  entry.sides.set(from, side)
  side.packets++
  side.highest = Math.max(side.highest, item.highestPacketNum)
}

// The kept state the last message left, per scope and name; a value that
// differs between the two runs depends on the arrival and is not compared.
function keptExpected ([lo, hi]) {
  if (!lo.kept) return null
  const expected = new Map()
  const masked = new Set()
  for (const [scope, values] of lo.kept) {
    for (const [name, value] of values) {
      const id = `${scope}\u0000${name}`
      const other = hi.kept.get(scope) && hi.kept.get(scope).get(name)
      if (idText(stored(value)) !== idText(stored(other))) masked.add(id)
      else expected.set(id, { scope, name, value: stored(value) })
    }
  }
  return { expected, masked }
}

const BUILDERS = { documents: expectDocuments, updates: expectUpdates, counters: expectCounters, streams: expectStreams }

module.exports = { expectation, idText, VARIES, below }
