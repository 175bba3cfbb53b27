'use strict'

// What a LoadBalancer's entryKey(buf, offset) may read of the batch entry at
// `offset` (the layout is lib/shared/batch-codec.js's, and changes between
// versions): the message's bytes are buf[dataStart, dataEnd), read in place.
const { entryDataStart, entryEnd, datagramAt } = require('./batch-codec')

module.exports = Object.freeze({
  /** Where the message's bytes start. */
  dataStart: (buf, offset) => entryDataStart(buf, offset),
  /** Where they end (exclusive). */
  dataEnd: (buf, offset) => entryEnd(buf, offset),
  /** The message itself (`{ data, rinfo }`, its bytes copied): for a key that needs the sender. */
  message: (buf, offset) => datagramAt(buf, offset)
})
