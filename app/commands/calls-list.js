'use strict'

// How `collector calls` finds calls (runs in the CLI): the SIP calls the
// hep collector stored (`calls`, one document per Call-ID: answered,
// rejected, cancelled, unanswered or still ringing) joined to their media
// (`streams` whose sides carry the Call-ID), and the media of no SIP call
// (RTCP heard directly, or HEP RTCP whose SIP was not captured) as before:
// one row per stream. A SIP call with several streams takes the worst
// stream's verdict.

const { callAnalytics, verdictProjection } = require('../../collectors/rtcp/quality-analytics')
const { callOutcome, OUTCOMES } = require('../../collectors/hep/calls')
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
 * The calls of a window, filtered and ordered, the first `limit` read whole.
 * A SIP call is in the window when its last message's capture time
 * (`lastSeen`) is; a stream when its last report (endTime) is. `callId`
 * reads that call whatever its time.
 * @param {import('mongodb').Db} db
 * @param {{ since: number, until?: number, callId?: string, number?: string, outcome?: string, band?: string,
 *   order?: 'verdict'|'time', limit: number, maxRead?: number, collections: { calls: string, streams: string } }} options
 * @returns {Promise<{ total: number, sipTotal: number, bands: object, outcomes: object,
 *   shown: Array<{ outcome: object|null, doc: object|null, analytics: object|null, streams: number }> }>}
 */
async function listCalls (db, options) {
  const { outcome, band, order = 'verdict', limit, collections } = options
  const rows = rowsOf(await readWindow(db, options), options)
  const kept = rows.filter((row) => (outcome === undefined || (row.outcome && row.outcome.outcome === outcome)) && (band === undefined || row.band === band))
  kept.sort(order === 'time' ? byTime : (a, b) => byWorst({ mos: a.mos, endTime: a.time }, { mos: b.mos, endTime: b.time }))
  const bands = zero(BAND_ORDER)
  const outcomes = zero(OUTCOMES)
  for (const row of kept) {
    bands[row.band]++
    if (row.outcome) outcomes[row.outcome.outcome]++
  }
  const first = kept.slice(0, limit)
  const whole = new Map((await readWhole(db.collection(collections.streams), first.filter((row) => row.stream).map((row) => row.stream))).map((s) => [String(s.doc._id), s]))
  const shown = first.map((row) => {
    const stream = row.stream ? whole.get(String(row.stream._id)) : null
    return { outcome: row.outcome, doc: stream ? stream.doc : null, analytics: stream ? stream.analytics : null, streams: row.streams }
  })
  return { total: kept.length, sipTotal: kept.filter((row) => row.sip).length, bands, outcomes, shown }
}

// The SIP calls and the streams (their verdicts) of the window, or of the one call.
// With `maxRead` (the web view: a page load's cost is bounded), the most
// recent `maxRead` of each.
async function readWindow (db, { callId, since, until, collections, maxRead = 0 }) {
  const window = { $gte: new Date(callId === undefined ? since : 0), $lte: new Date(callId === undefined ? (until ?? Date.now()) : 8.64e15) }
  const calls = db.collection(collections.calls)
  const bounded = (field) => maxRead > 0 ? { sort: { [field]: -1 }, limit: maxRead } : {}
  const sipDocs = await calls.find(callId === undefined ? { lastSeen: window } : { callId }, bounded('lastSeen')).toArray()
  const streamFilter = callId === undefined ? { endTime: window } : { $or: [{ 'from.callId': callId }, { 'to.callId': callId }] }
  const streamDocs = []
  for await (const doc of db.collection(collections.streams).find(streamFilter, { projection: STREAM_PROJECTION, ...bounded('endTime') })) {
    streamDocs.push({ _id: doc._id, endTime: doc.endTime, callId: streamCallId(doc), ...pick(callAnalytics(doc)) })
  }
  // A call whose media is in the window and its SIP not (a long call: its
  // last SIP message was the ACK) is listed with its SIP all the same.
  const found = new Set(sipDocs.map((doc) => doc.callId))
  const more = [...new Set(streamDocs.map((s) => s.callId).filter((id) => id !== null && !found.has(id)))]
  if (more.length > 0) sipDocs.push(...await calls.find({ callId: { $in: more } }).toArray())
  return { sipDocs, streamDocs }
}

// One row per SIP call (its worst stream's verdict) and per stream of no
// SIP call (none when the filters ask for SIP: a number, an outcome).
function rowsOf ({ sipDocs, streamDocs }, { number, outcome }) {
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
    rows.push({ sip: doc, outcome: callOutcome(doc), stream: streams[0] || null, streams: streams.length, mos: worst.mos, band: worst.band, time: doc.invitedAt || doc.firstSeen })
  }
  return rows
}

/**
 * Whether a SIP call's caller or callee user is `number`: the same text,
 * or, by its digits only, one whose digits end with the number's
 * (`--number 30123` finds +49 30 123 and 004930123).
 */
function matchesNumber (doc, number) {
  if (number === undefined) return true
  const digits = number.replace(/\D/g, '')
  return [doc.caller, doc.callee].some((party) => {
    if (!party || typeof party.user !== 'string') return false
    if (party.user === number) return true
    return digits.length > 0 && party.user.replace(/\D/g, '').endsWith(digits)
  })
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

module.exports = { listCalls, matchesNumber, streamCallId }
