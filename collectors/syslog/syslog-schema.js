'use strict'

const mongoose = require('mongoose')
const { counterSchema, defineModel } = require('../../workers/storage/schemas')

const { Schema } = mongoose

/**
 * One stored syslog message; `raw` ones keep their text and the parse error.
 * `structuredData` is the map view, SD-ID → PARAM-NAME → value, its keys the
 * names with `%` `.` `$` percent-encoded (sd-names.js; documents stored
 * before that kept names as sent); `sdElements` (the elements in order with
 * repeats, names as sent) and `timestampText` (as sent) are there only when
 * they say more than the map and the Date; `messageRaw` holds MSG's bytes
 * when they are not valid UTF-8.
 */
const messageSchema = new Schema({
  format: String,
  facility: Number,
  severity: Number,
  facilityName: String,
  severityName: String,
  timestamp: Date,
  timestampText: String,
  receivedAt: Date,
  host: String,
  app: String,
  procid: String,
  msgid: String,
  structuredData: Schema.Types.Mixed,
  sdElements: Schema.Types.Mixed,
  message: String,
  messageRaw: Buffer,
  invalidUtf8: Boolean,
  deviations: [String],
  source: String,
  error: String
}, { strict: false, versionKey: false, autoIndex: false })

// None unique: the `_id` index (a redelivered message has the same `_id`)
// is what refuses a message twice, and it stays unique across shards when
// `_id` is the shard key: { _id: 'hashed' } (schemas.js SHARD_KEYS).
messageSchema.index({ receivedAt: 1 })
messageSchema.index({ host: 1, timestamp: 1 })
messageSchema.index({ severity: 1, timestamp: 1 })

async function defineSyslogModels (connection, { collection = 'syslog', countersCollection = 'counters' } = {}) {
  return {
    Message: await defineModel(connection, 'SyslogMessage', messageSchema, collection),
    Counter: await defineModel(connection, 'Counter', counterSchema, countersCollection)
  }
}

module.exports = { messageSchema, defineSyslogModels }
