'use strict'

// How `collector calls` reads the streams (runs in the CLI). The command
// reads its whole window once (worstCalls, callsByMinute): one operator,
// one pass, and a footer that counts every call. Its web view answers any
// number of page loads, so each of those reads a bounded part (recentCalls).

const { callAnalytics, minuteBands, verdictProjection } = require('../../collectors/rtcp/quality-analytics')
const { minuteKey, BANDS } = require('../../collectors/rtcp/call-quality')

/** The bands a call's verdict falls in, best first; `unknown`: no MOS. */
const BAND_ORDER = Object.freeze([...BANDS, 'unknown'])

// What callAnalytics needs of a stream for its verdict (mos, band), and
// the per-minute buckets minuteBands reads, with the pair they are of.
const VERDICT_PROJECTION = Object.freeze({ endTime: 1, ...verdictProjection() })
const MINUTES_PROJECTION = Object.freeze({ pairKey: 1, 'from.quality.minutes': 1, 'to.quality.minutes': 1 })
// The band a pair counts in where two documents of it have the same minute: the worst known.
const BAND_RANK = Object.freeze({ unknown: 0, good: 1, fair: 2, poor: 3 })

const zeroBands = () => Object.fromEntries(BAND_ORDER.map((band) => [band, 0]))

/**
 * Every call of the window by band, and the `worst` lowest by the call's
 * verdict (no MOS last; ties: the most recent first). One pass reads only
 * the figures the verdict needs of every call in the window; the shown ones
 * are then read whole.
 * @param {import('mongodb').Collection} streams
 * @param {{ since: number, worst: number, callIds?: string[]|null }} options since: epoch ms
 * @returns {Promise<{ total: number, bands: Object<string, number>, shown: Array<{ doc: object, analytics: object }> }>}
 */
async function worstCalls (streams, { since, worst, callIds = null }) {
  const filter = { endTime: { $gte: new Date(since) } }
  if (callIds) filter.$or = [{ 'from.callId': { $in: callIds } }, { 'to.callId': { $in: callIds } }]
  const bands = zeroBands()
  const ranked = []
  for await (const doc of streams.find(filter, { projection: VERDICT_PROJECTION })) {
    const { mos, band } = callAnalytics(doc)
    bands[band]++
    ranked.push({ _id: doc._id, mos, endTime: doc.endTime })
  }
  ranked.sort(byWorst)
  return { total: ranked.length, bands, shown: await readWhole(streams, ranked.slice(0, worst)) }
}

/**
 * The whole documents of `ranked` calls (`{ _id }`, in their order) with
 * their analytics: one query by `_id`, an index on every server.
 * @returns {Promise<Array<{ doc: object, analytics: object }>>}
 */
async function readWhole (streams, ranked) {
  if (ranked.length === 0) return []
  const docs = new Map()
  for (const doc of await streams.find({ _id: { $in: ranked.map((r) => r._id) } }).toArray()) docs.set(String(doc._id), doc)
  return ranked.map((r) => docs.get(String(r._id))).filter(Boolean).map((doc) => ({ doc, analytics: callAnalytics(doc) }))
}

/**
 * Per UTC minute (`YYYYMMDDHHmm`) from `since` to `until`, the calls that had
 * media that minute by band (minuteBands): `[{ minute, good, fair, poor,
 * unknown }]`, oldest first. Exact: each call once per minute, in one band.
 * @param {import('mongodb').Collection} streams
 * @param {{ since: number, until?: number }} window epoch ms
 */
async function callsByMinute (streams, { since, until = Date.now() }) {
  const filter = { endTime: { $gte: new Date(Math.floor(since / 60000) * 60000) }, startTime: { $lte: new Date(until) } }
  return tallyMinutes(streams.find(filter, { projection: MINUTES_PROJECTION }), { since, until })
}

/**
 * callsByMinute's count over `docs` (an iterable or a cursor of streams
 * with their minute buckets). A pair whose stream went on in a new segment
 * (--stream-segment) has the minute of the change in two documents: it
 * counts once there, in the worse band.
 */
async function tallyMinutes (docs, { since, until }) {
  const first = minuteKey(since)
  const last = minuteKey(until)
  const pairs = new Map() // minute → pair (its pairKey, else its _id) → band
  for await (const doc of docs) {
    const pair = doc.pairKey === undefined ? String(doc._id) : doc.pairKey
    for (const [minute, band] of minuteBands(doc)) {
      if (minute < first || minute > last) continue
      if (!pairs.has(minute)) pairs.set(minute, new Map())
      const seen = pairs.get(minute).get(pair)
      if (seen === undefined || BAND_RANK[band] > BAND_RANK[seen]) pairs.get(minute).set(pair, band)
    }
  }
  const minutes = []
  for (const [minute, bands] of pairs) {
    const row = { minute, ...zeroBands() }
    for (const band of bands.values()) row[band]++
    minutes.push(row)
  }
  return minutes.sort((a, b) => (a.minute < b.minute ? -1 : 1))
}

