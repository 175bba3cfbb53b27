'use strict'
// Helpers for the stream tests: send JSON packets over UDP, paced, and
// read back the stream documents.
const dgram = require('node:dgram')
const { waitFor } = require('./wait-for')

/** Sends each payload (object → JSON) as one datagram, `perTick` at a time. */
async function sendAll (port, payloads, { perTick = 200, pauseMs = 2 } = {}) {
  const socket = dgram.createSocket('udp4')
  await new Promise((resolve) => socket.connect(port, '127.0.0.1', resolve))
  for (let i = 0; i < payloads.length; i++) {
    socket.send(Buffer.from(JSON.stringify(payloads[i])))
    if (i % perTick === perTick - 1) await new Promise((resolve) => setTimeout(resolve, pauseMs))
  }
  await new Promise((resolve) => socket.close(resolve))
}

/** A shuffled copy (seeded), so runs are reproducible. */
function shuffle (items, seed = 42) {
  const out = items.slice()
  let s = seed
  for (let i = out.length - 1; i > 0; i--) {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0
    const j = s % (i + 1);
    [out[i], out[j]] = [out[j], out[i]]
  }
  return out
}

/**
 * Stream documents (not the never-insert sentinel).
 *
 * mongo-java-server answers a query that runs while another connection
 * creates an index on the same collection with "Unknown error: null" (its
 * index list changes under the query planner; about 1 fresh database in
 * 300 here): a test that reads while the workers create theirs asks again.
 * MongoDB itself does not fail such reads.
 */
async function streamDocs (db, filter = {}) {
  for (let attempt = 1; ; attempt++) {
    try {
      return await db.collection('streams').find({ openKey: { $exists: true }, ...filter }).toArray()
    } catch (err) {
      if (attempt >= 3 || !/^Unknown error/.test(err.message)) throw err
    }
  }
}

module.exports = { sendAll, shuffle, streamDocs, waitFor }
