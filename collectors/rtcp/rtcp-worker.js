'use strict'

const StreamWorker = require('../../workers/stream-worker')
const { decodeRtcp } = require('./decoder')
const { toStreamUpdates } = require('./to-stream-updates')

/**
 * Decodes RTCP compound packets (RFC 3550) into stream updates: each report
 * block is a packet from the reporter to the reported source. Malformed
 * datagrams are counted by reason (see decoder.js DECODE_REASONS) and skipped.
 */
class RtcpWorker extends StreamWorker {
  decode (message) {
    return toStreamUpdates(decodeRtcp(message.data), message.rinfo)
  }
}

module.exports = RtcpWorker