/**
 * The calls of the window that a page of the view reads: at most `limit`,
 * the most recent by their last report (endTime), before the cursor
 * `before` (epoch ms, exclusive) when given, each with its verdict.
 *
 * Why the most recent and not the worst of the whole window: the verdict
 * is worked out from both sides' figures when read (an open call has none
 * stored), so no index can sort by it, and ranking a whole window reads
 * every call in it on every page load (5 to 9 s a page at 9,000 calls).
 * endTime is written with every report, and its index ({ endTime: 1 },
 * workers/storage/schemas.js) hands MongoDB the `limit` + 1 most recent
 * calls of a range, walked backwards and stopped there: the cost of a
 * page is `limit`, however many calls the window holds.
 *
 * The embedded server (mongo-java-server) keeps no index but `_id` and the
 * unique ones: it filters the whole collection (cheap, about 15 ms per
 * 50,000 calls here) and sorts every match (the dear part: 580 ms for
 * 50,000). So a read first narrows the range by what the `previous` read
 * found, and reads the whole window only when that held too few: the same
 * calls either way. For the newest calls the narrow range starts at the
 * previous read's `complete` boundary, which still holds more than `limit`
 * calls (endTime only grows), so it sorts a page and the calls that ended
 * since; below a cursor, it spans half again the time the previous read's
 * calls took, a guess.
 *
 * A page holds whole milliseconds of endTime: when more than `limit` calls
 * match, the calls of the oldest millisecond read are left to the next
 * cursor, `older` (also the page's `complete` boundary: every call that
 * ended after it is in `calls`). Minute buckets are read with `minutes`.
 *
 * @param {import('mongodb').Collection} streams
 * @param {{ since: number, before?: number|null, limit: number, minutes?: boolean, previous?: { complete: number|null, newest: number|null }|null }} options
 *   epoch ms; previous: what an earlier read returned
 * @returns {Promise<{ calls: Array<{ _id: object, endTime: Date, mos: number|null, band: string, doc: object }>, older: number|null, complete: number|null, newest: number|null }>}
 *   older: the cursor of the next page (null: no older call in the window);
 *   complete: the endTime (ms) after which no call of the window is missing
 *   (null: none is); newest: the latest endTime read
 */
async function recentCalls (streams, { since, before = null, limit, minutes = false, previous = null }) {
  const projection = minutes ? { ...VERDICT_PROJECTION, ...MINUTES_PROJECTION } : VERDICT_PROJECTION
  const read = (from) => {
    const endTime = { $gte: new Date(from) }
    if (before !== null) endTime.$lt = new Date(before)
    return streams.find({ endTime }, { projection, sort: { endTime: -1 }, limit: limit + 1 }).toArray()
  }
  const from = narrowed(before, previous)
  const recent = from > since ? await read(from) : []
  const docs = recent.length > limit ? recent : await read(since)
  let older = null
  let complete = null
  if (docs.length > limit) {
    complete = docs[limit].endTime.getTime()
    let kept = limit
    while (kept > 0 && docs[kept - 1].endTime.getTime() === complete) kept--
    // More than `limit` calls in one millisecond: the rest of it is skipped.
    older = kept > 0 ? complete + 1 : complete
    docs.length = kept > 0 ? kept : limit
  }
  const calls = docs.map((doc) => {
    const { mos, band } = callAnalytics(doc)
    return { _id: doc._id, endTime: doc.endTime, mos, band, doc }
  })
  return { calls, older, complete, newest: docs.length ? docs[0].endTime.getTime() : null }
}

// Where recentCalls's narrow range starts (-Infinity: no guess).
function narrowed (before, previous) {
  if (!previous || previous.complete === null) return -Infinity
  if (before === null) return previous.complete
  return before - 1.5 * Math.max(1, previous.newest - previous.complete)
}

/** Worst verdict first; no MOS last; ties: the most recent first. */
function byWorst (a, b) {
  if (a.mos !== b.mos) {
    if (a.mos === null) return 1
    if (b.mos === null) return -1
    return a.mos - b.mos
  }
  return new Date(b.endTime || 0) - new Date(a.endTime || 0)
}

module.exports = { BAND_ORDER, worstCalls, callsByMinute, tallyMinutes, recentCalls, readWhole, byWorst }
