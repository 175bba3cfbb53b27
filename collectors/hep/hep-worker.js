'use strict'

const RtcpWorker = require('../rtcp/rtcp-worker')
const DecodeError = require('../../exceptions/decode-error')
const { defineModel } = require('../../workers/storage/schemas')
const { toStreamUpdates } = require('../rtcp/to-stream-updates')
const { decodeHep, captureTime, PROTOCOL_TYPES } = require('./hep-decoder')
const { rtcpOfHep } = require('./rtcp-json')
const { parseSip } = require('./sip')
const { CallStore, callUpdateOf } = require('./call-store')
const { callSchema } = require('./call-schema')
const HEP_SETTINGS = require('./hep-settings')
const { readAuthKey } = require('./auth-key')

const refusals = new Map()

// One DecodeError per reason, made once (a refusal costs no stack capture).
function refusal (reason) {
  let error = refusals.get(reason)
  if (!error) refusals.set(reason, (error = new DecodeError(reason, `HEP packet refused (${reason})`)))
  return error
}

/**
 * Reads HEP3 packets (hep-decoder.js) as capture agents send them. RTCP
 * (protocol type 5, JSON or raw) becomes the RTCP collector's stream
 * updates, stamped with the capture time and the inner (media) addresses,
 * its stream sides tagged with the call's `callId` (the correlation
 * chunk); SIP (type 1) becomes call documents (call-store.js). A keepalive
 * or ping, a packet without the configured auth key, another protocol
 * type: dropped and counted by reason (`hep-keepalive`, `hep-auth`,
 * `hep-type-<n>`).
 */
class HepWorker extends RtcpWorker {
  static settings = HEP_SETTINGS.worker

  constructor (options = {}, defaults = {}) {
    super(options, defaults)
    this.calls = new CallStore()
    this.writingCalls = []
    this.hep = { types: {} } // packets taken, by protocol type
    this.password = readAuthKey(this.settings.hepPasswordFile)
  }

  async prepare () {
    await super.prepare()
    this.calls.collection = (await defineModel(this.connection, 'Call', callSchema, this.settings.callsCollection)).collection
  }

  decode (message) {
    return this.itemsOf(message, this.quality)
  }

  // The endpoints only (see StreamWorker#peek): no call-quality memory, no counts.
  peek (message) {
    return this.itemsOf(message, null)
  }

  itemsOf (message, quality) {
    const packet = decodeHep(message.data)
    if (packet instanceof DecodeError) return packet
    if (this.password !== null && packet.authKey !== this.password) return refusal('hep-auth')
    const type = packet.protocolType
    if (type === undefined || type === 0 || packet.keepAlive !== undefined) return refusal('hep-keepalive')
    if (type !== 1 && type !== 5) return refusal(`hep-type-${type}`)
    if (packet.payload === undefined || packet.payload.length === 0) return refusal('hep-missing-payload')
    const at = captureTime(packet) ?? this.receivedAt()
    if (quality) this.hep.types[PROTOCOL_TYPES[type]] = (this.hep.types[PROTOCOL_TYPES[type]] || 0) + 1
    return type === 5 ? this.rtcpItems(packet, at, quality) : this.sipItems(packet, at)
  }

  rtcpItems (packet, at, quality) {
    const rtcp = rtcpOfHep(packet.payload)
    if (rtcp.reason) return refusal(rtcp.reason)
    const items = toStreamUpdates(rtcp, { address: packet.srcIp }, at, quality)
    const callId = packet.correlationId
    if (callId) for (const item of items) if (item.fields) item.fields.callId = callId
    return items
  }

  sipItems (packet, at) {
    const sip = parseSip(packet.payload)
    return sip ? [{ call: callUpdateOf(sip, at) }] : refusal('hep-sip')
  }

  // Call updates go to the call store; the rest is the stream worker's.
  accept (item, delivery, count, staged = false) {
    if (item.call === undefined) return super.accept(item, delivery, count, staged)
    if (!staged && this.calls.size + this.sink.pending >= this.settings.maxPending && !this.calls.has(item.call.callId)) return this.sink.dropPending()
    this.calls.add(item.call, delivery.seq)
  }

  async writePending () {
    const calls = this.calls.take()
    this.writingCalls = calls
    try {
      if (calls.length > 0) await this.calls.write(calls)
    } catch (err) {
      this.calls.restore(err.unwritten || calls)
      throw err
    } finally {
      this.writingCalls = []
    }
    await super.writePending()
  }

  hasPending () {
    return super.hasPending() || this.calls.size > 0
  }

  oldestPending () {
    let min = Math.min(super.oldestPending(), this.calls.oldestPending())
    for (const entry of this.writingCalls) if (entry.minSeq < min) min = entry.minSeq
    return min
  }

  abandonPending () {
    super.abandonPending()
    this.calls.clear()
  }

  stats () {
    return { ...super.stats(), hep: { types: { ...this.hep.types } }, callWrites: this.calls.stats.ops, pendingCalls: this.calls.size }
  }
}

module.exports = HepWorker
