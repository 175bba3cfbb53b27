'use strict'

const { hash } = require('node:crypto')

// One document per SIP call (collection `calls`, unique on `callId`),
// built in the HEP workers from the SIP messages a capture agent copies
// (the HEP definition's calls sink writes it), and read back by
// `collector calls`. Its fields (the indexes: collectors/hep/index.js):
// `callId`; `caller` and `callee` (From and To of the initial INVITE);
// `invitedAt`, `answeredAt` (the first 2xx to an INVITE) and `answerStatus`
// (its status, the lowest 2xx); `firstAnswer`, `<capture time, ISO>|<the
// two tags of its dialog, sorted, a space between>` of that first 2xx: the
// call's dialog, the one that was answered first (a proxy that forks an
// INVITE may bring several 2xx, one dialog each, RFC 3261 §13.2.2.4: the
// caller keeps one and ACKs then BYEs the others); `byes`, per dialog (a
// hash of its two tags) `<capture time, ISO>|<From tag> <To tag>` of its
// first BYE (tags hold no white space, sip.js), at most 8 dialogs per call
// in a worker's memory (call-memory.js), more counted in `byesPastCap`.
// The call's end is read from them (callOutcome): the first BYE of the
// answered dialog (its From tag the caller's: the caller hung up); a BYE of
// another dialog, the caller dropping a second answer, does not end the
// call. Which dialog is answered is known only once every 2xx is stored (a
// later-captured 2xx may be stored first), so it is decided as the
// document is read, not as it is written. Calls stored before: `endedAt`
// (the first BYE of any dialog) and `firstBye` (its time and From tag), or
// `byeFromTag`.
// `ringingAt` (the first 18x or 2xx to an INVITE),
// `cancelledAt` (the first CANCEL); `final`, the final response to the
// latest INVITE transaction as CSeq × 1000 + status; `callerTag`, and
// `firstReplyFrom` (the time and From tag of the first provisional
// response to the initial INVITE: the caller's tag when the INVITE itself
// was not captured);
// `firstSeen`, `lastSeen`;
// `duplicates` (copies of a SIP message stored once, collectors/hep/call-memory.js)
// and `overCap` (messages past the per-call cap, not stored); `linkedId`,
// the Call-ID of the leg a B2BUA bridged this one to (a correlation header
// of the initial INVITE, or its HEP correlation id: sip.js, hep-records.js).
// Every field is written with an operator whose result does not depend on
// order or repetition ($min of a time or of a string led by a time, $max of
// a time or of the encoded final response, $set of a value every copy of
// the message carries), so updates coalesce freely, interleave across
// workers, and a redelivered message applied twice changes nothing: no
// watermark is needed (but for the counts, the updates sink's `inc`).

/**
 * What one SIP message (sip.js) at capture time `at` (ms) says of its call:
 * `{ callId, min, max, set }`, or null when it says nothing we keep; a 2xx
 * to an INVITE and a BYE also carry their `dialog` (dialogOf), and a BYE
 * `bye`, the path of its field in `min` (the HEP worker leaves it out past
 * the per-call bound, collectors/hep/index.js).
 * - an initial INVITE (no To tag): the caller and callee (From and To of
 *   that request), the caller's tag, `invitedAt`;
 * - a final response to an INVITE: `final` = CSeq × 1000 + status, so that
 *   $max keeps the response to the latest INVITE transaction; a 2xx also
 *   `answeredAt`, `answerStatus` and `firstAnswer` (its time and dialog);
 *   an 18x or a 2xx `ringingAt`;
 * - a provisional response of the initial INVITE (a 100 without a To
 *   tag, which an in-dialog request's has; an 18x, which a re-INVITE does
 *   not get): `firstReplyFrom`, its time and From tag, the caller's;
 * - a CANCEL: `cancelledAt`;
 * - a BYE: its dialog's first BYE in `byes`, its time, From tag and To tag;
 * - an initial INVITE naming another leg (`sip.linkedId`): `linkedId`;
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
    if (sip.linkedId && sip.linkedId !== sip.callId) update.set.linkedId = sip.linkedId
  } else if (sip.status >= 180 && sip.cseq.method === 'INVITE') {
    if (sip.status < 300) update.min.ringingAt = time
    if (sip.status >= 200) update.max.final = sip.cseq.seq * 1000 + sip.status
    if (sip.status >= 200 && sip.status < 300) {
      update.dialog = dialogOf(sip.from.tag, sip.to.tag)
      update.min.answeredAt = time
      update.min.answerStatus = sip.status
      update.min.firstAnswer = `${time.toISOString()}|${update.dialog}`
    }
  } else if (sip.method === 'CANCEL') {
    update.min.cancelledAt = time
  } else if (sip.method === 'BYE') {
    update.dialog = dialogOf(sip.from.tag, sip.to.tag)
    // Field names may not hold a dot (tags often do: `as5f3.1`) nor start with $: a hash of the dialog names it.
    update.bye = `byes.${hash('sha1', update.dialog, 'hex').slice(0, 16)}`
    update.min[update.bye] = `${time.toISOString()}|${sip.from.tag || ''} ${sip.to.tag || ''}`
  }
  if (sip.status < 200 && (sip.status >= 180 || !sip.to.tag) && sip.cseq.method === 'INVITE' && sip.from.tag) update.min.firstReplyFrom = `${time.toISOString()}|${sip.from.tag}`
  return update
}

/**
 * The caller's tag: the initial INVITE's From tag; without that INVITE
 * stored (captured after it, or lost), the From tag of a provisional
 * response to it, which carries its request's; null when neither is there
 * (a 2xx is not read: it may answer a re-INVITE the callee sent, its tag
 * in From, as an agent that started mid-call captures first).
 */
