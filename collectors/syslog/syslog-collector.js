'use strict'

const MongoCollector = require('../mongo-collector')
const SYSLOG_SETTINGS = require('./syslog-settings')

/** The syslog collector: UDP or TCP (auto-detected RFC 6587 framing) into MongoDB; its settings: syslog-settings.js. */
class SyslogCollector extends MongoCollector {
  static settings = SYSLOG_SETTINGS
}

module.exports = SyslogCollector
