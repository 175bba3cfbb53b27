'use strict'

// Runs in the HEP workers: one document per SIP call (collection `calls`,
// unique on `callId`), built from the SIP messages a capture agent copies.
// Every field is written with an operator whose result does not depend on
// order or repetition ($min of a time, $max of a time or of the encoded
// final response, $set of a value every copy of the message carries), so
// updates coalesce freely, interleave across workers, and a redelivered
// message applied twice changes nothing: no watermark is needed.

const { checkAccounted } = require('../../workers/storage/write-accounting')
const { PendingEntries } = require('../../workers/storage/pending-entries')

const DUPLICATE_KEY = 11000
const MAX_ROUNDS = 3

/**
 * What one SIP message (sip.js) at capture time `at` (ms) says of its call:
 * `{ callId, min, max, set }`, or null when it says nothing we keep.
 * - an initial INVITE (no To tag): the caller and callee (From and To of
 *   that request), the caller's tag, `invitedAt`;
 * - a final response to an INVITE: `final` = CSeq × 1000 + status, so that
 *   $max keeps the response to the latest INVITE transaction; a 2xx also
 *   `answeredAt`;
 * - a BYE: `endedAt`, and the From tag of who sent it (`byeFromTag`: the
 *   caller's tag means the caller hung up);
 * - any message: `firstSeen`, `lastSeen`.
 */
function callUpdateOf (sip, at) {
  const time = new Date(at)
  const update = { callId: sip.callId, min: { firstSeen: time }, max: { lastSeen: time }, set: {} }
  if (sip.method === 'INVITE' && !sip.to.tag) {
    update.min.invitedAt = time
    update.set.caller = { user: sip.from.user, host: sip.from.host }
    update.set.callee = { user: sip.to.user, host: sip.to.host }
    if (sip.from.tag) update.set.callerTag = sip.from.tag
  } else if (sip.status >= 200 && sip.cseq.method === 'INVITE') {
    update.max.final = sip.cseq.seq * 1000 + sip.status
    if (sip.status < 300) update.min.answeredAt = time
  } else if (sip.method === 'BYE') {
    update.min.endedAt = time
    if (sip.from.tag) update.set.byeFromTag = sip.from.tag
  }
  return update
}

/** Pending call updates, one entry per Call-ID (PendingEntries: the smallest checkpoint they hold). */
class CallStore extends PendingEntries {
  constructor (collection = null) {
    super()
    this.collection = collection
    this.stats = { ops: 0, bulkWrites: 0, duplicateRetries: 0 }
  }

  /** Folds an update in; `seq`: the checkpoint of the message it came from. */
  add (update, seq) {
    const entry = this.entries.get(update.callId)
    if (!entry) {
      this.entries.set(update.callId, { ...update, key: update.callId, min: { ...update.min }, max: { ...update.max }, set: { ...update.set }, minSeq: seq })
      return
    }
    this.merge(entry, { ...update, minSeq: seq })
  }

  merge (into, update) {
    for (const [field, value] of Object.entries(update.min)) if (!(into.min[field] <= value)) into.min[field] = value
    for (const [field, value] of Object.entries(update.max)) if (!(into.max[field] >= value)) into.max[field] = value
    Object.assign(into.set, update.set)
    if (update.minSeq < into.minSeq) into.minSeq = update.minSeq
  }

  /**
   * One upsert per call, unordered. Two workers creating the same call at
   * once: the loser's E11000 is written again (then it matches). Throws on
   * a database error with `err.unwritten`, the entries not known stored.
   */
  async write (entries) {
    let pending = entries
    for (let round = 0; round < MAX_ROUNDS && pending.length > 0; round++) {
      const ops = pending.map(upsertOf)
      this.stats.ops += ops.length
      this.stats.bulkWrites++
      let errors = []
      try {
        checkAccounted(await this.collection.bulkWrite(ops, { ordered: false }), ops.length, 0, 'call upserts')
      } catch (err) {
        if (!Array.isArray(err.writeErrors) || err.writeErrors.some((e) => e.code !== DUPLICATE_KEY)) {
          err.unwritten = pending
          throw err
        }
        checkAccounted(err.result, ops.length, err.writeErrors.length, 'call upserts')
        errors = err.writeErrors
      }
      this.stats.duplicateRetries += errors.length
      pending = errors.map((error) => pending[error.index])
    }
    if (pending.length > 0) throw Object.assign(new Error(`${pending.length} call upserts kept colliding`), { unwritten: pending })
  }
}

function upsertOf ({ callId, min, max, set }) {
  const update = { $min: min, $max: max }
  if (Object.keys(set).length > 0) update.$set = set
  return { updateOne: { filter: { callId }, update, upsert: true } }
}

/**
 * What a call document says to a reader: `{ callId, caller, callee, status
 * (the final response to the latest INVITE, or null while none came),
 * answered, endedBy ('caller', 'callee' or null), invitedAt, answeredAt,
 * endedAt }`.
 */
function callOutcome (doc) {
  const endedBy = doc.byeFromTag ? (doc.byeFromTag === doc.callerTag ? 'caller' : 'callee') : null
  return {
    callId: doc.callId,
    caller: doc.caller || null,
    callee: doc.callee || null,
    status: typeof doc.final === 'number' ? doc.final % 1000 : null,
    answered: Boolean(doc.answeredAt),
    endedBy,
    invitedAt: doc.invitedAt || null,
    answeredAt: doc.answeredAt || null,
    endedAt: doc.endedAt || null
  }
}

module.exports = { CallStore, callUpdateOf, callOutcome }
