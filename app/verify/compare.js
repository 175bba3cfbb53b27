'use strict'

// What the database holds against what app/verify/expectation.js expects,
// per sink: a verdict (`exact`, `mismatch`), the counts that are its
// evidence, the first differences (MAX_SHOWN of each sink, with the sample
// message that gave the record) and what was not compared, by name.

const { tag, flatten, keyOf, describeKey, valueAt } = require('./canonical')
const { idText, VARIES } = require('./expectation')

const MAX_SHOWN = 5
// `last` keeps the value of the message that reached the master last; two
// messages sent this close may reach it in either order (two workers' batches).
const LAST_TIE_MS = 300

async function compareStored (db, expected, { keptCollection }) {
  const sinks = []
  for (const { sink, ...exp } of expected.sinks) sinks.push(await COMPARERS[sink.kind](db, sink, exp, expected.sinks))
  const kept = expected.kept ? await compareKept(db.collection(keptCollection), expected.kept) : null
  return { sinks, kept }
}

function result (sink, summary, differences, notCompared = []) {
  return { collection: sink.collection, kind: sink.kind, verdict: differences.length === 0 ? 'exact' : 'mismatch', summary, differences: differences.slice(0, MAX_SHOWN), differenceCount: differences.length, notCompared }
}

async function compareDocuments (db, sink, exp) {
  const docs = await db.collection(sink.collection).find().toArray()
  const seen = new Map()
  const unexpected = []
  for (const doc of docs) {
    const key = matchDocument(doc, exp.masks, exp.expected)
    if (key === null) unexpected.push(doc)
    else seen.set(key, (seen.get(key) || 0) + 1)
  }
  const differences = []
  let missing = 0
  let duplicates = 0
  for (const [key, e] of exp.expected) {
    const count = seen.get(key) || 0
    if (count === e.count) continue
    if (count < e.count) missing += e.count - count
    else duplicates += count - e.count
    differences.push({ what: count < e.count ? 'missing' : 'stored more than once', document: describeKey(key.slice(key.indexOf('\u0002') + 1)), expected: e.count, stored: count, message: e.message + 1 })
  }
  for (const doc of unexpected) differences.push({ what: 'not expected', document: describeKey(keyOf(flatten(doc))), _id: tag(doc._id) ?? keyOf(flatten(doc._id)) })
  const masked = new Set([...exp.masks.values()].flatMap((mask) => [...mask]))
  const notCompared = masked.size ? [`fields set from the arrival time: ${[...masked].sort().join(', ')}`] : []
  return result(sink, { expected: exp.documents, stored: docs.length, missing, duplicates, unexpected: unexpected.length }, differences, notCompared)
}

// The expected key a stored document has under one of the sink's masks, or null.
function matchDocument (doc, masks, expected) {
  const { _id, ...rest } = doc
  const leaves = flatten(rest)
  if (_id && typeof _id === 'object' && _id.r !== undefined && _id._bsontype === undefined) {
    leaves.set('#r', tag(_id.r))
    if (_id.d !== undefined) leaves.set('#d', tag(_id.d))
  }
  for (const [signature, mask] of masks) {
    const key = `${signature}\u0002${keyOf(leaves, mask)}`
    if (expected.has(key)) return key
  }
  return null
}

async function compareUpdates (db, sink, exp) {
  const docs = await db.collection(sink.collection).find().toArray()
  const byKey = new Map(docs.map((doc) => [idText(doc[exp.keyField]), doc]))
  const differences = []
  const totals = {}
  for (const [id, e] of exp.expected) {
    const doc = byKey.get(id)
    byKey.delete(id)
    if (!doc) differences.push({ what: 'missing document', [exp.keyField]: shownId(id), records: e.records })
    else differences.push(...updateDifferences(doc, e, shownId(id), exp.keyField, totals))
  }
  if (exp.unkeyed === 0) for (const id of byKey.keys()) differences.push({ what: 'not expected', [exp.keyField]: shownId(id) })
  const masked = new Set([...exp.expected.values()].flatMap((e) => [...e.masked]))
  const notCompared = [
    ...(masked.size ? [`fields set from the arrival time: ${[...masked].sort().join(', ')}`] : []),
    ...(exp.unkeyed ? [`${exp.unkeyed} updates whose ${exp.keyField} depends on the arrival time`] : [])
  ]
  return result(sink, { expected: exp.expected.size, stored: docs.length, totals }, differences, notCompared)
}

