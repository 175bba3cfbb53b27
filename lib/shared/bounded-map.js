'use strict'

// Runs in the master and in workers: the memory kept per sender (SSRCs,
// stream sides, watermarks read on redelivery) is keyed by what senders
// choose, so every such map holds at most a declared number of keys.

/**
 * A Map of at most `limit` keys. Setting a new key when full first forgets
 * the oldest one (insertion order: `refresh` moves a key to the newest end,
 * which makes the order least recently refreshed) and counts it in
 * `evicted`; `onEvict(key)`, when given, hears of each. For state whose
 * loss costs precision, not correctness: a forgotten key is learned again.
 */
class BoundedMap extends Map {
  /**
   * @param {number} limit the most keys held (a positive integer)
   * @param {(key: any) => void} [onEvict]
   */
  constructor (limit, onEvict = null) {
    super()
    if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`BoundedMap limit must be a positive integer, got ${limit}`)
    this.limit = limit
    this.evicted = 0
    this.onEvict = onEvict
  }

  set (key, value) {
    if (this.size >= this.limit && !this.has(key)) {
      const oldest = this.keys().next().value
      this.delete(oldest)
      this.evicted++
      if (this.onEvict) this.onEvict(oldest)
    }
    return super.set(key, value)
  }

  /** Sets `key` at the newest end, the last to be forgotten (a key not held is set as by set()). */
  refresh (key, value) {
    return this.delete(key) ? super.set(key, value) : this.set(key, value)
  }
}

module.exports = { BoundedMap }
