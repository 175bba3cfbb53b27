'use strict'

// How `collector calls` finds calls (runs in the CLI): the SIP calls the
// hep collector stored (`calls`, one document per Call-ID: answered,
// rejected, cancelled, unanswered or still ringing) joined to their media
// (`streams` whose sides carry the Call-ID), and the media of no SIP call
// (RTCP heard directly, or HEP RTCP whose SIP was not captured) as before:
// one row per stream. A SIP call with several streams takes the worst
// stream's verdict. A call whose end was never captured is told from a
// live one by how long it has been quiet at the time of reading
// (callOutcome's `now`, the reader's clock): `no-final-seen`, `no BYE seen`.

const { callAnalytics, verdictProjection } = require('../../collectors/rtcp/quality-analytics')
const { callOutcome, callEndOf, notEndedByByeQuery, endedByByeQuery, OUTCOMES, END_UNSEEN_AFTER } = require('../../collectors/hep/calls')
const { BAND_ORDER, readWhole, byWorst } = require('./calls-read')

const STREAM_PROJECTION = Object.freeze({
  endTime: 1,
  startTime: 1,
  'from.callId': 1,
  'to.callId': 1,
  ...verdictProjection()
})

const zero = (names) => Object.fromEntries(names.map((name) => [name, 0]))

/**
 * What `--outcome` selects: an outcome class (OUTCOMES), or `no-bye-seen`,
 * the answered calls whose BYE was never seen and that have been quiet past
 * their bound (counted among the answered too).
 */
const OUTCOME_FILTERS = Object.freeze([...OUTCOMES, 'no-bye-seen'])

function isOutcome (o, wanted) {
  return wanted === 'no-bye-seen' ? o.outcome === 'answered' && o.endUnseen : o.outcome === wanted
}

/**
 * The calls of a window, filtered and ordered, `limit` of them from
 * `offset` (0) read whole; `readAll` false when `maxRead` bounded the read.
 * A SIP call is in the window when it was active in it (its first
 * message, `firstSeen`, by the window's end; its last, `lastSeen`, at or
 * after its start, and within a day of its end: activeIn); a stream alike
 * by its first and last reports (startTime, endTime). Only calls: SIP of
 * no INVITE's dialog is counted apart (`otherSip`). `callId`
 * reads that call whatever its time. `now` (the reader's clock, ms; now by
 * default), `finalUnseenAfter` and `byeUnseenAfter` (ms) tell the calls whose end
 * was never seen (callOutcome).
 * @param {import('mongodb').Db} db
 * @param {{ since: number, until?: number, callId?: string, number?: string, outcome?: string, band?: string,
 *   order?: 'verdict'|'time', offset?: number, limit: number, maxRead?: number, collections: { calls: string, streams: string },
 *   now?: number, finalUnseenAfter?: number, byeUnseenAfter?: number }} options
 * @returns {Promise<{ total: number, sipTotal: number, otherSip: number, bands: object, outcomes: object, readAll: boolean,
 *   shown: Array<{ outcome: object|null, doc: object|null, analytics: object|null, streams: number }> }>}
 */
async function listCalls (db, options) {
  if (options.number !== undefined) options = { ...options, number: userOf(options.number) }
  const { outcome, band, order = 'verdict', offset = 0, limit, collections } = options
  const reading = { now: options.now ?? Date.now(), finalUnseenAfter: options.finalUnseenAfter ?? END_UNSEEN_AFTER.final, byeUnseenAfter: options.byeUnseenAfter ?? END_UNSEEN_AFTER.bye }
  const read = await readWindow(db, { ...options, reading })
  const rows = rowsOf(read, { ...options, reading })
  const kept = rows.filter((row) => (outcome === undefined || (row.outcome && isOutcome(row.outcome, outcome))) && (band === undefined || row.band === band))
  kept.sort(order === 'time' ? byTime : (a, b) => byWorst({ mos: a.mos, endTime: a.time }, { mos: b.mos, endTime: b.time }))
  const bands = zero(BAND_ORDER)
  const outcomes = zero(OUTCOME_FILTERS)
  for (const row of kept) {
    bands[row.band]++
    if (row.outcome) outcomes[row.outcome.outcome]++
    if (row.outcome && isOutcome(row.outcome, 'no-bye-seen')) outcomes['no-bye-seen']++
  }
  const first = kept.slice(offset, offset + limit)
  const whole = new Map((await readWhole(db.collection(collections.streams), first.filter((row) => row.stream).map((row) => row.stream))).map((s) => [String(s.doc._id), s]))
  const shown = first.map((row) => {
    const stream = row.stream ? whole.get(String(row.stream._id)) : null
    return { outcome: row.outcome, doc: stream ? stream.doc : null, analytics: stream ? stream.analytics : null, streams: row.streams }
  })
  return { total: kept.length, sipTotal: kept.filter((row) => row.sip).length, bands, outcomes, shown, readAll: read.readAll, otherSip: read.otherSip }
}

