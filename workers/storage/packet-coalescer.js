'use strict'

const { directionKey } = require('./stream-key')
const { PendingEntries } = require('./pending-entries')

/**
 * Folds the updates of one flush window: all packets of one direction of a
 * stream become one entry (max/min sequence numbers, packet count, time
 * range, latest side fields, merged side statistics), side updates and
 * ends merge per endpoint.
 *
 * A packet entry keeps what is not idempotent (its packet count and its
 * statistics, `$inc` in part) in segments, each a run of one origin's
 * batches: `{ origin, first, last, count, stats, redelivered, retried }`.
 * A batch delivered again (`redelivered`) keeps a segment of its own, and
 * so does what a write brought back (`retried`, closed), so that a write
 * which finds some of an entry's batches stored already (the side's
 * watermark, see StreamWriter) can write the others alone.
 * Bounded: past `maxEntries` distinct entries a packet that would need a new
 * entry is refused (the caller counts it as dropped).
 */
class PacketCoalescer extends PendingEntries {
  constructor (maxEntries) {
    super()
    this.maxEntries = maxEntries
  }

  /**
   * Adds one item; false when it would exceed the bound. `reserved` counts
   * entries held elsewhere (in flight). `mark` (the worker's `delivery()`)
   * names the batch it came from: an entry keeps the smallest checkpoint
   * (`minSeq`), and its segments the batches they cover per origin.
   */
  add (item, reserved = 0, mark = null) {
    const entry = entryOf(item, mark)
    const existing = this.entries.get(entry.key)
    if (existing) {
      merge(existing, entry)
      return true
    }
    if (this.entries.size + reserved >= this.maxEntries) return false
    this.entries.set(entry.key, entry)
    return true
  }

  /**
   * Puts back entries a write did not store (or may have stored: a write
   * without a reply): their segments are closed and marked `retried`, so
   * that their next write applies only while the side has not stored them.
   */
  restore (entries) {
    for (const entry of entries) {
      if (entry.segments) for (const segment of entry.segments) closeForRetry(segment)
    }
    super.restore(entries)
  }

  // `entry` is restored, older than `into`: its segments go first.
  merge (into, entry) {
    merge(into, entry, true)
  }
}

/** The entry of one item, as the coalescer makes it (`mark`: its batch, or null). */
function entryOf (item, mark = null) {
  const ts = toDate(item.timestamp)
  const minSeq = mark ? mark.seq : Infinity
  // Endpoint keys start with NUL, which no direction key does.
  // An end names its endpoint by SSRC and by what tells two calls' alike SSRCs apart, the sender's
  // address (RTCP) or the call (a SIP BYE over HEP): in its key, so two such never merge.
  if (item.endID !== undefined) return { kind: 'end', key: `\u0000e${item.endID}\u0000${item.IP ?? ''}\u0000${item.callId ?? ''}`, endID: String(item.endID), IP: item.IP, callId: item.callId, maxTs: ts, count: 0, minSeq, segments: null }
  if (item.sideID !== undefined) {
    return { kind: 'side', key: `\u0000s${item.sideID}`, sideID: String(item.sideID), IP: item.IP, fields: { ...item.fields }, maxTs: ts, count: 0, minSeq, segments: null }
  }
  const fromID = String(item.fromID)
  const toID = String(item.toID)
  const hpn = item.highestPacketNum
  const batchId = mark ? mark.batchId : 0
  return {
    kind: 'packet',
    key: directionKey(fromID, toID),
    fromID,
    toID,
    IP: item.IP,
    maxHpn: hpn,
    minHpn: hpn,
    count: 1,
    minTs: ts,
    maxTs: ts,
    fields: item.fields ? { ...item.fields } : null,
    minSeq,
    segments: [{
      origin: mark ? mark.origin : null, // null: counted outside a worker, written unconditionally
      first: batchId,
      last: batchId,
      count: 1,
      stats: item.stats || null, // the item's own: merged into, never copied (the hot path)
      redelivered: Boolean(mark && mark.redelivered),
      retried: false,
      open: true
    }]
  }
}

// `older`: `entry` is a restored one (its segments, closed, go first).
function merge (into, entry, older = false) {
  into.count += entry.count
  if (entry.minSeq < into.minSeq) into.minSeq = entry.minSeq
  // Later wins, and on a tie the one merged later: the items of one message
  // share its arrival time.
  if (entry.maxTs >= into.maxTs) {
    into.maxTs = entry.maxTs
    if (entry.IP !== undefined) into.IP = entry.IP
    if (entry.fields) into.fields = into.fields ? Object.assign(into.fields, entry.fields) : { ...entry.fields }
  }
  if (into.kind !== 'packet') return
  if (older) into.segments = entry.segments.concat(into.segments)
  else for (const segment of entry.segments) addSegment(into.segments, segment)
  if (entry.maxHpn > into.maxHpn) into.maxHpn = entry.maxHpn
  if (entry.minHpn < into.minHpn) into.minHpn = entry.minHpn
  if (entry.minTs < into.minTs) into.minTs = entry.minTs
}

// A new item's segment joins the last one while that is open and of the
// same origin and kind: first deliveries of one origin run together, a
// redelivered batch's items share that batch's segment only.
function addSegment (segments, segment) {
  const last = segments[segments.length - 1]
  const joins = last && last.open && last.origin === segment.origin && last.redelivered === segment.redelivered &&
    (!segment.redelivered || (last.first === segment.first && last.last === segment.last))
  if (!joins) {
    segments.push(segment)
    return
  }
  last.count += segment.count
  if (segment.first < last.first) last.first = segment.first
  if (segment.last > last.last) last.last = segment.last
  if (segment.stats) last.stats = last.stats ? last.stats.merge(segment.stats) : segment.stats
}

function closeForRetry (segment) {
  segment.open = false
  segment.retried = true
}

function toDate (value) {
  if (value instanceof Date) return value
  return new Date(value === undefined ? Date.now() : value)
}

/** Checks a decoded item; returns a reason token when it is unusable. */
function invalidReason (item) {
  if (!item || typeof item !== 'object') return 'invalid-item'
  if (item.endID !== undefined || item.sideID !== undefined) return null
  if (item.fromID === undefined || item.fromID === null || item.toID === undefined || item.toID === null) return 'missing-endpoint'
  if (!Number.isFinite(item.highestPacketNum)) return 'bad-packet-number'
  if (item.timestamp !== undefined && Number.isNaN(toDate(item.timestamp).getTime())) return 'bad-timestamp'
  return null
}

module.exports = { PacketCoalescer, invalidReason, entryOf }
