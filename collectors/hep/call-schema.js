'use strict'

const mongoose = require('mongoose')

const { Schema } = mongoose

const party = { user: String, host: String }

/**
 * One SIP call (call-store.js writes it): `callId`; `caller` and `callee`
 * (From and To of the initial INVITE); `invitedAt`, `answeredAt` (the first
 * 2xx to an INVITE), `endedAt` (the first BYE); `final`, the final response
 * to the latest INVITE transaction as CSeq × 1000 + status (`final % 1000`
 * is the status); `callerTag` and `byeFromTag` (equal: the caller hung up);
 * `firstSeen`, `lastSeen`. The media's quality is in `streams`, whose sides
 * carry the call's `callId`.
 */
const callSchema = new Schema({
  callId: String,
  caller: party,
  callee: party,
  callerTag: String,
  byeFromTag: String,
  invitedAt: Date,
  answeredAt: Date,
  endedAt: Date,
  final: Number,
  firstSeen: Date,
  lastSeen: Date
}, { strict: false, versionKey: false, autoIndex: false })

// Unique: two workers (or hosts) that see one call's first messages at once
// make one document; the loser's upsert is written again and matches.
callSchema.index({ callId: 1 }, { unique: true })
callSchema.index({ invitedAt: 1 })
callSchema.index({ 'caller.user': 1, invitedAt: 1 })
callSchema.index({ 'callee.user': 1, invitedAt: 1 })

module.exports = { callSchema }