// The SIP calls and the streams (their verdicts) of the window, or of the one call.
// With `maxRead` (the web view: a page load's cost is bounded), the most
// recent `maxRead` of each. A number or an outcome is asked of the database
// (sipFilter), so that the bound counts the calls that match, not the
// window's; the media of the calls found is read too where it ended outside
// the window, IN_CHUNK Call-IDs a query (a day's calls would pass the
// server's 16 MB command); so is that of an answered call with no BYE whose
// SIP is quiet past byeUnseenAfter (its media may have gone on past the window:
// the call is live).
async function readWindow (db, { callId, since, until, collections, maxRead = 0, number, outcome, reading }) {
  const calls = db.collection(collections.calls)
  const streams = db.collection(collections.streams)
  const bounded = (field) => maxRead > 0 ? { sort: { [field]: -1 }, limit: maxRead } : {}
  const filter = sipFilter({ number, outcome }, reading)
  const sipWindow = activeIn('firstSeen', 'lastSeen', since, until ?? reading.now)
  const sipDocs = await calls.find(callId === undefined ? { ...sipWindow, ...filter } : { callId }, bounded('lastSeen')).toArray()
  // What the window holds of SIP that is no call (no INVITE: OPTIONS pings, REGISTER), said, not listed.
  const otherSip = callId === undefined && number === undefined && outcome === undefined ? await calls.countDocuments({ ...sipWindow, $nor: CALL_SIGNS }) : 0
  const found = new Set(sipDocs.map((doc) => doc.callId))
  const streamDocs = []
  const seen = new Set()
  const take = async (query, options = {}) => {
    for await (const doc of streams.find(query, { projection: STREAM_PROJECTION, ...options })) {
      if (seen.has(String(doc._id))) continue
      seen.add(String(doc._id))
      streamDocs.push({ _id: doc._id, endTime: doc.endTime, callId: streamCallId(doc), ...pick(callAnalytics(doc)) })
    }
  }
  if (callId !== undefined) await take({ $or: [{ 'from.callId': callId }, { 'to.callId': callId }] })
  else await take(activeIn('startTime', 'endTime', since, until ?? reading.now), bounded('endTime'))
  const inWindow = streamDocs.length
  if (callId === undefined) {
    const quietBye = sipDocs.filter((doc) => doc.answeredAt && callEndOf(doc).endedAt === null && reading.now - doc.lastSeen > reading.byeUnseenAfter).map((doc) => doc.callId)
    const media = number !== undefined || outcome !== undefined ? [...found] : quietBye
    for (const ids of inChunks(media)) await take({ $or: [{ 'from.callId': { $in: ids } }, { 'to.callId': { $in: ids } }] })
  }
  // A call whose media is in the window and its SIP not (a long call: its
  // last SIP message was the ACK) is listed with its SIP all the same.
  const more = [...new Set(streamDocs.map((s) => s.callId).filter((id) => id !== null && !found.has(id)))]
  for (const ids of inChunks(more)) sipDocs.push(...await calls.find({ callId: { $in: ids }, ...filter }).toArray())
  const readAll = !(maxRead > 0) || (found.size < maxRead && inWindow < maxRead)
  return { sipDocs, streamDocs, readAll, otherSip }
}

// How long past a window's end a call's last message (or report) may be
// and the call still be read as active in it: a day. Unbounded, a window a
// month ago would read every call since.
const LONGEST_CALL_MS = 24 * 3600 * 1000

// A call (or stream) is in the window when it was active in it: begun by
// its end, last heard at or after its start (not only a call whose last
// message is in it: "which calls were up at 10:03?" found none that went
// on past 10:05). The range is on the last time's index.
function activeIn (first, last, since, until) {
  return { [last]: { $gte: new Date(since), $lte: new Date(until + LONGEST_CALL_MS) }, [first]: { $lte: new Date(until) } }
}