function callerTagOf (doc) {
  if (doc.callerTag) return doc.callerTag
  const reply = doc.firstReplyFrom
  return typeof reply === 'string' && reply.includes('|') ? reply.slice(reply.indexOf('|') + 1) || null : null
}

/**
 * A dialog of a call, named by its two tags (From and To) whichever way a
 * message goes: the callee's BYE has the caller's tag in To. Sorted, a
 * space between (a tag holds no white space, sip.js).
 */
function dialogOf (tagA, tagB) {
  const a = tagA || ''
  const b = tagB || ''
  return a < b ? `${a} ${b}` : `${b} ${a}`
}

/**
 * How a call ended, from its document: `{ endedAt, byeTag (the From tag of
 * the BYE that ended it), otherDialogByes }`. The end is the first BYE of
 * the dialog answered first (`firstAnswer`); without an answer stored, the
 * first BYE of any dialog. The BYEs of the other dialogs are counted (and
 * those past the per-call bound, `byesPastCap`). A call stored before
 * per-dialog BYEs: `endedAt` and `firstBye` (or `byeFromTag`).
 */
function callEndOf (doc) {
  const legacy = { endedAt: doc.endedAt || null, byeTag: typeof doc.firstBye === 'string' ? doc.firstBye.slice(doc.firstBye.indexOf('|') + 1) : doc.byeFromTag || null }
  if (!doc.byes || typeof doc.byes !== 'object' || Array.isArray(doc.byes)) return { ...legacy, otherDialogByes: 0 }
  const answered = typeof doc.firstAnswer === 'string' ? doc.firstAnswer.slice(doc.firstAnswer.indexOf('|') + 1) : null
  let end = null
  let byes = 0
  for (const value of Object.values(doc.byes)) {
    if (typeof value !== 'string') continue
    const bar = value.indexOf('|')
    const [fromTag, toTag] = value.slice(bar + 1).split(' ')
    const bye = { time: value.slice(0, bar), fromTag, dialog: dialogOf(fromTag, toTag) }
    byes++
    if (answered !== null ? bye.dialog === answered : end === null || bye.time < end.time) end = bye
  }
  const pastCap = typeof doc.byesPastCap === 'number' ? doc.byesPastCap : 0
  // A call answered and ended before per-dialog BYEs, another BYE stored after: the first BYE of any dialog, as then.
  if (answered === null && legacy.endedAt && (end === null || legacy.endedAt < new Date(end.time))) return { ...legacy, otherDialogByes: byes + pastCap }
  return { endedAt: end ? new Date(end.time) : null, byeTag: end ? end.fromTag || null : null, otherDialogByes: byes - (end ? 1 : 0) + pastCap }
}

/**
 * The query on `calls` for the calls callEndOf finds not ended: no BYE of
 * the answered dialog in `byes` (a BYE's two tags as dialogOf orders them,
 * against what follows the first | of `firstAnswer`); without a
 * `firstAnswer` or a `byes` document, no legacy `endedAt` and, without a
 * `firstAnswer`, no BYE that is text. Asked of the database so that a read bound counts only such calls
 * (MongoDB 3.6 and later, and the embedded server, answer $expr in a find).
 */
function notEndedByByeQuery () {
  return { $expr: { $not: [endedByBye()] } }
}

/** The query on `calls` for the calls callEndOf finds ended (notEndedByByeQuery's complement; the embedded server takes no bare $cond for $expr). */
function endedByByeQuery () {
  return { $expr: { $eq: [endedByBye(), true] } }
}

