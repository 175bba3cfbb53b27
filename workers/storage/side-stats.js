'use strict'

/**
 * Statistics a packet item keeps on its sender's side of a stream, beyond
 * the last values (`fields`, `$set`): `{ min, max, inc }`, each a map from
 * a path under the side to a value, written with MongoDB's `$min`, `$max`
 * and `$inc`. All three are order-free and merge without loss, so the
 * packets of a flush fold into one update per stream (mergeStats) and a
 * redelivered batch is applied once through the watermarks, like the
 * packet counts. A `$min`/`$max` value may be a small document: MongoDB
 * compares those field by field in order (BSON comparison order), which
 * keeps, say, the figures that came with the lowest MOS together; this
 * module compares them the same way when it merges in memory.
 */

/** Folds `stats` into `into` (both `{ min, max, inc }`), in place; returns `into`. */
function mergeStats (into, stats) {
  for (const [path, value] of Object.entries(stats.min)) {
    if (!(path in into.min) || compareOrdered(value, into.min[path]) < 0) into.min[path] = value
  }
  for (const [path, value] of Object.entries(stats.max)) {
    if (!(path in into.max) || compareOrdered(value, into.max[path]) > 0) into.max[path] = value
  }
  for (const [path, value] of Object.entries(stats.inc)) into.inc[path] = (into.inc[path] || 0) + value
  return into
}

/** A copy to merge into (the item's own stays as decoded). */
function copyStats (stats) {
  return { min: { ...stats.min }, max: { ...stats.max }, inc: { ...stats.inc } }
}

/**
 * BSON order for the values stats hold: null below numbers, numbers and
 * Dates by value, documents field by field in their order.
 */
function compareOrdered (a, b) {
  if (a === b) return 0
  if (a === null || a === undefined) return b === null || b === undefined ? 0 : -1
  if (b === null || b === undefined) return 1
  if (typeof a === 'object' && !(a instanceof Date)) {
    const keys = Object.keys(a)
    for (const key of keys) {
      const order = compareOrdered(a[key], b[key])
      if (order !== 0) return order
    }
    return keys.length - Object.keys(b).length
  }
  const x = +a
  const y = +b
  return x < y ? -1 : x > y ? 1 : 0
}

/** Adds `stats` of `side` ('from' or 'to') to an update's $min, $max and $inc. */
function addStatsToUpdate (update, side, stats) {
  for (const [op, values] of [['$min', stats.min], ['$max', stats.max], ['$inc', stats.inc]]) {
    const target = update[op] || (update[op] = {})
    for (const path of Object.keys(values)) target[`${side}.${path}`] = values[path]
  }
}

module.exports = { mergeStats, copyStats, compareOrdered, addStatsToUpdate }
