'use strict'

// Builds the native update operations of coalesced entries. One open
// stream per endpoint pair is guaranteed by the unique index on `openKey`;
// a packet's upsert finds its stream by `flowKey` alone (see stream-key.js).
// Every write is an upsert or a plain update, never a read.
const { flowKey } = require('./stream-key')

/** `_id` of a document that always exists: an upsert that must not insert sets it, so a miss fails with E11000. */
const NEVER_INSERT_ID = '__collector_cluster_never_insert__'

/**
 * Update of the sender's side of a stream. `side` is the side the sender
 * is believed to hold. As 'from' the op may create the stream (the first
 * sender is `from`); as 'to' it may only update, and a miss (stream ended,
 * or the belief was wrong) comes back as E11000 for the caller to retry.
 */
function packetOp (entry, side, now) {
  const set = {}
  if (entry.IP !== undefined) set[`${side}.IP_ADDRESS`] = entry.IP
  if (entry.fields) for (const key of Object.keys(entry.fields)) set[`${side}.${key}`] = entry.fields[key]
  const update = {
    $max: { [`${side}.highestPacketNum`]: entry.maxHpn, endTime: entry.maxTs, 'metadata.lastUpdated': now },
    $min: { [`${side}.firstPacketNum`]: entry.minHpn, startTime: entry.minTs },
    $inc: { 'metadata.packets': entry.count, [`${side}.packets`]: entry.count },
    $setOnInsert: side === 'from' ? newStreamFields(entry) : { _id: NEVER_INSERT_ID }
  }
  if (Object.keys(set).length > 0) update.$set = set
  const filter = { flowKey: side === 'from' ? flowKey(entry.fromID, entry.toID) : flowKey(entry.toID, entry.fromID) }
  return { updateOne: { filter, update, upsert: true } }
}

// The insert of a new stream also takes `openKey`: if the pair already has an
// open stream the other way round, that unique index refuses it (E11000).
function newStreamFields (entry) {
  return { openKey: entry.pair, 'from.ID': entry.fromID, 'to.ID': entry.toID, active: true, stream_ended: { from: false, to: false } }
}

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

module.exports = { NEVER_INSERT_ID, packetOp, sideOps, endOps }