function endedByBye () {
  // What follows the first | (callEndOf's slice; all of it without one), and a tag of it, '' when none (dialogOf).
  const value = (text) => ({ $substrCP: [text, { $add: [{ $indexOfCP: [text, '|'] }, 1] }, { $strLenCP: text }] })
  const tag = (text, i) => ({ $ifNull: [{ $arrayElemAt: [{ $split: [value(text), ' '] }, i] }, ''] })
  // Text sorts after numbers and before documents (BSON's order): $type, which the embedded server lacks, without it.
  const isText = (path) => ({ $and: [{ $gte: [path, ''] }, { $lt: [path, {}] }] })
  const dialog = (a, b) => ({ $cond: [{ $lt: [a, b] }, { $concat: [a, ' ', b] }, { $concat: [b, ' ', a] }] })
  const ofAnswered = { $cond: [isText('$$bye.v'), { $eq: [value('$firstAnswer'), dialog(tag('$$bye.v', 0), tag('$$bye.v', 1))] }, false] }
  const isDocument = { $and: [{ $gte: ['$byes', {}] }, { $lt: ['$byes', []] }] }
  const byes = { $cond: [isDocument, { $objectToArray: '$byes' }, []] }
  const anyBye = (test) => ({ $anyElementTrue: [{ $map: { input: byes, as: 'bye', in: test } }] })
  const legacy = { $cond: [{ $ifNull: ['$endedAt', false] }, true, false] } // callEndOf's endedAt of a call stored before per-dialog BYEs
  // Answered and with byes, its dialog's BYE alone ends it (a legacy endedAt is not read); else a legacy endedAt or any BYE.
  return { $cond: [{ $and: [isText('$firstAnswer'), isDocument] }, anyBye(ofAnswered), { $or: [legacy, anyBye(isText('$$bye.v'))] }] }
}

// The From tag of the BYE that ended a call (callEndOf), null while none did.
function byeTagOf (doc) {
  return callEndOf(doc).byeTag
}

/**
 * A call's outcome classes (callOutcome's `outcome`), in the order a reader
 * lists them. `no-answer`: no final response yet, the INVITE transaction
 * may still be under way; `no-final-seen`: none came and the call has been
 * quiet past the bound (END_UNSEEN_AFTER.final): its end was not captured.
 */
const OUTCOMES = Object.freeze(['answered', 'failed', 'cancelled', 'no-answer', 'no-final-seen'])

/**
 * How long (ms) a call whose end was not seen may be quiet before a reader
 * takes that end as never captured (a capture agent restarted, UDP lost, a
 * phone crashed, a proxy saw one side), the defaults of `collector calls
 * --final-unseen-after` and `--bye-unseen-after`:
 * - final, 4 minutes of no SIP, for a call with no final response. A live
 *   INVITE transaction is never that quiet: a UAC without a provisional
 *   response gives up after Timer B (64 × T1, 32 s); after one, a proxy
 *   gives up after Timer C (more than 3 minutes) without another, and a UAS
 *   that takes longer MUST send one every minute (RFC 3261 §13.3.1.1,
 *   §16.6). The minute past Timer C's 3 covers a refresh lost and the
 *   capture agents' clocks against the reader's.
 * - bye, 1 hour of no SIP and no report of its media (its RTCP streams'
 *   last report), for an answered call with no BYE. Media reports every
 *   5 s or so (RFC 3550 §6.2), but a call whose media is not captured shows
 *   life on SIP only when its session is refreshed (RFC 4028: Session-Expires,
 *   1800 s by default), or never: an hour keeps such a call live past one
 *   whole default session interval. Where media is captured, a shorter
 *   bound (a few minutes) tells sooner.
 */
const END_UNSEEN_AFTER = Object.freeze({ final: 4 * 60000, bye: 60 * 60000 })

