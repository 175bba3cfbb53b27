'use strict'

const MongoCollectorConfig = require('../mongo-collector-config')
const RTCP_SETTINGS = require('./rtcp-settings')

/** Flags of the RTCP collector: the base ones with RTCP defaults, plus its settings (rtcp-settings.js). */
class RtcpConfig extends MongoCollectorConfig {
  static usage = 'collector run rtcp [options]'

  static flags = MongoCollectorConfig.extendFlags(MongoCollectorConfig.settingsFlags(RTCP_SETTINGS))
}

module.exports = RtcpConfig