// A call document is a call when its SIP is of an INVITE's dialog: an
// initial INVITE, a response to one, a CANCEL, a BYE (a capture that began
// mid-call), or fields of calls stored before (endedAt, firstBye). A
// Call-ID of OPTIONS pings or a REGISTER has none of them: found by
// --call-id, not listed nor counted among the calls.
const CALL_SIGNS = Object.freeze(['invitedAt', 'final', 'ringingAt', 'answeredAt', 'cancelledAt', 'firstReplyFrom', 'byes', 'endedAt', 'firstBye'].map((field) => ({ [field]: { $ne: null } })))

const IN_CHUNK = 1000

function inChunks (values) {
  const chunks = []
  for (let i = 0; i < values.length; i += IN_CHUNK) chunks.push(values.slice(i, i + IN_CHUNK))
  return chunks
}

/**
 * The query on `calls` for a number and an outcome (callOutcome's classes,
 * in stored fields: an answer; a CANCEL or a 487; another final response;
 * none, its last message within finalUnseenAfter of `now` or before; an answer,
 * no BYE and SIP quiet past byeUnseenAfter, which its media may yet make live),
 * which matchesNumber and rowsOf then check as before.
 */
function sipFilter ({ number, outcome }, { now, finalUnseenAfter, byeUnseenAfter }) {
  const and = [{ $or: CALL_SIGNS }]
  if (number !== undefined) {
    const digits = numberDigits(number)
    const either = (test) => [{ 'caller.user': test }, { 'callee.user': test }]
    // A digit suffix with anything else between the digits: 30123 finds +49 (30) 1-23.
    const suffix = digits === null ? [] : either({ $regex: `${[...digits].join('\\D*')}\\D*$` })
    and.push({ $or: [...either(number), ...suffix] })
  }
  const notAnswered = { answeredAt: null }
  const noFinal = [notAnswered, { cancelledAt: null }, { final: null }]
  // A BYE with no final response: answered, its answer not captured (callOutcome).
  if (outcome === 'answered') and.push({ $or: [{ answeredAt: { $ne: null } }, { $and: [...noFinal, endedByByeQuery()] }] })
  // Not ended as callEndOf reads it: no BYE of its answered dialog, no legacy endedAt where that is read.
  if (outcome === 'no-bye-seen') and.push({ answeredAt: { $ne: null } }, { lastSeen: { $lt: new Date(now - byeUnseenAfter) } }, notEndedByByeQuery())
  if (outcome === 'cancelled') and.push(notAnswered, { $or: [{ cancelledAt: { $ne: null } }, { final: { $mod: [1000, 487] } }] })
  if (outcome === 'failed') and.push(notAnswered, { cancelledAt: null }, { final: { $ne: null } }, { final: { $not: { $mod: [1000, 487] } } })
  if (outcome === 'no-answer') and.push(...noFinal, notEndedByByeQuery(), { lastSeen: { $gte: new Date(now - finalUnseenAfter) } })
  if (outcome === 'no-final-seen') and.push(...noFinal, notEndedByByeQuery(), { lastSeen: { $lt: new Date(now - finalUnseenAfter) } })
  return { $and: and }
}

// One row per SIP call (its worst stream's verdict, its outcome as of the
// reading: its media's last report among its signs of life) and per stream
// of no SIP call (none when the filters ask for SIP: a number, an outcome).
function rowsOf ({ sipDocs, streamDocs }, { number, outcome, reading }) {
  const sipIds = new Set(sipDocs.map((doc) => doc.callId))
  const media = new Map() // callId → its streams' verdicts
  const rows = []
  for (const s of streamDocs) {
    if (s.callId !== null && sipIds.has(s.callId)) {
      if (!media.has(s.callId)) media.set(s.callId, [])
      media.get(s.callId).push(s)
    } else if (number === undefined && outcome === undefined) rows.push({ sip: null, outcome: null, stream: s, streams: 1, mos: s.mos, band: s.band, time: s.endTime })
  }
  for (const doc of sipDocs) {
    if (!matchesNumber(doc, number)) continue
    const streams = (media.get(doc.callId) || []).sort(byWorst)
    const worst = streams[0] || { mos: null, band: 'unknown' }
    const mediaAt = streams.reduce((last, s) => s.endTime && (last === null || s.endTime > last) ? s.endTime : last, null)
    rows.push({ sip: doc, outcome: callOutcome(doc, { ...reading, mediaAt }), stream: streams[0] || null, streams: streams.length, mos: worst.mos, band: worst.band, time: doc.invitedAt || doc.firstSeen })
  }
  return rows
}

