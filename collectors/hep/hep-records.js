'use strict'

const DecodeError = require('../../exceptions/decode-error')
const { decodeHep, captureTime, PROTOCOL_TYPES } = require('./hep-decoder')
const { rtcpOfHep } = require('./rtcp-json')
const { parseSip } = require('./sip')
const { callUpdateOf } = require('./calls')
const { readAuthKey } = require('./auth-key')

const refusals = new Map()

// One DecodeError per reason, made once (a refusal costs no stack capture).
function refusal (reason) {
  let error = refusals.get(reason)
  if (!error) refusals.set(reason, (error = new DecodeError(reason, `HEP packet refused (${reason})`)))
  return error
}

const authKeys = new WeakMap() // settings → the auth key agents must send (null: any), read once

/**
 * A HEP3 packet (hep-decoder.js) as a record, pure: RTCP (protocol type 5,
 * JSON or raw) `{ type: 'rtcp', rtcp, at, srcIp, callId }`, SIP (type 1)
 * `{ type: 'sip', call }` (calls.js: the update of its call), `at` the
 * capture time, else `receivedAt`. Refused, by reason, what carries no
 * call data: a keepalive or ping (`hep-keepalive`), a packet without the
 * auth key of `settings.hepPasswordFile` or COLLECTOR_HEP_PASSWORD
 * (`hep-auth`), another protocol type (`hep-type-<n>`), no payload, a SIP
 * or RTCP payload that does not parse.
 */
function hepRecordOf (data, settings, receivedAt) {
  const packet = decodeHep(data)
  if (packet instanceof DecodeError) return packet
  const authKey = authKeyOf(settings)
  if (authKey !== null && packet.authKey !== authKey) return refusal('hep-auth')
  const type = packet.protocolType
  if (type === undefined || type === 0 || packet.keepAlive !== undefined) return refusal('hep-keepalive')
  if (type !== 1 && type !== 5) return refusal(`hep-type-${type}`)
  if (packet.payload === undefined || packet.payload.length === 0) return refusal('hep-missing-payload')
  const at = captureTime(packet) ?? receivedAt.getTime()
  if (type === 1) {
    const sip = parseSip(packet.payload)
    return sip ? { type: PROTOCOL_TYPES[type], call: callUpdateOf(sip, at) } : refusal('hep-sip')
  }
  const rtcp = rtcpOfHep(packet.payload)
  if (rtcp.reason) return refusal(rtcp.reason)
  return { type: PROTOCOL_TYPES[type], rtcp, at, srcIp: packet.srcIp, callId: packet.correlationId }
}

function authKeyOf (settings) {
  if (!authKeys.has(settings)) authKeys.set(settings, readAuthKey(settings.hepPasswordFile))
  return authKeys.get(settings)
}

module.exports = { hepRecordOf }
