'use strict'

const { BoundedMap } = require('../lib/shared/bounded-map')

// Senders remembered per minute for the log line's busiest source; past it
// the least recently counted is forgotten (spoofed UDP sources are free).
const SOURCES_LIMIT = 1024
const MINUTE_MS = 60000

/**
 * A worker's cap on the new keys its definition's records bring per clock
 * minute (`cardinality(record)`: a StatsD metric name and type): each new
 * key costs a document a minute and memory, and a sender chooses them. The
 * keys taken are remembered in an LRU of `known` keys; a known key always
 * passes (and is refreshed), so the cap never starves the metrics already
 * flowing. A key not known is taken while the minute's `share` lasts, and
 * refused beyond it, unremembered (a refused key cannot push a known one
 * out). The share is the collector's maxNewKeysPerMinute divided among its
 * workers: hash distribution spreads the keys evenly over them. Per minute
 * it counts the new keys each sender address brought (taken or refused),
 * to name the busiest one.
 */
class NewKeyLimit {
  /**
   * @param {{ share: number, known: number }} limits new keys a minute; keys remembered
   */
  constructor ({ share, known }) {
    this.share = share
    this.known = new BoundedMap(known)
    this.counts = { admitted: 0, refused: 0 }
    this.minute = -1
    this.taken = 0 // new keys taken this minute
    this.sources = new BoundedMap(SOURCES_LIMIT) // address → new keys this minute
    this.busiest = null // { address, keys } of this minute
  }

  /**
   * Whether a record of key `key` from `address` passes; `force` takes a new
   * key whatever the share (a redelivered message: a worker that died with
   * it decided already, and may have stored it).
   */
  admits (key, address, force = false) {
    if (!Array.isArray(key)) return this.admitsAll([key], address, force)
    return this.admitsAll(key, address, force)
  }

  // A record of several keys (an RTCP datagram's SSRCs) passes when each is
  // known or the share has room for all its new ones; else none is taken.
  admitsAll (keys, address, force) {
    let fresh = 0
    for (const key of keys) {
      if (this.known.has(key)) this.known.refresh(key, true)
      else fresh++
    }
    if (fresh === 0) return true
    const minute = Math.floor(Date.now() / MINUTE_MS)
    if (minute !== this.minute) this.newMinute(minute)
    for (let i = 0; i < fresh; i++) this.countSource(address)
    if (this.taken + fresh > this.share && !force) {
      this.counts.refused += fresh
      return false
    }
    this.taken += fresh
    this.counts.admitted += fresh
    for (const key of keys) if (!this.known.has(key)) this.known.set(key, true)
    return true
  }

  /**
   * The records of one message (one record, or an array) that pass, each by
   * its key `keyOf(record)` (or its keys, an array: each new one counts;
   * null or undefined: passes, uncounted), and
   * `places`: where each taken stood in `records` (null: all taken), so
   * that a sink numbers a record the same whether or not those before it
   * were taken. `records` null when none was left of some (the message is
   * refused). `force` as for admits.
   */
  take (records, keyOf, address, force = false) {
    const passes = (record) => {
      const key = keyOf(record)
      return key === null || key === undefined || this.admits(key, address, force)
    }
    if (!Array.isArray(records)) return { records: passes(records) ? records : null, places: null }
    const taken = []
    const places = []
    for (let i = 0; i < records.length; i++) {
      if (!passes(records[i])) continue
      taken.push(records[i])
      places.push(i)
    }
    if (taken.length === 0 && records.length > 0) return { records: null, places: null }
    return { records: taken, places: taken.length === records.length ? null : places }
  }

  newMinute (minute) {
    this.minute = minute
    this.taken = 0
    this.sources.clear()
    this.busiest = null
  }

  countSource (address) {
    const keys = (this.sources.get(address) || 0) + 1
    this.sources.refresh(address, keys)
    if (!this.busiest || keys > this.busiest.keys) this.busiest = { address, keys }
  }

  /** What a log line says of this minute. */
  minuteStats () {
    return { share: this.share, newKeysThisMinute: this.taken, busiestSource: this.busiest && this.busiest.address, busiestSourceNewKeys: this.busiest && this.busiest.keys }
  }

  stats () {
    return { share: this.share, ...this.counts }
  }
}

module.exports = { NewKeyLimit }