/**
 * Whether a SIP call's caller or callee user is `number`: the same text,
 * or, when it is written as a phone number (digits and + - . ( ) / space),
 * one whose digits end with its digits less any leading zeros, the
 * dialling prefixes (`--number 30123` and `0030123` find +49 30 123 and
 * 004930123).
 */
function matchesNumber (doc, number) {
  if (number === undefined) return true
  const digits = numberDigits(number)
  return [doc.caller, doc.callee].some((party) => {
    if (!party || typeof party.user !== 'string') return false
    if (party.user === number) return true
    return digits !== null && party.user.replace(/\D/g, '').endsWith(digits)
  })
}

// The user a number search names: an address pasted whole (sip:+4930222@host,
// tel:+4930222) is its user part, which is what the calls store (QA: it
// found nothing, with no word why).
function userOf (number) {
  const bare = number.replace(/^(sips?|tel):/i, '')
  const at = bare.lastIndexOf('@')
  return at > 0 ? bare.slice(0, at) : bare
}

// The digits a number search matches by suffix, or null when the text is
// not written as a phone number (a user name: matched whole only).
function numberDigits (number) {
  if (!/^[\d\s+\-.()/]+$/.test(number)) return null
  const digits = number.replace(/\D/g, '').replace(/^0+/, '')
  return digits.length > 0 ? digits : null
}

/** A caller or callee as one text: user@host, or the user alone (a tel: URI has no host). */
function partyText (party) {
  if (!party) return null
  return party.host ? `${party.user}@${party.host}` : party.user
}

/**
 * A call's SIP outcome as one text: `200, callee hung up` (`200, hung up`
 * when who sent the BYE is not known; `answer not seen, hung up` for a BYE
 * with no final response captured), `200, no BYE
 * seen` (quiet past its bound), `200` (in progress), `486 failed`, `487
 * cancelled`, `ringing`, `no answer`, `no final response seen`; and how
 * many of its messages were past the per-call cap, when any were (`…; 40
 * past the cap`).
 */
function outcomeText (o) {
  let text = o.status === null ? o.outcome : `${o.status} ${o.outcome}`
  const answer = o.answerUnseen ? 'answer not seen' : o.status
  if (o.outcome === 'answered') text = o.endedBy ? `${answer}, ${o.endedBy} hung up` : o.endedAt ? `${answer}, hung up` : o.endUnseen ? `${answer}, no BYE seen` : String(answer)
  else if (o.outcome === 'no-answer') text = o.ringing ? 'ringing' : 'no answer'
  else if (o.outcome === 'no-final-seen') text = 'no final response seen'
  return o.overCap > 0 ? `${text}; ${o.overCap} past the cap` : text
}

/** The SIP calls by outcome as one text: `answered 3 (no-bye-seen 1), failed 0, …`, the no-bye-seen among the answered when any. */
function outcomeCounts (outcomes) {
  const seen = outcomes['no-bye-seen']
  return OUTCOMES.map((name) => `${name} ${outcomes[name]}${name === 'answered' && seen > 0 ? ` (no-bye-seen ${seen})` : ''}`).join(', ')
}

/**
 * A call's length from SIP: `22.0s`, under a second in ms (`350ms`, `<1ms`
 * for a replayed capture), `-` unknown; `≥` before what a call whose BYE was
 * not seen lasted at least (`{ atLeastMs: o.minDurationMs }`).
 */
function durationText (ms, { atLeastMs = null } = {}) {
  if ((ms === null || ms === undefined) && atLeastMs !== null && atLeastMs !== undefined) return `≥${durationText(atLeastMs)}`
  if (ms === null || ms === undefined) return '-'
  if (ms >= 1000) return `${(ms / 1000).toFixed(1)}s`
  return ms < 1 ? '<1ms' : `${Math.round(ms)}ms`
}

function streamCallId (doc) {
  return (doc.from && doc.from.callId) || (doc.to && doc.to.callId) || null
}

function pick ({ mos, band }) {
  return { mos, band }
}

function byTime (a, b) {
  return new Date(b.time || 0) - new Date(a.time || 0)
}

module.exports = { listCalls, sipFilter, matchesNumber, partyText, outcomeText, outcomeCounts, durationText, streamCallId, OUTCOME_FILTERS }
