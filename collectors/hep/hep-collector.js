'use strict'

const MongoCollector = require('../mongo-collector')
const HEP_SETTINGS = require('./hep-settings')
const { callKeyOf } = require('./call-key')
const { readAuthKey } = require('./auth-key')
const { entryDataStart, entryDataLength, entryKeyHash } = require('../../lib/shared/batch-codec')
const { fnv1a } = require('../../lib/master/distribution')

/**
 * The HEP collector (its settings: hep-settings.js): HEP3 on 9060, UDP or
 * TCP (each packet framed by its own length, TLS through the usual flags),
 * hash distribution on the call (call-key.js: the correlation id of RTCP,
 * the Call-ID of SIP), so that one call's SIP and RTCP meet in one worker;
 * HepWorker writing calls and call-quality streams.
 */
class HepCollector extends MongoCollector {
  static settings = HEP_SETTINGS

  constructor (options = {}) {
    super(options)
    readAuthKey(this.options.workerOptions.hepPasswordFile) // a file it cannot read fails here, not in every worker
  }

  /** The call of a HEP packet; for anything else its source (the hash of the default key, as entryKey gives it). */
  key (message) {
    const data = message.data
    const key = Buffer.isBuffer(data) ? callKeyOf(data, 0, data.length) : -1
    return key >= 0 ? key : fnv1a(super.key(message))
  }

  /** key() read from a batch entry's bytes (the native receive path). */
  entryKey (buf, offset) {
    const start = entryDataStart(buf, offset)
    const key = callKeyOf(buf, start, start + entryDataLength(buf, offset))
    return key >= 0 ? key : entryKeyHash(buf, offset)
  }
}

module.exports = HepCollector
