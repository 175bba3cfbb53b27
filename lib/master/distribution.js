'use strict'

const { entryKeyHash } = require('../shared/batch-codec')

// Built-in distribution strategies. Each is called as `strategy.call(lb,
// workers, message)` with the workers in rotation (never empty) and returns
// one of them. `lb.key(message)` gives the flow key used by `hash`: a
// string is hashed (FNV-1a), an integer mixed (its low 32 bits), which lets
// a subclass compute the same number from a batch entry's bytes
// (`entryKey`, see LoadBalancer) on the native receive path.

/** Each worker in turn: N·k messages give each of N workers exactly k. */
function roundRobin (workers) {
  const index = this._rrNext++ % workers.length
  if (this._rrNext >= 0x3fffffff) this._rrNext = 0
  return workers[index]
}

/**
 * Flow affinity: one key always lands on one worker slot. The slot is the
 * key's hash modulo the configured instance count, so affinity survives the
 * respawn of any worker (respawns keep their slot). When the key's slot is
 * not in the list (its worker is down or saturated) the key falls back to
 * the highest-scoring remaining worker (rendezvous hashing), which moves no
 * other key.
 */
function hash (workers, message) {
  return workerForHash(workers, keyHash(this.key(message)), this.options.instances)
}

/** The hash of a flow key: FNV-1a of a string (or of anything else as one), a mix of an integer's low 32 bits. */
function keyHash (key) {
  return typeof key === 'number' && Number.isInteger(key) ? mix(key >>> 0) : fnv1a(String(key))
}

function workerForHash (workers, h, instances) {
  const slot = h % instances
  for (let i = 0; i < workers.length; i++) if (workers[i].slot === slot) return workers[i]
  let best = workers[0]
  let bestScore = -1
  for (const worker of workers) {
    const score = mix(h ^ Math.imul(worker.slot + 1, 0x9e3779b1))
    if (score > bestScore) { best = worker; bestScore = score }
  }
  return best
}

/** The worker with the fewest messages in flight (dispatched, not yet acked). */
function leastLoaded (workers) {
  let best = workers[0]
  for (let i = 1; i < workers.length; i++) if (workers[i].inFlight < best.inFlight) best = workers[i]
  return best
}

/** 32-bit FNV-1a of a string's UTF-16 code units (batch-codec's entryKeyHash is the same over an entry's bytes). */
function fnv1a (text) {
  let h = 0x811c9dc5
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i)
    h = Math.imul(h, 0x01000193)
  }
  return h >>> 0
}

function mix (x) {
  x = Math.imul(x ^ (x >>> 16), 0x85ebca6b)
  x = Math.imul(x ^ (x >>> 13), 0xc2b2ae35)
  return (x ^ (x >>> 16)) >>> 0
}

/**
 * The strategy as a function of a batch entry instead of a message, for the
 * native UDP path, when the answer does not need the message: round-robin
 * and least-loaded never look at it, hash only through the default key or
 * `entryKey(buf, offset)`, the hash a key of a subclass's reads from the
 * entry's bytes. Null when a message must be built (a custom function, or a
 * custom key without entryKey).
 */
function entryStrategy (strategy, lb, entryKey) {
  if (strategy === roundRobin || strategy === leastLoaded) return (workers) => strategy.call(lb, workers)
  if (strategy === hash && entryKey) return (workers, buf, offset) => workerForHash(workers, entryKey(buf, offset), lb.options.instances)
  return null
}

const strategies = Object.freeze({
  'round-robin': roundRobin,
  hash,
  'least-loaded': leastLoaded
})

module.exports = { strategies, fnv1a, keyHash, entryStrategy, entryKeyHash }
