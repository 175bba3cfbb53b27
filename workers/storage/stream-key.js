'use strict'

/**
 * The key of the endpoint pair, whichever direction a packet travels.
 * Length-prefixed so that IDs containing '|' cannot collide. Every stream
 * document holds it in `pairKey`, which never changes: the `streams`
 * collection's shard key (schemas.js SHARD_KEYS), so both directions of a
 * stream, open or closed, live on one shard. While a stream is open its
 * document also holds it in `openKey`, under the unique index
 * { pairKey, openKey }: that index is what makes duplicate open streams
 * impossible (closing rewrites `openKey`, see closedKey).
 */
function pairKey (a, b) {
  const [low, high] = a < b ? [a, b] : [b, a]
  return `${low.length}:${low}|${high}`
}

/**
 * The key of an open stream seen from its first sender: `from` then `to`.
 * Every packet upsert filters on { pairKey, flowKey }, under the unique
 * index of exactly those two keys, and on nothing else. A filter of exactly
 * a unique index's keys matters three ways: mongo-java-server answers it
 * from that index alone (it uses an index only for a filter of exactly its
 * fields, and scans the whole collection for any other shape); MongoDB
 * retries by itself two concurrent upserts that race to insert the same
 * stream only when the filter is an equality on every field of the unique
 * index they collide on (and the update leaves those fields alone: so the
 * inserted document takes both from the filter, not from $setOnInsert);
 * and on a sharded cluster an upsert must carry the whole shard key,
 * `pairKey`, to be routed to one shard.
 */
function flowKey (fromID, toID) {
  return `${fromID.length}:${fromID}>${toID}`
}

/**
 * Names one direction of a stream, fromID (the sender) to toID, in memory
 * only: the packet coalescer's entries, the writer's beliefs about sides
 * and its watermark reads all key by it. IDs never hold NUL, so it is
 * unambiguous, and it never starts with NUL (see the coalescer's other keys).
 */
function directionKey (fromID, toID) {
  return `${fromID}\u0000${toID}`
}

/** The `openKey` / `flowKey` a stream keeps once closed, unique per document (`pairKey` stays). */
function closedKey (key, id) {
  return `${key}#${id}`
}

module.exports = { pairKey, flowKey, directionKey, closedKey }
