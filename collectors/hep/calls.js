'use strict'

// One document per SIP call (collection `calls`, unique on `callId`),
// built in the HEP workers from the SIP messages a capture agent copies
// (the HEP definition's calls sink writes it), and read back by
// `collector calls`. Its fields (the indexes: collectors/hep/index.js):
// `callId`; `caller` and `callee` (From and To of the initial INVITE);
// `invitedAt`, `answeredAt` (the first 2xx to an INVITE), `endedAt` (the
// first BYE); `final`, the final response to the latest INVITE transaction
// as CSeq × 1000 + status; `callerTag` and `byeFromTag` (equal: the caller
// hung up); `firstSeen`, `lastSeen`.
// Every field is written with an operator whose result does not depend on
// order or repetition ($min of a time, $max of a time or of the encoded
// final response, $set of a value every copy of the message carries), so
// updates coalesce freely, interleave across workers, and a redelivered
// message applied twice changes nothing: no watermark is needed.

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

module.exports = { callUpdateOf, callOutcome }
