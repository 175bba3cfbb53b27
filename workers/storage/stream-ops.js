'use strict'

// Builds the native update operations of coalesced entries. One open
// stream per endpoint pair is guaranteed by the unique index on
// { pairKey, openKey }; a packet's upsert finds its stream by
// { pairKey, flowKey } alone, that other unique index's keys (see
// stream-key.js), and, when guarded, on the side's watermarks (below). Every
// write is an upsert or a plain update, never a read.
const { pairKey, flowKey } = require('./stream-key')

/**
 * What an upsert that must not insert sets on insert: an array `_id`, which
 * MongoDB (and mongo-java-server) refuse with InvalidIdField (code 53), so
 * a miss comes back as that op's write error and nothing is written. (An
 * earlier version collided with a sentinel document kept in the user's
 * collection; see stream-upgrade.js removeLegacySentinel.)
 */
const MUST_NOT_INSERT = Object.freeze({ _id: Object.freeze(['collector-cluster: this stream side must already exist']) })
const INVALID_ID_FIELD = 53

/**
 * Update of the sender's side of a stream. `side` is the side the sender
 * is believed to hold. As 'from' the op may create the stream (the first
 * sender is `from`); as 'to' it may only update, and a miss (stream ended,
 * or the belief was wrong) comes back as InvalidIdField (see MUST_NOT_INSERT)
 * for the caller to retry. `guarded`: see guard().
 */
function packetOp (entry, side, now, guarded = false) {
  const pair = pairKey(entry.fromID, entry.toID)
  const update = streamUpdate([[entry, side]], now)
  update.$setOnInsert = side === 'from' ? newStreamFields(entry, pair) : { _id: [...MUST_NOT_INSERT._id] }
  const filter = { pairKey: pair, flowKey: side === 'from' ? flowKey(entry.fromID, entry.toID) : flowKey(entry.toID, entry.fromID) }
  if (guarded) guard(filter, entry, side)
  return { updateOne: { filter, update, upsert: true } }
}

/**
 * One update for both directions of a stream within a flush: `fromEntry`'s
 * sender is believed to be `from`, `toEntry`'s (its peer) `to`. Both ends
 * of an RTCP session report, so this halves the writes of a typical stream.
 * Like a 'from' packetOp it may create the stream; an E11000 means the pair
 * is open the other way round (or, guarded, that a side has stored some of
 * the batches already).
 */
function pairOp (fromEntry, toEntry, now, guarded = false) {
  const pair = pairKey(fromEntry.fromID, fromEntry.toID)
  const update = streamUpdate([[fromEntry, 'from'], [toEntry, 'to']], now)
  update.$setOnInsert = newStreamFields(fromEntry, pair)
  const filter = { pairKey: pair, flowKey: flowKey(fromEntry.fromID, fromEntry.toID) }
  if (guarded) {
    guard(filter, fromEntry, 'from')
    guard(filter, toEntry, 'to')
  }
  return { updateOne: { filter, update, upsert: true } }
}

/**
 * Makes an upsert apply only while the side's watermark of every origin the
 * entry carries is below the first batch of that origin in it: a side that
 * stored any of them already is not matched, the upsert then tries to
 * insert and collides (E11000 as 'from', InvalidIdField as 'to'), and the
 * writer reads the watermarks to keep what lies above them. Conditions are
 * `$not: { $gte }`, so that a side without a watermark for the origin
 * (none yet, or no such side) matches.
 */
function guard (filter, entry, side) {
  for (const segment of entry.segments) {
    if (segment.origin === null) continue
    const path = `${side}.watermarks.${segment.origin}`
    const first = filter[path] ? Math.min(filter[path].$not.$gte, segment.first) : segment.first
    filter[path] = { $not: { $gte: first } }
  }
}

// The update of one or both sides: each side's sequence range, counts, IP,
// fields, statistics (the segments' `stats`, see StreamWorker) and per origin
// the highest batch written (`watermarks`); the stream's time range and
// packet count over all of them.
function streamUpdate (sides, now) {
  const update = { $max: { 'metadata.lastUpdated': now }, $min: {}, $inc: { 'metadata.packets': 0 } }
  const set = {}
  for (const [entry, side] of sides) {
    update.$max[`${side}.highestPacketNum`] = entry.maxHpn
    update.$min[`${side}.firstPacketNum`] = entry.minHpn
    update.$inc[`${side}.packets`] = entry.count
    update.$inc['metadata.packets'] += entry.count
    if (!(update.$max.endTime >= entry.maxTs)) update.$max.endTime = entry.maxTs
    if (!(update.$min.startTime <= entry.minTs)) update.$min.startTime = entry.minTs
    for (const segment of entry.segments) {
      if (segment.origin === null) continue
      const path = `${side}.watermarks.${segment.origin}`
      if (!(update.$max[path] >= segment.last)) update.$max[path] = segment.last
    }
    if (entry.IP !== undefined) set[`${side}.IP_ADDRESS`] = entry.IP
    if (entry.fields) for (const key of Object.keys(entry.fields)) set[`${side}.${key}`] = entry.fields[key]
    addStats(update, side, entry.segments)
  }
  if (Object.keys(set).length > 0) update.$set = set
  return update
}