/**
 * What a call document says to a reader: `{ callId, caller, callee, status
 * (an answered call's answer; else the final response to the latest INVITE,
 * or null while none came),
 * outcome ('answered': a 2xx; 'cancelled': a CANCEL or a 487; 'failed':
 * another final response, 3xx to 6xx; 'no-answer': no final response yet;
 * 'no-final-seen': none, and quiet past finalUnseenAfter; a call with a
 * BYE and no final response is answered, `answerUnseen`, its status null),
 * ringing (an 18x came and no final response yet), answered, endedBy
 * ('caller', 'callee', or null: not ended, or the caller's tag unknown, callerTagOf), invitedAt, ringingAt, answeredAt,
 * cancelledAt, startedAt (its INVITE, else its first message), endedAt (the BYE that ended the answered dialog, callEndOf),
 * durationMs (answer to BYE, from SIP; null while either is missing),
 * ringingMs (INVITE to the first 18x or answer), otherDialogByes (BYEs of
 * dialogs other than the answered one: a forked INVITE's extra answers the
 * caller dropped), lastActivityAt (its last SIP message, or its media's
 * last report when later: the media counts for an answered call only),
 * quietMs (`now` less that), endUnseen (its end, a final response or a BYE,
 * was never seen and it has been quiet past its bound), minDurationMs (an
 * answered call whose BYE was not seen: answer to its last activity, what
 * it lasted at least; its durationMs stays null), duplicates, overCap }`.
 *
 * `reading`: `now`, the reader's clock (ms; without it no call is judged
 * quiet), `mediaAt` (the last report of the call's media, ms or Date),
 * `finalUnseenAfter` and `byeUnseenAfter` (ms, END_UNSEEN_AFTER's by default).
 */
function callOutcome (doc, reading = {}) {
  const { endedAt, byeTag, otherDialogByes } = callEndOf(doc)
  const callerTag = byeTag ? callerTagOf(doc) : null
  // Who sent the BYE, when the caller's tag is known: else not guessed.
  const endedBy = callerTag ? (byeTag === callerTag ? 'caller' : 'callee') : null
  // An answered call's status is its answer's: a later re-INVITE's 488 is not the call's outcome.
  const final = typeof doc.final === 'number' ? doc.final % 1000 : null
  const status = doc.answeredAt && typeof doc.answerStatus === 'number' ? doc.answerStatus : final
  let outcome = 'no-answer'
  if (doc.answeredAt) outcome = 'answered'
  else if (doc.cancelledAt || status === 487) outcome = 'cancelled'
  else if (status !== null && status >= 300) outcome = 'failed'
  // A BYE and no final response: the INVITE's answer was not captured (an agent
  // started mid-call, a master restart lost it); a BYE is sent in a dialog set up.
  const answerUnseen = outcome === 'no-answer' && endedAt !== null
  if (answerUnseen) outcome = 'answered'
  const quiet = quietOf(doc, outcome, endedAt, reading)
  if (outcome === 'no-answer' && quiet.endUnseen) outcome = 'no-final-seen'
  return {
    callId: doc.callId,
    caller: doc.caller || null,
    callee: doc.callee || null,
    status,
    outcome,
    ringing: outcome === 'no-answer' && Boolean(doc.ringingAt),
    answered: outcome === 'answered',
    answerUnseen,
    endedBy,
    invitedAt: doc.invitedAt || null,
    startedAt: doc.invitedAt || doc.firstSeen || null,
    ringingAt: doc.ringingAt || null,
    answeredAt: doc.answeredAt || null,
    cancelledAt: doc.cancelledAt || null,
    endedAt,
    durationMs: span(doc.answeredAt, endedAt),
    ringingMs: span(doc.invitedAt, doc.ringingAt),
    otherDialogByes,
    ...quiet,
    duplicates: doc.duplicates || 0,
    overCap: doc.overCap || 0
  }
}

function span (from, to) {
  return from && to ? Math.max(0, to - from) : null
}

// Whether a call still waiting for its end (no final response; answered and
// no BYE of its dialog, `endedAt` null) has been quiet past its bound as of `now`: SIP alone tells of an
// INVITE transaction, SIP or media of an answered call.
function quietOf (doc, outcome, endedAt, { now = null, mediaAt = null, finalUnseenAfter = END_UNSEEN_AFTER.final, byeUnseenAfter = END_UNSEEN_AFTER.bye }) {
  const answered = outcome === 'answered'
  const times = [doc.lastSeen, answered ? mediaAt : null].filter(Boolean).map((time) => new Date(time).getTime())
  const last = times.length > 0 ? Math.max(...times) : null
  const quietMs = now === null || last === null ? null : Math.max(0, now - last)
  const waiting = answered ? endedAt === null : outcome === 'no-answer'
  const endUnseen = waiting && quietMs !== null && quietMs > (answered ? byeUnseenAfter : finalUnseenAfter)
  return {
    lastActivityAt: last === null ? null : new Date(last),
    quietMs,
    endUnseen,
    minDurationMs: answered && endUnseen ? span(doc.answeredAt, last) : null
  }
}

module.exports = { byeTagOf, callEndOf, notEndedByByeQuery, endedByByeQuery, callUpdateOf, callOutcome, dialogOf, OUTCOMES, END_UNSEEN_AFTER }
