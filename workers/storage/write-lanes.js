'use strict'

/**
 * How many bulk writes of one sink go to the server at once, from 1 to
 * `max`, by the server's latency per document: one more while a write's
 * time per document stays within 1.5× the best seen lately, halved when it
 * passes 3× (the server queues the writes instead of serving them side by
 * side). The best seen drifts up 5 % per write, so that one fast write long
 * ago does not hold the number down for good.
 */
class WriteLanes {
  constructor ({ initial = 2, max = 4 } = {}) {
    this.size = Math.min(initial, max)
    this.max = max
    this.best = Infinity
  }

  /** Records a write of `count` documents that took `elapsedMs`; returns the number of lanes. */
  record (count, elapsedMs) {
    if (count === 0) return this.size
    const perDocument = elapsedMs / count
    this.best = Math.min(perDocument, this.best * 1.05)
    if (perDocument <= 1.5 * this.best) this.size = Math.min(this.max, this.size + 1)
    else if (perDocument > 3 * this.best) this.size = Math.max(1, Math.floor(this.size / 2))
    return this.size
  }
}

module.exports = { WriteLanes }
