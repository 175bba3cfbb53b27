'use strict'

/**
 * What a worker holds between flushes, one entry per key, each with the
 * smallest checkpoint of the messages folded into it (`minSeq`), so that
 * the worker acknowledges only what is older than everything held. A
 * subclass folds items in (`add`) and says how two entries of one key
 * merge (`merge(into, entry)`); a failed write's entries come back with
 * `restore`. The stream coalescer is one.
 */
class PendingEntries {
  constructor () {
    this.entries = new Map()
  }

  get size () {
    return this.entries.size
  }

  has (key) {
    return this.entries.has(key)
  }

  /** Puts back entries whose write failed, merged with newer ones; never refused. */
  restore (entries) {
    for (const entry of entries) {
      const existing = this.entries.get(entry.key)
      if (existing) this.merge(existing, entry)
      else this.entries.set(entry.key, entry)
    }
  }

  /** The smallest checkpoint of the entries held; Infinity if none. */
  oldestPending () {
    let min = Infinity
    for (const entry of this.entries.values()) if (entry.minSeq < min) min = entry.minSeq
    return min
  }

  /** Takes every entry, leaving nothing held. */
  take () {
    const entries = [...this.entries.values()]
    this.entries = new Map()
    return entries
  }

  clear () {
    this.entries = new Map()
  }
}

module.exports = { PendingEntries }