// The segments' statistics. Those of one segment (the usual entry) write
// themselves; those of several are each written to an update of their own
// and folded in ($inc added, $min/$max compared), since merging them would
// change the segments a write may yet need apart.
function addStats (update, side, segments) {
  if (segments.length === 1) {
    if (segments[0].stats) segments[0].stats.addTo(update, side)
    return
  }
  for (const segment of segments) {
    if (!segment.stats) continue
    const part = { $min: {}, $max: {}, $inc: {} }
    segment.stats.addTo(part, side)
    for (const path of Object.keys(part.$inc)) update.$inc[path] = (update.$inc[path] || 0) + part.$inc[path]
    for (const path of Object.keys(part.$min)) if (!(path in update.$min) || compareValues(part.$min[path], update.$min[path]) < 0) update.$min[path] = part.$min[path]
    for (const path of Object.keys(part.$max)) if (!(path in update.$max) || compareValues(part.$max[path], update.$max[path]) > 0) update.$max[path] = part.$max[path]
  }
}

// MongoDB's order, for the values statistics write: null below the rest,
// numbers, strings and dates by value, documents field by field in order.
function compareValues (a, b) {
  if (a === b) return 0
  if (a === null || a === undefined) return -1
  if (b === null || b === undefined) return 1
  if (a instanceof Date && b instanceof Date) return Math.sign(a.getTime() - b.getTime())
  if (typeof a === 'object' && typeof b === 'object') {
    const keysA = Object.keys(a)
    const keysB = Object.keys(b)
    for (let i = 0; i < Math.min(keysA.length, keysB.length); i++) {
      if (keysA[i] !== keysB[i]) return keysA[i] < keysB[i] ? -1 : 1
      const order = compareValues(a[keysA[i]], b[keysB[i]])
      if (order !== 0) return order
    }
    return Math.sign(keysA.length - keysB.length)
  }
  return a < b ? -1 : a > b ? 1 : 0
}

// The insert of a new stream takes `pairKey` and `flowKey` from the filter's
// equalities (as MongoDB and mongo-java-server both do; naming them here
// too would make the update touch its own filter's fields, see stream-key.js)
// and `openKey` from here: if the pair already has an open stream the other
// way round, that unique index refuses it (E11000).
function newStreamFields (entry, pair) {
  return { openKey: pair, 'from.ID': entry.fromID, 'to.ID': entry.toID, active: true, stream_ended: { from: false, to: false } }
}

/*
 * sideOps and endOps find streams by one endpoint, so they cannot name the
 * pair: on a sharded cluster these updateManys go to every shard. They are
 * rare: a BYE, and side fields of an SSRC that reported no blocks in that
 * datagram (those of one that did ride on its packet's upsert).
 */

/** Side fields (e.g. an SR's counters, a CNAME) on every open stream of an endpoint. */
function sideOps (entry, now) {
  return ['from', 'to'].map((side) => {
    const set = {}
    if (entry.IP !== undefined) set[`${side}.IP_ADDRESS`] = entry.IP
    for (const key of Object.keys(entry.fields)) set[`${side}.${key}`] = entry.fields[key]
    // $max: a write that started earlier but lands later never moves it back (the sweeper relies on that).
    return { updateMany: { filter: { active: true, [`${side}.ID`]: entry.sideID }, update: { $set: set, $max: { 'metadata.lastUpdated': now } } } }
  })
}

// The open streams a goodbye ends: its SSRC on `side`, and, where the entry
// knows them, the sender's address (or none yet: a side only reported on)
// and its call. By SSRC alone, another call's stream with the same 32-bit
// SSRC (one pair in 100,000 open SSRCs) was ended by this one's BYE. Side
// fields still go by SSRC: a phone whose address changed mid-call (NAT,
// a handover) keeps its CNAME; a stream a stranger's BYE ended is lost.
function endpointFilter (side, id, { IP, callId }) {
  const filter = { active: true, [`${side}.ID`]: id }
  if (IP !== undefined) filter[`${side}.IP_ADDRESS`] = { $in: [IP, null] }
  if (callId !== undefined) filter[`${side}.callId`] = { $in: [callId, null] }
  return filter
}

/**
 * An endpoint said goodbye (RTCP BYE): mark its side ended; the sweeper
 * closes the stream. A goodbye is activity: it moves `lastUpdated`, which
 * the sweeper compares with when the oldest message not stored yet was
 * received (a report received before the BYE may still be on its way).
 */
function endOps (entry, now) {
  return ['from', 'to'].map((side) => ({
    updateMany: {
      filter: endpointFilter(side, entry.endID, entry),
      update: { $set: { [`stream_ended.${side}`]: true }, $min: { endedAt: entry.maxTs }, $max: { 'metadata.lastUpdated': now } }
    }
  }))
}

module.exports = { INVALID_ID_FIELD, packetOp, pairOp, sideOps, endOps }