// One document against its expectation; `totals` gathers each inc field's sums.
function updateDifferences (doc, e, id, keyField, totals) {
  const out = []
  const differ = (field, path, want, got) => out.push({ what: field, [keyField]: id, field: path, expected: want, stored: got })
  for (const [path, sum] of e.inc) {
    const got = Number(valueAt(doc, path) ?? 0)
    const total = totals[path] || (totals[path] = { expected: 0, stored: 0 })
    total.expected += sum
    total.stored += got
    if (!close(sum, got)) differ('inc', path, sum, got)
  }
  for (const field of ['min', 'max', 'setOnInsert', 'set']) {
    for (const [path, want] of e[field]) {
      if (want !== VARIES && idText(valueAt(doc, path)) !== idText(want)) differ(field, path, shown(want), shown(valueAt(doc, path)))
    }
  }
  for (const [path, candidates] of e.last) {
    const got = valueAt(doc, path)
    const last = candidates[candidates.length - 1]
    const allowed = candidates.filter((c) => c.at >= last.at - LAST_TIE_MS).map((c) => idText(c.value))
    if (!got || !allowed.includes(idText(got.value))) differ('last', path, shown(last.value), shown(got && got.value))
  }
  return out
}

// A key's text without its type tag (`s:10.0.0.1` → `10.0.0.1`).
function shownId (id) {
  return id.replace(/^[a-z]:/, '')
}

function close (a, b) {
  return Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(a), Math.abs(b))
}

function shown (value) {
  if (value === undefined) return null
  return value instanceof Date ? value.toISOString() : value
}

async function compareCounters (db, sink, exp, all) {
  // Another sink's counter (a streams sink's packets) may share the collection.
  const others = new Set(all.filter((s) => s.sink.kind === 'streams').map((s) => s.sink.counterMetric))
  const docs = (await db.collection(sink.collection).find().toArray()).filter((doc) => !others.has(doc.metric))
  const byId = new Map(docs.map((doc) => [String(doc._id), doc]))
  const differences = []
  const total = { expected: 0, stored: 0 }
  for (const [id, e] of exp.expected) {
    const doc = byId.get(id)
    byId.delete(id)
    total.expected += e.daily
    total.stored += doc ? Number(doc.daily || 0) : 0
    if (!doc) differences.push({ what: 'missing counter', metric: e.metric, day: e.day, expected: e.daily })
    else differences.push(...counterDifferences(doc, e))
  }
  const extra = [...byId.values()].filter((doc) => Number(doc.daily || 0) !== 0) // preallocated days hold zeros
  for (const doc of exp.unkeyed === 0 ? extra : []) differences.push({ what: 'not expected', metric: doc.metric, day: doc.day, stored: doc.daily })
  for (const doc of extra) total.stored += Number(doc.daily)
  const notCompared = exp.unkeyed ? [`${exp.unkeyed} counts whose minute depends on the arrival time`] : []
  return result(sink, { metrics: new Set([...exp.expected.values()].map((e) => e.metric)).size, counted: total }, differences, notCompared)
}

function counterDifferences (doc, e) {
  const out = []
  if (Number(doc.daily) !== e.daily) out.push({ what: 'daily', metric: e.metric, day: e.day, expected: e.daily, stored: doc.daily })
  for (const [minute, n] of e.minutes) {
    const got = Number(valueAt(doc, `minute.${minute}`) || 0)
    if (got !== n) out.push({ what: 'minute', metric: e.metric, day: e.day, minute, expected: n, stored: got })
  }
  return out
}

