'use strict'

/**
 * A batch size that follows the measured time per update: grow 10 % while
 * updates are fast, hold inside the middle band, shrink to two thirds when
 * slow, always within [floor, ceiling]. Keeps a large backlog from starving
 * ingest of the database.
 */
class AdaptiveBatch {
  constructor ({ initial = 100, floor = 10, ceiling = 5000, fastMs = 0.5, slowMs = 2 } = {}) {
    this.size = initial
    this.floor = floor
    this.ceiling = ceiling
    this.fastMs = fastMs
    this.slowMs = slowMs
  }

  /** Records a batch of `count` updates that took `elapsedMs`; returns the next size. */
  record (count, elapsedMs) {
    if (count === 0) return this.size
    const perUpdate = elapsedMs / count
    // ×11/10 in integers: ceil(100 * 1.1) is 111, since 100 * 1.1 = 110.00000000000001
    if (perUpdate < this.fastMs) this.size = Math.ceil(this.size * 11 / 10)
    else if (perUpdate > this.slowMs) this.size = Math.floor(this.size * 2 / 3)
    this.size = Math.min(this.ceiling, Math.max(this.floor, this.size))
    return this.size
  }
}

module.exports = AdaptiveBatch
