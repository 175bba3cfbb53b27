'use strict'

const mongoose = require('mongoose')

const { Schema } = mongoose

const side = {
  ID: String,
  IP_ADDRESS: String,
  highestPacketNum: Number,
  firstPacketNum: Number,
  packets: Number
}

/**
 * A stream: the bilateral flow between two endpoints. Mongoose declares the
 * shape and the indexes; the hot path writes through the native collection.
 * `strict: false` keeps protocol-specific side fields (jitter, loss, …).
 */
const streamSchema = new Schema({
  openKey: { type: String, required: true },
  flowKey: { type: String, required: true },
  active: Boolean,
  from: side,
  to: side,
  startTime: Date,
  endTime: Date,
  endedAt: Date,
  endReason: String,
  stream_ended: { from: Boolean, to: Boolean },
  metadata: { lastUpdated: Date, packets: Number },
  analytics: Schema.Types.Mixed
}, { collection: 'streams', strict: false, versionKey: false, autoIndex: false })

// One open stream per endpoint pair: the guarantee against duplicates.
streamSchema.index({ openKey: 1 }, { unique: true })
// The packet upserts' only filter (stream-key.js explains why only this).
streamSchema.index({ flowKey: 1 }, { unique: true })
// The sweeper's scan, and side updates / BYE by endpoint.
streamSchema.index({ active: 1, 'metadata.lastUpdated': 1 })
streamSchema.index({ 'from.ID': 1, active: 1 })
streamSchema.index({ 'to.ID': 1, active: 1 })

/** Per-day counter documents (see counter-store.js). */
const counterSchema = new Schema({
  _id: String,
  metric: String,
  day: String,
  daily: Number,
  hourly: Schema.Types.Mixed,
  minute: Schema.Types.Mixed
}, { collection: 'counters', strict: false, versionKey: false, autoIndex: false })

counterSchema.index({ metric: 1, day: 1 })

/** Binds a schema to a connection under a collection name and creates its indexes. */
async function defineModel (connection, name, schema, collection) {
  const model = connection.model(name, schema, collection)
  await model.createIndexes()
  return model
}

/** The stream worker's models, indexes created. */
async function defineModels (connection, { streams = 'streams', counters = 'counters' } = {}) {
  return {
    Stream: await defineModel(connection, 'Stream', streamSchema, streams),
    Counter: await defineModel(connection, 'Counter', counterSchema, counters)
  }
}

module.exports = { streamSchema, counterSchema, defineModel, defineModels }