async function compareStreams (db, sink, exp) {
  const docs = await db.collection(sink.collection).find().toArray()
  const pairs = storedPairs(docs)
  const differences = []
  for (const [pair, e] of exp.expected) {
    const got = pairs.get(pair)
    pairs.delete(pair)
    if (!got) {
      differences.push({ what: 'missing stream', ends: pair })
      continue
    }
    if (got.open > 1) differences.push({ what: 'open streams', ends: pair, expected: 1, stored: got.open })
    for (const [id, side] of e.sides) {
      const have = got.sides.get(String(side.id)) || { packets: 0, highest: null }
      if (have.packets !== side.packets) differences.push({ what: 'side packets', ends: pair, side: id, expected: side.packets, stored: have.packets })
      if (have.highest !== side.highest) differences.push({ what: 'highest packet number', ends: pair, side: id, expected: side.highest, stored: have.highest })
    }
  }
  if (exp.unkeyed === 0) for (const pair of pairs.keys()) differences.push({ what: 'not expected', ends: pair })
  const counted = await countersTotal(db.collection(sink.countersCollection || 'counters'), sink.counterMetric)
  if (counted !== exp.packets) differences.push({ what: 'packet counter', metric: sink.counterMetric, expected: exp.packets, stored: counted })
  const notCompared = ['fields, statistics and analytics of the streams (computed with each worker\'s enrich memory)']
  if (exp.notVerified.sideUpdates || exp.notVerified.ends) notCompared.push(`${exp.notVerified.sideUpdates} side updates and ${exp.notVerified.ends} ends`)
  return result(sink, { pairs: exp.expected.size, streams: docs.length, packets: { expected: exp.packets, stored: sumSides(docs), counted } }, differences, notCompared)
}

// Per pair of ends (their IDs as text, sorted): the streams open, and each side's packets and highest number.
function storedPairs (docs) {
  const pairs = new Map()
  for (const doc of docs) {
    const ends = [String(doc.from && doc.from.ID), String(doc.to && doc.to.ID)]
    const pair = ends.map((id) => `s:${id}`).sort().join(' ~ ')
    const entry = pairs.get(pair) || { open: 0, sides: new Map() }
    pairs.set(pair, entry)
    if (doc.active) entry.open++
    for (const side of [doc.from, doc.to]) {
      if (!side) continue
      const have = entry.sides.get(String(side.ID)) || { packets: 0, highest: null }
      have.packets += Number(side.packets || 0)
      if (Number.isFinite(side.highestPacketNum) && (have.highest === null || side.highestPacketNum > have.highest)) have.highest = side.highestPacketNum
      entry.sides.set(String(side.ID), have)
    }
  }
  return pairs
}

function sumSides (docs) {
  return docs.reduce((n, doc) => n + Number((doc.from && doc.from.packets) || 0) + Number((doc.to && doc.to.packets) || 0), 0)
}

async function countersTotal (collection, metric) {
  const docs = await collection.find({ metric }, { projection: { daily: 1 } }).toArray()
  return docs.reduce((n, doc) => n + Number(doc.daily || 0), 0)
}

async function compareKept (collection, exp) {
  const docs = await collection.find().toArray()
  const differences = []
  const expected = new Map(exp.expected)
  let storedNames = 0
  for (const doc of docs) {
    const value = doc.value ? doc.value.value : null
    const id = `${doc.scope}\u0000${doc.name}`
    if (exp.masked.has(id)) continue
    const want = expected.get(id)
    expected.delete(id)
    if (value !== null && value !== undefined) storedNames++
    if (!want) {
      if (value !== null && value !== undefined) differences.push({ what: 'not expected', scope: doc.scope, name: doc.name, stored: value })
    } else if (idText(value) !== idText(want.value)) {
      differences.push({ what: 'value', scope: doc.scope, name: doc.name, expected: want.value, stored: value })
    }
  }
  for (const want of expected.values()) differences.push({ what: 'missing', scope: want.scope, name: want.name, expected: want.value })
  const notCompared = exp.masked.size ? [`${exp.masked.size} names whose value depends on the arrival time`] : []
  return result({ collection: collection.collectionName, kind: 'kept' }, { expected: exp.expected.size, stored: storedNames }, differences, notCompared)
}

const COMPARERS = { documents: compareDocuments, updates: compareUpdates, counters: compareCounters, streams: compareStreams }

module.exports = { compareStored }
