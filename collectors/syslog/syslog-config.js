'use strict'

const MongoCollectorConfig = require('../mongo-collector-config')
const SYSLOG_SETTINGS = require('./syslog-settings')

/** Flags of the syslog collector: the base ones with syslog defaults, plus its settings (syslog-settings.js). */
class SyslogConfig extends MongoCollectorConfig {
  static usage = 'collector run syslog [options]'

  static flags = MongoCollectorConfig.extendFlags(MongoCollectorConfig.settingsFlags(SYSLOG_SETTINGS))
}

module.exports = SyslogConfig
