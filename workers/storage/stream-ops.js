'use strict'

// Builds the native update operations of coalesced entries. One open
// stream per endpoint pair is guaranteed by the unique index on
// { pairKey, openKey }; a packet's upsert finds its stream by
// { pairKey, flowKey } alone, that other unique index's keys (see
// stream-key.js). Every write is an upsert or a plain update, never a read.
const { pairKey, flowKey } = require('./stream-key')

/**
 * What an upsert that must not insert sets on insert: an array `_id`, which
 * MongoDB (and mongo-java-server) refuse with InvalidIdField (code 53), so
 * a miss comes back as that op's write error and nothing is written. (An
 * earlier version collided with a sentinel document kept in the user's
 * collection; see StreamWriter.prepare.)
 */
const MUST_NOT_INSERT = Object.freeze({ _id: Object.freeze(['collector-cluster: this stream side must already exist']) })
const INVALID_ID_FIELD = 53

/**
 * Update of the sender's side of a stream. `side` is the side the sender
 * is believed to hold. As 'from' the op may create the stream (the first
 * sender is `from`); as 'to' it may only update, and a miss (stream ended,
 * or the belief was wrong) comes back as InvalidIdField (see MUST_NOT_INSERT)
 * for the caller to retry.
 */
function packetOp (entry, side, now) {
  const pair = pairKey(entry.fromID, entry.toID)
  const update = streamUpdate([[entry, side]], now)
  update.$setOnInsert = side === 'from' ? newStreamFields(entry, pair) : { _id: [...MUST_NOT_INSERT._id] }
  const filter = { pairKey: pair, flowKey: side === 'from' ? flowKey(entry.fromID, entry.toID) : flowKey(entry.toID, entry.fromID) }
  return { updateOne: { filter, update, upsert: true } }
}

/**
 * One update for both directions of a stream within a flush: `fromEntry`'s
 * sender is believed to be `from`, `toEntry`'s (its peer) `to`. Both ends
 * of an RTCP session report, so this halves the writes of a typical stream.
 * Like a 'from' packetOp it may create the stream; an E11000 means the pair
 * is open the other way round.
 */
function pairOp (fromEntry, toEntry, now) {
  const pair = pairKey(fromEntry.fromID, fromEntry.toID)
  const update = streamUpdate([[fromEntry, 'from'], [toEntry, 'to']], now)
  update.$setOnInsert = newStreamFields(fromEntry, pair)
  return { updateOne: { filter: { pairKey: pair, flowKey: flowKey(fromEntry.fromID, fromEntry.toID) }, update, upsert: true } }
}

// The update of one or both sides: each side's sequence range, counts, IP,
// fields and statistics (an item's `stats`, see StreamWorker); the stream's
// time range and packet count over all of them.
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
    if (entry.marks) for (const origin of Object.keys(entry.marks)) update.$max[`${side}.watermarks.${origin}`] = entry.marks[origin]
    if (entry.IP !== undefined) set[`${side}.IP_ADDRESS`] = entry.IP
    if (entry.fields) for (const key of Object.keys(entry.fields)) set[`${side}.${key}`] = entry.fields[key]
    if (entry.stats) entry.stats.addTo(update, side)
  }
  if (Object.keys(set).length > 0) update.$set = set
  return update
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
    const set = { 'metadata.lastUpdated': now }
    if (entry.IP !== undefined) set[`${side}.IP_ADDRESS`] = entry.IP
    for (const key of Object.keys(entry.fields)) set[`${side}.${key}`] = entry.fields[key]
    return { updateMany: { filter: { active: true, [`${side}.ID`]: entry.sideID }, update: { $set: set } } }
  })
}

/** An endpoint said goodbye (RTCP BYE): mark its side ended; the sweeper closes the stream. */
function endOps (entry) {
  return ['from', 'to'].map((side) => ({
    updateMany: {
      filter: { active: true, [`${side}.ID`]: entry.endID },
      update: { $set: { [`stream_ended.${side}`]: true }, $min: { endedAt: entry.maxTs } }
    }
  }))
}

module.exports = { INVALID_ID_FIELD, packetOp, pairOp, sideOps, endOps }
