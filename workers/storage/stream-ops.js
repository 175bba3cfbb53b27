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
  const update = emptyUpdate(now)
  addSide(update, entry, side)
  update.$setOnInsert = side === 'from' ? newStreamFields(entry) : { _id: NEVER_INSERT_ID }
  const filter = { flowKey: side === 'from' ? flowKey(entry.fromID, entry.toID) : flowKey(entry.toID, entry.fromID) }
  return finish({ filter, update })
}

/**
 * One update for both directions of a stream within a flush: `fromEntry`'s
 * sender is believed to be `from`, `toEntry`'s (its peer) `to`. Both ends
 * of an RTCP session report, so this halves the writes of a typical stream.
 * Like a 'from' packetOp it may create the stream; an E11000 means the pair
 * is open the other way round.
 */
function pairOp (fromEntry, toEntry, now) {
  const update = emptyUpdate(now)
  addSide(update, fromEntry, 'from')
  addSide(update, toEntry, 'to')
  update.$inc['metadata.packets'] = fromEntry.count + toEntry.count
  update.$max.endTime = fromEntry.maxTs > toEntry.maxTs ? fromEntry.maxTs : toEntry.maxTs
  update.$min.startTime = fromEntry.minTs < toEntry.minTs ? fromEntry.minTs : toEntry.minTs
  update.$setOnInsert = newStreamFields(fromEntry)
  return finish({ filter: { flowKey: flowKey(fromEntry.fromID, fromEntry.toID) }, update })
}

function emptyUpdate (now) {
  return { $max: { 'metadata.lastUpdated': now }, $min: {}, $inc: {}, $set: {} }
}

// The sender's side of the stream: sequence range, counts, IP and fields.
function addSide (update, entry, side) {
  update.$max[`${side}.highestPacketNum`] = entry.maxHpn
  update.$max.endTime = entry.maxTs
  update.$min[`${side}.firstPacketNum`] = entry.minHpn
  update.$min.startTime = entry.minTs
  update.$inc['metadata.packets'] = entry.count
  update.$inc[`${side}.packets`] = entry.count
  if (entry.IP !== undefined) update.$set[`${side}.IP_ADDRESS`] = entry.IP
  if (entry.fields) for (const key of Object.keys(entry.fields)) update.$set[`${side}.${key}`] = entry.fields[key]
}

function finish ({ filter, update }) {
  if (Object.keys(update.$set).length === 0) delete update.$set
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

module.exports = { NEVER_INSERT_ID, packetOp, pairOp, sideOps, endOps }
