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

/**
 * The key of an open stream seen from its first sender: `from` then `to`.
 * Every packet upsert filters on this one field, under a unique index, and
 * on nothing else. A filter of exactly the unique index's keys is what a
 * server can answer from that index alone (mongo-java-server scans the
 * whole collection for any other filter shape), and what lets MongoDB retry
 * by itself two concurrent upserts that race to insert the same stream.
 */
function flowKey (fromID, toID) {
  return `${fromID.length}:${fromID}>${toID}`
}

/** Names one sender's side of a stream (fromID: the sender), for caches in memory only. */
function sideKey (fromID, toID) {
  return `${fromID}>${toID}`
}

/** The `openKey` / `flowKey` a stream keeps once closed, unique per document. */
function closedKey (key, id) {
  return `${key}#${id}`
}

module.exports = { pairKey, flowKey, sideKey, closedKey }
