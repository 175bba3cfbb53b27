'use strict'

/**
 * The key of the open stream between two endpoints, whichever direction a
 * packet travels. Length-prefixed so that IDs containing '|' cannot collide.
 * While a stream is open its document holds this in `openKey`, under a
 * unique index: that index is what makes duplicate open streams impossible.
 */
function pairKey (a, b) {
  const [low, high] = a < b ? [a, b] : [b, a]
  return `${low.length}:${low}|${high}`
}

/** The `openKey` a stream keeps once closed, unique per document. */
function closedKey (openKey, id) {
  return `${openKey}#${id}`
}

module.exports = { pairKey, closedKey }
