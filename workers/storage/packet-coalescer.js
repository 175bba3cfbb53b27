'use strict'

const { directionKey } = require('./stream-key')
const { PendingEntries } = require('./pending-entries')

/**
 * Folds the updates of one flush window: all packets of one direction of a
 * stream become one entry (max/min sequence numbers, packet count, time
 * range, latest side fields, merged side statistics), side updates and
 * ends merge per endpoint.
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
   * (`minSeq`) and, per origin, the highest batch id it covers (`marks`).
   */
  add (item, reserved = 0, mark = null) {
    const entry = toEntry(item)
    if (mark) addMark(entry, mark)
    const existing = this.entries.get(entry.key)
    if (existing) {
      merge(existing, entry)
      return true
    }
    if (this.entries.size + reserved >= this.maxEntries) return false
    this.entries.set(entry.key, entry)
    return true
  }

  merge (into, entry) {
    merge(into, entry)
  }
}

function toEntry (item) {
  const ts = toDate(item.timestamp)
  // Endpoint keys start with NUL, which no direction key does.
  if (item.endID !== undefined) return { kind: 'end', key: `\u0000e${item.endID}`, endID: String(item.endID), maxTs: ts, count: 0, minSeq: Infinity, marks: null }
  if (item.sideID !== undefined) {
    return { kind: 'side', key: `\u0000s${item.sideID}`, sideID: String(item.sideID), IP: item.IP, fields: { ...item.fields }, maxTs: ts, count: 0, minSeq: Infinity, marks: null }
  }
  const fromID = String(item.fromID)
  const toID = String(item.toID)
  const hpn = item.highestPacketNum
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
    stats: item.stats || null, // the item's own: merged into, never copied (the hot path)
    minSeq: Infinity,
    marks: null
  }
}

function addMark (entry, { origin, batchId, seq }) {
  if (seq < entry.minSeq) entry.minSeq = seq
  const marks = entry.marks || (entry.marks = {})
  if (!(marks[origin] >= batchId)) marks[origin] = batchId
}

function merge (into, entry) {
  into.count += entry.count
  if (entry.marks) for (const origin of Object.keys(entry.marks)) addMark(into, { origin, batchId: entry.marks[origin], seq: entry.minSeq })
  // Later wins, and on a tie the one merged later: the items of one batch
  // share the time the master received it.
  if (entry.maxTs >= into.maxTs) {
    into.maxTs = entry.maxTs
    if (entry.IP !== undefined) into.IP = entry.IP
    if (entry.fields) into.fields = into.fields ? Object.assign(into.fields, entry.fields) : { ...entry.fields }
  }
  if (into.kind !== 'packet') return
  if (entry.stats) into.stats = into.stats ? into.stats.merge(entry.stats) : entry.stats
  if (entry.maxHpn > into.maxHpn) into.maxHpn = entry.maxHpn
  if (entry.minHpn < into.minHpn) into.minHpn = entry.minHpn
  if (entry.minTs < into.minTs) into.minTs = entry.minTs
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

module.exports = { PacketCoalescer, invalidReason }
