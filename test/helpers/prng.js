'use strict'

/**
 * A small deterministic PRNG (mulberry32): the corpora and mutations of the
 * decoder tests and benchmarks are the same on every run, so a failing case
 * can be replayed from its seed.
 * @param {number} seed
 * @returns {() => number} uniform in [0, 1)
 */
function prng (seed) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

module.exports = { prng }
